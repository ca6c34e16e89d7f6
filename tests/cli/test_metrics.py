"""`byzllm metrics` and docs/metrics.md: every metric with its formula and paper section, from
the one source the pages' glossary and hover texts use."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from byzllm.cli import app
from byzllm.view import GLOSSARY, METRICS, definition, glossary_html, metrics_markdown

RUNNER = CliRunner()
DOC = Path(__file__).resolve().parents[2] / "docs" / "metrics.md"

#: The metrics the reports print, each of which needs a formula and a paper section.
REPORTED = (
    "IAA", "FAA", "BFTI", "RA", "H-Majority", "W / S IAA→FAA", "Pass@1", "Success-Rate",
    "Precision", "Game-Length", "Survival-Rate", "Survival-Time", "Efficiency", "Monitor gain",
)  # fmt: skip


def test_every_reported_metric_has_a_formula_and_a_paper_section() -> None:
    by_term = {m.term: m for m in METRICS}
    for term in REPORTED:
        metric = by_term[term]
        assert metric.formula and "paper" in metric.source and "§" in metric.source, term
        assert GLOSSARY[term] == metric.sentence()


def test_docs_metrics_md_is_generated_from_the_glossary() -> None:
    result = RUNNER.invoke(app, ["metrics", "--markdown"])
    assert result.exit_code == 0, result.output
    assert result.stdout == metrics_markdown() == DOC.read_text(encoding="utf-8"), (
        "regenerate: byzllm metrics --markdown > docs/metrics.md"
    )


def test_one_metric_by_any_of_its_names_and_json() -> None:
    for name in ("BFTI", "bfti", "survival_time", "H_Majority"):
        result = RUNNER.invoke(app, ["metrics", name])
        assert result.exit_code == 0, result.output
        lines = result.stdout.splitlines()
        assert len(lines) == 3 and "§" in lines[2], lines
    shown = json.loads(RUNNER.invoke(app, ["metrics", "--json"]).stdout)["metrics"]
    assert [m["term"] for m in shown] == [m.term for m in METRICS]
    assert {"term", "meaning", "formula", "source"} <= set(shown[0])


def test_an_unknown_metric_is_one_line_with_the_nearest_name() -> None:
    result = RUNNER.invoke(app, ["metrics", "bfit"])
    assert result.exit_code == 2
    assert result.stderr.strip() == "error: no metric 'bfit'; did you mean BFTI?"


def test_pages_show_the_formulas_and_point_to_the_glossary() -> None:
    page = glossary_html()
    assert "BFTI = FAA − IAA" in page and "byzllm metrics" in page and "docs/metrics.md" in page
    assert definition("BFTI") == f"BFTI: {GLOSSARY['BFTI']}"
