"""Cheap bounds on r(G): proven lower bounds and witnessed upper bounds.

Lower bound (undirected graphs). For disjoint nonempty ``S1, S2`` one of them, say ``S``, has
``m = |S| ≤ ⌊n/2⌋`` nodes. Then

* ``f(S) ≥ e(S, V\\S)/|S| ≥ λ₂·(n - m)/n`` (the maximum is at least the average, and the
  cut bound ``e(S, V\\S) ≥ λ₂|S||V\\S|/n`` of the Laplacian's second eigenvalue λ₂; this is the
  argument behind the ``⌈λ₂/2⌉`` bound of Shahrivar, Pirani & Sundaram 2015), and
* ``f(S) ≥ δ - (m - 1)`` (a node of ``S`` has at most ``m - 1`` neighbours inside it),

so ``r ≥ min_{1≤m≤⌊n/2⌋} max(⌈λ₂(n-m)/n⌉, δ - m + 1)``, which is never below ``⌈λ₂/2⌉``.
The degree part also holds for digraphs (in-degrees).

Upper bounds always come with a pair ``(S1, S2)`` whose value ``max(f(S1), f(S2))`` is the
bound, so every upper bound is also a certificate: two lowest-in-degree singletons (the
minimum-degree bound, LeBlanc et al. 2013), a balanced split (``⌈n/2⌉``), the two sides of a
minimum vertex cut (vertex connectivity), and a spectral split improved by peeling.
"""

from __future__ import annotations

import math
import time

import networkx as nx
import numpy as np
import numpy.typing as npt

from ._closed_sets import peel
from ._core import GraphView, bits

__all__ = [
    "Pair",
    "best_known_pair",
    "local_search_pair",
    "lower_bound",
    "pair_value",
    "spectral_lambda2",
]

#: ``(value, S1 mask, S2 mask)`` with ``value = max(f(S1), f(S2))``.
Pair = tuple[int, int, int]

_EPS = 1e-7

#: Above this many nodes no dense eigen-decomposition is made (over ten seconds at 3,000).
SPECTRAL_MAX_NODES = 2000


def pair_value(view: GraphView, s1: int, s2: int) -> Pair:
    return max(view.f(s1), view.f(s2)), s1, s2


def spectral_lambda2(view: GraphView) -> float:
    """Second-smallest Laplacian eigenvalue (algebraic connectivity) of an undirected graph."""
    n = view.n
    adj = np.zeros((n, n))
    for i, mask in enumerate(view.in_masks):
        for j in bits(mask):
            adj[i, j] = 1.0
    lap = np.diag(adj.sum(axis=1)) - adj
    values = np.linalg.eigvalsh(lap)
    return float(values[1])


