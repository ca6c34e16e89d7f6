"""Report rows of WhoDunitEnv batches (the rogue-agents paper, §4.1 metrics)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from byzllm.envs.whodunit import (
    MetricSummary,
    summarize_runs,
)
from byzllm.monitor.dataset import game_counts, game_flag, game_success
from byzllm.runs import (
    BOOTSTRAP_METHOD,
    degenerate_rate_bounds,
    percentile_bounds,
    resample_counts,
)

from .._order import natural_key
from .experiment import load_games

__all__ = ["INTERVAL_NOTE", "game_estimates", "game_intervals", "report_rows"]

#: What the intervals of the WhoDunit report are.
INTERVAL_NOTE = BOOTSTRAP_METHOD.replace(
    "over units", "over games (a game's repeats resampled together)"
)

_METRICS = ("success_rate", "precision", "game_length")


def game_intervals(games: Sequence[dict[str, Any]]) -> dict[str, tuple[float, float]]:
    """95% bootstrap intervals of Success-Rate, Precision and Game-Length over games
    (:func:`game_estimates` without the point)."""
    return {name: (low, high) for name, (_, low, high) in game_estimates(games).items()}


def game_estimates(
    games: Sequence[Mapping[str, Any]], *, resamples: int = 2000
) -> dict[str, tuple[float, float, float]]:
    """Success-Rate, Precision and Game-Length with their 95% bootstrap intervals over games
    (``resamples`` draws): ``(point, low, high)`` each.

    The statistic is the one the report prints (:func:`~byzllm.envs.whodunit.summarize_runs`):
    each metric per run (repeat), then the mean over runs; Precision is the success share
    among a run's games with an accusation (the rogue-agents paper, §4.1). A game played in
    several repeats is one unit: its repeats are resampled together, since they share its
    difficulty. The games are resampled in the order of their ids (:func:`natural_key`), not
    the order of ``games``: a store's order changes when a run grows or resumes.
    """
    if not games:
        return {}
    unique = sorted({g["game_id"] for g in games}, key=natural_key)
    ids = {game_id: k for k, game_id in enumerate(unique)}
    runs = {r: k for k, r in enumerate(sorted({int(g.get("repeat", 0)) for g in games}))}
    # Per game and run: games played, won, with an accusation, won with one, turns.
    sums = np.zeros((len(ids), 5, len(runs)))
    for g in games:
        # Read strictly: rows read back from CSV hold "False", which bool() counts as true.
        accused = float("accused" in g and game_flag(g, "accused"))
        won = float(game_success(g))
        played = (1.0, won, accused, won * accused, float(g["total_turns"]))
        sums[ids[g["game_id"]], :, runs[int(g.get("repeat", 0))]] += played
    point = _per_run_means(sums.sum(axis=0)[None])
    if len(ids) == 1:
        low, high = point[0], point[0]
    else:
        counts = resample_counts(len(ids), resamples=resamples)
        with np.errstate(invalid="ignore", divide="ignore"):
            resampled = np.einsum("rg,gmk->rmk", counts, sums)
        low, high = percentile_bounds(_per_run_means(resampled))
    # Success-Rate and Precision are rates: every game won (or lost) is not certainty.
    units = np.array([len(ids), int((sums[:, 2, :].sum(axis=1) > 0).sum()), 0])
    rate_low, rate_high = degenerate_rate_bounds(point[0], low, high, units)
    low, high = np.where(units > 0, rate_low, low), np.where(units > 0, rate_high, high)
    return {
        name: (float(point[0, k]), float(low[k]), float(high[k])) for k, name in enumerate(_METRICS)
    }


def _per_run_means(totals: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """Success-Rate, Precision and Game-Length of each resample (rows of ``totals``: per
    quantity of :func:`game_intervals` and run, the sums), averaged over the runs that
    define each (NaN where none does)."""
    played, won, accused, won_accused, turns = (totals[:, k, :] for k in range(5))
    with np.errstate(invalid="ignore", divide="ignore"):
        per_run = np.stack(
            [
                np.where(played > 0, won / played, np.nan),
                np.where(accused > 0, won_accused / accused, np.nan),
                np.where(played > 0, turns / played, np.nan),
            ],
            axis=1,
        )
    defined = np.isfinite(per_run)
    count = defined.sum(axis=2)
    total = np.where(defined, per_run, 0.0).sum(axis=2)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(count > 0, total / np.maximum(count, 1), np.nan)


def report_rows(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """One summary row per (variant, agents, suspects): metrics ± standard error (over runs,
    as the rogue-agents paper's §5 reports them) and ``<metric>_low`` / ``<metric>_high``, the 95%
    bootstrap interval over games (:data:`INTERVAL_NOTE`).

    ``games`` counts plays (a game played in two runs counts twice), as it always has;
    ``distinct_games`` and ``plays`` say each count by name (:func:`game_counts`).

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
        members = by_key.get((variant, agents, n), [])
        bounds = game_intervals(members)
        out.append(
            {
                "variant": variant,
                "agents": agents,
                "suspects": n,
                "runs": s.runs,
                "games": s.games,
                **game_counts(members),
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
