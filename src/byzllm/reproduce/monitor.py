"""The rogue-agents paper's published results, and our monitor runs set beside them.

Figures 4-6 are bar charts; the paper's text gives their gains (§5, §6.2), which is what we
compare: the Success-Rate gain of the monitor with one (and two) resets over no intervention,
in points. Tables 2 and 3 are compared cell by cell. Ours come with 95% bootstrap intervals
over games (paired with no intervention for the gains).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from byzllm.experiments.monitor.ablations import success_difference
from byzllm.experiments.monitor.environments import get_environment
from byzllm.experiments.monitor.outcomes import outcome_rows

from ._diff import shown_difference

__all__ = [
    "FIG4_GAINS",
    "FIG5_GAINS",
    "FIG6_GAINS",
    "TABLE2",
    "TABLE3",
    "gain_comparison",
    "size_comparison",
    "table2_comparison",
    "table3_comparison",
]

#: §5: Success-Rate gain (points) of one reset over no intervention, WhoDunitEnv-Asym.
FIG4_GAINS = {"GPT-4o": 6.1, "Llama-3.1-70B": 10.6, "Qwen-2.5-72B": 10.3}
#: §5: the same on WhoDunitEnv-Sym.
FIG5_GAINS = {"GPT-4o": 4.1, "Llama-3.1-70B": 7.0, "Qwen-2.5-72B": 4.5}
#: §6.2 (Llama-3.1-70B, monitor trained on 10 suspects): suspects -> (one reset, two resets).
FIG6_GAINS = {6: (14.0, 16.5), 10: (10.7, 15.4), 14: (11.7, 17.4)}
#: Table 3 (Qwen-2.5-72B): condition -> (Success-Rate %, average game length).
TABLE3 = {
    "monitor-2": (72.2, 42.5),
    "monitor-1": (70.1, 31.7),
    "second-best-1": (69.3, 34.0),
    "worst-1": (62.0, 30.6),
    "resample-1": (61.3, 20.1),
    "random": (62.5, 34.3),  # "best baseline": the better random condition
    "none": (59.8, 23.9),
}
#: Table 2 (GovSim): model -> condition -> (Survival-Rate %, Survival-Time, Efficiency %).
TABLE2 = {
    "Qwen-1.5-110B": {"none": (35.0, 7.5, 49.4), "monitor-1": (55.0, 8.6, 48.8)},
    "GPT-4o": {"none": (100.0, 12.0, 69.1), "monitor-1": (100.0, 12.0, 76.0)},
}


def _put(
    row: dict[str, Any], name: str, ours: float | None, low: Any, high: Any, paper: float
) -> None:
    row[name] = None if ours is None else round(ours, 1)
    row[f"{name}_low"] = None if low is None else round(float(low), 1)
    row[f"{name}_high"] = None if high is None else round(float(high), 1)
    row[f"{name}_paper"] = paper
    row[f"{name}_diff"] = None if ours is None else shown_difference(ours - paper)


def _gain(games: Sequence[dict[str, Any]], condition: str) -> tuple[float | None, Any, Any]:
    d = success_difference(games, condition, "none")
    if d is None:
        return None, None, None
    return 100 * d.value, 100 * d.low, 100 * d.high


def _simulated(games: Sequence[Mapping[str, Any]]) -> bool:
    return any(bool(g.get("simulated")) for g in games)


def gain_comparison(
    games: Sequence[dict[str, Any]], published: Mapping[str, float]
) -> list[dict[str, Any]]:
    """Figs. 4-5: our gain of one reset over none beside each model's published gain."""
    ours, low, high = _gain(games, "monitor-1")
    rows = []
    for model, paper in published.items():
        row: dict[str, Any] = {"paper model": model, "simulated": _simulated(games)}
        _put(row, "gain", ours, low, high, paper)
        rows.append(row)
    return rows


def size_comparison(
    games_by_size: Mapping[int, Sequence[dict[str, Any]]],
) -> list[dict[str, Any]]:
    """Fig. 6: per lineup size, gains of one and two resets over none, ours and the paper's."""
    rows = []
    for size, games in sorted(games_by_size.items()):
        paper = FIG6_GAINS.get(size)
        if paper is None:
            continue
        row: dict[str, Any] = {"suspects": size, "simulated": _simulated(games)}
        for name, condition, published in (
            ("gain_1", "monitor-1", paper[0]),
            ("gain_2", "monitor-2", paper[1]),
        ):
            ours, low, high = _gain(games, condition)
            _put(row, name, ours, low, high, published)
        rows.append(row)
    return rows


def table3_comparison(games: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Table 3: Success-Rate and game length per condition, ours and the paper's."""
    env = get_environment("whodunit")
    by_condition = {r["condition"]: r for r in outcome_rows(games, env.metrics)}
    randoms = [c for c in ("random-1", "random-2") if c in by_condition]
    best_random = max(randoms, key=lambda c: by_condition[c]["success_rate"], default=None)
    rows = []
    for condition, (success, length) in TABLE3.items():
        key = best_random if condition == "random" else condition
        ours = by_condition.get(key) if key else None
        row: dict[str, Any] = {
            "condition": f"{condition} ({key})" if condition == "random" else condition,
            "simulated": _simulated(games),
        }
        if ours is None:
            _put(row, "success", None, None, None, success)
            _put(row, "length", None, None, None, length)
        else:
            _put(
                row,
                "success",
                100 * ours["success_rate"],
                100 * ours["success_rate_low"],
                100 * ours["success_rate_high"],
                success,
            )
            _put(
                row,
                "length",
                ours["game_length"],
                ours["game_length_low"],
                ours["game_length_high"],
                length,
            )
        rows.append(row)
    return rows


def table2_comparison(games: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Table 2: Survival-Rate, Survival-Time, Efficiency without and with the monitor."""
    env = get_environment("govsim")
    by_condition = {r["condition"]: r for r in outcome_rows(games, env.metrics)}
    rows = []
    for model, conditions in TABLE2.items():
        for condition, (rate, time, efficiency) in conditions.items():
            ours = by_condition.get(condition)
            row: dict[str, Any] = {
                "paper model": model,
                "condition": condition,
                "simulated": _simulated(games),
            }
            for name, key, scale, paper in (
                ("survival_rate", "survival_rate", 100.0, rate),
                ("survival_time", "survival_time", 1.0, time),
                ("efficiency", "efficiency", 100.0, efficiency),
            ):
                if ours is None or ours.get(key) is None:
                    _put(row, name, None, None, None, paper)
                else:
                    _put(
                        row,
                        name,
                        scale * ours[key],
                        scale * ours[f"{key}_low"],
                        scale * ours[f"{key}_high"],
                        paper,
                    )
            rows.append(row)
    return rows
