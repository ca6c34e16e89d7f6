"""Report helpers: turn result rows into rich tables, markdown, CSV and PNG plots.

Rows are plain mappings (``Store.records(kind)``, or aggregates built from them). Every
helper takes ``simulated=``: results from simulated agents must say so, so titles,
captions and JSON carry the label whenever it is set.

Plots use matplotlib's Agg canvas directly (no pyplot, no display, no global backend
state), so they work on headless machines and inside tests.
"""

from __future__ import annotations

import csv
import math
import numbers
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from byzllm._figures import save_png
from byzllm._files import atomic_path

if TYPE_CHECKING:
    import pandas as pd
    from rich.table import Table

__all__ = [
    "SIMULATED_NOTE",
    "bar_plot",
    "columns_of",
    "finite_number",
    "format_bounds",
    "format_interval",
    "format_pm",
    "format_value",
    "line_plot",
    "markdown_table",
    "paper_within",
    "partly_simulated_note",
    "results_cell",
    "rich_table",
    "rows_from_frame",
    "simulated_note",
    "simulated_title",
    "write_csv",
]

#: The label every report of simulated results carries.
SIMULATED_NOTE = "simulated agents (not real LLMs)"

Row = Mapping[str, Any]


def partly_simulated_note(on_model: Mapping[str, str]) -> str:
    """The label of a run where only some groups of agents ran on a model (``--weak-model``
    alone): which ones did, and that the others are simulated. ``on_model``: group -> model.
    Such a run still counts as simulated (its ``simulated`` flag is set); this only says how
    much of it is."""
    groups = ", ".join(f"{group} agents on {model}" for group, model in on_model.items())
    return f"partly simulated: {groups}; the other agents simulated (not real LLMs)"


def simulated_note(simulated: bool | str) -> str | None:
    """What a table says of its results: :data:`SIMULATED_NOTE` when simulated, the label
    itself for a partly simulated run (:func:`partly_simulated_note`), else None."""
    if isinstance(simulated, str):
        return simulated or SIMULATED_NOTE
    return SIMULATED_NOTE if simulated else None


def results_cell(simulated: bool | str) -> str:
    """The ``results`` cell of a result table's row: ``simulated``, ``partly simulated`` (the
    label of a partly simulated run: :func:`partly_simulated_note`) or ``real model``."""
    if not simulated:
        return "real model"
    return "partly simulated" if isinstance(simulated, str) else "simulated"


def simulated_title(title: str | None, simulated: bool | str) -> str | None:
    """``title`` with `` (simulated)`` appended when the results are simulated, or
    `` (partly simulated)`` for a partly simulated run (``simulated`` its label:
    :func:`partly_simulated_note`)."""
    if not simulated:
        return title
    label = results_cell(simulated)
    return f"{title} ({label})" if title else f"({label})"


def format_value(value: Any, digits: int = 3) -> str:
    """A cell's text: floats with ``digits`` decimals, ``None`` as empty, NaN as ``nan``."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float) or type(value).__name__.startswith("float"):
        number = float(value)
        if math.isnan(number):
            return "nan"
        return f"{number:.{digits}f}"
    return str(value)


def format_pm(
    value: float, se: float, *, scale: float = 1.0, digits: int = 1, missing: str = "n/a"
) -> str:
    """``76.5 ± 1.2``: a mean and its standard error, both times ``scale``.

    The ``±`` part is left out when the standard error is undefined (NaN: a single run);
    an undefined mean reads ``missing``.
    """
    if math.isnan(value):
        return missing
    text = f"{scale * value:.{digits}f}"
    return text if math.isnan(se) else f"{text} ± {scale * se:.{digits}f}"


def finite_number(value: Any) -> float | None:
    """``value`` as a float when it is a finite number, else None: None, a bool, a text (even
    one that reads as a number), NaN, an infinity, an integer too large for a float.

    The one rule of every table and page for a value that is not a number: it is shown as
    missing (``-``). Records come from a store a user can edit, and from older versions of
    the library, so a field may hold ``null`` or a text where a number is expected.
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        return None
    try:
        number = float(value)
    except OverflowError:
        return None
    return number if math.isfinite(number) else None


