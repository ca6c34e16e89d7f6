"""The paper's number beside ours, cell by cell: ``byzllm reproduce``'s comparison table.

Each metric of a row is three cells: the paper's number, ours with its 95% interval, and the
difference (ours − paper, in points; in months for Survival-Time and turns for
Game-Length). A cell pair is green when the paper's number lies inside
our interval (consistent with ours), red when it lies outside (a gap the page's "Gaps"
section explains), grey when the paper has no number for it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from byzllm.runs.reports import finite_number, format_interval, paper_within, results_cell

from ._glossary import definition, label
from ._html import esc

__all__ = ["comparison_html"]


#: The unit of a compared metric that is no percentage (its difference is not in points):
#: the rogue-agents paper's Survival-Time in months and Game-Length in turns (§4.1).
_UNITS = {"survival_time": "months", "game_length": "turns", "length": "turns"}


def _verdict(paper: float | None, ours: float | None, low: float | None, high: float | None) -> str:
    if paper is None or ours is None:
        return "none"
    return "in" if paper_within(paper, ours, low, high) else "out"


def _cells(row: Mapping[str, Any], metric: str) -> str:
    paper = finite_number(row.get(f"{metric}_paper"))
    ours = finite_number(row.get(metric))
    low, high = finite_number(row.get(f"{metric}_low")), finite_number(row.get(f"{metric}_high"))
    verdict = _verdict(paper, ours, low, high)
    ours_text = format_interval(ours, low, high)
    # The row's own difference where it has one (taken before ours was rounded for its
    # cell): the console table, the CSV and the gap lines print it, and a difference of the
    # rounded cells can be 0.1 off it (6.8 against 7.5: -0.8 there, -0.7 here).
    diff = finite_number(row.get(f"{metric}_diff"))
    if paper is None or ours is None:
        diff = None
    elif diff is None:
        diff = ours - paper
    tip = {
        "in": "the paper's number lies inside our 95% interval",
        "out": "the paper's number lies outside our 95% interval",
        "none": "no number to compare",
    }[verdict]
    return (
        f'<td class="paper {verdict}" title="{tip}">{"-" if paper is None else f"{paper:g}"}</td>'
        f'<td class="{verdict}" title="{tip}">{esc(ours_text)}</td>'
        f'<td class="{verdict}" title="{tip}">{format_interval(diff, signed=True)}</td>'
    )


def _other_units(metrics: Sequence[str]) -> str:
    """The legend's words for the shown metrics that are no percentage (``""`` if none)."""
    units = [f"{label(m)} in {_UNITS[m]}" for m in metrics if m in _UNITS]
    return f" ({', '.join(units)})" if units else ""


def comparison_html(
    rows: Sequence[Mapping[str, Any]],
    metrics: Sequence[str],
    keys: Sequence[str],
    *,
    note: str | None = None,
    partly: str | None = None,
) -> str:
    """The comparison table of ``rows`` (``<metric>``, ``<metric>_low/_high/_paper`` keys):
    the row's ``keys`` that it has, whether it is simulated, then paper / ours / difference for
    each of ``metrics``, coloured by whether the paper's number is inside our interval.
    ``partly``: the label of a partly simulated run
    (:func:`~byzllm.runs.reports.partly_simulated_note`): its rows, flagged simulated, say
    ``partly simulated``, with the label on hover."""
    shown = [k for k in keys if any(k in r for r in rows)]
    cols = [m for m in metrics if any(m in r or f"{m}_paper" in r for r in rows)]

    def group(metric: str) -> str:
        text = definition(metric)
        tip = f' title="{esc(text)}"' if text else ""
        css = "group term" if text else "group"
        return f'<th colspan="3" class="{css}"{tip}>{esc(label(metric))}</th>'

    top = "".join(f'<th rowspan="2">{esc(label(k))}</th>' for k in [*shown, "results"])
    top += "".join(group(m) for m in cols)
    sub = "".join(
        '<th class="paper">paper</th><th>ours [95%]</th><th>ours − paper</th>' for _ in cols
    )
    body = []
    for row in rows:
        sim = row.get("simulated")
        how = partly if sim and partly else None  # a row of a partly simulated run
        kind = "-" if sim is None else results_cell(how or bool(sim))
        tip = f' title="{esc(how)}"' if how else ""
        cells = "".join(f"<td>{esc(row.get(k))}</td>" for k in shown)
        cells += f"<td{tip}>{esc(kind)}</td>" + "".join(_cells(row, m) for m in cols)
        body.append(f"<tr>{cells}</tr>")
    legend = (
        "<p class='note'><span class='tok' style='background:#dafbe1'>green</span>: the paper's "
        "number lies inside our 95% interval; <span class='tok' style='background:#ffebe9'>"
        "red</span>: outside (see the gaps below); grey: no number to compare. Differences are "
        f"ours − paper, in points{_other_units(cols)}.</p>"
    )
    caption = f"<p class='note'>{esc(note)}</p>" if note else ""
    return (
        f"<table class='compare'><thead><tr>{top}</tr><tr>{sub}</tr></thead>"
        f"<tbody>{''.join(body)}</tbody></table>{legend}{caption}"
    )
