"""Pages of game runs: WhoDunit batches, monitor evaluations, and any other record kind.

A WhoDunit game opens its transcript turn by turn: who acted, the message, and the tokens at
the decision positions coloured by the entropy of their distribution (green: sure, red:
spread), the signal the rogue-agents paper's monitors read (§3). A monitor evaluation game
opens its triggers and resets (§4.2), a GovSim one also its stock curve with them marked
(:mod:`._lake`). Record kinds the viewer has no dedicated page for are
still listed, with their fields, so every run can be looked at.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

from byzllm.runs.reports import finite_number, format_interval

from ._health import health_section
from ._html import TEXT_LIMIT, Section, Units, bounded, cut, esc, table_html
from ._lake import lake_svg, monitor_lake_svg

__all__ = [
    "bars_svg",
    "codegen_sections",
    "generic_sections",
    "govsim_sections",
    "is_evaluation",
    "monitor_sections",
    "whodunit_sections",
]


#: The background of a score or entropy that is not a number (shown as "-").
_NOT_A_NUMBER = "#eaeef2"


def _token_html(token: str, entropy: Any, n_alternatives: int, title: str = "") -> str:
    """A decision token coloured by its distribution's entropy: green (sure) to red (spread),
    in proportion to the entropy over its maximum, log(k); grey, with ``H=-``, for an entropy
    that is not a number (:func:`~byzllm.runs.reports.finite_number`)."""
    h = finite_number(entropy)
    top = max(math.log(max(n_alternatives, 2)), 1e-9)
    if h is None:
        colour = _NOT_A_NUMBER
    else:
        share = min(1.0, max(0.0, h / top))
        colour = f"hsl({int(120 * (1 - share))},70%,80%)"
    shown = format_interval(h, digits=2)
    tip = f"entropy {shown} nats" + (f"; {title}" if title else "")
    return (
        f"<span class='tok' style='background:{colour}' title='{esc(tip)}'>{esc(token)} "
        f"<small>H={shown}</small></span>"
    )


def _token(distribution: Sequence[Sequence[Any]]) -> str:
    if not distribution:
        return ""
    from byzllm.errors import InputError
    from byzllm.monitor import position_entropies

    try:
        (h,) = position_entropies([[(str(t), float(lp)) for t, lp in distribution]])
    except (InputError, ValueError, TypeError, OverflowError):  # a stored value not a number
        return f"<span class='tok'>{esc(distribution[0][0])}</span>"
    alternatives = ", ".join(f"{tok!s} {math.exp(float(lp)):.2f}" for tok, lp in distribution[:5])
    return _token_html(str(distribution[0][0]), h, len(distribution), f"top tokens: {alternatives}")


def _transcript(turns: Sequence[Mapping[str, Any]]) -> str:
    rows = []
    for t in sorted(turns, key=_turn_order):
        tokens = " ".join(_token(d) for d in t.get("distributions") or [])
        flags = [
            name
            for name in ("hallucination", "repetition", "fallback")
            if t.get(name) and name != "fallback"
        ]
        # A pass for want of an action the agent wrote, or one for an action the rules refused
        # (an invalid move); a record stored before "rejected" was tells only the first.
        if t.get("rejected"):
            flags.append("invalid (passed)")
        elif t.get("fallback"):
            flags.append("passed (fallback)")
        elif not t.get("valid", True):
            flags.append("invalid")
        rows.append(
            {
                "turn": t.get("turn"),
                "role": t.get("role"),
                "agent": t.get("agent"),
                "message": t.get("message") or t.get("decision"),
                "decision tokens": tokens,
                "flags": ", ".join(flags),
            }
        )
    head = "".join(
        f"<th>{c}</th>" for c in ("turn", "role", "agent", "message", "decision tokens", "flags")
    )
    body = "".join(
        "<tr>"
        f"<td>{esc(r['turn'])}</td><td>{esc(r['role'])}</td><td>{esc(r['agent'])}</td>"
        f"<td style='text-align:left'>{esc(r['message'])}</td>"
        f"<td style='text-align:left'>{r['decision tokens']}</td><td>{esc(r['flags'])}</td>"
        "</tr>"
        for r in rows
    )
    return f"<table class='transcript'><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _turn_order(row: Mapping[str, Any]) -> tuple[bool, float]:
    """Where a stored turn goes in its transcript: by its number, one without a number
    (``null`` or a text in an edited store) last."""
    turn = finite_number(row.get("turn"))
    return (turn is None, turn or 0.0)


def _turn_key(row: Mapping[str, Any]) -> tuple[float, str] | None:
    """(turn, role): how a monitor game's scores, triggers and transcript rows find each
    other; None (matching nothing) for a turn that is not a number."""
    turn = finite_number(row.get("turn"))
    return None if turn is None else (turn, str(row.get("role")))


def _game_key(row: Mapping[str, Any]) -> tuple[str, float | None]:
    """(game, repeat): how a WhoDunit game finds its turns (a repeat that is not a number
    matches only turns whose repeat is not one either)."""
    return (str(row["game_id"]), finite_number(row.get("repeat", 0)))


def _game_row(game: Mapping[str, Any], **columns: Any) -> dict[str, Any]:
    """A WhoDunit or GovSim game in the unit list: its id (``<game>/r<repeat>``, the key of its
    trace), game and repeat, then the environment's ``columns``, then its resets."""
    return {
        "id": f"{game['game_id']}/r{game.get('repeat', 0)}",
        "game": game["game_id"],
        "repeat": game.get("repeat", 0),
        **columns,
        "resets": game.get("resets", 0),
    }


