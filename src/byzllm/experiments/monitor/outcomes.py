"""An environment's outcome metrics per evaluation condition, with 95% bootstrap intervals.

For environments whose report shows more than success (GovSim: Survival-Rate, Survival-Time
and Efficiency, the rogue-agents paper, Table 2: "numbers include 95% confidence
intervals"), each condition's metrics over the test games: a game is the unit (its repeats
averaged), and the interval is the percentile bootstrap over games
(:data:`~byzllm.runs._intervals.BOOTSTRAP_METHOD`), taken in the order of the game ids
(:mod:`byzllm.experiments._order`), so the records' order does not move it. Every condition
appears beside the others: no intervention, the monitor, the random baseline and the
turn-count-only monitor.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from byzllm.experiments.whodunit.report import game_estimates
from byzllm.monitor.conditions import CONDITION_LABELS, CONDITIONS
from byzllm.monitor.dataset import game_counts, game_flag, game_success
from byzllm.runs import BOOTSTRAP_METHOD, bootstrap_interval

from .._order import in_unit_order
from .environments import OutcomeMetric

__all__ = ["OUTCOME_NOTE", "outcome_rows"]

#: How the intervals of :func:`outcome_rows` are computed, as captions state it.
OUTCOME_NOTE = f"{BOOTSTRAP_METHOD}; units: test games (a game's repeats averaged)"


def _value(row: dict[str, Any], key: str) -> float | None:
    outcome = row.get("outcome") or {}
    if key in outcome:
        return float(outcome[key])
    if key == "success_rate":
        return float(game_success(row))
    if key == "game_length":
        return float(row.get("total_turns", 0))
    if key == "precision" and "accused" in row:
        # WhoDunit's Precision: success among the games that ended in an accusation; a game
        # without one has no value, as in the report's per-run Precision.
        return float(game_success(row)) if game_flag(row, "accused") else None
    return None


def outcome_rows(
    game_rows: Sequence[dict[str, Any]], metrics: Sequence[OutcomeMetric]
) -> list[dict[str, Any]]:
    """One row per condition: ``{metric: value, metric_low, metric_high}`` (fractions for
    rates), games (distinct: a game's plays over the runs are one unit of the intervals),
    ``distinct_games`` and ``plays`` (:func:`~byzllm.monitor.dataset.game_counts`), runs,
    interventions per game and the simulated label."""
    per: dict[str, dict[str, dict[str, list[float]]]] = defaultdict(
        lambda: defaultdict(lambda: defaultdict(list))
    )
    runs: dict[str, set[int]] = defaultdict(set)
    interventions: dict[str, list[int]] = defaultdict(list)
    simulated: dict[str, bool] = defaultdict(bool)
    condition_rows: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in game_rows:
        if row.get("split", "test") != "test":
            continue
        condition = str(row["condition"])
        runs[condition].add(int(row.get("repeat", 0)))
        interventions[condition].append(int(row.get("resets", 0)) + int(row.get("resamples", 0)))
        simulated[condition] |= bool(row.get("simulated"))
        condition_rows[condition].append(row)
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
            **game_counts(condition_rows[condition]),
            "runs": len(runs[condition]),
        }
        for m in metrics:
            if m.key == "precision":
                # WhoDunit's Precision as its report computes it (per run, wins over the games
                # with an accusation; then the mean over runs): a mean of per-game shares
                # weighed a game with one accusation like one with three.
                value, low, high = game_estimates(condition_rows[condition])["precision"]
                row_out.update({m.key: value, f"{m.key}_low": low, f"{m.key}_high": high})
                continue
            values = [sum(v[m.key]) / len(v[m.key]) for v in in_unit_order(games) if v.get(m.key)]
            row_out.update(bootstrap_interval(values, rate=m.kind == "rate").columns(m.key))
        played = interventions[condition]
        row_out["interventions_per_game"] = sum(played) / len(played) if played else 0.0
        row_out["simulated"] = simulated[condition]
        out.append(row_out)
    return out
