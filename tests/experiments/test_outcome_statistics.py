"""The rogue-agents paper's metrics where every report computes them alike: WhoDunit's
Precision (per run, wins over the games with an accusation; then the mean over runs) and
GovSim's Efficiency (a share per game, not a success counted over games)."""

from __future__ import annotations

import asyncio
from typing import Any

from byzllm.experiments.govsim.report import metric_intervals
from byzllm.experiments.monitor.environments import get_environment
from byzllm.experiments.monitor.outcomes import outcome_rows
from byzllm.monitor.report import evaluation_rows


def _game(game: str, repeat: int, success: bool, accused: bool) -> dict[str, Any]:
    return {
        "game_id": game,
        "repeat": repeat,
        "condition": "none",
        "success": success,
        "accused": accused,
        "total_turns": 5,
        "resets": 0,
        "resamples": 0,
        "simulated": True,
        "split": "test",
    }


def test_the_viewers_precision_is_the_reports() -> None:
    """Run 0: two accusations, two wins; run 1: one accusation, lost: (1 + 0) / 2 = 0.5. The
    mean of per-game shares gave 0.75 (game A 1/2, game B 1/1)."""
    games = [
        _game("A", 0, True, True),
        _game("B", 0, True, True),
        _game("A", 1, False, True),
        _game("B", 1, False, False),
    ]
    (report,) = evaluation_rows(games)
    (viewer,) = outcome_rows(games, get_environment("whodunit").metrics)
    assert report["precision"] == viewer["precision"] == 0.5


def test_efficiency_at_100_percent_gets_no_wilson_interval() -> None:
    rows = [
        {"game_id": f"g{i}", "efficiency": 1.0, "survival_rate": 1.0, "survival_time": 12.0}
        for i in range(20)
    ]
    intervals = metric_intervals(rows)
    assert (intervals["efficiency"].low, intervals["efficiency"].high) == (1.0, 1.0)
    assert intervals["survival_rate"].low < 0.9  # a success counted over 20 games
    (row,) = outcome_rows(
        [{**r, "condition": "none", "repeat": 0, "outcome": r} for r in rows],
        get_environment("govsim").metrics,
    )
    assert (row["efficiency_low"], row["efficiency_high"]) == (1.0, 1.0)
    assert row["survival_rate_low"] < 0.9


def test_a_single_solution_is_recorded_as_the_only_one() -> None:
    from byzllm.agents.codegen import Solution
    from byzllm.envs.codegen._debate import _choose

    solution = Solution(coder="c", role="Programmer", round=1, code="def f(): return 1")
    chosen = asyncio.run(_choose(None, [solution], [], "tests", "k", "simulated", None))  # type: ignore[arg-type]
    assert chosen == (0, "only")