def _units_section(
    title: str,
    columns: list[str],
    filters: list[str],
    rows: list[dict[str, Any]],
    details: dict[str, str],
    *,
    anchor: str = "games",
    missing_detail: str = Units.missing_detail,
) -> Section:
    """The section listing a run's units (games or problems), each row opening its detail."""
    units = Units(columns, filters, rows, details, missing_detail)
    return Section(title, units=units, anchor=anchor)


def whodunit_sections(
    games: Sequence[Mapping[str, Any]],
    turns: Sequence[Mapping[str, Any]],
    *,
    max_details: int,
) -> tuple[list[Section], bool]:
    """The sections of a WhoDunit batch: the report table, health, and every game."""
    from byzllm.experiments.whodunit.report import INTERVAL_NOTE, report_rows

    rows = report_rows([dict(g) for g in games])
    simulated = any(bool(g.get("simulated")) for g in games)
    shown = [
        {
            # Distinct games, then their plays over the runs, as `whodunit report`.
            **_columns(r, "variant", "agents", "suspects"),
            "games": r["distinct_games"],
            **_columns(r, "plays", "runs"),
            "Success-Rate %": _pct_ci(r, "success_rate", 100),
            "Precision %": _pct_ci(r, "precision", 100),
            "Game-Length": _pct_ci(r, "game_length", 1, digits=2),
        }
        for r in rows
    ]
    sections = [
        Section(
            "WhoDunitEnv: Success-Rate, Precision, Game-Length (the rogue-agents paper, §4.1)",
            table_html(shown, note=f"brackets: {INTERVAL_NOTE}"),
            anchor="summary",
        ),
        health_section(list(games)),
    ]
    by_game: dict[tuple[str, float | None], list[Mapping[str, Any]]] = {}
    for t in turns:
        by_game.setdefault(_game_key(t), []).append(t)
    unit_rows: list[dict[str, Any]] = []
    details: dict[str, str] = {}
    for g in games:
        row = _game_row(
            g,
            variant=g["variant"],
            outcome="success" if g["success"] else "failure",
            turns=g["total_turns"],
        )
        key = row["id"]
        unit_rows.append(row)
        game_turns = by_game.get(_game_key(g), [])
        if len(details) < max_details and game_turns:
            details[key] = (
                f"<p>culprit {esc(g.get('culprit'))}, accused "
                f"{esc(g.get('accused_suspect'))}: "
                + (
                    "<span class=ok>success</span>"
                    if g["success"]
                    else "<span class=bad>failure</span>"
                )
                + "</p>"
                + _transcript(game_turns)
            )
    sections.append(
        _units_section(
            "Games (click one for its transcript; tokens coloured by entropy)",
            ["game", "repeat", "variant", "outcome", "turns", "resets"],
            ["variant", "outcome"],
            unit_rows,
            details,
            missing_detail=(
                "no transcript for this game in the page (no turn records, or --max-details)"
            ),
        )
    )
    return sections, simulated


