"""GovSim's lake as an inline SVG: the fish stock month by month, the collapse line, and the
monitor's alarms and interventions at the months they fell in (the rogue-agents paper, §4.1:
a reset undoes the month's meeting and holds it again; §4.2: one intervention per game).

A GovSim batch page draws the curve alone; a monitor evaluation of GovSim adds a marker per
trigger (▼ above the month: the monitor's P(success) fell below its threshold, or the random
control fired) and a dashed vertical line per month whose meeting was reset (or whose catch
was resampled, the §6.1 ablation).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from byzllm.runs.reports import finite_number, format_interval

from ._html import esc

__all__ = ["lake_svg", "monitor_lake_svg"]

_WIDTH, _HEIGHT = 460, 170
_LEFT, _RIGHT, _TOP, _BOTTOM = 36, 14, 26, 26


def _tons(value: float | None) -> str:
    return "-" if value is None else f"{value:g}"


def lake_svg(
    stocks: Sequence[float],
    *,
    r0: float | None,
    collapse_below: float | None,
    months: int | None = None,
    alarms: Mapping[int, Sequence[str]] | None = None,
    interventions: Mapping[int, str] | None = None,
) -> str:
    """The stock curve: ``stocks[i]`` at month ``i + 1`` for the first ``months`` points (all
    of them when None), any further point drawn as the stock after the last harvest ("end").
    ``alarms``: month -> one hover line per trigger in it; ``interventions``: month -> what
    was done (``"reset"`` or ``"resample"``). An ``r0`` or ``collapse_below`` of None (not a
    number in the record) reads ``-`` in the legend, and the collapse line is not drawn; a
    stock that is not a number gives a note instead of the curve (a curve through a made-up
    point would mislead)."""
    points = [s for s in map(finite_number, stocks) if s is not None]
    if len(points) < len(stocks):
        return "<p class='note'>no stock curve: a stock in the record is not a number</p>"
    stocks = points
    played = len(stocks) if months is None else min(months, len(stocks))
    n = max(len(stocks), 2)
    top = max([r0 or 0, *stocks, 1])
    plot_w = _WIDTH - _LEFT - _RIGHT
    plot_h = _HEIGHT - _TOP - _BOTTOM

    def x(i: int) -> float:
        return _LEFT + plot_w * i / (n - 1)

    def y(v: float) -> float:
        return _TOP + plot_h * (1 - v / top)

    parts = [
        f"<line x1='{_LEFT}' y1='{y(0):.1f}' x2='{_WIDTH - _RIGHT}' y2='{y(0):.1f}' "
        "stroke='#8c959f'/>",
        f"<line x1='{_LEFT}' y1='{_TOP}' x2='{_LEFT}' y2='{y(0):.1f}' stroke='#8c959f'/>",
        f"<text x='{_LEFT - 4}' y='{_TOP + 4}' font-size='10' text-anchor='end'>{top:g}</text>",
        f"<text x='{_LEFT - 4}' y='{y(0) + 3:.1f}' font-size='10' text-anchor='end'>0</text>",
    ]
    if collapse_below is not None:
        parts.append(
            f"<line class='collapse' x1='{_LEFT}' y1='{y(collapse_below):.1f}' "
            f"x2='{_WIDTH - _RIGHT}' y2='{y(collapse_below):.1f}' stroke='#cf222e' "
            f"stroke-dasharray='4 3'><title>collapse: the stock falls below "
            f"{_tons(collapse_below)} tons</title></line>"
        )
    for month, what in sorted((interventions or {}).items()):
        i = month - 1
        if 0 <= i < len(stocks):
            parts.append(
                f"<line class='{esc(what)}' x1='{x(i):.1f}' y1='{_TOP - 6}' x2='{x(i):.1f}' "
                f"y2='{y(0):.1f}' stroke='#8250df' stroke-width='2' stroke-dasharray='5 3'>"
                f"<title>month {month}: {esc(what)} (the month's catches asked again)</title>"
                "</line>"
            )
    line = " ".join(f"{x(i):.1f},{y(v):.1f}" for i, v in enumerate(stocks))
    parts.append(f"<polyline points='{line}' fill='none' stroke='#0969da' stroke-width='2'/>")
    for i, v in enumerate(stocks):
        when = f"month {i + 1} (start)" if i < played else "after the last harvest"
        parts.append(
            f"<circle cx='{x(i):.1f}' cy='{y(v):.1f}' r='2.5' fill='#0969da'>"
            f"<title>{when}: {_tons(v)} tons</title></circle>"
        )
        tick = str(i + 1) if i < played else "end"
        if i < played or i == len(stocks) - 1:
            parts.append(
                f"<text x='{x(i):.1f}' y='{_HEIGHT - _BOTTOM + 12}' font-size='9' "
                f"text-anchor='middle'>{tick}</text>"
            )
    for month, lines in sorted((alarms or {}).items()):
        i = month - 1
        if 0 <= i < len(stocks) and lines:
            cx, cy = x(i), _TOP - 8
            parts.append(
                f"<path class='alarm' d='M{cx - 5:.1f},{cy - 5} L{cx + 5:.1f},{cy - 5} "
                f"L{cx:.1f},{cy + 3}Z' fill='#bf8700'><title>month {month}: "
                f"{esc('; '.join(lines))}</title></path>"
            )
    legend = (
        f"stock in tons by month (R0 = {_tons(r0)}; dashed red: collapse below "
        f"{_tons(collapse_below)}"
    )
    if alarms:
        legend += "; ▼ trigger"
    if interventions:
        legend += f"; dashed violet: {' / '.join(sorted(set(interventions.values())))}"
    parts.append(f"<text x='{_LEFT}' y='10' font-size='10'>{esc(legend)})</text>")
    parts.append(
        f"<text x='{_WIDTH - _RIGHT}' y='{_HEIGHT - 2}' font-size='9' text-anchor='end'>"
        "month</text>"
    )
    return (
        f"<svg class='lake' width='{_WIDTH}' height='{_HEIGHT}' "
        f"viewBox='0 0 {_WIDTH} {_HEIGHT}'>" + "".join(parts) + "</svg>"
    )


def _whole(value: Any) -> int | None:
    """A stored turn or month number as an int; None for one that is not a whole number."""
    number = finite_number(value)
    return int(number) if number is not None and number.is_integer() else None


def monitor_lake_svg(game: Mapping[str, Any]) -> str:
    """A GovSim monitor game's stock curve with its triggers and interventions, from the
    record's ``lake`` (empty for a record without one: WhoDunit, or written before it was
    kept)."""
    lake = game.get("lake")
    if not isinstance(lake, Mapping) or not lake.get("stocks"):
        return ""
    stocks = list(lake["stocks"])
    turn_months = [_whole(m) for m in lake.get("turn_months") or []]
    acted_as = "reset" if game.get("resets") else "resample" if game.get("resamples") else ""
    alarms: dict[int, list[str]] = {}
    interventions: dict[int, str] = {}
    for t in game.get("triggers") or []:
        # A trigger whose turn or month is not a number has no place on the curve (its row
        # in the triggers table still shows it).
        turn = _whole(t.get("turn"))
        if turn is None or not 0 < turn <= len(turn_months):
            continue
        month = turn_months[turn - 1]
        if month is None:
            continue
        score = t.get("score")
        line = f"turn {turn}, {t.get('agent')}" + (
            f": P(success) {format_interval(score, digits=2)}" if score is not None else ""
        )
        if t.get("acted") and acted_as:
            interventions[month] = acted_as
            line += f", {acted_as}"
        elif not t.get("acted"):
            line += ", no intervention left"
        alarms.setdefault(month, []).append(line)
    outcome = game.get("outcome") or {}
    r0 = finite_number(outcome.get("r0"))
    return lake_svg(
        stocks,
        r0=r0 or finite_number(stocks[0]),  # non-empty: checked above
        collapse_below=finite_number(lake.get("collapse_below", 5)),
        months=len(stocks) - 1,
        alarms=alarms,
        interventions=interventions,
    )
