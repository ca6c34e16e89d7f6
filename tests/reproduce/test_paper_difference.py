"""The difference column of a reproduced table (ours - paper, one decimal)."""

from __future__ import annotations

import math

from byzllm.reproduce._diff import shown_difference
from byzllm.reproduce.monitor import _put
from byzllm.reproduce.page import gap_rows


def test_a_difference_that_rounds_to_zero_has_no_sign() -> None:
    diff = shown_difference(4.06 - 4.1)  # -0.04: printed "-0.0" under 4.1 and 4.1
    assert diff == 0.0 and math.copysign(1.0, diff) == 1.0
    assert shown_difference(24.76 - 42.5) == -17.7  # hand-computed: -17.74
    row: dict[str, object] = {}
    _put(row, "gain", 4.06, None, None, 4.1)
    assert (row["gain"], row["gain_paper"]) == (4.1, 4.1)
    assert math.copysign(1.0, row["gain_diff"]) == 1.0  # type: ignore[arg-type]


def test_a_gap_line_keeps_a_zero_difference_of_its_row() -> None:
    """The row's own difference is the line's, a 0.0 too (``or`` read it as missing and
    recomputed it from the row's cells)."""
    row = {"protocol": "sac", "topology": "merg", "BFTI": 7.9, "BFTI_paper": 7.6}
    row.update({"BFTI_diff": 0.0})
    [gap] = gap_rows("sac-table1", [row], ["BFTI"])
    assert gap["diff"] == 0.0
