"""Evaluation summaries and figures of the monitor experiments (the rogue-agents paper, §5, Fig.
4/5/9, D.4).

Metrics per condition (§4.1): Success-Rate, Precision (success among games that ended in an
accusation) and Game-Length (turns, including those spent before an intervention), as the
mean over repeated runs ± the standard error of the per-run values (D.4); with a single run,
the standard error across games. Plus what the interventions cost and did: interventions per
game, and Game-Length relative to no intervention.

Figures (PNG, matplotlib Agg): the Fig. 4/5 bar chart (Success-Rate by number of resets, the
random baseline as crosses joined by a dashed line) and the Fig. 9 histogram of the turn at
which the monitor (first) triggers, split by whether the game succeeded — taken from the
``none`` condition, where a shadow monitor logs triggers without acting (as E.1 describes:
"monitor turn triggers in a game without interventions"). And the ablations (§6.1, Table 3):
each condition's Success-Rate gain over no intervention with its interval
(:func:`plot_ablation_gains`; the rows and intervals come from
:mod:`byzllm.experiments.monitor.ablations`).
"""

from __future__ import annotations

import math
import textwrap
from collections import defaultdict
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from byzllm._figures import save_png

from .conditions import CONDITION_LABELS, CONDITIONS
from .dataset import game_counts, game_flag, game_success

__all__ = [
    "MONITORS_SIMULATED_NOTE",
    "SE_NOTE",
    "evaluation_rows",
    "monitors_transferred",
    "plot_ablation_gains",
    "plot_success_bars",
    "plot_trigger_histogram",
    "trigger_turns",
]

_LABELS = CONDITION_LABELS
#: How the ± of :func:`evaluation_rows` is computed, as captions state it.
SE_NOTE = (
    "± standard error of the per-run values over repeated runs (as the rogue-agents paper's "
    "§5 says it reports; its Table 3 values match the binomial standard error over all plays "
    "pooled instead); with one run, the binomial standard error across games"
)

#: What a report of real agents' games says when their monitors were trained on simulated
#: agents' games (:func:`monitors_transferred`).
MONITORS_SIMULATED_NOTE = "monitors trained on simulated agents' games (the test games are not)"


def monitors_transferred(games: Sequence[Mapping[str, Any]]) -> bool:
    """Whether real agents' games ran monitors trained on simulated agents' games: the games
    are real, what triggered their interventions was learned from simulated agents (records'
    ``monitors_simulated``); a simulated run is labelled simulated as a whole instead."""
    if any(g.get("simulated") for g in games):
        return False
    return any(g.get("monitors_simulated") for g in games)


def _mean(xs: Sequence[float]) -> float:
    return sum(xs) / len(xs) if xs else math.nan


def _se(xs: Sequence[float]) -> float:
    vals = [x for x in xs if not math.isnan(x)]
    if len(vals) < 2:
        return math.nan
    m = _mean(vals)
    return math.sqrt(sum((x - m) ** 2 for x in vals) / (len(vals) - 1) / len(vals))


def _binomial_se(p: float, n: int) -> float:
    return math.sqrt(p * (1 - p) / n) if n > 0 and not math.isnan(p) else math.nan


def _run_metrics(games: Sequence[dict[str, Any]]) -> dict[str, float]:
    accused = [g for g in games if game_flag(g, "accused")]
    wins = sum(game_success(g) for g in games)
    accused_wins = sum(game_success(g) for g in accused)
    return {
        "success_rate": wins / len(games),
        "precision": accused_wins / len(accused) if accused else math.nan,
        "game_length": _mean([float(g["total_turns"]) for g in games]),
        "accused": float(len(accused)),
    }


