"""`byzllm view`: one offline HTML page per run, checked as a reader sees it in Chromium."""

from __future__ import annotations

import base64
import gzip
import json
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest
from typer.testing import CliRunner

from byzllm.cli import app
from byzllm.runs import Store

from ._support import dump_dom

RUNNER = CliRunner()


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    run_dir = tmp_path_factory.mktemp("view") / "demo"
    result = RUNNER.invoke(app, ["demo", "--questions", "6", "-o", str(run_dir)])
    assert result.exit_code == 0, result.output
    return run_dir


@pytest.fixture(scope="module")
def page(demo_run: Path) -> Path:
    result = RUNNER.invoke(app, ["view", str(demo_run)])
    assert result.exit_code == 0, result.output
    path = Path(result.stdout.strip())
    assert path == demo_run / "view.html" and path.is_file()
    return path


class _Tables(HTMLParser):
    """The text of every cell of every table with a given class, row by row."""

    def __init__(self, css: str) -> None:
        super().__init__()
        self.css = css
        self.depth = 0
        self.rows: list[list[str]] = []
        self.cell: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        classes = (dict(attrs).get("class") or "").split()
        if tag == "table" and self.css in classes:
            self.depth += 1
        elif self.depth and tag == "tr":
            self.rows.append([])
        elif self.depth and tag in ("td", "th"):
            self.cell = []

    def handle_endtag(self, tag: str) -> None:
        if tag == "table" and self.depth:
            self.depth -= 1
        elif self.depth and tag in ("td", "th") and self.cell is not None:
            self.rows[-1].append("".join(self.cell).strip())
            self.cell = None

    def handle_data(self, data: str) -> None:
        if self.cell is not None:
            self.cell.append(data)


def _table1(html: str) -> list[dict[str, str]]:
    parser = _Tables("table1")
    parser.feed(html)
    header, *rows = parser.rows
    return [dict(zip(header, row, strict=True)) for row in rows]


def test_the_page_is_self_contained(page: Path) -> None:
    text = page.read_text(encoding="utf-8")
    # No network: nothing is fetched from anywhere (links in text would not load anything,
    # but there are none either); the only files it reads are its chunks, beside it.
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", text)
    assert "<script src" not in text and "<link" not in text
    assert "simulated agents (not real LLMs)" in text
    # Its chunk files are data only (one call with base64 text each).
    assert _chunk_details(page.parent / "view_files")


def _chunk_details(folder: Path) -> dict[str, str]:
    """Every unit's details in a page's chunk files, decoded as the page's script does."""
    details: dict[str, str] = {}
    for chunk in folder.glob("u*-*.js"):
        match = re.fullmatch(r'byzllmChunk\("u\d+",\d+,"([A-Za-z0-9+/=]+)"\);\n', chunk.read_text())
        assert match, chunk.name
        details.update(json.loads(gzip.decompress(base64.b64decode(match.group(1)))))
    return details


def test_every_unit_has_its_trace_in_the_chunks(demo_run: Path, page: Path) -> None:
    with Store.open(demo_run) as store:
        ids = {r["unit_id"] for r in store.records("consensus_question", with_unit=True)}
    details = _chunk_details(page.parent / "view_files")
    assert set(details) == ids
    assert all("<svg" in html for html in details.values())


def test_table_numbers_equal_the_report_json(demo_run: Path, page: Path) -> None:
    result = RUNNER.invoke(app, ["consensus", "report", str(demo_run), "--json"])
    assert result.exit_code == 0, result.output
    decoder = json.JSONDecoder()
    report, _ = decoder.raw_decode(result.stdout)
    rows = _table1(page.read_text(encoding="utf-8"))
    assert len(rows) == len(report["rows"]) == 6
    names = {"sac": "SAC", "cp-wbft": "CP-WBFT"}
    topologies = {"merg": "MERG", "complete": "Complete", "erdos-renyi": "Erdős-Rényi"}
    for expected in report["rows"]:
        shown = next(
            r
            for r in rows
            if r["Method"] == names[expected["protocol"]]
            and r["Composition"] == expected["composition"]
            and r["Topology"] == topologies[expected["topology"]]
        )
        for column, metric in (
            ("IAA", "IAA"),
            ("FAA", "FAA"),
            ("RA", "RA"),
            ("H-Maj", "H_Majority"),
        ):
            value = float(shown[column].split()[0])
            assert value == pytest.approx(round(100 * expected[metric], 1)), (column, shown)
        low, high = expected["intervals"]["FAA"]
        assert shown["FAA"].endswith(f"[{100 * low:.1f}, {100 * high:.1f}]")