def _fixed(number: float, digits: int, signed: bool) -> str:
    text = f"{number:+.{digits}f}" if signed else f"{number:.{digits}f}"
    # A value that rounds to zero from below reads 0.0, not -0.0.
    if float(text) == 0:
        text = f"{0.0:+.{digits}f}" if signed else f"{0.0:.{digits}f}"
    return text


def format_bounds(
    low: Any, high: Any, *, scale: float = 1.0, digits: int = 1, signed: bool = False
) -> str:
    """``[18.0, 28.3]``: an interval's bounds times ``scale``; empty when either is missing
    (not a finite number: :func:`finite_number`)."""
    lo, hi = finite_number(low), finite_number(high)
    if lo is None or hi is None:
        return ""
    return f"[{_fixed(scale * lo, digits, signed)}, {_fixed(scale * hi, digits, signed)}]"


def format_interval(
    value: Any,
    low: Any = None,
    high: Any = None,
    *,
    scale: float = 1.0,
    digits: int = 1,
    signed: bool = False,
    missing: str = "-",
) -> str:
    """``23.1 [18.0, 28.3]``: a value and its 95% interval, all times ``scale``, the one
    format of every table and page; ``missing`` without a value (not a finite number:
    :func:`finite_number`), the value alone without an interval. ``signed`` writes ``+`` on
    positive numbers (differences)."""
    point = finite_number(value)
    if point is None:
        return missing
    text = _fixed(scale * point, digits, signed)
    bounds = format_bounds(low, high, scale=scale, digits=digits, signed=signed)
    return f"{text} {bounds}" if bounds else text


def paper_within(paper: float, ours: float, low: float | None, high: float | None) -> bool:
    """Whether a paper's number agrees with ours: it lies inside our 95% interval, or, where
    we have no interval (too few questions for one), it equals ours. The one rule of every
    page that marks a gap (the reproduce pages, their Markdown and HTML)."""
    if low is not None and high is not None:
        return low <= paper <= high
    return ours == paper


def columns_of(rows: Sequence[Row]) -> list[str]:
    """Every key that appears in any row, in first-seen order."""
    seen: dict[str, None] = {}
    for row in rows:
        for key in row:
            seen.setdefault(str(key), None)
    return list(seen)


def rich_table(
    rows: Sequence[Row],
    columns: Sequence[str] | None = None,
    *,
    title: str | None = None,
    caption: str | None = None,
    simulated: bool | str = False,
    digits: int = 3,
) -> Table:
    """A rich table of ``rows``; numeric columns right-aligned. ``simulated``: a bool, or the
    label of a partly simulated run (:func:`simulated_note`), as the caption."""
    from rich.table import Table

    cols = list(columns) if columns is not None else columns_of(rows)
    note = simulated_note(simulated)
    if note:
        caption = f"{caption} · {note}" if caption else note
    table = Table(title=simulated_title(title, simulated), caption=caption)
    for col in cols:
        numeric = any(
            isinstance(row.get(col), (int, float)) and not isinstance(row.get(col), bool)
            for row in rows
        )
        table.add_column(col, justify="right" if numeric else "left")
    for row in rows:
        table.add_row(*(format_value(row.get(col), digits) for col in cols))
    return table


def _markdown_cell(text: str) -> str:
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ")


def markdown_table(
    rows: Sequence[Row],
    columns: Sequence[str] | None = None,
    *,
    simulated: bool | str = False,
    digits: int = 3,
) -> str:
    """A GitHub-flavoured markdown table (pipes escaped); a note line when simulated (wholly,
    or in part: :func:`simulated_note`)."""
    cols = list(columns) if columns is not None else columns_of(rows)
    if not cols:
        return "_(no rows)_\n"
    lines = [
        "| " + " | ".join(_markdown_cell(col) for col in cols) + " |",
        "| " + " | ".join("---" for _ in cols) + " |",
    ]
    for row in rows:
        cells = (_markdown_cell(format_value(row.get(col), digits)) for col in cols)
        lines.append("| " + " | ".join(cells) + " |")
    note = simulated_note(simulated)
    if note:
        lines.append("")
        lines.append(f"_Results from {note}._")
    return "\n".join(lines) + "\n"


