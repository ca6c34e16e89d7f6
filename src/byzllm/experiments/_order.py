"""The order in which a report hands its units (games, questions, problems) to the bootstrap.

The percentile bootstrap (:func:`~byzllm.runs._intervals.bootstrap_interval`) is seeded and
resamples positions: the same values in another order give other resamples, so another
interval. A store returns records in the order of its units' ordinals, which a grown grid
(``--force``), a resumed run or a rerun unit changes; a report that took its units in record
order printed other intervals for the same data. Every report therefore orders its units by
their ids, in :func:`natural_key` order.

Why that order: a fresh run expands its units in the order of its games, questions and
problems, and every id the project builds numbers them in that order (``govsim-test-R100-s0``,
``govsim-gen0-10``, ``asym-test-0007``, ``synthetic/0/12``, ``gsm8k/41``, ``HumanEval/163``).
Read number by number (``-2`` before ``-10``), those ids sort into their expansion order, so a
fresh run's intervals are the ones it printed before; plain text order would put ``test-10``
before ``test-2`` and move them. Ids taken from a data file (MATH-500's ``unique_id``, a
LiveCodeBench ``question_id``) sort by their own text, which need not be the file's order.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TypeVar

__all__ = ["NaturalKey", "in_unit_order", "natural_key"]

_V = TypeVar("_V")

#: What :func:`natural_key` returns: the text and number runs, then the id itself.
NaturalKey = tuple[tuple[str | int, ...], str]

_DIGITS = re.compile(r"([0-9]+)")


def natural_key(unit_id: object) -> NaturalKey:
    """A sort key that reads the runs of digits in ``unit_id`` as numbers.

    The text splits into alternating text and number runs (always text first), so two keys
    compare text with text and number with number; the id itself breaks the tie between
    ``s01`` and ``s1``.

    >>> sorted(["test-10", "test-2", "test-1"], key=natural_key)
    ['test-1', 'test-2', 'test-10']
    """
    text = str(unit_id)
    parts = _DIGITS.split(text)
    return tuple(int(p) if i % 2 else p for i, p in enumerate(parts)), text


def in_unit_order(per_unit: Mapping[str, _V]) -> list[_V]:
    """The values of ``per_unit`` (one per unit id) in :func:`natural_key` order of the ids:
    what a report bootstraps, whatever order the records came in."""
    return [per_unit[unit] for unit in sorted(per_unit, key=natural_key)]