def test_in_chromium_filters_change_the_rows_and_a_drilldown_opens(
    chromium: str, demo_run: Path, page: Path
) -> None:
    with Store.open(demo_run) as store:
        records = store.records("consensus_question", with_unit=True)
    sac = next(r for r in records if r["protocol"] == "sac")

    dom, errors = dump_dom(chromium, page.resolve().as_uri())
    assert 'data-ready="1"' in dom
    assert "36 of 36 shown" in dom
    assert dom.count('<tr class="unit') == 36
    assert 'id="errors"></div>' in dom and not errors

    # The same page with a filter chosen and one question opened, through the page's own
    # controls (the fragment sets the filter and fires its change event, then clicks the row).
    url = page.resolve().as_uri() + f"#f.protocol=sac&open={sac['unit_id']}"
    dom, errors = dump_dom(chromium, url)
    assert "18 of 36 shown" in dom
    rows = re.findall(r'<tr class="unit[^"]*" data-id="[^"]+">(.*?)</tr>', dom)
    assert len(rows) == 18 and all(">sac<" in row for row in rows)
    assert 'class="unit open"' in dom and '<div class="detail">' in dom
    detail = dom[dom.index('<div class="detail">') :]
    assert sac["task_id"] in detail[:2000] and "<svg" in detail[:5000]
    assert 'id="errors"></div>' in dom and not errors


def test_a_whodunit_batch_page_opens_a_transcript(chromium: str, tmp_path: Path) -> None:
    run_dir = tmp_path / "wd"
    result = RUNNER.invoke(app, ["whodunit", "run", "--set", "n_games=4", "-o", str(run_dir)])
    assert result.exit_code == 0, result.output
    page = RUNNER.invoke(app, ["view", str(run_dir)])
    assert page.exit_code == 0, page.output
    path = Path(page.stdout.strip())
    with Store.open(run_dir) as store:
        game = store.records("whodunit_game")[0]
    dom, errors = dump_dom(chromium, path.resolve().as_uri() + f"#open={game['game_id']}/r0")
    assert "4 of 4 shown" in dom
    assert '<div class="detail">' in dom and "H=" in dom  # decision tokens with entropies
    assert not errors


def test_view_refuses_a_folder_without_results(tmp_path: Path) -> None:
    result = RUNNER.invoke(app, ["view", str(tmp_path)])
    assert result.exit_code == 2
    assert "no results.sqlite" in result.output


def test_a_govsim_batch_page_opens_a_stock_curve(chromium: str, tmp_path: Path) -> None:
    run_dir = tmp_path / "gs"
    result = RUNNER.invoke(app, ["govsim", "run", "--set", "n_games=3", "-o", str(run_dir)])
    assert result.exit_code == 0, result.output
    page = RUNNER.invoke(app, ["view", str(run_dir)])
    assert page.exit_code == 0, page.output
    with Store.open(run_dir) as store:
        game = store.records("govsim_game")[0]
    url = Path(page.stdout.strip()).resolve().as_uri() + f"#open={game['game_id']}/r0"
    dom, errors = dump_dom(chromium, url)
    assert "3 of 3 shown" in dom and "Survival-Rate" in dom
    detail = dom[dom.index('<div class="detail">') :]
    assert "<polyline" in detail[:3000] and f"R0 = {game['r0']}" in detail
    assert not errors


