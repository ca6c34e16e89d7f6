"""Every kind of run's page as a reader meets it in Chromium (issue 26, acceptance 1).

One test per kind of run (consensus, WhoDunit, GovSim, CodeGen, monitor evaluations of
WhoDunit and of GovSim, the attack matrix, a reproduce page): it opens the page, finds the
headline numbers each with its 95% interval (``23.1 [18.0, 28.3]``), opens a unit beyond the
500th (its trace read from its chunk file) and checks that the page's script and the browser
logged no error. A GovSim monitor game opens its stock curve with the monitor's trigger and
reset marked at their month.

Runs stay small where a small run shows everything: the domain's run is made on the
simulator in seconds, then its units are copied under new ids into a store of more than 500
units (:func:`_grow`, through the store's own API, records unchanged but for their ids), so
the page is that of a real run of that size. The matrix needs no copy: its default grid at
3 questions per cell is 540 units; nor does the reproduce page, whose ``sac-table1`` run at 84
questions per configuration is 504 units (it must be the entry's own run: the comparison is
computed from it).
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import byzllm.reproduce.page as reproduce_page
from byzllm.cli import app
from byzllm.runs import Store, UnitResult, make_unit

from ._support import dump_dom, record_class

RUNNER = CliRunner()

#: A number with its 95% interval, as every page prints it.
WITH_INTERVAL = re.compile(r"[+-]?\d+\.\d \[[+-]?\d+\.\d, [+-]?\d+\.\d\]")

#: Units in a grown run: the one opened is the last, beyond the 500th.
GROWN = 520


def _invoke(*args: str) -> str:
    result = RUNNER.invoke(app, list(args))
    assert result.exit_code == 0, result.output
    return result.stdout


#: The fields that name a unit's game or problem on the page: renamed in every copy.
_ID_FIELDS = ("game_id", "problem_id")


def _grow(source: Path, target: Path, units: int = GROWN) -> None:
    """``target``: a store of ``units`` units, the units of ``source`` copied round by round,
    each copy's game and problem ids suffixed ``~k`` (the page's keys stay unique)."""
    with Store.open(source) as store:
        by_unit: dict[str, list[tuple[int, str, dict[str, Any]]]] = {}
        payloads: dict[str, Any] = {}
        order = 0
        for kind in store.kinds():
            for row in store.records(kind, with_unit=True, with_payload=True):
                unit = row.pop("unit_id")
                row.pop("unit_label")
                payloads[unit] = row.pop("payload")
                by_unit.setdefault(unit, []).append((order, kind, row))
                order += 1
    originals = sorted(by_unit)
    results = []
    made = []
    now = time.time()
    for k in range(units):
        original = originals[k % len(originals)]
        copy = k // len(originals)
        unit = make_unit({"copy_of": payloads[original], "copy": copy})
        made.append(unit)
        records = []
        for _, kind, row in sorted(by_unit[original], key=lambda item: item[0]):
            fields = dict(row)
            for name in _ID_FIELDS:
                if name in fields and copy:
                    fields[name] = f"{fields[name]}~{copy}"
            records.append(record_class(kind)(**fields))
        results.append(UnitResult(unit.id, "done", now, now, records))
    with Store(target) as grown:
        grown.register_units(made)
        grown.write_results(results)


def _units_data(page: Path) -> dict[str, Any]:
    text = page.read_text(encoding="utf-8")
    raw = re.search(r"<script type='application/json' id='units-data'>(.*?)</script>", text, re.S)
    assert raw
    data: dict[str, Any] = json.loads(raw.group(1).replace("<\\/", "</"))
    return data


def _section(dom: str, anchor: str) -> str:
    start = dom.index(f'id="{anchor}"')
    return dom[start : dom.index("</section>", start)]


def _check_page(
    chromium: str, page: Path, *, headline: str, anchor: str = "summary", min_units: int = 501
) -> str:
    """Open ``page``: the ``headline`` metric is shown with intervals in the ``anchor``
    section, and the last unit (beyond the 500th) opens from its chunk with no error."""
    data = _units_data(page)
    spec = max(data.values(), key=lambda units: len(units["rows"]))
    rows = spec["rows"]
    assert len(rows) >= min_units, len(rows)
    last = rows[-1]
    assert "_c" in last, "the unit's trace lives in a chunk file"
    url = page.resolve().as_uri() + "#open=" + last["id"]
    dom, errors = dump_dom(chromium, url)
    assert 'data-ready="1"' in dom
    summary = _section(dom, anchor)
    assert headline in summary, summary[:2000]
    assert WITH_INTERVAL.search(summary), summary[:2000]
    assert f"{len(rows)} of {len(rows)} shown" in dom
    assert 'class="unit open"' in dom and '<div class="detail">' in dom
    detail = dom[dom.index('<div class="detail">') :]
    assert "cannot read" not in detail[:3000] and "not embedded" not in detail[:3000]
    assert 'id="errors"></div>' in dom and not errors, errors
    return detail


def _view(run_dir: Path) -> Path:
    return Path(_invoke("view", str(run_dir)).strip())


def test_consensus_page(chromium: str, tmp_path: Path) -> None:
    _invoke("demo", "--questions", "3", "-o", str(tmp_path / "demo"))
    _grow(tmp_path / "demo", tmp_path / "big")
    detail = _check_page(chromium, _view(tmp_path / "big"), headline="FAA", anchor="table1")
    assert "<svg" in detail[:5000]  # the question's graph


def test_whodunit_page(chromium: str, tmp_path: Path) -> None:
    _invoke("whodunit", "run", "--set", "n_games=4", "-o", str(tmp_path / "wd"))
    _grow(tmp_path / "wd", tmp_path / "big")
    detail = _check_page(chromium, _view(tmp_path / "big"), headline="Success-Rate")
    assert "H=" in detail  # decision tokens with their entropies


def test_govsim_page(chromium: str, tmp_path: Path) -> None:
    _invoke("govsim", "run", "--set", "n_games=3", "-o", str(tmp_path / "gs"))
    _grow(tmp_path / "gs", tmp_path / "big")
    detail = _check_page(chromium, _view(tmp_path / "big"), headline="Survival")
    assert "<polyline" in detail[:3000]  # the stock per month


def test_codegen_page(chromium: str, tmp_path: Path, toy_problems: Path) -> None:
    problems = toy_problems
    _invoke(
        "codegen", "run", "--set", f"problems={problems}", "--set", "n_test=2",
        "--set", "execution=simulated", "-o", str(tmp_path / "cg"),
    )  # fmt: skip
    _grow(tmp_path / "cg", tmp_path / "big")
    page = _view(tmp_path / "big")
    detail = _check_page(chromium, page, headline="Pass@1")
    assert "round 1" in detail
    assert "<svg class='bars'" in page.read_text(encoding="utf-8")  # Pass@1 bars


def test_monitor_page(chromium: str, tmp_path: Path) -> None:
    _invoke("reproduce", "ra-fig4", "-n", "4", "-o", str(tmp_path / "fig4"))
    _grow(tmp_path / "fig4" / "evaluate", tmp_path / "big")
    page = _view(tmp_path / "big")
    detail = _check_page(chromium, page, headline="Success-Rate gain over none")
    assert "P(success) per scored turn" in detail[:20000] or "no trigger" in detail[:20000]
    # Human labels and intervals, not the report's raw fractions and snake_case keys.
    summary = _section(page.read_text(encoding="utf-8"), "summary")
    assert "success_rate" not in summary and "nan" not in summary
    assert "Precision %" in summary and "<svg class='bars'" in summary


def test_matrix_page(chromium: str, tmp_path: Path) -> None:
    run_dir = tmp_path / "matrix"
    _invoke("consensus", "matrix", "-n", "3", "-T", "2", "-o", str(run_dir))
    page = _view(run_dir)
    _check_page(chromium, page, headline="BFTI", anchor="heatmap")
    text = page.read_text(encoding="utf-8")
    heatmap = _section(text, "heatmap")
    # One table per topology, every cell coloured on the one scale.
    assert heatmap.count("<table class='heatmap'>") == 3
    assert heatmap.count("<td class='heat'") == 180
    # The per-round plots are capped, not one SVG per configuration.
    assert text.count("<svg") < 40


def test_govsim_monitor_page(chromium: str, tmp_path: Path) -> None:
    cfg = tmp_path / "mon.yaml"
    cfg.write_text(
        "env: govsim\nn_train: 12\nn_validation: 8\nn_test: 10\nrepeats: 2\n"
        "collect_repeats: 2\nconditions: [none, monitor-1]\n",
        encoding="utf-8",
    )
    collect, evaluate = tmp_path / "c", tmp_path / "e"
    _invoke("monitor", "collect", str(cfg), "-o", str(collect))
    _invoke("monitor", "train", str(collect))
    _invoke(
        "monitor", "evaluate", str(cfg), "-m", str(collect / "monitors.json"), "-o", str(evaluate)
    )
    _grow(evaluate, tmp_path / "big")
    page = _view(tmp_path / "big")
    detail = _check_page(chromium, page, headline="Survival-Rate gain over none")
    assert '<svg class="lake"' in detail[:20000]  # the stock over months
    # A game the monitor reset: its curve marks the trigger and the reset at their month.
    with Store.open(tmp_path / "big") as store:
        games = store.records("monitor_game")
    k, game = next(
        (k, g) for k, g in enumerate(games) if g["resets"] and g["condition"] == "monitor-1"
    )
    fired = next(t for t in game["triggers"] if t["acted"])
    month = game["lake"]["turn_months"][fired["turn"] - 1]
    assert month >= 2  # month 1 has no meeting to reset
    key = f"monitor-1/{game['game_id']}/r{game['repeat']}/{k}"
    dom, errors = dump_dom(chromium, page.resolve().as_uri() + f"#f.condition=monitor-1&open={key}")
    assert 'data-ready="1"' in dom and not errors, errors
    detail = dom[dom.index('<div class="detail">') :]
    lake = detail[detail.index('<svg class="lake"') : detail.index("</svg>")]
    assert f"month {month}: reset" in lake and 'class="reset"' in lake
    assert 'class="alarm"' in lake and f"turn {fired['turn']}, {fired['agent']}" in lake
    assert f"{game['lake']['stocks'][0]} tons" in lake


def test_reproduce_page(chromium: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # 84 questions: 504 units over Table 1's six configurations. The sensitivity reruns
    # (eight more runs of every cell, in memory) are left out: they add no unit to the page.
    monkeypatch.setitem(reproduce_page.SENSITIVITY, "consensus", ())
    run_dir = tmp_path / "sac-table1"
    payload = json.loads(
        _invoke("reproduce", "sac-table1", "-n", "84", "-o", str(run_dir), "--json")
    )
    page = Path(payload["view"])
    # Its last unit, beyond the 500th, and the comparison for every cell.
    detail = _check_page(chromium, page, headline="ours [95%]", anchor="paper")
    assert "<svg" in detail[:5000]
    dom, _ = dump_dom(chromium, page.resolve().as_uri())
    compare = _section(dom, "paper")
    cells = re.findall(r'<td class="paper (in|out|none)"', compare)
    assert len(cells) == 6 * 9  # six configurations × Table 1's nine metrics
    assert "none" not in cells
