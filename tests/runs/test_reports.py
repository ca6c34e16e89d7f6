"""Report helpers: markdown and rich tables, CSV, PNG plots, the simulated label."""

from __future__ import annotations

import csv
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st
from rich.console import Console

from byzllm.runs.reports import (
    bar_plot,
    finite_number,
    format_bounds,
    format_interval,
    format_pm,
    format_value,
    line_plot,
    markdown_table,
    partly_simulated_note,
    rich_table,
    rows_from_frame,
    simulated_title,
    write_csv,
)

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
ROWS = [
    {"protocol": "sac", "accuracy": 0.91234, "n": 10},
    {"protocol": "a|b", "accuracy": None, "n": 7, "note": "x"},
]


def test_format_value() -> None:
    assert format_value(0.5) == "0.500"
    assert format_value(0.5, digits=1) == "0.5"
    assert format_value(None) == ""
    assert format_value(True) == "yes"
    assert format_value(float("nan")) == "nan"
    assert format_value(3) == "3"


def test_a_value_that_is_not_a_finite_number_is_shown_as_missing() -> None:
    """A stored field holding a text or a huge integer stopped every table and page."""
    assert finite_number(0.25) == 0.25 and finite_number(3) == 3.0
    for odd in (None, True, "0.5", "abc", float("nan"), float("inf"), -float("inf"), 10**400):
        assert finite_number(odd) is None
        assert format_interval(odd) == "-"
    assert format_interval(0.5, "abc", 10**400) == "0.5" and format_bounds(0.1, None) == ""


@given(
    st.one_of(
        st.none(),
        st.booleans(),
        st.text(max_size=8),
        st.floats(),
        st.integers(min_value=-(10**400), max_value=10**400),
        st.lists(st.integers(), max_size=2),
    )
)
def test_any_stored_value_formats_without_error(value: object) -> None:
    number = finite_number(value)
    text = format_interval(value, value, value, scale=100)
    assert (text == "-") == (number is None)
    assert number is None or (isinstance(number, float) and abs(number) < float("inf"))


def test_format_interval_is_one_format_without_negative_zero() -> None:
    nan = float("nan")
    assert format_interval(0.231, 0.18, 0.2834, scale=100) == "23.1 [18.0, 28.3]"
    # A bound that rounds to zero from below reads 0.0 (was "[-0,23]").
    assert format_interval(0.1, -0.0004, 0.23, scale=100) == "10.0 [0.0, 23.0]"
    assert format_interval(0.05, -0.1, 0.2, scale=100, signed=True) == "+5.0 [-10.0, +20.0]"
    assert format_interval(-0.0001, scale=100, signed=True) == "+0.0"
    assert format_interval(3.25) == "3.2" and format_interval(3.0, nan, 4.0) == "3.0"
    assert format_interval(None) == "-" and format_interval(nan, missing="n/a") == "n/a"
    assert format_bounds(0.1, 0.2, scale=100) == "[10.0, 20.0]" and format_bounds(None, 1) == ""


def test_format_pm() -> None:
    nan = float("nan")
    assert format_pm(0.765, 0.0123, scale=100) == "76.5 ± 1.2"
    assert format_pm(12.25, 0.5, digits=2) == "12.25 ± 0.50"
    assert format_pm(0.5, nan, scale=100) == "50.0"  # one run: no standard error
    assert format_pm(nan, 0.1) == "n/a"
    assert format_pm(nan, nan, missing="-") == "-"


def test_markdown_table_escapes_and_labels_simulated() -> None:
    text = markdown_table(ROWS, simulated=True)
    lines = text.splitlines()
    assert lines[0] == "| protocol | accuracy | n | note |"
    assert lines[1] == "| --- | --- | --- | --- |"
    assert lines[2] == "| sac | 0.912 | 10 |  |"
    assert lines[3] == "| a\\|b |  | 7 | x |"
    assert lines[-1] == "_Results from simulated agents (not real LLMs)._"
    assert markdown_table([]) == "_(no rows)_\n"


def test_rich_table_renders_with_title_and_caption() -> None:
    console = Console(record=True, width=100)
    console.print(rich_table(ROWS, ["protocol", "accuracy"], title="Accuracy", simulated=True))
    text = console.export_text()
    assert "Accuracy (simulated)" in text
    assert "simulated agents" in text
    assert "0.912" in text and "note" not in text


def test_write_csv(tmp_path: Path) -> None:
    path = write_csv(ROWS, tmp_path / "sub" / "t.csv")
    with path.open(newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert rows[1] == {"protocol": "a|b", "accuracy": "", "n": "7", "note": "x"}


def test_rows_from_frame_gives_python_scalars() -> None:
    frame = pd.DataFrame({"a": [1, 2], "b": [0.5, 1.5]})
    rows = rows_from_frame(frame)
    assert rows == [{"a": 1, "b": 0.5}, {"a": 2, "b": 1.5}]
    assert type(rows[0]["a"]) is int


def test_line_and_bar_plots_write_pngs(tmp_path: Path) -> None:
    line = line_plot(
        tmp_path / "line.png",
        {"sac": ([0, 1, 2], [0.5, 0.7, 0.9]), "vote": ([0, 1, 2], [0.5, 0.5, 0.6])},
        errors={"sac": [0.05, 0.05, 0.02]},
        title="accuracy",
        xlabel="byzantine agents",
        ylabel="accuracy",
        simulated=True,
        ylim=(0, 1),
    )
    bars = bar_plot(tmp_path / "bar.png", {"sac": 0.9, "vote": 0.6}, title="acc")
    grouped = bar_plot(
        tmp_path / "grouped.png", {"F=0": {"sac": 0.9, "vote": 0.8}, "F=1": {"sac": 0.85}}
    )
    for path in (line, bars, grouped):
        assert path.read_bytes().startswith(PNG_MAGIC)
    with pytest.raises(ValueError, match="2 x values but 1 y values"):
        line_plot(tmp_path / "bad.png", {"s": ([0, 1], [1])})


def test_simulated_title() -> None:
    assert simulated_title("T", False) == "T"
    assert simulated_title("T", True) == "T (simulated)"
    assert simulated_title(None, True) == "(simulated)"
    # A partly simulated run (``--weak-model`` alone) says so in its title too, not only in
    # the line under its table.
    label = partly_simulated_note({"weak": "openai/smollm2"})
    assert simulated_title("T", label) == "T (partly simulated)"


def test_signed_numbers_are_written_by_the_one_format_only() -> None:
    # A signed format spec written by hand (f"{x:+.1f}") prints "-0.0" for a difference
    # that rounds to zero from below; format_interval(signed=True) never does.
    import re

    src = Path(__file__).resolve().parents[2] / "src" / "byzllm"
    spec = re.compile(r"\{[^{}]*:\+\d*\.\d+[fg%]\}")
    found = [
        f"{path.relative_to(src)}:{number}"
        for path in sorted(src.rglob("*.py"))
        if path.name != "reports.py" or path.parent.name != "runs"
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if spec.search(line)
    ]
    assert found == []
