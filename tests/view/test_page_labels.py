"""What a page says about where its results come from, beside the report commands' words."""

from __future__ import annotations

from typing import Any

from byzllm.monitor.report import MONITORS_SIMULATED_NOTE, monitors_transferred
from byzllm.view._games import monitor_sections
from byzllm.view._html import esc


def _monitor_game(
    condition: str, game: int, repeat: int, success: bool, **fields: Any
) -> dict[str, Any]:
    """A WhoDunit monitor evaluation's test game, as the store gives it back."""
    return {
        "env": "whodunit",
        "split": "test",
        "condition": condition,
        "game_id": f"asym-test-{game:04d}",
        "repeat": repeat,
        "success": success,
        "accused": True,
        "total_turns": 12,
        "resets": int(condition != "none" and not success),
        "resamples": 0,
        "triggers": [],
        "turn_scores": [],
        "transcript": [],
        "agents": "llm",
        "simulated": False,
        **fields,
    }


def _evaluation(**fields: Any) -> list[dict[str, Any]]:
    return [
        _monitor_game(condition, game, repeat, (game + repeat) % 3 != 0, **fields)
        for condition in ("none", "monitor-1")
        for game in range(4)
        for repeat in range(2)
    ]


def _summary(games: list[dict[str, Any]]) -> str:
    sections, _ = monitor_sections(games, max_details=0)
    return next(s.html for s in sections if s.anchor == "summary")


def test_real_games_with_monitors_trained_on_simulated_ones_say_so() -> None:
    """`monitor report` captions such a run "monitors trained on simulated agents' games";
    the page said only "real-model results" in its header."""
    games = _evaluation(monitors_simulated=True)
    assert monitors_transferred(games)
    assert esc(MONITORS_SIMULATED_NOTE) in _summary(games)


def test_monitors_trained_on_the_same_kind_of_agents_add_no_note() -> None:
    real = _evaluation(monitors_simulated=False)
    simulated = _evaluation(monitors_simulated=True, simulated=True, agents="simulated")
    for games in (real, simulated, _evaluation()):
        assert not monitors_transferred(games)
        assert esc(MONITORS_SIMULATED_NOTE) not in _summary(games)
