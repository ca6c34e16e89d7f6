"""A consensus question's rounds table, rendered by the page from its data, is the HTML the
page wrote in Python before (kept here as the reference), character for character: in
Chromium, for every question of a demo run and for hand-made rows that test the number
format (exact ties round to even, as Python's ``{:.2f}``; ``-0.00``; ``nan``), escaping and
empty fields."""

from __future__ import annotations

import html
import json
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from byzllm.cli import app
from byzllm.protocols import AgentRound, QuestionTrace
from byzllm.runs import Store
from byzllm.view import render_view
from byzllm.view._consensus import ROUNDS_JS, _rounds_data
from byzllm.view._html import render_data

RUNNER = CliRunner()


def _mark(correct: bool) -> str:
    return "<span class='ok'>✓</span>" if correct else "<span class='bad'>✗</span>"


def _reference(trace: QuestionTrace) -> str:
    """The rounds table as the page's Python wrote it."""
    n = len(trace.groups)
    header = "<th>agent</th>" + "".join(
        f"<th>{'init' if t == 0 else f'round {t}'}</th>" for t in range(len(trace.rounds))
    )
    body = []
    for i in range(n):
        cells = [f"<td>{i} {html.escape(trace.groups[i])}</td>"]
        for rnd in trace.rounds:
            row = rnd[i]
            received = {
                j: other.scores[i] for j, other in enumerate(rnd) if i in other.scores and j != i
            }
            answer = "-" if row.answer is None else html.escape(row.answer)
            bits = [f"{answer} {_mark(row.correct)}"]
            if row.self_score is not None:
                bits.append(f"self {row.self_score:.2f}")
            if row.scores:
                bits.append(
                    "gave " + ", ".join(f"→{j} {s:.2f}" for j, s in sorted(row.scores.items()))
                )
            if received:
                bits.append(
                    "got " + ", ".join(f"{j}→ {s:.2f}" for j, s in sorted(received.items()))
                )
            if row.confidence is not None:
                bits.append(f"conf {row.confidence:.2f}")
            if row.retained:
                bits.append("kept " + ",".join(str(j) for j in row.retained))
            if row.filtered:
                bits.append(
                    "<span class='bad'>dropped "
                    + ",".join(str(j) for j in row.filtered)
                    + "</span>"
                )
            cells.append("<td>" + "<br>".join(bits) + "</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    return (
        f"<table class='rounds'><thead><tr>{header}</tr></thead>"
        f"<tbody>{''.join(body)}</tbody></table>"
    )


def _row(agent: int, t: int, answer: str | None, correct: bool, **fields: Any) -> AgentRound:
    return AgentRound(agent=agent, round=t, answer=answer, key=answer, correct=correct, **fields)


def _edge_cases() -> QuestionTrace:
    """Rows that test the format: ties, signs, numbers that are not finite, markup."""
    ties = {1: 0.125, 2: 0.625, 3: 0.375, 4: 1.125}
    rounds = [
        [
            _row(0, 0, "<b>&'\"</script>", True, self_score=0.125, scores=ties, retained=[1, 2]),
            _row(1, 0, None, False, self_score=-0.0, scores={0: float("nan"), 2: 0.005}),
            _row(2, 0, "NaN", False, confidence=0.625, scores={0: float("inf"), 1: 1e-7}),
            _row(3, 0, "7", True, confidence=-0.125, filtered=[0, 2], retained=[4]),
            _row(4, 0, "7", True, scores={3: 0.875, 0: 0.994999}),
        ],
        [
            _row(0, 1, "7", True, self_score=2.675, scores={4: 0.015}),
            _row(1, 1, "7", True, confidence=float("-inf")),
            _row(2, 1, "", False),
            _row(3, 1, "7", True, scores={1: 0.0}),
            _row(4, 1, "7", True, self_score=1.0, retained=[], filtered=[]),
        ],
    ]
    groups = ["strong", "weak", "byzantine", "strong", "we<ak>"]
    return QuestionTrace(task_id="edge", protocol="sac", truth="7", groups=groups, rounds=rounds)


def _stored(trace: QuestionTrace) -> dict[str, Any]:
    """``trace`` as JSON gives it back (numbers that are not finite kept)."""
    stored: dict[str, Any] = json.loads(json.dumps(trace.model_dump()))
    return stored


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    run_dir = tmp_path_factory.mktemp("rounds") / "demo"
    result = RUNNER.invoke(app, ["demo", "--questions", "3", "-o", str(run_dir)])
    assert result.exit_code == 0, result.output
    return run_dir