def _columns(row: Mapping[str, Any], *keys: str) -> dict[str, Any]:
    """A report row's ``keys`` shown as they are, in that order (the table's leading columns)."""
    return {key: row[key] for key in keys}


def _pct_ci(row: Mapping[str, Any], metric: str, scale: float, digits: int = 1) -> str:
    """A report row's ``metric`` with its ``_low`` / ``_high`` interval, times ``scale``."""
    low, high = row.get(f"{metric}_low"), row.get(f"{metric}_high")
    return format_interval(row.get(metric), low, high, scale=scale, digits=digits)


def bars_svg(bars: Sequence[tuple[str, float, float | None, float | None]], unit: str) -> str:
    """Horizontal bars with their 95% intervals as whiskers, as inline SVG: one
    ``(label, value, low, high)`` per bar, values in percent (0 to 100)."""
    width, label_w, row_h, pad = 420, 190, 22, 6
    plot_w = width - label_w - 50
    height = row_h * len(bars) + 2 * pad + 14

    def x(v: float) -> float:
        return label_w + plot_w * max(0.0, min(100.0, v)) / 100

    parts = []
    for k, (name, value, low, high) in enumerate(bars):
        y = pad + k * row_h
        parts.append(
            f"<text x='{label_w - 6}' y='{y + 14}' font-size='11' text-anchor='end'>"
            f"{esc(name)}</text>"
            f"<rect x='{label_w}' y='{y + 3}' width='{x(value) - label_w:.1f}' height='14' "
            "fill='#54aeff'/>"
        )
        if low is not None and high is not None and low == low and high == high:
            mid = y + 10
            parts.append(
                f"<line x1='{x(low):.1f}' y1='{mid}' x2='{x(high):.1f}' y2='{mid}' "
                "stroke='#24292f'/>"
                f"<line x1='{x(low):.1f}' y1='{mid - 4}' x2='{x(low):.1f}' y2='{mid + 4}' "
                "stroke='#24292f'/>"
                f"<line x1='{x(high):.1f}' y1='{mid - 4}' x2='{x(high):.1f}' y2='{mid + 4}' "
                "stroke='#24292f'/>"
            )
        parts.append(
            f"<text x='{x(max(value, high or value)) + 4:.1f}' y='{y + 14}' font-size='11'>"
            f"{value:.1f}</text>"
        )
    axis_y = pad + len(bars) * row_h + 10
    parts.append(
        f"<text x='{label_w}' y='{axis_y}' font-size='10'>0</text>"
        f"<text x='{label_w + plot_w}' y='{axis_y}' font-size='10' text-anchor='end'>"
        f"100 {esc(unit)} (bars: value; whiskers: 95% interval)</text>"
    )
    return (
        f"<svg class='bars' width='{width}' height='{height}' viewBox='0 0 {width} {height}'>"
        + "".join(parts)
        + "</svg>"
    )


