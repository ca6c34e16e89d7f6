"""Evaluation metrics and figures (the rogue-agents paper, §4.1, D.4, Fig. 4, Fig. 9),
hand-computed."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

from byzllm.monitor.report import (
    evaluation_rows,
    plot_success_bars,
    plot_trigger_histogram,
    trigger_turns,
)


def _game(
    condition: str,
    repeat: int,
    success: bool,
    accused: bool,
    turns: int,
    resets: int = 0,
    triggers: list[int] | None = None,
) -> dict[str, Any]:
    return {
        "split": "test",
        "condition": condition,
        "repeat": repeat,
        "success": success,
        "accused": accused,
        "total_turns": turns,
        "resets": resets,
        "resamples": 0,
        "simulated": True,
        "triggers": [{"turn": t, "role": "accuser", "acted": False} for t in triggers or []],
    }


GAMES = [
    # none, run 0: 1 of 2 succeed (both accused), lengths 10, 20
    _game("none", 0, True, True, 10, triggers=[3]),
    _game("none", 0, False, True, 20, triggers=[12, 15]),
    # none, run 1: 2 of 2 succeed, lengths 10, 10
    _game("none", 1, True, True, 10),
    _game("none", 1, True, True, 10),
    # monitor-1, run 0: 2 of 2; run 1: 1 of 2, the failure never accused
    _game("monitor-1", 0, True, True, 15, resets=1),
    _game("monitor-1", 0, True, True, 10),
    _game("monitor-1", 1, True, True, 25, resets=1),
    _game("monitor-1", 1, False, False, 31),
]


def test_evaluation_rows_by_hand() -> None:
    rows = {r["condition"]: r for r in evaluation_rows(GAMES)}
    none, mon = rows["none"], rows["monitor-1"]
    # per-run success 0.5, 1.0 -> mean 0.75, se = std(ddof=1)/sqrt(2) = 0.35355/1.41421 = 0.25
    assert none["success_rate"] == pytest.approx(0.75)
    assert none["success_rate_se"] == pytest.approx(0.25)
    assert none["precision"] == pytest.approx(0.75)
    # lengths per run 15, 10 -> mean 12.5, se 2.5
    assert (none["game_length"], none["game_length_se"]) == pytest.approx((12.5, 2.5))
    # monitor-1: success 1.0, 0.5; precision 1.0, 1.0 (the failure did not accuse)
    assert mon["success_rate"] == pytest.approx(0.75)
    assert mon["precision"] == pytest.approx(1.0)
    assert mon["precision_se"] == pytest.approx(0.0)
    # lengths per run 12.5, 28 -> 20.25; ratio to 12.5 = 1.62
    assert mon["game_length"] == pytest.approx(20.25)
    assert mon["length_ratio"] == pytest.approx(1.62)
    assert mon["interventions_per_game"] == pytest.approx(0.5)
    assert none["simulated"] is True


def test_single_run_uses_standard_error_across_games() -> None:
    rows = evaluation_rows([g for g in GAMES if g["repeat"] == 0 and g["condition"] == "none"])
    # p = 0.5 over n = 2 games: sqrt(0.25 / 2)
    assert rows[0]["success_rate_se"] == pytest.approx(math.sqrt(0.125))


def test_trigger_turns_first_trigger_by_outcome() -> None:
    turns = trigger_turns(GAMES)
    assert turns["success"] == [3]
    assert turns["failure"] == [12]
    assert turns["failed_without_trigger"] == 0.0


def _govsim_game(success: bool, triggers: list[int], lake: bool = True) -> dict[str, Any]:
    """A GovSim ``none`` game of 5 fishers over 12 months, no reset: decision k of the
    season (month 1's 1-5 included) falls in month (k - 1) // 5 + 1."""
    game = {**_game("none", 0, success, False, 60, triggers=triggers), "env": "govsim"}
    if lake:
        game["lake"] = {
            "stocks": [100] * 13,
            "collapse_below": 5,
            "turn_months": [(k - 1) // 5 + 1 for k in range(1, 61)],
        }
    return game


def test_govsim_trigger_turns_count_months_the_monitor_reads() -> None:
    # The monitor reads the month (TurnObservation.run_turn); a trigger records the decision
    # count: decision 23 is in month 5, decisions 8 and 11 in months 2 and 3.
    games = [_govsim_game(True, [23, 40]), _govsim_game(False, [11, 8]), _govsim_game(False, [])]
    turns = trigger_turns(games)
    assert turns["clock"] == "month"
    assert (turns["success"], turns["failure"]) == ([5], [2])
    assert turns["failed_without_trigger"] == 0.5
    # A store written before the months were kept: decision counts, named as such, for every
    # game (one figure never mixes months and decisions).
    older = trigger_turns([games[0], _govsim_game(False, [11, 8], lake=False)])
    assert older["clock"] == "catch decision"
    assert (older["success"], older["failure"]) == ([23], [8])
    # WhoDunitEnv: the game turn.
    assert trigger_turns(GAMES)["clock"] == "turn"


def test_trigger_histogram_axis_names_its_clock(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import byzllm.monitor.report as report

    drawn: list[Any] = []
    monkeypatch.setattr(report, "save_png", lambda fig, path: drawn.append(fig) or path)
    plot_trigger_histogram(
        trigger_turns([_govsim_game(True, [23])]), tmp_path / "h.png", simulated=True
    )
    plot_trigger_histogram(trigger_turns(GAMES), tmp_path / "h.png", simulated=True)
    labels = [fig.axes[0].get_xlabel() for fig in drawn]
    assert labels == ["month of the first monitor trigger", "turn of the first monitor trigger"]


def test_plots_are_written(tmp_path: Path) -> None:
    rows = evaluation_rows(GAMES)
    bars = plot_success_bars(rows, tmp_path / "a" / "bars.png")
    hist = plot_trigger_histogram(trigger_turns(GAMES), tmp_path / "hist.png", simulated=True)
    for path in (bars, hist):
        assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_success_bars_show_the_turn_count_only_monitor(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Every report of a monitor's gain shows the turn-count-only monitor beside it: the
    # Fig. 4 bars too, as a marker over the one-reset bar at its Success-Rate.
    import byzllm.monitor.report as report

    drawn: list[Any] = []

    def keep(fig: Any, path: Path) -> Path:
        drawn.append(fig)
        return path

    monkeypatch.setattr(report, "save_png", keep)
    turn_only = [{**g, "condition": "turn-only-1"} for g in GAMES if g["condition"] == "none"]
    rows = evaluation_rows([*GAMES, *turn_only])
    plot_success_bars(rows, tmp_path / "bars.png")
    (ax,) = drawn[0].axes
    marks = {line.get_label(): line for line in ax.get_lines()}
    assert "turn count only, 1 reset" in marks
    x, y = marks["turn count only, 1 reset"].get_xydata()[0]
    assert (x, y) == (1.0, pytest.approx(75.0))  # the monitor-1 bar; none's 0.75 as turn-only's
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert "turn count only, 1 reset" in legend
    # Without that condition nothing is drawn for it.
    drawn.clear()
    plot_success_bars(evaluation_rows(GAMES), tmp_path / "bars.png")
    assert "turn count only, 1 reset" not in {ln.get_label() for ln in drawn[0].axes[0].get_lines()}


def test_evaluation_rows_count_games_and_plays_apart() -> None:
    """Two test games, each played in runs 0 and 1: 2 games, 4 plays per condition. ``games``
    keeps counting plays (its old meaning); the named counts say which is which."""
    games = [
        {**_game(condition, repeat, True, True, 10), "game_id": game_id}
        for condition in ("none", "monitor-1")
        for repeat in (0, 1)
        for game_id in ("test-0", "test-1")
    ]
    for row in evaluation_rows(games):
        assert (row["games"], row["distinct_games"], row["plays"], row["runs"]) == (4, 2, 4, 2)