def test_a_monitor_evaluation_page_shows_scores_triggers_and_resets(
    chromium: str, tmp_path: Path
) -> None:
    run_dir = tmp_path / "fig4"
    result = RUNNER.invoke(app, ["reproduce", "ra-fig4", "-n", "6", "-o", str(run_dir)])
    assert result.exit_code == 0, result.output
    with Store.open(run_dir / "evaluate") as store:
        games = store.records("monitor_game")
    scored = [g for g in games if g["condition"] == "monitor-1" and g["turn_scores"]]
    assert scored, "the monitor scored turns"
    index = games.index(scored[0])
    key = f"monitor-1/{scored[0]['game_id']}/r{scored[0]['repeat']}/{index}"
    url = (run_dir / "view.html").resolve().as_uri() + f"#f.condition=monitor-1&open={key}"
    dom, errors = dump_dom(chromium, url)
    detail = dom[dom.index('<div class="detail">') :]
    assert "P(success) per scored turn" in detail[:20000]
    first = scored[0]["turn_scores"][0]
    assert f"t{first['turn']} {first['p_success']:.2f}" in detail
    # The transcript: every monitored turn with its decision tokens and entropies.
    assert scored[0]["transcript"] and "H=" in detail[:60000]
    assert not errors


def test_a_codegen_page_opens_a_debate(chromium: str, tmp_path: Path, toy_problems: Path) -> None:
    problems = toy_problems
    run_dir = tmp_path / "cg"
    args = ["codegen", "run", "--set", f"problems={problems}", "--set", "n_test=2"]
    result = RUNNER.invoke(app, [*args, "--set", "execution=simulated", "-o", str(run_dir)])
    assert result.exit_code == 0, result.output
    page = RUNNER.invoke(app, ["view", str(run_dir)])
    assert page.exit_code == 0, page.output
    with Store.open(run_dir) as store:
        first = store.records("codegen_problem")[0]
    key = f"{first['condition']}/{first['problem_id']}/r{first['repeat']}/0"
    dom, errors = dump_dom(chromium, Path(page.stdout.strip()).resolve().as_uri() + f"#open={key}")
    assert "Pass@1 %" in dom and "shown" in dom
    detail = dom[dom.index('<div class="detail">') :]
    assert first["problem_id"] in detail[:500] and "round 1" in detail
    assert not errors


def test_a_unit_far_down_a_large_run_opens_from_its_chunk(chromium: str, tmp_path: Path) -> None:
    from byzllm.view import Section, Units
    from byzllm.view._html import CHUNK_UNITS, page_files

    n = 1_200
    rows = [{"id": f"u{k}", "k": k, "parity": "even" if k % 2 == 0 else "odd"} for k in range(n)]
    details = {f"u{k}": f"<p>trace of unit number {k}</p>" for k in range(n)}
    units = Units(columns=["k", "parity"], filters=["parity"], rows=rows, details=details)
    html_text, files = page_files(
        "big", "simulated", True, [Section("Units", units=units)], "p_files"
    )
    assert len(files) == n // CHUNK_UNITS and str(n - 1) not in html_text.split("units-data")[0]
    (tmp_path / "p.html").write_text(html_text, encoding="utf-8")
    (tmp_path / "p_files").mkdir()
    for name, body in files.items():
        (tmp_path / "p_files" / name).write_text(body, encoding="utf-8")
    # Unit 1,101 sits on page 12 and in the sixth chunk; the even filter hides it and is cleared.
    url = (tmp_path / "p.html").resolve().as_uri() + "#f.parity=even&open=u1101"
    dom, errors = dump_dom(chromium, url)
    assert 'data-ready="1"' in dom
    assert "trace of unit number 1101" in dom and "page 12 of 12" in dom
    assert "1200 of 1200 shown" in dom
    assert 'id="errors"></div>' in dom and not errors

    # Without its folder the page still opens and says the trace cannot be read.
    for name in files:
        (tmp_path / "p_files" / name).unlink()
    dom, errors = dump_dom(chromium, (tmp_path / "p.html").resolve().as_uri() + "#open=u5")
    assert 'data-ready="1"' in dom and "cannot read" in dom and "trace of unit" not in dom


