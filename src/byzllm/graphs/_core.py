"""Validated, bitmask view of a graph: the representation every robustness solver works on.

Definitions follow LeBlanc et al. (2013) as restated in the SAC paper, §3.3: for a node ``i`` the
neighbour set ``N_i`` is its set of *in*-neighbours (for undirected graphs, its neighbours); a
nonempty set ``S`` is *r-reachable* when some ``i ∈ S`` has ``|N_i \\ S| ≥ r`` (Definition 3.3).
We write ``f(S) = max_{i∈S} |N_i \\ S|``, so ``S`` is r-reachable exactly when ``f(S) ≥ r``.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any

from byzllm.errors import InputError

if TYPE_CHECKING:
    import networkx as nx

__all__ = [
    "GraphView",
    "bits",
    "graph_view",
    "mask_of",
    "node_list",
    "nodes_of",
    "view_of_edges",
]


@dataclass(frozen=True)
class GraphView:
    """A graph as node labels plus one in-neighbour bitmask per node (node ``i`` is bit ``i``)."""

    labels: tuple[Hashable, ...]
    index: dict[Hashable, int]
    in_masks: tuple[int, ...]
    out_masks: tuple[int, ...]
    directed: bool

    @property
    def n(self) -> int:
        return len(self.labels)

    @property
    def full(self) -> int:
        return (1 << self.n) - 1

    @property
    def edge_count(self) -> int:
        """Number of edges (arcs for a directed graph), as networkx counts them."""
        arcs = sum(m.bit_count() for m in self.in_masks)
        return arcs if self.directed else arcs // 2

    @cached_property
    def in_degrees(self) -> tuple[int, ...]:
        # Cached: sorting nodes by degree reads it once per comparison key (quadratic on
        # 100,000 nodes when it was recomputed each time).
        return tuple(m.bit_count() for m in self.in_masks)

    def outside(self, i: int, members: int) -> int:
        """``|N_i \\ S|`` for the set ``S`` given as bitmask ``members``."""
        return (self.in_masks[i] & ~members).bit_count()

    def f(self, members: int) -> int:
        """``f(S) = max_{i∈S} |N_i \\ S|``; ``-1`` for the empty set."""
        masks, outside = self.in_masks, ~members
        return max(((masks[i] & outside).bit_count() for i in bits(members)), default=-1)

    def reachable_mask(self, members: int, r: int) -> int:
        """``X_S^r``: the nodes of ``S`` with at least ``r`` in-neighbours outside ``S``."""
        outside = ~members
        return sum(1 << i for i in bits(members) if (self.in_masks[i] & outside).bit_count() >= r)

    def reachable_count(self, members: int, r: int) -> int:
        """``|X_S^r|``: how many nodes of ``S`` have at least ``r`` in-neighbours outside ``S``."""
        return self.reachable_mask(members, r).bit_count()


def bits(mask: int) -> Iterable[int]:
    """Indices of the set bits of ``mask``, ascending."""
    while mask:
        low = mask & -mask
        yield low.bit_length() - 1
        mask ^= low


def _ordered_nodes(G: nx.Graph[Any]) -> list[Hashable]:
    nodes = list(G.nodes)
    try:
        return sorted(nodes)
    except TypeError:  # mixed, unorderable labels: keep insertion order
        return nodes


def _check_shape(n: int, directed: bool, *, require_undirected: bool, min_nodes: int) -> None:
    if require_undirected and directed:
        raise InputError("this operation needs an undirected graph; got a directed one")
    if n < min_nodes:
        raise InputError(f"the graph needs at least {min_nodes} nodes, it has {n}")


def _masks(
    n: int, directed: bool, edges: Iterable[tuple[int, int]]
) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """In- and out-neighbour masks of nodes ``0..n-1`` from ``(u, v)`` index pairs."""
    in_masks = [0] * n
    out_masks = [0] * n
    for iu, iv in edges:
        # An edge u -> v means v receives from u: u is an in-neighbour of v.
        in_masks[iv] |= 1 << iu
        out_masks[iu] |= 1 << iv
        if not directed:
            in_masks[iu] |= 1 << iv
            out_masks[iv] |= 1 << iu
    return tuple(in_masks), tuple(out_masks)


def view_of_edges(n: int, directed: bool, edges: Iterable[tuple[int, int]]) -> GraphView:
    """The view of the graph on nodes ``0..n-1`` with ``edges``, built without networkx.

    Node labels are those :func:`graph_view` gives the same graph as a networkx graph (edges
    given twice count once); a self-loop raises :class:`~byzllm.errors.InputError`. What a
    solver needs of the graph (size, direction) is checked where it takes the view.
    """
    pairs = list(edges)
    for u, v in pairs:
        if u == v:
            raise InputError(f"self-loops are not allowed (node {u!r} is its own neighbour)")
    labels = tuple(range(n))
    in_masks, out_masks = _masks(n, directed, pairs)
    return GraphView(labels, {v: v for v in labels}, in_masks, out_masks, directed)


def graph_view(
    G: Any,
    *,
    require_undirected: bool = False,
    min_nodes: int = 2,
    allow_view: bool = True,
) -> GraphView:
    """Validate ``G`` (a networkx graph, or with ``allow_view`` a view already made, as
    :func:`view_of_edges` and ``load_graph_view`` give) and return its bitmask view.

    Raises :class:`~byzllm.errors.InputError` for anything else, for self-loops (a node is never
    its own neighbour in the robustness definitions), for fewer than ``min_nodes`` nodes, and for
    a directed graph where an undirected one is required.
    """
    if allow_view and isinstance(G, GraphView):
        _check_shape(G.n, G.directed, require_undirected=require_undirected, min_nodes=min_nodes)
        return G
    import networkx as nx  # here: a caller holding a networkx graph has loaded it already

    if not isinstance(G, nx.Graph):
        raise InputError(f"expected a networkx graph, got {type(G).__name__}")
    directed = G.is_directed()
    _check_shape(
        G.number_of_nodes(), directed, require_undirected=require_undirected, min_nodes=min_nodes
    )
    loops = list(nx.selfloop_edges(G))
    if loops:
        u = loops[0][0]
        raise InputError(f"self-loops are not allowed (node {u!r} is its own neighbour)")
    labels = _ordered_nodes(G)
    index = {v: i for i, v in enumerate(labels)}
    in_masks, out_masks = _masks(
        len(labels), directed, ((index[u], index[v]) for u, v in G.edges())
    )
    return GraphView(tuple(labels), index, in_masks, out_masks, directed)


def node_list(nodes: Iterable[Hashable], *, what: str = "set") -> list[Hashable]:
    """``nodes`` as a list; :class:`InputError` when it is not a collection (``None``, one
    number where a list of nodes goes: a TypeError from the loop reading it otherwise)."""
    try:
        return list(nodes)
    except TypeError:
        raise InputError(f"{what} must be a collection of nodes, got {nodes!r:.40}") from None


def mask_of(view: GraphView, nodes: Iterable[Hashable], *, what: str = "set") -> int:
    """Bitmask of the given node labels; unknown labels raise :class:`InputError`."""
    mask = 0
    for v in node_list(nodes, what=what):
        try:
            mask |= 1 << view.index[v]
        except (KeyError, TypeError):
            raise InputError(f"{what} contains {v!r}, which is not a node of the graph") from None
    return mask


def nodes_of(view: GraphView, mask: int) -> list[Hashable]:
    """Node labels of a bitmask, in the view's order."""
    return [view.labels[i] for i in bits(mask)]
