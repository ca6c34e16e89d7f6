"""The grid of a run of games (WhoDunit, GovSim): one unit per game × repeat, counted from the
config alone (:meth:`byzllm.runs.ExperimentConfig.unit_grids`, checked against
:data:`byzllm.runs.MAX_UNITS`)."""

from __future__ import annotations

__all__ = ["games_grid"]


def games_grid(
    split: str, n_games: int | None, split_size: int | None, generated: int, repeats: int
) -> dict[str, dict[str, int]]:
    """A games run's grid: ``n_games`` games of ``split``, at most its ``split_size``
    (``generated`` games, the default count, for the ``generated`` split, which has no size:
    ``split_size`` is ``None``), each played ``repeats`` times."""
    games = (n_games or generated) if split_size is None else min(n_games or split_size, split_size)
    return {"": {f"{split} games": games, "repeats": repeats}}