@pytest.fixture(scope="module")
def traces(demo_run: Path) -> list[dict[str, Any]]:
    """A demo run's traces as stored (SAC's scores, CP-WBFT's confidences), and the edge
    cases, as the store would give them back."""
    with Store.open(demo_run) as store:
        stored = [r["trace"] for r in store.records("consensus_question")]
    assert {t["protocol"] for t in stored} >= {"sac", "cp-wbft"}
    return [*stored, _stored(_edge_cases())]


def test_the_page_renders_the_rounds_table_the_python_wrote(
    chromium: str, traces: list[dict[str, Any]], tmp_path: Path
) -> None:
    data = [_rounds_data(trace) for trace in traces]
    # Each as a detail holds it (render_data): the page reads it back from its element.
    parts = "".join(render_data("rounds", text) for text in data)
    harness = (
        "<!DOCTYPE html><html><head><meta charset='utf-8'></head><body>"
        f"<div id='data'>{parts}</div><pre id='out'></pre>"
        f"<script>window.byzllmRender={{}};{ROUNDS_JS}</script><script>"
        "var out=[].map.call(document.querySelectorAll('#data script[data-render]'),"
        "function(s){return byzllmRender[s.dataset.render](JSON.parse(s.textContent));});"
        "document.getElementById('out').textContent=JSON.stringify(out);"
        "document.getElementById('data').remove();</script></body></html>"
    )
    page = tmp_path / "rounds.html"
    page.write_text(harness, encoding="utf-8")
    dom = subprocess.run(
        [chromium, "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
         "--dump-dom", page.resolve().as_uri()],
        capture_output=True, text=True, timeout=120, check=True,
    ).stdout  # fmt: skip
    shown = re.search(r"<pre id=\"out\">(.*?)</pre>", dom, re.S)
    assert shown, dom[-2000:]
    rendered = json.loads(html.unescape(shown.group(1)))
    expected = [_reference(QuestionTrace.model_validate(trace)) for trace in traces]
    assert len(rendered) == len(expected) == len(traces)
    for got, want in zip(rendered, expected, strict=True):
        assert got == want
    # The hand-made rows did test what they meant to.
    edge = expected[-1]
    shown = ("self 0.12", "→2 0.62", "→3 0.38", "→4 1.12", "self -0.00", "→0 nan", "→0 inf",
             "conf -0.12", "conf -inf", "self 2.67", "→1 0.00", "0 strong", "we&lt;ak&gt;",
             "&lt;b&gt;&amp;&#x27;&quot;&lt;/script&gt;", "- <span")  # fmt: skip
    for text in shown:
        assert text in edge, text


def test_rounds_data_keeps_no_markup_that_could_end_its_element() -> None:
    text = _rounds_data(_stored(_edge_cases()))
    element = render_data("rounds", text)
    inner = element[element.index(">") + 1 : element.rindex("</script>")]
    assert "<" not in inner and json.loads(inner) == json.loads(text)
    # Not finite: as Python prints it (JSON has no such number).
    assert json.loads(text)["rounds"][0][1][3] == {"0": "nan", "2": 0.005}


def test_a_single_file_page_renders_its_inline_rounds_table(
    chromium: str, demo_run: Path, tmp_path: Path
) -> None:
    # render_view's page holds the details inline: the same data, rendered on opening.
    with Store.open(demo_run) as store:
        record = store.records("consensus_question", with_unit=True)[-1]
    page = tmp_path / "one.html"
    page.write_text(render_view(demo_run), encoding="utf-8")
    dom = subprocess.run(
        [chromium, "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
         "--virtual-time-budget=10000", "--dump-dom",
         page.resolve().as_uri() + "#open=" + record["unit_id"]],
        capture_output=True, text=True, timeout=120, check=True,
    ).stdout  # fmt: skip
    assert 'data-ready="1"' in dom and 'id="errors"></div>' in dom
    detail = dom[dom.index('<div class="detail">') :]
    detail = detail[: detail.index("</table>") + len("</table>")]
    assert "<svg" in detail and '<table class="rounds">' in detail
    assert "data-render" not in detail  # the data element gave way to the table
    trace = QuestionTrace.model_validate(record["trace"])
    assert detail.count("<tr>") == len(trace.groups) + 1  # a row per agent, and the header