def test_metrics_are_defined_on_hover_and_in_a_glossary(page: Path) -> None:
    text = page.read_text(encoding="utf-8")
    assert 'id="glossary"' in text
    for term in ("IAA", "FAA", "BFTI", "RA", "H-Majority", "Pass@1", "Survival-Time"):
        assert f"<dt>{term}</dt>" in text
    assert 'title="FAA: Final Agent Accuracy' in text  # Table 1's column, on hover


@pytest.mark.parametrize("text", ["<!--<script>", "</script><b>x</b>", "<!-- <script src=x>"])
def test_markup_in_row_values_leaves_the_page_working(
    chromium: str, tmp_path: Path, text: str
) -> None:
    """A model's text in a list row (runs without a page of their own show raw values):
    ``<!--<script>`` inside the page's data made the parser swallow the page's own scripts,
    and the list stayed empty."""
    from byzllm.view import Section, Units
    from byzllm.view._html import page_files

    rows = [{"id": "u0", "answer": text}, {"id": "u1", "answer": "plain"}]
    details = {"u0": "<p>one</p>", "u1": "<p>two</p>"}
    units = Units(columns=["answer"], filters=[], rows=rows, details=details)
    html_text, files = page_files("odd", "simulated", True, [Section("Units", units=units)], "f")
    assert "<!--" not in html_text.split("units-data")[1]
    (tmp_path / "p.html").write_text(html_text, encoding="utf-8")
    (tmp_path / "f").mkdir()
    for name, body in files.items():
        (tmp_path / "f" / name).write_text(body, encoding="utf-8")
    dom, errors = dump_dom(chromium, (tmp_path / "p.html").resolve().as_uri())
    assert 'data-ready="1"' in dom and "2 of 2 shown" in dom
    assert 'id="errors"></div>' in dom and not errors


def test_a_long_text_is_cut_in_its_list_row_and_whole_in_its_detail() -> None:
    """A run of long model answers (no page of its own) wrote every answer whole into the
    list rows: 50 answers of 200 KB made a 10 MB page."""
    from byzllm.view._games import generic_sections

    answer = "x" * 200_000
    sections, _ = generic_sections({"answer": [{"text": answer, "n": 1}]}, max_details=10)
    units = sections[1].units
    assert units is not None
    (row,) = units.rows
    assert len(row["text"]) == 200 and row["text"].endswith("…")
    assert "x" * 10_000 in units.details["answer/0"]  # the record itself, on click


def test_a_detail_cut_says_so_and_keeps_unicode() -> None:
    """A record's JSON was cut at 20,000 characters with no mark, and 'é' showed as \\u00e9."""
    from byzllm.view._games import generic_sections

    sections, flag = generic_sections({"answer": [{"text": "é漢" + "x" * 30_000}]}, max_details=10)
    units = sections[1].units
    assert units is not None
    detail = units.details["answer/0"]
    assert "é漢" in detail and "\\u00e9" not in detail
    assert "(cut: " in detail and "more characters of" in detail
    assert flag is None  # no record says whether it is simulated


def test_a_simulated_codegen_collect_run_is_labelled_simulated(
    tmp_path: Path, toy_problems: Path
) -> None:
    """The label came from the Pass@1 table, which counts test problems only: a collect run
    (train and validation problems) read 'real-model results'."""
    from byzllm.view import render_view

    problems = toy_problems
    run = tmp_path / "collect"
    args = ["codegen", "collect", "--set", f"problems={problems}", "-o", str(run)]
    result = RUNNER.invoke(app, [*args, "--set", "execution=simulated"])
    assert result.exit_code == 0, result.output
    page = render_view(run)
    assert "simulated agents (not real LLMs)" in page and "real-model results" not in page
