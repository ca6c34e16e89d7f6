"""Summaries of GovSim runs: Survival-Rate, Survival-Time and Efficiency with 95% intervals,
per-month stock plots, and transcripts (Piatti et al. 2024; the rogue-agents paper, §4.1,
Table 2: "numbers include 95% confidence intervals").

**Intervals.** A game is the unit: with repeated runs, a game's value is the mean over its
repeats, and the interval is the percentile bootstrap over games
(:data:`~byzllm.runs._intervals.BOOTSTRAP_METHOD`), taken in the order of the game ids
(:mod:`byzllm.experiments._order`): the same games give the same interval whatever order the
store returns them in.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from byzllm._figures import save_png
from byzllm.runs import BOOTSTRAP_METHOD, Interval, bootstrap_interval
from byzllm.runs.reports import format_interval

from .._order import in_unit_order

__all__ = [
    "INTERVAL_NOTE",
    "METRICS",
    "metric_intervals",
    "plot_stocks",
    "season_stocks",
    "summary_rows",
    "transcript",
]

#: The reported metrics: ``(record key, column label, scale)``.
METRICS: tuple[tuple[str, str, float], ...] = (
    ("survival_rate", "Survival-Rate %", 100.0),
    ("survival_time", "Survival-Time (months)", 1.0),
    ("efficiency", "Efficiency %", 100.0),
)
#: How the intervals are computed, as captions state it.
INTERVAL_NOTE = f"{BOOTSTRAP_METHOD}; units: games (a game's repeats averaged)"


def metric_intervals(rows: Iterable[dict[str, Any]]) -> dict[str, Interval]:
    """Each metric's mean over games with its 95% bootstrap interval (games are the units)."""
    per_game: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for row in rows:
        for key, _, _ in METRICS:
            value = row.get(key)
            if value is not None:
                per_game[str(row["game_id"])][key].append(float(value))
    out: dict[str, Interval] = {}
    for key, _, _ in METRICS:
        values = [sum(v[key]) / len(v[key]) for v in in_unit_order(per_game) if v.get(key)]
        # Survival-Rate is a success counted over games; Efficiency is a share per game, and
        # a Wilson interval at 100% would claim games that could have done worse.
        out[key] = bootstrap_interval(values, rate=key == "survival_rate")
    return out


def _ci(interval: Interval, scale: float) -> str:
    if math.isnan(interval.value):
        return "n/a"
    value = scale * interval.value
    digits = 1
    if math.isnan(interval.low):
        return f"{value:.{digits}f}"
    low, high = scale * interval.low, scale * interval.high
    return f"{value:.{digits}f} [{low:.{digits}f}, {high:.{digits}f}]"


def summary_rows(
    rows: Sequence[dict[str, Any]], by: Sequence[str] = ("agents", "split")
) -> list[dict[str, Any]]:
    """One row per group: games (distinct), plays (a game played in two runs counts twice),
    runs, each metric with its interval (values and text)."""
    groups: dict[tuple[Any, ...], list[dict[str, Any]]] = defaultdict(list)
    for member in rows:
        groups[tuple(member.get(k) for k in by)].append(member)
    out: list[dict[str, Any]] = []
    for key in sorted(groups, key=lambda k: tuple(str(x) for x in k)):
        members = groups[key]
        intervals = metric_intervals(members)
        row = dict(zip(by, key, strict=True))
        row["games"] = len({str(r["game_id"]) for r in members})
        row["plays"] = len(members)
        row["runs"] = len({int(r.get("repeat", 0)) for r in members})
        for metric, label, scale in METRICS:
            iv = intervals[metric]
            row.update(iv.columns(metric))
            row[label] = _ci(iv, scale)
        row["resets"] = sum(int(r.get("resets", 0)) for r in members)
        row["simulated"] = any(bool(r.get("simulated")) for r in members)
        out.append(row)
    return out


def season_stocks(row: dict[str, Any]) -> list[int]:
    """A game's stock at the start of each month it played (``stocks``), then where its last
    harvest left the lake when that is lower: a collapsed game's curve ends below the
    collapse line, in the month Survival-Time counts, not at the stock it started that
    month with."""
    stocks = [int(s) for s in row.get("stocks") or []]
    after = [int(h.get("stock_after", 0)) for h in row.get("harvests") or []]
    if after and len(after) == len(stocks) and after[-1] < stocks[-1]:
        return [*stocks, after[-1]]
    return stocks


def plot_stocks(rows: Sequence[dict[str, Any]], path: str | Path, *, title: str = "") -> Path:
    """The stock at the start of each month, one line per game (PNG), ending where the last
    harvest left the lake (:func:`season_stocks`); the collapse threshold dashed. Titles of
    simulated results say so."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(6.4, 4.0))
    ax = fig.add_subplot()
    gamma = None
    for row in rows:
        stocks = season_stocks(row)
        ax.plot(range(1, len(stocks) + 1), stocks, alpha=0.6, linewidth=1.0)
        gamma = gamma if gamma is not None else row.get("collapse_below", 5)
    ax.axhline(5 if gamma is None else gamma, color="black", linestyle="--", linewidth=0.8)
    ax.set_xlabel("month")
    ax.set_ylabel("tons of fish in the lake (start of month)")
    simulated = any(bool(r.get("simulated")) for r in rows)
    label = title or "GovSim: stock per month"
    ax.set_title(f"{label} (simulated)" if simulated else label)
    ax.grid(alpha=0.3)
    return save_png(fig, path)


def _ending(row: dict[str, Any]) -> str:
    """How the season ended (GovSim's Survival-Time counts the collapse month itself)."""
    if row.get("collapsed"):
        return f"collapsed in month {row['survival_time']}"
    return "no collapse"


def transcript(row: dict[str, Any]) -> str:
    """A game as Markdown: each month's harvest and meeting (undone meetings marked)."""
    label = " (simulated)" if row.get("simulated") else ""
    # A value that is not a number (null in an edited store) reads "-", as in every table.
    efficiency = format_interval(row.get("efficiency"), scale=100)
    lines = [
        # "repeat", not "r": "r0" beside "R0 = 100" read as the starting stock.
        f"# {row['game_id']} repeat {row.get('repeat', 0)}{label}",
        "",
        f"R0 = {row['r0']}; Survival-Time {row['survival_time']} of {row['months']} months "
        f"({_ending(row)}); efficiency {efficiency}{'' if efficiency == '-' else '%'}; "
        f"resets {row.get('resets', 0)}",
        "",
    ]
    meetings = row.get("meetings") or []
    decisions = row.get("decisions") or []
    for h in row.get("harvests") or []:
        month = int(h["month"])
        lines.append(f"## Month {month}: {h['stock_before']} tons -> {h['stock_after']} tons")
        for d in decisions:
            if int(d["month"]) == month and not d.get("applied", True):
                lines.append(
                    f"- discarded ({d['decision']}): {d['fisher']} wished {d['wish']} tons"
                )
        for name, wish in h["wishes"].items():
            lines.append(f"- {name}: wished {wish}, caught {h['catches'][name]}")
        if month - 1 < len(meetings) and meetings[month - 1]:
            lines.append("")
            lines.append("Meeting:")
            for u in meetings[month - 1]:
                lines.append(f"> **{u['speaker']}**: {str(u['text'])[:1000]}")
        lines.append("")
    for i, meeting in enumerate(row.get("undone_meetings") or [], start=1):
        lines.append(f"## Meeting undone by reset {i}")
        for u in meeting:
            lines.append(f"> **{u['speaker']}** (month {u['month']}): {str(u['text'])[:1000]}")
        lines.append("")
    return "\n".join(lines)
