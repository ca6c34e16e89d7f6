"""Brute-force references (tests only): every ordered pair of disjoint nonempty sets, 3^n."""

from __future__ import annotations

from typing import Any

import networkx as nx

__all__ = ["check_closed_pair", "reference_r", "reference_s"]


def _outside_lists(G: nx.Graph[Any]) -> tuple[int, list[list[int]]]:
    nodes = list(G.nodes)
    n = len(nodes)
    pos = {v: i for i, v in enumerate(nodes)}
    nbrs = [
        {pos[u] for u in (G.predecessors(v) if G.is_directed() else G.neighbors(v))} for v in nodes
    ]
    outside = []
    for mask in range(1 << n):
        members = {i for i in range(n) if mask >> i & 1}
        outside.append([len(nbrs[i] - members) for i in members])
    return n, outside


def _pairs(n: int):  # type: ignore[no-untyped-def]
    full = (1 << n) - 1
    for s1 in range(1, full + 1):
        rest = full ^ s1
        s2 = rest
        while s2:
            yield s1, s2
            s2 = (s2 - 1) & rest


def reference_r(G: nx.Graph[Any]) -> int:
    """min over disjoint nonempty (S1, S2) of max(f(S1), f(S2)) by enumeration."""
    n, outside = _outside_lists(G)
    f = [max(o) if o else -1 for o in outside]
    return min(max(f[a], f[b]) for a, b in _pairs(n))


def reference_s(G: nx.Graph[Any], r: int) -> int:
    """Largest s with G (r, s)-robust (LeBlanc et al. 2013, Def. 6) by enumeration."""
    n, outside = _outside_lists(G)
    reach = [sum(1 for c in o if c >= r) for o in outside]
    size = [len(o) for o in outside]
    best = n
    for a, b in _pairs(n):
        if reach[a] == size[a] or reach[b] == size[b]:
            continue
        best = min(best, reach[a] + reach[b])
    return best


def check_closed_pair(found: Any, view: Any, k: int, r: int) -> None:
    """What a closed-pair search must answer at level ``k`` of a graph with robustness ``r``:
    a certificate (two disjoint nonempty sets, each with ``f <= k``) when ``k >= r``, else
    none."""
    if k >= r:
        assert found is not None
        s1, s2 = found
        assert s1 and s2 and not s1 & s2
        assert view.f(s1) <= k and view.f(s2) <= k
    else:
        assert found is None, (k, r)
