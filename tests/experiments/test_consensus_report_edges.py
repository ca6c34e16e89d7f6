"""Consensus reports at their edges: plots of saved graphs, plots of a discarded run, one
question (no interval), and what a group cell's single bracket belongs to."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import yaml
from typer.testing import CliRunner

from byzllm.cli import app
from byzllm.cli.consensus import _topology_slug
from byzllm.experiments.consensus.demo import demo_config
from byzllm.experiments.consensus.experiment import run_in_memory
from byzllm.experiments.consensus.report import (
    GROUP_CELL_NOTE,
    NO_INTERVAL_NOTE,
    count_intervals,
    csv_rows,
    metrics_rows,
    round_rows,
    summarize,
    table_notes,
)
from byzllm.protocols import QuestionTrace, round_counts

RUNNER = CliRunner()


def _invoke(*args: str) -> str:
    result = RUNNER.invoke(app, list(args))
    assert result.exit_code == 0, result.output
    return result.output


def _records(questions: int) -> list[dict[str, object]]:
    config = demo_config(questions=questions).model_copy(
        update={"topologies": ["merg"], "protocols": ["sac"], "T": [2]}
    )
    return run_in_memory(config)


def test_a_saved_graph_s_plot_is_one_file_named_after_the_graph(tmp_path: Path) -> None:
    """The plot of a ``file:`` topology was written under nested folders named after the
    graph's absolute path (``accuracy_sac_file:/...``)."""
    graph = tmp_path / "ring.json"
    _invoke("graph", "build", "ring-lattice", "-n", "7", "--k", "2", "-o", str(graph))
    config = tmp_path / "filegraph.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "protocols": ["sac"],
                "topologies": [f"file:{graph}"],
                "T": [1],
                "dataset": {"name": "synthetic", "n": 2},
            }
        )
    )
    run_dir = tmp_path / "run"
    _invoke("consensus", "run", str(config), "-o", str(run_dir))
    _invoke("consensus", "report", str(run_dir))
    report = run_dir / "report"
    assert not [p for p in report.iterdir() if p.is_dir()]
    (plot,) = report.glob("*.png")
    assert plot.name.startswith("accuracy_sac_file-ring-") and ":" not in plot.name
    assert plot.name.endswith("_4s2w1b-replay_F3_T1.png")


def test_topology_slugs_keep_names_and_tell_saved_graphs_apart() -> None:
    assert _topology_slug("erdos-renyi") == "erdos-renyi"
    one, other = _topology_slug("file:/a/ring.json"), _topology_slug("file:/b/ring.json")
    assert one.startswith("file-ring-") and other.startswith("file-ring-") and one != other
    assert _topology_slug("file:/a/my graph:v2.json").startswith("file-my-graph-v2-")


def test_a_fresh_demo_s_report_drops_the_discarded_run_s_plots(tmp_path: Path) -> None:
    """``demo --fresh`` with another T left the old run's plots beside the new ones, while
    the report said it wrote only the new ones."""
    run_dir = tmp_path / "run"
    _invoke("demo", "--questions", "2", "-T", "2", "-o", str(run_dir))
    _invoke("consensus", "report", str(run_dir))
    report = run_dir / "report"
    assert len(list(report.glob("accuracy_*_T2.png"))) == 6
    kept = [report / "notes.txt", report / "accuracy_overview.png"]  # not the report's names
    for path in kept:
        path.write_text("mine")
    elsewhere = tmp_path / "figures"
    _invoke("consensus", "report", str(run_dir), "--out", str(elsewhere))

    _invoke("demo", "--questions", "2", "-T", "1", "--fresh", "-o", str(run_dir))
    output = _invoke("consensus", "report", str(run_dir))
    assert "wrote 8 files" in output and "removed 6 plots" in output
    plots = sorted(p.name for p in report.glob("accuracy_*_F*_T*.png"))
    assert len(plots) == 6 and all(name.endswith("_T1.png") for name in plots)
    assert all(path.read_text() == "mine" for path in kept)
    # A folder given with --out is the user's: nothing in it is removed.
    _invoke("consensus", "report", str(run_dir), "--out", str(elsewhere))
    assert len(list(elsewhere.glob("accuracy_*.png"))) == 12


