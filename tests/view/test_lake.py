"""GovSim's stock curve with the monitor's triggers and resets (byzllm.view._lake)."""

from __future__ import annotations

import re
from typing import Any

from byzllm.experiments.monitor.records import MonitorGameRecord
from byzllm.view._games import monitor_sections
from byzllm.view._lake import lake_svg, monitor_lake_svg


def _game(**changes: Any) -> dict[str, Any]:
    """A GovSim monitor game of 3 months (2 fishers): month 2's first decision triggered a
    reset and was asked again with the other's; month 3's trigger found no budget left."""
    game: dict[str, Any] = {
        "env": "govsim",
        "outcome": {"survival_rate": 0.0, "survival_time": 3.0, "efficiency": 0.4, "r0": 100.0},
        "split": "test",
        "condition": "monitor-1",
        "game_id": "g",
        "repeat": 0,
        "success": False,
        "total_turns": 7,
        "resets": 1,
        "resamples": 0,
        "parse_failures": 0,
        "fallbacks": 0,
        "triggers": [
            {
                "game_id": "g",
                "turn": 3,
                "role": "fisher",
                "agent": "Ann",
                "score": 0.1,
                "acted": True,
            },
            {
                "game_id": "g",
                "turn": 6,
                "role": "fisher",
                "agent": "Ben",
                "score": 0.2,
                "acted": False,
            },
        ],
        "lake": {
            "stocks": [100, 60, 70, 3],
            "collapse_below": 5,
            "turn_months": [1, 1, 2, 2, 2, 3, 3],
        },
        "agents": "sim",
        "simulated": True,
    }
    game.update(changes)
    return game


def test_triggers_and_the_reset_are_marked_at_their_month() -> None:
    svg = monitor_lake_svg(_game())
    resets = re.findall(r"<line class='reset'.*?<title>(.*?)</title>", svg)
    assert resets == ["month 2: reset (the month's catches asked again)"]
    alarms = re.findall(r"<path class='alarm'.*?<title>(.*?)</title>", svg)
    assert alarms == [
        "month 2: turn 3, Ann: P(success) 0.10, reset",
        "month 3: turn 6, Ben: P(success) 0.20, no intervention left",
    ]
    # Three months from their start, then the stock after the last harvest.
    points = re.findall(r"<circle .*?<title>(.*?)</title>", svg)
    assert points == [
        "month 1 (start): 100 tons",
        "month 2 (start): 60 tons",
        "month 3 (start): 70 tons",
        "after the last harvest: 3 tons",
    ]
    assert "collapse below 5" in svg and "R0 = 100" in svg


def test_a_resampling_game_marks_resamples_and_a_plain_curve_marks_nothing() -> None:
    svg = monitor_lake_svg(_game(resets=0, resamples=1))
    assert "<line class='resample'" in svg and "class='reset'" not in svg
    plain = lake_svg([100, 80], r0=100, collapse_below=5)
    assert "class='alarm'" not in plain and "trigger" not in plain and "<polyline" in plain


def test_records_without_a_lake_still_load_and_open() -> None:
    # WhoDunit games, and GovSim games stored before the curve was kept, have no lake.
    old = _game()
    del old["lake"]
    assert MonitorGameRecord.model_validate(old).lake is None
    assert monitor_lake_svg(old) == ""
    sections, _ = monitor_sections([old], max_details=10)
    units = sections[-1].units
    assert units is not None
    (detail,) = units.details.values()
    assert "<svg class='lake'" not in detail and "P(success)" in detail
    with_lake = monitor_sections([_game()], max_details=10)[0][-1].units
    assert with_lake is not None
    assert "<svg class='lake'" in next(iter(with_lake.details.values()))


def test_a_collapsed_batch_game_ends_below_the_collapse_line() -> None:
    """A GovSim batch game that collapsed in month 2 (174 tons at its start, 0 after its
    harvest): its curve stopped at 174 tons, above the dashed line, and a game that
    collapsed in month 1 was a single dot; `govsim report`'s plot ends at 0."""
    from byzllm.view._games import govsim_sections

    game = {
        "game_id": "govsim-test-R225-s0",
        "split": "test",
        "repeat": 0,
        "r0": 225,
        "agents": "simulated",
        "months": 12,
        "collapse_below": 5,
        "collapsed": True,
        "survival_time": 2,
        "survival_rate": 0.0,
        "efficiency": 0.3,
        "stocks": [225, 174],
        "harvests": [
            {"month": 1, "stock_before": 225, "stock_after": 87, "wishes": {}, "catches": {}},
            {"month": 2, "stock_before": 174, "stock_after": 0, "wishes": {}, "catches": {}},
        ],
        "simulated": True,
    }
    sections, _ = govsim_sections([game], max_details=1)
    detail = next(s.units for s in sections if s.units is not None).details[
        "govsim-test-R225-s0/r0"
    ]
    titles = re.findall(r"<title>([^<]*tons)</title>", detail)
    assert titles[-2:] == ["month 2 (start): 174 tons", "after the last harvest: 0 tons"]
    # Three points on the curve, the last on the axis (y of 0 tons), below the collapse line.
    points = re.search(r"<polyline points='([^']*)'", detail)
    assert points is not None and len(points.group(1).split()) == 3
    assert points.group(1).split()[-1].endswith(",144.0")


def test_a_batch_game_collapsing_in_the_last_month_is_listed_as_surviving() -> None:
    """GovSim's Survival-Time counts a collapse in month 12 of 12 as reaching m, so
    Survival-Rate counts the game as surviving (1 of 2 games: 50%); the list said
    "collapsed", and its "survived" filter showed 0 of the games the rate counted."""
    from byzllm.view._games import govsim_sections

    def game(name: str, collapsed: bool, time: int, rate: float) -> dict[str, object]:
        return {
            "game_id": name,
            "split": "test",
            "repeat": 0,
            "r0": 100,
            "agents": "simulated",
            "months": 12,
            "collapse_below": 5,
            "collapsed": collapsed,
            "survival_time": time,
            "survival_rate": rate,
            "efficiency": 0.4,
            "stocks": [100, 80],
            "harvests": [],
            "simulated": True,
        }

    late = game("govsim-test-R100-s0", True, 12, 1.0)
    early = game("govsim-test-R255-s0", True, 5, 0.0)
    sections, _ = govsim_sections([late, early], max_details=0)
    assert "50.0 [" in sections[0].html  # Survival-Rate, as the summary table shows it
    units = next(s.units for s in sections if s.units is not None)
    assert [row["outcome"] for row in units.rows] == ["survived", "collapsed"]
    nan = govsim_sections([{**late, "survival_rate": None}], max_details=0)[0]
    assert next(s.units for s in nan if s.units is not None).rows[0]["outcome"] == "-"
