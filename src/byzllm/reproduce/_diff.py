"""The difference a reproduced table prints beside ours and the paper's figure."""

from __future__ import annotations

__all__ = ["shown_difference"]


def shown_difference(difference: float) -> float:
    """``difference`` (ours - paper, taken before ours is rounded for its own cell: the
    closer figure) to one decimal, never ``-0.0``: a difference of -0.04 printed "-0.0"
    under two equal cells (4.1 against 4.1)."""
    return round(difference, 1) + 0.0  # + 0.0 turns -0.0 into 0.0