def _monitor_summary(games: Sequence[dict[str, Any]]) -> tuple[str, str]:
    """(title, HTML) of a monitor evaluation's summary: per condition, the environment's
    metrics (WhoDunit: Success-Rate, Precision, Game-Length; GovSim: Survival-Rate,
    Survival-Time, Efficiency) with 95% intervals over test games and the Success-Rate gain
    over no intervention with its paired interval (the rogue-agents paper, §4.2, Tables 2 and
    3; the controls' rows give the monitor's gains over them)."""
    from byzllm.experiments.monitor.ablations import interval_note, success_difference
    from byzllm.experiments.monitor.environments import get_environment
    from byzllm.experiments.monitor.outcomes import OUTCOME_NOTE, outcome_rows

    env_name = str(next((g.get("env") for g in games if g.get("env")), None) or "whodunit")
    environment = get_environment(env_name)
    metrics = environment.metrics
    outcomes = outcome_rows(games, metrics)
    rows = []
    for r in outcomes:
        row: dict[str, Any] = {
            "condition": r["label"],
            "games": r["distinct_games"],
            **_columns(r, "plays", "runs"),
        }
        for m in metrics:
            unit = " %" if m.scale == 100.0 else ""
            row[m.label + unit] = format_interval(
                r[m.key], r[f"{m.key}_low"], r[f"{m.key}_high"], scale=m.scale
            )
        gain = (
            None if r["condition"] == "none" else success_difference(games, r["condition"], "none")
        )
        row[f"{metrics[0].label} gain over none (points)"] = (
            "-"
            if gain is None
            else format_interval(gain.value, gain.low, gain.high, scale=100, signed=True)
        )
        row["interventions per game"] = f"{r['interventions_per_game']:.2f}"
        rows.append(row)
    headline = metrics[0]
    bars = [
        (
            str(r["label"]),
            headline.scale * r[headline.key],
            headline.scale * r[f"{headline.key}_low"],
            headline.scale * r[f"{headline.key}_high"],
        )
        for r in outcomes
        if headline.kind == "rate" and r[headline.key] == r[headline.key]
    ]
    note = f"brackets: 95% intervals; metrics: {OUTCOME_NOTE}; gains: {interval_note(True)}"
    names = ", ".join(m.label for m in metrics)
    label = {"whodunit": "WhoDunitEnv", "govsim": "GovSim"}.get(env_name, env_name)
    return (
        f"{label} with the monitor: {names} per condition (test games; the rogue-agents paper, "
        "§4.2)",
        table_html(rows, note=note) + (bars_svg(bars, f"{headline.label} %") if bars else ""),
    )


def is_evaluation(games: Sequence[Mapping[str, Any]]) -> bool:
    """Whether monitor games are an evaluation (test games) rather than the train and
    validation games ``monitor collect`` plays for the monitors to learn from."""
    return any(g.get("split") == "test" for g in games)


def _collect_summary(games: Sequence[Mapping[str, Any]]) -> tuple[str, str]:
    """(title, HTML) of a ``monitor collect`` run: its games per split and condition, with
    how many succeeded (no test game, so none of the evaluation's metrics)."""
    from byzllm.monitor.dataset import game_counts

    groups: dict[tuple[str, str], list[Mapping[str, Any]]] = {}
    for g in games:
        groups.setdefault((str(g.get("split")), str(g.get("condition"))), []).append(g)
    rows = []
    for (split, condition), members in groups.items():
        counts = game_counts(members)
        wins = sum(bool(g.get("success")) for g in members)
        rows.append(
            {
                "split": split,
                "condition": condition,
                "games": counts["distinct_games"],
                "plays": counts["plays"],
                "successes": wins,
                "success %": f"{100 * wins / counts['plays']:.1f}",
            }
        )
    note = (
        "games played for the monitors to learn from (byzllm monitor collect): train them "
        "with byzllm monitor train, then evaluate them on test games with byzllm monitor "
        "evaluate"
    )
    return "Monitor training games: train and validation splits", table_html(rows, note=note)


