"""Exact r- and (r,s)-robustness by dynamic programming over all 2^n subsets.

With ``f(S) = max_{i∈S} |N_i \\ S|`` and ``g(T) = min_{∅≠S⊆T} f(S)``,

    r(G) = min over nonempty proper S of max(f(S), g(V \\ S)),

because a graph is r-robust iff every pair of nonempty disjoint sets has one member with
``f ≥ r`` (LeBlanc et al. 2013, Def. 5; the SAC paper, Def. 3.4). ``g`` is a subset-minimum
("zeta") transform, n passes over the table, so the whole computation is O(n·2^n). The same idea
gives s: with ``x(S) = |X_S^r|`` and ``h(S) = x(S)`` when ``x(S) < |S|`` (otherwise the pair
condition already holds), the largest s is ``min_S h(S) + H(V \\ S)`` with ``H`` the
subset-minimum of ``h`` (LeBlanc et al. 2013, Def. 6).

Two implementations give the same answers, pair for pair (the first minimising subset in index
order): plain Python lists up to :data:`PURE_MAX_NODES` nodes when numpy is not loaded yet
(r and s about 10 ms each at 12 nodes, where importing numpy alone costs about 90 ms, so
``byzllm graph check`` on a small graph starts fast), and vectorised numpy tables
(:mod:`._subset_tables`) otherwise.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any, Protocol

from ._core import GraphView, bits

__all__ = [
    "DP_MAX_NODES",
    "INF",
    "PURE_MAX_NODES",
    "descend",
    "dp_r_robustness",
    "dp_rs_robustness",
    "pure_r_robustness",
    "pure_rs_robustness",
]

#: Largest n the dynamic programme accepts (four 2^n-byte tables: 256 MiB at n = 26).
DP_MAX_NODES = 26

#: Largest n the pure-Python tables take when numpy is not loaded (r about 10 ms at n = 12 on
#: one core, 37 ms at n = 14; the cost doubles with every node).
PURE_MAX_NODES = 12

#: ``+∞`` in the tables (they hold counts of at most 25, and the numpy ones are 8-bit).
INF = 127


class _Table(Protocol):
    def __getitem__(self, index: int, /) -> Any: ...


def _use_pure(n: int) -> bool:
    return n <= PURE_MAX_NODES and "numpy" not in sys.modules


def descend(values: _Table, best: _Table, top: int) -> int:
    """A subset S ⊆ ``top`` with ``values[S] == best[top]`` (best = subset-min of values)."""
    target = best[top]
    mask = top
    while values[mask] != target:
        for b in bits(mask):
            smaller = mask ^ (1 << b)
            if smaller and best[smaller] == target:
                mask = smaller
                break
        else:  # pragma: no cover - the transform guarantees a path
            raise AssertionError("subset-minimum descent failed")
    return mask


def _subset_min(values: list[int], n: int) -> list[int]:
    """``best[T] = min over S ⊆ T of values[S]`` (``∅`` included: keep it at +∞)."""
    best = values.copy()
    for j in range(n):
        bit = 1 << j
        for start in range(bit, len(best), bit << 1):
            upper = slice(start, start + bit)
            best[upper] = map(min, best[upper], best[start - bit : start])
    return best


def _f_list(view: GraphView) -> list[int]:
    """``f(S)`` for every subset, with ``f(∅) = +∞``."""
    return [INF, *map(view.f, range(1, 1 << view.n))]


def _first_min(values: Sequence[int]) -> tuple[int, int]:
    """``(smallest value, its first index)``, as numpy's ``argmin`` picks it."""
    low = min(values)
    return low, values.index(low)


def pure_r_robustness(view: GraphView) -> tuple[int, int, int]:
    """:func:`dp_r_robustness` on Python lists."""
    f = _f_list(view)
    g = _subset_min(f, view.n)
    # g[V \ S] is g[full ^ S], i.e. g reversed: the complement of index S is (2^n - 1) - S.
    r, s1 = _first_min([max(a, b) for a, b in zip(f, reversed(g), strict=True)])
    return r, s1, descend(f, g, view.full ^ s1)


def pure_rs_robustness(view: GraphView, r: int) -> tuple[int, int, int] | None:
    """:func:`dp_rs_robustness` on Python lists."""
    h = [INF] * (1 << view.n)
    for members in range(1, len(h)):
        reachable = view.reachable_count(members, r)
        if reachable < members.bit_count():
            h[members] = reachable
    best = _subset_min(h, view.n)
    value, s1 = _first_min([a + b for a, b in zip(h, reversed(best), strict=True)])
    if value >= INF:
        return None
    return value, s1, descend(h, best, view.full ^ s1)


def dp_r_robustness(view: GraphView) -> tuple[int, int, int]:
    """Exact r(G) with a minimizing pair: returns ``(r, S1_mask, S2_mask)``."""
    if _use_pure(view.n):
        return pure_r_robustness(view)
    from ._subset_tables import table_r_robustness

    return table_r_robustness(view)


def dp_rs_robustness(view: GraphView, r: int) -> tuple[int, int, int] | None:
    """Smallest ``|X_S1^r| + |X_S2^r|`` over pairs where neither set is wholly r-reachable.

    Returns ``(value, S1_mask, S2_mask)`` or ``None`` when no such pair exists (then the graph
    is (r, n)-robust).
    """
    if _use_pure(view.n):
        return pure_rs_robustness(view, r)
    from ._subset_tables import table_rs_robustness

    return table_rs_robustness(view, r)