def write_csv(
    rows: Sequence[Row],
    path: str | Path,
    columns: Sequence[str] | None = None,
    *,
    simulated: bool | str | None = None,
    notes: Mapping[str, Any] | None = None,
) -> Path:
    """Write rows to a CSV file (header first; missing cells empty); returns the path.

    ``simulated`` (for result tables) adds a first column ``results`` saying ``simulated``,
    ``partly simulated`` (a label: :func:`simulated_note`) or ``real model`` on every row
    (:func:`results_cell`), so the label travels with any copy of the file; ``notes``
    (``{"interval_method": ...}``) add a column each, the same on every row.
    """
    if notes:
        rows = [{**row, **notes} for row in rows]
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    cols = list(columns) if columns is not None else columns_of(rows)
    label = None if simulated is None else results_cell(simulated)
    if label is not None:
        cols = ["results", *(c for c in cols if c != "results")]
    with atomic_path(out) as partial, partial.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=cols, extrasaction="ignore")
        writer.writeheader()
        for row in rows:
            cells = {col: row.get(col) for col in cols}
            if label is not None:
                cells["results"] = label
            writer.writerow(cells)
    return out


def rows_from_frame(frame: pd.DataFrame) -> list[dict[str, Any]]:
    """DataFrame rows as plain dicts with Python scalars (JSON-ready)."""
    from pydantic_core import to_jsonable_python

    records = frame.to_dict(orient="records")
    return [
        {str(k): to_jsonable_python(v, fallback=str) for k, v in row.items()} for row in records
    ]


def _label_axes(
    ax: Any, xlabel: str, ylabel: str, ylim: tuple[float, float] | None, title: str | None
) -> None:
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if ylim is not None:
        ax.set_ylim(*ylim)
    if title:
        ax.set_title(title)


def line_plot(
    path: str | Path,
    series: Mapping[str, tuple[Sequence[float], Sequence[float]]],
    *,
    title: str | None = None,
    xlabel: str = "",
    ylabel: str = "",
    errors: Mapping[str, Sequence[float]] | None = None,
    simulated: bool | str = False,
    ylim: tuple[float, float] | None = None,
) -> Path:
    """A PNG line plot: one line per series name, ``(xs, ys)``; optional error bars.

    ``simulated`` as :func:`simulated_title` takes it: the label of a partly simulated run
    (:func:`partly_simulated_note`) titles the plot ``(partly simulated)``."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(6.4, 4.0))
    ax = fig.add_subplot()
    for name, (xs, ys) in series.items():
        if len(xs) != len(ys):
            raise ValueError(f"series {name!r}: {len(xs)} x values but {len(ys)} y values")
        yerr = None if errors is None else errors.get(name)
        ax.errorbar(
            list(xs),
            list(ys),
            yerr=None if yerr is None else list(yerr),
            label=name,
            marker="o",
            capsize=3,
        )
    _label_axes(ax, xlabel, ylabel, ylim, simulated_title(title, simulated))
    if len(series) > 1:
        ax.legend()
    ax.grid(alpha=0.3)
    return save_png(fig, path)


def bar_plot(
    path: str | Path,
    values: Mapping[str, float] | Mapping[str, Mapping[str, float]],
    *,
    title: str | None = None,
    xlabel: str = "",
    ylabel: str = "",
    simulated: bool = False,
    ylim: tuple[float, float] | None = None,
) -> Path:
    """A PNG bar plot: ``{bar: value}``, or grouped ``{group: {series: value}}``."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(6.4, 4.0))
    ax = fig.add_subplot()
    groups = list(values)
    nested = any(isinstance(v, Mapping) for v in values.values())
    if nested:
        series_names = columns_of([v for v in values.values() if isinstance(v, Mapping)])
        width = 0.8 / max(1, len(series_names))
        for index, name in enumerate(series_names):
            heights = []
            for group in groups:
                entry = values[group]
                heights.append(
                    float(entry.get(name, math.nan)) if isinstance(entry, Mapping) else math.nan
                )
            offsets = [
                g + (index - (len(series_names) - 1) / 2) * width for g in range(len(groups))
            ]
            ax.bar(offsets, heights, width=width, label=name)
        ax.legend()
    else:
        ax.bar(range(len(groups)), [float(v) for v in values.values()])  # type: ignore[arg-type]
    ax.set_xticks(range(len(groups)), groups)
    _label_axes(ax, xlabel, ylabel, ylim, simulated_title(title, simulated))
    ax.grid(axis="y", alpha=0.3)
    return save_png(fig, path)
