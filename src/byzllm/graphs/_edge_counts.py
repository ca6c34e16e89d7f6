"""Edge counts known in closed form, and the node-count check the constructions share.

Plain arithmetic, no networkx: ``byzllm graph check`` compares a graph's edges with the fewest an
equally robust graph can have without loading a graph library.
"""

from __future__ import annotations

from typing import Any

from byzllm.errors import InputError

__all__ = ["MAX_EDGES", "MAX_NODES", "check_node_count", "gamma_merg_edge_count"]

#: Largest node count a graph may have here: what a graph file may declare (guards against
#: absurd allocations), so every graph built can also be saved and loaded.
MAX_NODES = 100_000

#: Most edges :func:`~byzllm.graphs.build` makes unless told more (``max_edges``): a networkx
#: graph and its file take about 0.5 KB an edge, so a million edges is about 0.5 GB and a few
#: seconds (``complete`` on 1,414 nodes). A dense construction on ``MAX_NODES`` nodes has
#: billions and ran until memory ran out.
MAX_EDGES = 1_000_000


def check_node_count(n: Any, minimum: int = 2) -> int:
    """``n`` when it is an integer in ``minimum..MAX_NODES``; else :class:`InputError`."""
    if isinstance(n, bool) or not isinstance(n, int):
        raise InputError(f"n must be an integer, got {n!r}")
    if n < minimum:
        raise InputError(f"n must be at least {minimum}, got {n}")
    if n > MAX_NODES:
        raise InputError(f"n must be at most {MAX_NODES:,}, got {n:,}")
    return n


def gamma_merg_edge_count(n: int) -> int:
    """|E| of a γ-MERG (Lee & Panagou, Theorem 1), γ = ⌈n/2⌉.

    ``3γ(γ-1)/2`` for odd n and ``⌊(γ(3γ-2)+2)/2⌋`` for even n: the fewest edges of any
    graph on n nodes that is ⌈n/2⌉-robust (the most robust any n-node graph can be).
    """
    check_node_count(n)
    gamma = (n + 1) // 2
    if n % 2:
        return 3 * gamma * (gamma - 1) // 2
    return (gamma * (3 * gamma - 2) + 2) // 2
