"""Report rows of WhoDunitEnv batches (the rogue-agents paper, §4.1 metrics)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from byzllm.envs.whodunit import (
    MetricSummary,
    summarize_runs,
)

from .experiment import load_games

__all__ = ["report_rows"]


def report_rows(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """One summary row per (variant, agents, suspects): metrics ± standard error.

    Simulated rows carry the simulation's parameters (``sim_params``; ``None`` otherwise).
    """
    params: dict[tuple[str, str, int], Any] = {}
    for row in rows:
        if row.get("sim_params"):
            key = (row["variant"], row["agents"], int(row.get("n_suspects", 0)))
            params.setdefault(key, row["sim_params"])
    out: list[dict[str, Any]] = []
    for (variant, agents, n), runs in sorted(load_games(rows).items()):
        s: MetricSummary = summarize_runs(runs)
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
                "parse_failures": s.parse_failures,
                "fallbacks": s.fallbacks,
                "simulated": s.simulated,
                "sim_params": params.get((variant, agents, n)),
            }
        )
    return out