def test_one_question_gives_no_interval_anywhere() -> None:
    """A one-question run printed zero-width intervals (``42.9 [42.9, 42.9]``), and rates of
    0 or 100% a Wilson interval: certainty, or a spread, one question cannot give."""
    summary = summarize(_records(1))
    ((meta, _),) = summary
    assert meta["distinct_questions"] == 1 and meta["intervals"]
    assert all(bounds == [None, None] for bounds in meta["intervals"].values())
    (row,) = metrics_rows(summary)
    for column in ("IAA", "FAA", "BFTI", "RA", "W IAA→FAA", "S IAA→FAA", "H-Maj"):
        assert row[column].endswith(" [n/a]"), (column, row[column])
    assert all(r["All %"].endswith(" [n/a]") for r in round_rows(summary))
    (csv,) = csv_rows(summary)
    assert csv["IAA"] is not None and csv["IAA_low"] is None and csv["RA_high"] is None
    (json_row,) = metrics_rows(summary, for_json=True)
    assert json.loads(json.dumps(json_row["intervals"]))["BFTI"] == [None, None]
    assert table_notes([row]) == [GROUP_CELL_NOTE, NO_INTERVAL_NOTE]


def test_one_question_under_several_seeds_is_still_one_question() -> None:
    (record,) = _records(1)
    counts = np.array([round_counts(QuestionTrace.model_validate(record["trace"]))] * 3)
    pooled = count_intervals(counts, clusters=["q"] * 3, resamples=50)
    assert all(np.isnan(iv.low) and np.isnan(iv.high) for iv in pooled.values())
    assert pooled["IAA"].n == 1 and not np.isnan(pooled["IAA"].value)


def test_two_questions_keep_their_intervals() -> None:
    summary = summarize(_records(2))
    ((meta, _),) = summary
    assert all(None not in bounds for bounds in meta["intervals"].values())
    (row,) = metrics_rows(summary)
    assert "[n/a]" not in json.dumps(row, ensure_ascii=False)
    assert table_notes([row]) == [GROUP_CELL_NOTE]


@pytest.mark.parametrize("questions", ["1", "2"])
def test_printed_tables_say_what_their_brackets_are(tmp_path: Path, questions: str) -> None:
    """The group cells show one bracket for two numbers; the printed note says whose it is,
    and an ``[n/a]`` cell is printed as such (rich had read it as a markup tag)."""
    run_dir = tmp_path / "run"
    demo = _invoke("demo", "--questions", questions, "-T", "1", "-o", str(run_dir))
    report = _invoke("consensus", "report", str(run_dir))
    for output in (demo, report):
        flat = " ".join(output.split())
        assert GROUP_CELL_NOTE in flat
        if questions == "1":
            # The note's, and every cell's: 6 rows of 7 percentages each (rich had printed
            # nothing in a cell's place).
            assert NO_INTERVAL_NOTE in flat and flat.count("[n/a]") > 42
        else:
            assert "[n/a]" not in flat


def test_oracle_attack_rows_are_marked_in_every_table() -> None:
    """Rows under an attack that reads the answer key (collude) were printed like the paper's
    replay rows in Tables 1 and 2, the CSV and the JSON: only the matrix marked them."""
    from byzllm.experiments.consensus.config import Composition
    from byzllm.experiments.consensus.report import ORACLE_NOTE, oracle_attack

    compositions = [
        Composition(strong=4, weak=2, byzantine=1, attack="replay"),
        Composition(strong=4, weak=1, byzantine=2, attack="collude"),
        Composition(strong=4, weak=3, byzantine=0, attack="collude"),  # no adversary
    ]
    config = demo_config(questions=2).model_copy(
        update={"topologies": ["complete"], "protocols": ["sac"], "T": [1]}
    )
    config = config.model_copy(update={"compositions": compositions})
    summary = summarize(run_in_memory(config))
    marked = {"4s2w1b-replay": False, "4s1w2b-collude": True, "4s3w0b-collude": False}
    assert {meta["composition"]: oracle_attack(meta["composition"]) for meta, _ in summary} == (
        marked
    )
    rows = metrics_rows(summary)
    assert sorted(row["Composition"] for row in rows) == [
        "4s1w2b-collude †",
        "4s2w1b-replay",
        "4s3w0b-collude",
    ]
    assert ORACLE_NOTE in table_notes(rows)
    assert ORACLE_NOTE not in table_notes([r for r in rows if "†" not in r["Composition"]])
    assert {r["Composition"] for r in round_rows(summary)} == {r["Composition"] for r in rows}
    assert {r["composition"]: r["oracle_attack"] for r in csv_rows(summary)} == marked
    json_rows = metrics_rows(summary, for_json=True)
    assert {r["composition"]: r["oracle_attack"] for r in json_rows} == marked