def evaluation_rows(game_rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per condition: metrics ± standard error, interventions, length ratio.

    ``games`` counts plays (a test game played in two runs counts twice), as it always has;
    ``distinct_games`` and ``plays`` say each count by name (:func:`game_counts`)."""
    by_condition: dict[str, dict[int, list[dict[str, Any]]]] = defaultdict(
        lambda: defaultdict(list)
    )
    for row in game_rows:
        if row.get("split", "test") == "test":
            by_condition[str(row["condition"])][int(row.get("repeat", 0))].append(row)
    order = [c for c in CONDITIONS if c in by_condition] + sorted(
        c for c in by_condition if c not in CONDITIONS
    )
    rows: list[dict[str, Any]] = []
    for condition in order:
        runs = [by_condition[condition][r] for r in sorted(by_condition[condition])]
        per_run = [_run_metrics(games) for games in runs]
        all_games = [g for games in runs for g in games]
        if len(per_run) == 1:
            m = per_run[0]
            sr_se = _binomial_se(m["success_rate"], len(all_games))
            pr_se = _binomial_se(m["precision"], int(m["accused"]))
            len_se = _se([float(g["total_turns"]) for g in all_games])
        else:
            sr_se = _se([m["success_rate"] for m in per_run])
            pr_se = _se([m["precision"] for m in per_run])
            len_se = _se([m["game_length"] for m in per_run])
        interventions = sum(int(g["resets"]) + int(g["resamples"]) for g in all_games)
        rows.append(
            {
                "condition": condition,
                "label": _LABELS.get(condition, condition),
                "runs": len(per_run),
                "games": len(all_games),
                **game_counts(all_games),
                "success_rate": _mean([m["success_rate"] for m in per_run]),
                "success_rate_se": sr_se,
                "precision": _mean(
                    [m["precision"] for m in per_run if not math.isnan(m["precision"])]
                ),
                "precision_se": pr_se,
                "game_length": _mean([m["game_length"] for m in per_run]),
                "game_length_se": len_se,
                "interventions_per_game": interventions / len(all_games),
                "simulated": any(bool(g.get("simulated")) for g in all_games),
            }
        )
    base = next((r for r in rows if r["condition"] == "none"), None)
    for r in rows:
        r["length_ratio"] = r["game_length"] / base["game_length"] if base else math.nan
        r["success_gain"] = r["success_rate"] - base["success_rate"] if base else math.nan
    return rows


def trigger_turns(game_rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """First-trigger turns of the shadow monitor in ``none`` games, split by outcome (E.1).

    Counted on the clock the monitors read (:attr:`~byzllm.envs.TurnObservation.run_turn`),
    which ``clock`` names. A trigger records the game's turn count, which is that clock in
    WhoDunitEnv games without interventions (``"turn"``); in GovSim it counts catch
    decisions, so each first trigger is counted at its month instead (``"month"``, from the
    game's ``lake.turn_months``). A GovSim store written before the months were kept leaves
    the decision count (``"catch decision"``) for every game, so one figure never mixes two
    clocks.
    """
    firsts: list[tuple[bool, int, dict[str, Any]]] = []
    failed_untriggered = 0
    failed = 0
    for row in game_rows:
        if row.get("condition") != "none":
            continue
        turns = [int(t["turn"]) for t in row.get("triggers", [])]
        won = game_success(row)
        if not won:
            failed += 1
            if not turns:
                failed_untriggered += 1
        if turns:
            firsts.append((won, min(turns), row))
    clock = "turn"
    if any(row.get("env") == "govsim" for row in game_rows):
        by_month = [
            (won, month, row)
            for won, turn, row in firsts
            if (month := _month_of(row, turn)) is not None
        ]
        clock = "month" if len(by_month) == len(firsts) else "catch decision"
        if clock == "month":
            firsts = by_month
    return {
        "success": sorted(turn for won, turn, _ in firsts if won),
        "failure": sorted(turn for won, turn, _ in firsts if not won),
        "failed_without_trigger": failed_untriggered / failed if failed else math.nan,
        "clock": clock,
    }


def _month_of(row: Mapping[str, Any], turn: int) -> int | None:
    """The month of a GovSim game's ``turn`` (its ``lake.turn_months``); ``None`` without."""
    lake = row.get("lake")
    months = lake.get("turn_months") if isinstance(lake, Mapping) else None
    if not isinstance(months, list) or not 1 <= turn <= len(months):
        return None
    try:
        return int(months[turn - 1])
    except (TypeError, ValueError):  # a damaged record: no month to count it at
        return None


#: The x axis of the Fig. 9 histogram, by the clock :func:`trigger_turns` counted on.
_CLOCK_AXIS = {
    "turn": "turn of the first monitor trigger",
    "month": "month of the first monitor trigger",
    "catch decision": "catch decision of the first monitor trigger (all fishers, from month 1)",
}


def _title(title: str, simulated: bool) -> str:
    return f"{title} (simulated)" if simulated else title


def plot_success_bars(
    rows: Sequence[dict[str, Any]], path: str | Path, *, metric_label: str = "Success-Rate"
) -> Path:
    """Fig. 4/5: Success-Rate by resets (bars), random baseline (crosses, dashed line), and,
    where it was evaluated, the turn-count-only monitor with one reset (a diamond over the
    one-reset bar): the monitor's gain is shown beside what the turn count alone buys.

    ``metric_label`` names the success the environment's monitors predict (GovSim:
    Survival-Rate)."""
    from matplotlib.figure import Figure

    by = {r["condition"]: r for r in rows}
    fig = Figure(figsize=(6.4, 4.0))
    ax = fig.add_subplot()
    bars = [c for c in ("none", "monitor-1", "monitor-2", "resample-1") if c in by]
    xs = list(range(len(bars)))
    ax.bar(
        xs,
        [100 * by[c]["success_rate"] for c in bars],
        yerr=[100 * _nan0(by[c]["success_rate_se"]) for c in bars],
        capsize=4,
        color="#4C72B0",
        edgecolor="black",
    )
    ax.set_xticks(xs, [_LABELS[c].replace(", ", "\n") for c in bars])
    random_points = [
        (bars.index(m), 100 * by[r]["success_rate"])
        for r, m in (("random-1", "monitor-1"), ("random-2", "monitor-2"))
        if r in by and m in bars
    ]
    if "none" in bars and random_points:
        random_points.insert(0, (bars.index("none"), 100 * by["none"]["success_rate"]))
    if random_points:
        px, py = zip(*random_points, strict=True)
        ax.plot(px, py, "k--", marker="x", markersize=9, label="random baseline")
    turn_only = "turn-only-1" in by and "monitor-1" in bars
    if turn_only:
        # The paper's figure has no such control; without it a bar's height over no
        # intervention reads as the uncertainty features' gain, part of which the turn count
        # alone gives (docs/monitor.md, Ablations).
        ax.plot(
            [bars.index("monitor-1")],
            [100 * by["turn-only-1"]["success_rate"]],
            linestyle="none",
            marker="D",
            markersize=8,
            color="#C44E52",
            markeredgecolor="black",
            label=_LABELS["turn-only-1"],
        )
    if random_points or turn_only:
        ax.legend(loc="lower right")
    ax.set_ylabel(f"{metric_label} (%)")
    ax.set_ylim(0, 100)
    simulated = any(bool(r.get("simulated")) for r in rows)
    ax.set_title(_title("Monitoring and interventions", simulated))
    ax.grid(axis="y", alpha=0.3)
    return save_png(fig, path)


def plot_trigger_histogram(turns: dict[str, Any], path: str | Path, *, simulated: bool) -> Path:
    """Fig. 9: the turn of the monitor's first trigger, successful vs failed games; the axis
    names the clock :func:`trigger_turns` counted on (GovSim: the month)."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(6.4, 4.0))
    ax = fig.add_subplot()
    data = [turns["success"], turns["failure"]]
    top = max([1, *turns["success"], *turns["failure"]])
    bins = list(range(1, top + 2))
    ax.hist(
        data,
        bins=bins,
        stacked=True,
        label=["game succeeded", "game failed"],
        color=["#55A868", "#C44E52"],
        edgecolor="black",
    )
    ax.set_xlabel(_CLOCK_AXIS[turns.get("clock", "turn")])
    ax.set_ylabel("games")
    ax.legend()
    ax.set_title(_title("Monitor trigger turns, no intervention", simulated))
    return save_png(fig, path)


def plot_ablation_gains(
    rows: Sequence[dict[str, Any]],
    path: str | Path,
    *,
    note: str = "",
    metric_label: str = "Success-Rate",
) -> Path:
    """Table 3 as a figure: each condition's Success-Rate gain over no intervention (points),
    with its interval as whiskers; ``rows`` as ``ablation_rows`` gives them (``vs_none``:
    ``{value, low, high}`` in points). ``note`` (the interval method) goes under the axis."""
    from matplotlib.figure import Figure

    shown = [r for r in rows if r.get("vs_none", {}).get("value") is not None]
    fig = Figure(figsize=(6.4, 0.8 + 0.45 * max(1, len(shown))))
    ax = fig.add_subplot()
    ys = list(range(len(shown)))[::-1]  # first row on top, as in the table
    values = [float(r["vs_none"]["value"]) for r in shown]
    # Whisker lengths; an undefined interval (NaN) draws none.
    lower = [_nan0(float(r["vs_none"]["value"]) - float(r["vs_none"]["low"])) for r in shown]
    upper = [_nan0(float(r["vs_none"]["high"]) - float(r["vs_none"]["value"])) for r in shown]
    colors = ["#C44E52" if r["condition"] == "turn-only-1" else "#4C72B0" for r in shown]
    ax.barh(ys, values, xerr=[lower, upper], capsize=3, color=colors, edgecolor="black")
    ax.set_yticks(ys, [str(r.get("label", r["condition"])) for r in shown])
    ax.axvline(0.0, color="black", linewidth=0.8)
    label = f"{metric_label} gain over no intervention (points)"
    ax.set_xlabel(label + ("\n" + textwrap.fill(note, 80) if note else ""), fontsize=9)
    simulated = any(bool(r.get("simulated")) for r in rows)
    ax.set_title(_title("Ablations", simulated))
    ax.grid(axis="x", alpha=0.3)
    return save_png(fig, path)


def _nan0(x: float) -> float:
    return 0.0 if math.isnan(x) else x
