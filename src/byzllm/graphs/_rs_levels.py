"""(r,s)-robustness level by level: the fewest r-reachable nodes a non-trivial pair can have.

G is (r,s)-robust when every pair of disjoint nonempty sets ``(S1, S2)`` has a set made wholly of
r-reachable nodes, or at least ``s`` r-reachable nodes in ``S1 ∪ S2`` (LeBlanc et al. 2013,
Def. 6; the SAC paper, §3.3). So the largest such s is the fewest r-reachable nodes over the pairs
in
which each set keeps a node with at most ``k = r - 1`` in-neighbours outside it.

A pair whose r-reachable nodes are exactly ``D`` is a pair of k-closed sets once the nodes of
``D`` are exempt from the condition, which is what ``find_closed_pair(..., free=D)`` searches
for. Level ``t`` (is there such a pair with ``t`` r-reachable nodes?) therefore takes one search
per t-subset ``D``; a pair found at the first level that has one gives s exactly, with the pair as
certificate, and every level searched in full without a pair proves ``s > t``. On random graphs
at ``r = r(G)`` s is small (most often 1 or 2), so a few levels settle it; graphs with a large s
(complete-like ones) are left to the MILP.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from itertools import combinations

from ._closed_sets import SearchTimeout, find_closed_pair
from ._core import GraphView

__all__ = ["LevelOutcome", "rs_by_levels"]


@dataclass(frozen=True)
class LevelOutcome:
    """``proven``: G is (r, proven)-robust. ``pair``: ``(s, S1, S2)`` when s was found exactly."""

    proven: int
    pair: tuple[int, int, int] | None


def rs_by_levels(
    view: GraphView, r: int, deadline: float | None, *, max_searches: int, hint: int = 0
) -> LevelOutcome:
    """Search levels ``t = 1, 2, …`` while a level needs at most ``max_searches`` searches.

    The caller must already know that G is r-robust (level 0 has no pair). Stops at the
    ``deadline`` (a ``time.perf_counter()`` value) with what is proven by then. Nodes in
    ``hint`` (e.g. the r-reachable members of a known pair) are tried first.
    """
    n = view.n
    k = r - 1
    # Hinted nodes, then high-degree ones: the likeliest to have r neighbours outside their set.
    order = sorted(range(n), key=lambda i: (not hint >> i & 1, -view.in_masks[i].bit_count(), i))
    proven = 1
    t = 1
    while t < n and math.comb(n, t) <= max_searches:
        try:
            for chosen in combinations(order, t):
                free = sum(1 << i for i in chosen)
                found = find_closed_pair(view, k, deadline, free=free)
                if found is not None:
                    s1, s2 = found
                    value = view.reachable_count(s1, r) + view.reachable_count(s2, r)
                    return LevelOutcome(proven=value, pair=(value, s1, s2))
        except SearchTimeout:
            return LevelOutcome(proven=proven, pair=None)
        proven = t + 1
        t += 1
    return LevelOutcome(proven=proven, pair=None)