def monitor_sections(
    games: Sequence[Mapping[str, Any]], *, max_details: int
) -> tuple[list[Section], bool]:
    """A monitor evaluation: the environment's metrics per condition with intervals, the
    gains over no intervention, health, and every game with its monitor scores, triggers and
    resets (the rogue-agents paper, §4.2). A collect run (no test game) gets its games per
    split instead of the evaluation's table."""
    from byzllm.monitor.report import MONITORS_SIMULATED_NOTE, monitors_transferred

    simulated = any(bool(g.get("simulated")) for g in games)
    plain = [dict(g) for g in games]
    title, summary = _monitor_summary(plain) if is_evaluation(plain) else _collect_summary(plain)
    if monitors_transferred(plain):
        # Real games, triggers learned from simulated ones: the header's "real-model
        # results" alone would pass the interventions for real ones (as `monitor report`).
        summary = f"<p class='warning'>{esc(MONITORS_SIMULATED_NOTE)}</p>{summary}"
    sections = [
        Section(title, summary, anchor="summary"),
        health_section(plain),
    ]
    govsim = any(g.get("env") == "govsim" for g in games)
    unit_rows: list[dict[str, Any]] = []
    details: dict[str, str] = {}
    for k, g in enumerate(games):
        key = f"{g.get('condition')}/{g['game_id']}/r{g.get('repeat', 0)}/{k}"
        outcome = g.get("outcome") or {}
        if govsim:
            result = "survived" if g["success"] else "collapsed"
        else:
            result = "success" if g["success"] else "failure"
        unit_rows.append(
            {
                "id": key,
                "condition": g.get("condition"),
                "game": g["game_id"],
                "repeat": g.get("repeat", 0),
                "outcome": result,
                **({"months": outcome.get("survival_time")} if govsim else {}),
                "turns": g.get("total_turns"),
                "resets": g.get("resets", 0),
            }
        )
        if len(details) < max_details:
            triggers = g.get("triggers") or []
            details[key] = (
                monitor_lake_svg(g)
                + (
                    table_html(
                        [_plain(t) for t in triggers],
                        note="monitor triggers (turn, P(success), whether it acted)",
                    )
                    if triggers
                    else "<p class='note'>no trigger in this game</p>"
                )
                + _score_strip(g.get("turn_scores") or [], triggers)
                + _monitor_transcript(g.get("transcript") or [], g.get("turn_scores") or [])
                + (table_html([_plain(outcome)], note="the game's outcome") if outcome else "")
            )
    columns = ["condition", "game", "repeat", "outcome", *(["months"] if govsim else [])]
    sections.append(
        _units_section(
            "Games (click one for its "
            + ("stock curve, " if govsim else "")
            + "triggers and resets)",
            [*columns, "turns", "resets"],
            ["condition", "outcome"],
            unit_rows,
            details,
        )
    )
    return sections, simulated


def _score_strip(scores: Sequence[Mapping[str, Any]], triggers: Sequence[Mapping[str, Any]]) -> str:
    """The monitor's P(success) per scored turn, one cell each, triggered turns outlined
    (the rogue-agents paper, §2: a turn below the threshold triggers an intervention)."""
    if not scores:
        return "<p class='note'>no per-turn monitor scores in this record</p>"
    fired = {_turn_key(t) for t in triggers} - {None}
    cells = []
    for s in scores:
        # A score that is not a number (null in an edited or older store) reads "-", grey.
        p = finite_number(s.get("p_success"))
        colour = _NOT_A_NUMBER if p is None else f"hsl({int(120 * max(0.0, min(1.0, p)))},70%,80%)"
        outline = "outline:2px solid #cf222e;" if _turn_key(s) in fired else ""
        cells.append(
            f"<span class='tok' style='background:{colour};{outline}' "
            f"title='turn {esc(s.get('turn'))}, {esc(s.get('role'))} {esc(s.get('agent'))}'>"
            f"t{esc(s.get('turn'))} {format_interval(p, digits=2)}</span>"
        )
    return "<p>P(success) per scored turn: " + " ".join(cells) + "</p>"