def lower_bound(view: GraphView, *, spectral: bool = True) -> int:
    """A proven lower bound on r(G) (see the module docstring).

    A connected undirected graph is at least 1-robust (a set that is not all of V has an edge
    leaving it), which the spectral part also shows where it is computed.
    """
    n = view.n
    delta = min(view.in_degrees)
    use_spectral = spectral and not view.directed and n <= SPECTRAL_MAX_NODES
    lam = spectral_lambda2(view) if use_spectral else 0.0
    best = None
    for m in range(1, n // 2 + 1):
        spectral_part = max(0, math.ceil(lam * (n - m) / n - _EPS))
        value = max(spectral_part, delta - m + 1)
        best = value if best is None else min(best, value)
    bound = max(0, best if best is not None else 0)
    if bound == 0 and n > 1 and not view.directed and _connected(view):
        bound = 1
    return bound


def _connected(view: GraphView) -> bool:
    """Whether the undirected graph is connected (breadth-first over the bitmasks)."""
    reached = frontier = 1
    while frontier:
        grown = 0
        for i in bits(frontier):
            grown |= view.in_masks[i]
        frontier = grown & ~reached
        reached |= frontier
    return reached == view.full


def _degree_pair(view: GraphView) -> Pair:
    order = sorted(range(view.n), key=lambda i: view.in_degrees[i])
    return pair_value(view, 1 << order[0], 1 << order[1])


def _balanced_pair(view: GraphView) -> Pair:
    half = (1 << (view.n // 2)) - 1
    return pair_value(view, half, view.full ^ half)


def _best_peeled(view: GraphView, side_a: int, side_b: int, limit: int) -> Pair | None:
    """The smallest k < ``limit`` at which both sides keep a nonempty k-closed core."""
    for k in range(limit):
        a = peel(view, side_a, k)
        if a:
            b = peel(view, side_b, k)
            if b:
                return pair_value(view, a, b)
    return None


def _spectral_pair(view: GraphView, limit: int) -> Pair | None:
    n = view.n
    adj = np.zeros((n, n))
    for i, mask in enumerate(view.in_masks):
        for j in bits(mask):
            adj[i, j] = adj[j, i] = 1.0
    lap = np.diag(adj.sum(axis=1)) - adj
    _, vectors = np.linalg.eigh(lap)
    fiedler = vectors[:, 1]
    order = np.argsort(fiedler)
    best: Pair | None = None
    # Splits around the median of the Fiedler vector.
    for cut in {n // 2, max(1, n // 2 - 1), min(n - 1, n // 2 + 1)}:
        side_a = 0
        for i in order[:cut]:
            side_a |= 1 << int(i)
        found = _best_peeled(view, side_a, view.full ^ side_a, best[0] if best else limit)
        if found is not None and (best is None or found[0] < best[0]):
            best = found
    return best


def _cut_pair(view: GraphView) -> Pair | None:
    """The two sides of a minimum vertex cut (undirected graphs; value ≤ connectivity)."""
    graph: nx.Graph[int] = nx.Graph()
    graph.add_nodes_from(range(view.n))
    for i, mask in enumerate(view.in_masks):
        graph.add_edges_from((i, j) for j in bits(mask) if j > i)
    if not nx.is_connected(graph):
        parts = list(nx.connected_components(graph))
        a = sum(1 << i for i in parts[0])
        return pair_value(view, a, view.full ^ a)
    if graph.number_of_edges() == view.n * (view.n - 1) // 2:
        return None
    cut: set[int] = set(nx.minimum_node_cut(graph))
    rest = graph.subgraph(set(graph) - cut)
    parts = list(nx.connected_components(rest))
    a = sum(1 << i for i in parts[0])
    b = sum(1 << i for part in parts[1:] for i in part)
    return pair_value(view, a, b)


def best_known_pair(view: GraphView, *, connectivity: bool = True) -> Pair:
    """The best pair among the cheap constructions above (an upper bound with its witness)."""
    candidates: list[Pair] = [_degree_pair(view), _balanced_pair(view)]
    if not view.directed:
        edges = sum(m.bit_count() for m in view.in_masks) // 2
        # Max-flow cuts cost seconds on dense graphs, where the connectivity rarely beats the
        # minimum degree; on sparse graphs it is often the best cheap bound.
        if connectivity and view.n <= 400 and edges <= 4 * view.n:
            cut = _cut_pair(view)
            if cut is not None:
                candidates.append(cut)
        if view.n <= SPECTRAL_MAX_NODES:
            spectral = _spectral_pair(view, min(c[0] for c in candidates))
            if spectral is not None:
                candidates.append(spectral)
    return min(candidates, key=lambda c: c[0])


def _adjacency(view: GraphView) -> npt.NDArray[np.int32]:
    n = view.n
    adj = np.zeros((n, n), dtype=np.int32)
    for i, mask in enumerate(view.in_masks):
        for j in bits(mask):
            adj[i, j] = 1  # row i: in-neighbours of i
    return adj


def local_search_pair(
    view: GraphView,
    upper: int,
    *,
    restarts: int = 8,
    moves: int = 500,
    seed: int = 0,
    deadline: float | None = None,
) -> Pair | None:
    """Tabu search for a pair better than ``upper`` (a heuristic; it proves nothing).

    Works on two-sided partitions of V: for a target ``K`` it flips nodes between the sides
    to drive the excess ``Σ max(0, o_i - K)`` to zero, where ``o_i`` is the number of
    in-neighbours of ``i`` on the other side; at zero both sides are K-closed. Each success
    lowers the target. Move gains for all nodes come from two matrix-vector products.

    Past ``deadline`` (a ``time.perf_counter()`` value) it returns the best pair found so far:
    at a few thousand nodes the full search takes minutes.
    """
    n = view.n
    if n < 4 or upper <= 0:
        return None
    if deadline is not None and time.perf_counter() > deadline:
        # Before the Fiedler start below: a dense eigen-decomposition takes seconds at 2,000
        # nodes, and the bounds computed before this search may have used up its time.
        return None
    rng = np.random.default_rng(seed)
    adj = _adjacency(view)
    adj_t = adj.T.copy()
    deg = adj.sum(axis=1)
    best: Pair | None = None
    target = upper - 1
    starts: list[npt.NDArray[np.int32]] = []
    if not view.directed and n <= SPECTRAL_MAX_NODES:
        sym = adj | adj_t
        lap = np.diag(sym.sum(axis=1)) - sym
        fiedler = np.linalg.eigh(lap.astype(float))[1][:, 1]
        starts.append((fiedler > np.median(fiedler)).astype(np.int32))
    while len(starts) < restarts:
        side = np.zeros(n, dtype=np.int32)
        side[rng.permutation(n)[: n // 2]] = 1
        starts.append(side)
    for side in starts:
        if target < 0:
            break
        side = side.copy()
        in_one = adj @ side
        outside = np.where(side == 1, deg - in_one, in_one)
        tabu = np.zeros(n, dtype=np.int64)
        for step in range(moves):
            if target < 0:
                break
            if deadline is not None and time.perf_counter() > deadline:
                return best
            over = outside > target
            if not over.any() and 0 < side.sum() < n:
                s1 = int(sum(1 << int(i) for i in np.flatnonzero(side == 1)))
                found = pair_value(view, s1, view.full ^ s1)
                if best is None or found[0] < best[0]:
                    best = found
                target = found[0] - 1
                continue
            at_least = outside >= target
            one = side == 1
            gain_one = adj_t @ ((at_least & one).astype(np.int32) - (over & ~one).astype(np.int32))
            gain_zero = adj_t @ ((at_least & ~one).astype(np.int32) - (over & one).astype(np.int32))
            neighbour_delta = np.where(one, gain_one, gain_zero)
            self_delta = np.maximum(deg - outside - target, 0) - np.maximum(outside - target, 0)
            excess = int(np.maximum(outside - target, 0).sum())
            if excess <= 2 * target + 2:
                # Nearly there: the k-closed cores of the two sides may already be a pair.
                s1 = int(sum(1 << int(i) for i in np.flatnonzero(side == 1)))
                core_a = peel(view, s1, target)
                core_b = peel(view, view.full ^ s1, target) if core_a else 0
                if core_a and core_b:
                    found = pair_value(view, core_a, core_b)
                    if best is None or found[0] < best[0]:
                        best = found
                    target = found[0] - 1
                    continue
            delta = (neighbour_delta + self_delta).astype(float)
            delta[tabu > step] = np.inf
            delta += rng.random(n) * 0.5  # random tie-breaking
            u = int(np.argmin(delta))
            if not np.isfinite(delta[u]):
                break
            same = side == side[u]
            change = np.where(same, 1, -1) * adj[:, u]
            outside = outside + change
            outside[u] = deg[u] - outside[u] + change[u]
            side[u] ^= 1
            tabu[u] = step + 7 + int(rng.integers(0, 5))
    return best
