"""Report rows of WhoDunitEnv batches (the rogue-agents paper, §4.1 metrics)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from byzllm.envs.whodunit import (
    MetricSummary,
    summarize_runs,
)
from byzllm.runs import BOOTSTRAP_METHOD, weighted_mean_intervals

from .experiment import load_games

__all__ = ["INTERVAL_NOTE", "game_intervals", "report_rows"]

#: What the intervals of the WhoDunit report are.
INTERVAL_NOTE = BOOTSTRAP_METHOD.replace("over units", "over games (repeats pooled)")


def game_intervals(games: Sequence[dict[str, Any]]) -> dict[str, tuple[float, float]]:
    """95% bootstrap intervals of Success-Rate, Precision and Game-Length over games.

    Precision is the success share among games with an accusation: a weighted mean of
    success with the accusation as weight (the rogue-agents paper, §4.1).
    """
    values = [[float(g["success"]), float(g["success"]), float(g["total_turns"])] for g in games]
    weights = [[1.0, float(bool(g.get("accused"))), 1.0] for g in games]
    if not values:
        return {}
    _, low, high = weighted_mean_intervals(values, weights)
    return {
        name: (float(low[k]), float(high[k]))
        for k, name in enumerate(("success_rate", "precision", "game_length"))
    }


def report_rows(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """One summary row per (variant, agents, suspects): metrics ± standard error (over runs,
    the rogue-agents paper, App. D.4) and ``<metric>_low`` / ``<metric>_high``, the 95%
    bootstrap interval over games (:data:`INTERVAL_NOTE`).

    Simulated rows carry the simulation's parameters (``sim_params``; ``None`` otherwise).
    """
    params: dict[tuple[str, str, int], Any] = {}
    by_key: dict[tuple[str, str, int], list[dict[str, Any]]] = {}
    for row in rows:
        key = (row["variant"], row["agents"], int(row.get("n_suspects", 0)))
        by_key.setdefault(key, []).append(row)
        if row.get("sim_params"):
            params.setdefault(key, row["sim_params"])
    out: list[dict[str, Any]] = []
    for (variant, agents, n), runs in sorted(load_games(rows).items()):
        s: MetricSummary = summarize_runs(runs)
        bounds = game_intervals(by_key.get((variant, agents, n), []))
        out.append(
            {
                "variant": variant,
                "agents": agents,
                "suspects": n,
                "runs": s.runs,
                "games": s.games,
                "success_rate": s.success_rate,
                "success_rate_se": s.success_rate_se,
                "precision": s.precision,
                "precision_se": s.precision_se,
                "game_length": s.game_length,
                "game_length_se": s.game_length_se,
                **{
                    f"{name}_{side}": value
                    for name, pair in bounds.items()
                    for side, value in zip(("low", "high"), pair, strict=True)
                },
                "interval_method": INTERVAL_NOTE,
                "parse_failures": s.parse_failures,
                "fallbacks": s.fallbacks,
                "simulated": s.simulated,
                "sim_params": params.get((variant, agents, n)),
            }
        )
    return out
