"""An environment's outcome metrics per evaluation condition, with 95% bootstrap intervals.

For environments whose report shows more than success (GovSim: Survival-Rate, Survival-Time
and Efficiency, the rogue-agents paper, Table 2: "numbers include 95% confidence
intervals"), each condition's metrics over the test games: a game is the unit (its repeats
averaged), and the interval is the percentile bootstrap over games
(:data:`~byzllm.runs._intervals.BOOTSTRAP_METHOD`). Every condition appears beside the
others: no intervention, the monitor, the random baseline and the turn-count-only monitor.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from byzllm.monitor.conditions import CONDITION_LABELS, CONDITIONS
from byzllm.runs import BOOTSTRAP_METHOD, bootstrap_interval

from .environments import OutcomeMetric

__all__ = ["OUTCOME_NOTE", "outcome_rows"]

#: How the intervals of :func:`outcome_rows` are computed, as captions state it.
OUTCOME_NOTE = f"{BOOTSTRAP_METHOD}; units: test games (a game's repeats averaged)"


def _value(row: dict[str, Any], key: str) -> float | None:
    outcome = row.get("outcome") or {}
    if key in outcome:
        return float(outcome[key])
    if key == "success_rate":
        return float(bool(row.get("success")))
    if key == "game_length":
        return float(row.get("total_turns", 0))
    if key == "precision" and "accused" in row:
        # WhoDunit's Precision: success among the games that ended in an accusation; a game
        # without one has no value, as in the report's per-run Precision.
        return float(bool(row.get("success"))) if row["accused"] else None
    return None


#: Metrics whose games count unequally (a game's repeats may or may not end in an
#: accusation): per run a ratio of sums over games, then the mean over runs.
_POOLED = frozenset({"precision"})


def _mean_of_run_ratios(rows: npt.NDArray[np.float64]) -> float:
    """Per run (columns 2k and 2k + 1: numerator and denominator over the games), the ratio
    of sums; their mean over the runs that have a denominator (the report's statistic)."""
    totals = rows.sum(axis=0).reshape(-1, 2)
    defined = totals[:, 1] > 0
    if not defined.any():
        return float("nan")
    return float((totals[defined, 0] / totals[defined, 1]).mean())


def outcome_rows(
    game_rows: Sequence[dict[str, Any]], metrics: Sequence[OutcomeMetric]
) -> list[dict[str, Any]]:
    """One row per condition: ``{metric: value, metric_low, metric_high}`` (fractions for
    rates), games, runs, interventions per game and the simulated label."""
    per: dict[str, dict[str, dict[str, list[float]]]] = defaultdict(
        lambda: defaultdict(lambda: defaultdict(list))
    )
    runs: dict[str, set[int]] = defaultdict(set)
    interventions: dict[str, list[int]] = defaultdict(list)
    simulated: dict[str, bool] = defaultdict(bool)
    # Per condition, game and run: (wins with an accusation, accusations), for _POOLED.
    by_run: dict[str, dict[str, dict[int, tuple[float, float]]]] = defaultdict(
        lambda: defaultdict(dict)
    )
    for row in game_rows:
        if row.get("split", "test") != "test":
            continue
        condition = str(row["condition"])
        runs[condition].add(int(row.get("repeat", 0)))
        interventions[condition].append(int(row.get("resets", 0)) + int(row.get("resamples", 0)))
        simulated[condition] |= bool(row.get("simulated"))
        if "accused" in row:
            won = float(bool(row.get("success")) and bool(row["accused"]))
            counts = by_run[condition][str(row["game_id"])]
            seen = counts.get(int(row.get("repeat", 0)), (0.0, 0.0))
            counts[int(row.get("repeat", 0))] = (seen[0] + won, seen[1] + bool(row["accused"]))
        for m in metrics:
            value = _value(row, m.key)
            if value is not None:
                per[condition][str(row["game_id"])][m.key].append(value)
    order = [c for c in CONDITIONS if c in per] + sorted(c for c in per if c not in CONDITIONS)
    out: list[dict[str, Any]] = []
    for condition in order:
        games = per[condition]
        row_out: dict[str, Any] = {
            "condition": condition,
            "label": CONDITION_LABELS.get(condition, condition),
            "games": len(games),
            "runs": len(runs[condition]),
        }
        for m in metrics:
            if m.key in _POOLED:
                # The paper's Precision, as the report computes it: per run, wins over the
                # games with an accusation; then the mean over runs. A mean of per-game shares
                # weighed a game with one accusation like one with three.
                run_order = sorted(runs[condition])
                table = [
                    [x for r in run_order for x in by_run[condition][game].get(r, (0.0, 0.0))]
                    for game in games
                ]
                iv = bootstrap_interval(table, _mean_of_run_ratios, rate=True)
            else:
                values = [sum(v[m.key]) / len(v[m.key]) for v in games.values() if v.get(m.key)]
                iv = bootstrap_interval(values, rate=m.kind == "rate")
            row_out.update(iv.columns(m.key))
        played = interventions[condition]
        row_out["interventions_per_game"] = sum(played) / len(played) if played else 0.0
        row_out["simulated"] = simulated[condition]
        out.append(row_out)
    return out