def _monitor_transcript(
    turns: Sequence[Mapping[str, Any]], scores: Sequence[Mapping[str, Any]]
) -> str:
    """The monitored turns with their decision tokens (coloured by entropy) and the monitor's
    P(success) for each."""
    if not turns:
        return ""
    by_turn = {_turn_key(s): s.get("p_success") for s in scores}
    body = []
    for t in turns:
        key = _turn_key(t)
        p = None if key is None else by_turn.get(key)
        tokens = " ".join(_token_html(str(tok), h, 10) for tok, h in t.get("tokens") or [])
        body.append(
            f"<tr><td>{esc(t.get('turn'))}</td><td>{esc(t.get('role'))}</td>"
            f"<td>{esc(t.get('agent'))}</td><td style='text-align:left'>{esc(t.get('action'))}</td>"
            f"<td style='text-align:left'>{tokens}</td>"
            f"<td>{format_interval(p, digits=2)}</td></tr>"
        )
    head = "".join(
        f"<th>{c}</th>"
        for c in ("turn", "role", "agent", "action", "decision tokens", "P(success)")
    )
    return (
        f"<table class='transcript'><thead><tr>{head}</tr></thead>"
        f"<tbody>{''.join(body)}</tbody></table>"
    )


def _plain(row: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in row.items():
        if isinstance(v, float):
            out[k] = f"{v:.4g}"
        elif isinstance(v, dict | list):
            out[k] = json.dumps(bounded(v), separators=(",", ":"), ensure_ascii=False)[:120]
        else:
            out[k] = v
    return out


#: Characters of a text shown in a list row (the whole record opens on click).
_ROW_TEXT = 200

#: Keys a unit list's row holds for the page (its unit's key, its chunk).
_LIST_KEYS = ("id", "_c")


def _short(value: Any) -> Any:
    """A list row's cell: a long text cut to :data:`_ROW_TEXT` characters (a run of long
    model answers wrote a 10 MB page of list rows)."""
    if isinstance(value, str) and len(value) > _ROW_TEXT:
        return value[: _ROW_TEXT - 1] + "…"
    return value


def generic_sections(
    kinds: Mapping[str, Sequence[Mapping[str, Any]]], *, max_details: int
) -> tuple[list[Section], bool | None]:
    """Any run: per record kind, its records listed with their fields (JSON on click).
    Simulated: whether any record says so; None when no record says either way."""
    flags = [r["simulated"] for rows in kinds.values() for r in rows if "simulated" in r]
    simulated = any(bool(flag) for flag in flags) if flags else None
    sections = [
        Section(
            "Record kinds",
            table_html([{"kind": k, "records": len(v)} for k, v in kinds.items()]),
        )
    ]
    for kind, records in kinds.items():
        scalar_cols = [
            c
            for c in (records[0].keys() if records else [])
            if isinstance(records[0][c], str | int | float | bool) or records[0][c] is None
        ][:8]
        # A record's own "id" is a column like any other: the list's "id" is the unit's key.
        names = {c: f"record {c}" if c in _LIST_KEYS else c for c in scalar_cols}
        rows: list[dict[str, Any]] = []
        details: dict[str, str] = {}
        for k, r in enumerate(records):
            key = f"{kind}/{k}"
            rows.append({**{names[c]: _short(r.get(c)) for c in scalar_cols}, "id": key})
            if len(details) < max_details:
                text = json.dumps(bounded(r), indent=1, default=str, ensure_ascii=False)
                # Each text is cut on its own (bounded): the whole record's cut only bounds
                # one with very many fields.
                details[key] = f"<pre>{esc(text, limit=2 * TEXT_LIMIT)}</pre>"
        sections.append(
            Section(
                f"{kind} records",
                units=Units(columns=list(names.values()), filters=[], rows=rows, details=details),
            )
        )
    return sections, simulated


def govsim_sections(
    games: Sequence[Mapping[str, Any]], *, max_details: int
) -> tuple[list[Section], bool]:
    """A GovSim batch: the three metrics with intervals, health, and every game with its
    stock curve and transcript (Piatti et al. 2024; the rogue-agents paper, §4.1)."""
    from byzllm.experiments.govsim.report import (
        INTERVAL_NOTE,
        season_stocks,
        summary_rows,
        transcript,
    )

    plain = [dict(g) for g in games]
    rows = summary_rows(plain)
    simulated = any(bool(g.get("simulated")) for g in plain)
    shown = [
        {k: v for k, v in r.items() if not isinstance(v, float) and k != "simulated"} for r in rows
    ]
    sections = [
        Section(
            "GovSim: Survival-Rate, Survival-Time, Efficiency",
            # The report's own note: a rate of 0 or 100% has a Wilson interval, no bootstrap.
            table_html(shown, note=f"brackets: {INTERVAL_NOTE}"),
            anchor="summary",
        ),
        health_section(plain),
    ]
    unit_rows: list[dict[str, Any]] = []
    details: dict[str, str] = {}
    for g in plain:
        row = _game_row(
            g,
            split=g.get("split"),
            R0=g.get("r0"),
            outcome=_survival(g),
            months=g.get("survival_time"),
            **{"efficiency %": format_interval(g.get("efficiency"), scale=100)},
        )
        key = row["id"]
        unit_rows.append(row)
        if len(details) < max_details:
            details[key] = (
                # The months' starting stocks, then where the last harvest left the lake (a
                # collapse drawn below its line, as the report's plot draws it).
                lake_svg(
                    season_stocks(g),
                    r0=finite_number(g.get("r0")),
                    collapse_below=finite_number(g.get("collapse_below", 5)),
                    months=len(g.get("stocks") or []),
                )
                # A season's transcript is long by nature: cut only far beyond one reply.
                + f"<pre>{esc(transcript(g), limit=10 * TEXT_LIMIT)}</pre>"
            )
    sections.append(
        _units_section(
            "Games (click one for its stock curve and transcript; outcome: as Survival-Rate "
            "counts it, a collapse in the last month surviving)",
            ["game", "repeat", "split", "R0", "outcome", "months", "efficiency %"],
            ["split", "outcome"],
            unit_rows,
            details,
        )
    )
    return sections, simulated


def _survival(game: Mapping[str, Any]) -> str:
    """A GovSim game's outcome as Survival-Rate counts it (the rogue-agents paper, §4.1:
    Survival-Time reaching the season's m), so the list's "survived" are the games the
    summary's rate counts: a collapse in the last month reaches m and survives, as in GovSim's
    own code (its transcript still says "collapsed in month m"). ``-`` for a record whose
    Survival-Rate is not a number."""
    rate = finite_number(game.get("survival_rate"))
    if rate is None:
        return "-"
    return "survived" if rate >= 1 else "collapsed"


def _debate_html(record: Mapping[str, Any]) -> str:
    """A debate round by round: each coder's code, the judge's feedback and the tests with
    their sandbox results (the rogue-agents paper, App. C), then the hidden-test verdict."""
    parts = [
        f"<p><b>{esc(record.get('problem_id'))}</b> ({esc(record.get('condition'))}): "
        + (
            "<span class=ok>passed</span>"
            if record.get("passed")
            else f"<span class=bad>{esc(record.get('hidden_status'))}</span>"
        )
        + (
            "; the only solution, seat "
            if record.get("final_rule") == "only"
            else f"; final answer by {esc(record.get('final_rule'))}, seat "
        )
        + f"{esc(record.get('final_seat'))}</p>"
    ]
    if record.get("hidden_detail"):
        parts.append(f"<pre>{esc(cut(str(record['hidden_detail']), 4000))}</pre>")
    for rnd in record.get("transcript") or []:
        parts.append(f"<h4>round {esc(rnd.get('round'))}</h4>")
        for key, value in rnd.items():
            if key == "round":
                continue
            for item in value if isinstance(value, list) else [value]:
                if isinstance(item, Mapping):
                    who = item.get("coder") or item.get("role") or key
                    body = item.get("code") or item.get("text") or item.get("feedback")
                    if body is None:
                        text = json.dumps(bounded(item), default=str, ensure_ascii=False)
                        body = cut(text, 2000)
                    parts.append(
                        f"<details><summary>{esc(key)}: {esc(who)}</summary>"
                        f"<pre>{esc(cut(str(body), 6000))}</pre></details>"
                    )
    parts.append(
        "<details><summary>final code</summary>"
        f"<pre>{esc(cut(str(record.get('final_code')), 8000))}"
        "</pre></details>"
    )
    return "".join(parts)


def codegen_sections(
    problems: Sequence[Mapping[str, Any]], *, max_details: int, n_test: int | None = None
) -> tuple[list[Section], bool]:
    """A CodeGen run: Pass@1 per condition with intervals (Table 1), the paired gain of the
    monitor, and every problem's debate; ``n_test``: the test problems the run asked for,
    warned about as ``codegen report`` does when a row holds fewer."""
    from byzllm.experiments.codegen.report import (
        INTERVAL_NOTE,
        paired_gain,
        short_of_asked,
        table1_rows,
    )

    plain = [dict(p) for p in problems]
    rows = table1_rows(plain)
    # From the records: the table counts test problems only, and a collect run has none.
    simulated = any(bool(p.get("simulated")) for p in plain)
    shown = [
        {
            **_columns(r, "source", "method", "problems", "runs"),
            "Pass@1 %": format_interval(r["pass_at_1"], r["ci_low"], r["ci_high"], scale=100),
            "interventions": r["interventions"],
            "parse fall-backs": f"{r['parse_fallbacks']} of {r['parse_calls']}",
            "run failures": r["run_failures"],
        }
        for r in rows
    ]
    gains = [
        {
            "source": g["source"],
            "comparison": g["comparison"],
            "problems": g["problems"],
            "gain (points)": format_interval(
                g["gain"], g["ci_low"], g["ci_high"], scale=100, signed=True
            ),
        }
        for g in paired_gain(plain)
    ]
    bars = [
        (f"{r['method']} ({r['source']})", 100 * r["pass_at_1"], 100 * r["ci_low"],
         100 * r["ci_high"])
        for r in rows
    ]  # fmt: skip
    short = short_of_asked(rows, n_test)
    sections = [
        Section(
            "CodeGen: Pass@1 per condition (the rogue-agents paper, Table 1)",
            (f"<p class='warning'>{esc(short)}</p>" if short else "")
            + table_html(shown, note=f"brackets: {INTERVAL_NOTE}")
            + bars_svg(bars, "Pass@1 %")
            + (table_html(gains, note="paired over the same problems") if gains else ""),
            anchor="summary",
        ),
        # As `codegen report`: a simulated role's unreadable replies are drawn, not model
        # output, so they are no parse health (the table's column still counts them).
        health_section([{**p, "parse": {}} if p.get("simulated") else p for p in plain]),
    ]
    unit_rows: list[dict[str, Any]] = []
    details: dict[str, str] = {}
    for k, p in enumerate(plain):
        key = f"{p['condition']}/{p['problem_id']}/r{p.get('repeat', 0)}/{k}"
        unit_rows.append(
            {
                "id": key,
                "problem": p["problem_id"],
                "condition": p["condition"],
                "repeat": p.get("repeat", 0),
                "outcome": "passed" if p["passed"] else "failed",
                "rounds": p.get("rounds_played"),
                "resets": p.get("resets", 0),
            }
        )
        if len(details) < max_details:
            details[key] = _debate_html(p)
    sections.append(
        _units_section(
            "Problems (click one for its debate)",
            ["problem", "condition", "repeat", "outcome", "rounds", "resets"],
            ["condition", "outcome"],
            unit_rows,
            details,
            anchor="problems",
        )
    )
    return sections, simulated
