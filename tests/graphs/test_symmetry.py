"""Symmetry breaking in the k-closed pair search: the automorphisms it finds, and the answers
it still gives (against brute force) on graphs full of them."""

from __future__ import annotations

import itertools
import random
from typing import Any

import networkx as nx
import pytest

from byzllm.graphs import build
from byzllm.graphs._closed_sets import compiled_search_available, find_closed_pair, symmetries
from byzllm.graphs._core import GraphView, graph_view

from ._reference import check_closed_pair, reference_r

needs_numba = pytest.mark.skipif(
    not compiled_search_available(), reason="numba is not installed (pip install 'byzllm[fast]')"
)


def _is_automorphism(view: GraphView, image: list[int]) -> bool:
    """Brute force: ``j ∈ N_i`` exactly when ``image[j] ∈ N_image[i]``, for every i and j."""
    n = view.n
    return all(
        (view.in_masks[i] >> j & 1) == (view.in_masks[image[i]] >> image[j] & 1)
        for i in range(n)
        for j in range(n)
    )


def _swaps_by_brute_force(view: GraphView) -> set[tuple[int, int, int, int]]:
    """Every automorphism moving two nodes or two pairs, as ``symmetries`` writes them, less
    the products of two transpositions that are automorphisms themselves (their constraints
    say nothing more)."""
    n = view.n
    found = set()
    for a, b in itertools.combinations(range(n), 2):
        image = list(range(n))
        image[a], image[b] = b, a
        if _is_automorphism(view, image):
            found.add((a, b, -1, -1))
    for a, b, c, d in itertools.permutations(range(n), 4):
        if a < b and c < d and a < c:
            image = list(range(n))
            image[a], image[b], image[c], image[d] = b, a, d, c
            if _is_automorphism(view, image) and (a, b, -1, -1) not in found:
                found.add((a, b, c, d))
    return found


def _symmetric_graphs() -> list[nx.Graph[Any]]:
    """Graphs with many automorphisms of both kinds, undirected and directed."""
    rng = random.Random(28)
    graphs: list[nx.Graph[Any]] = [build("merg", n=n) for n in range(3, 10)]
    graphs += [build("gg-merg", n=n) for n in range(3, 9)]
    graphs += [nx.circulant_graph(n, [1, 2]) for n in range(5, 10)]
    graphs += [nx.complete_multipartite_graph(2, 3, 3), nx.complete_bipartite_graph(3, 4)]
    graphs += [nx.cycle_graph(n) for n in range(4, 9)] + [nx.path_graph(7), nx.star_graph(6)]
    for case in range(40):
        # A random core whose nodes get twins, or whose edges get a mirror image.
        G = nx.gnp_random_graph(rng.randint(3, 5), rng.uniform(0.3, 0.9), seed=case)
        if case % 2:
            for v in list(G.nodes)[: rng.randint(1, 3)]:
                twin = G.number_of_nodes()
                G.add_node(twin)
                G.add_edges_from((twin, u) for u in list(G.neighbors(v)) if u != twin)
                if rng.random() < 0.5:
                    G.add_edge(v, twin)
        else:
            m = G.number_of_nodes()
            G = nx.disjoint_union(G, G)
            G.add_edges_from((i, i + m) for i in range(m) if rng.random() < 0.6)
        if case % 5 == 0:
            G = G.to_directed()
            G.remove_edges_from([e for e in list(G.edges) if rng.random() < 0.25])
        graphs.append(G)
    return [G for G in graphs if 2 <= G.number_of_nodes() <= 10]


def _with_twins(n: int) -> nx.Graph[Any]:
    """G(n, 1/2) and a twin of each of its first four nodes (one adjacent to its twin)."""
    G = nx.gnp_random_graph(n, 0.5, seed=n)
    for v in range(4):
        G.add_edges_from((n + v, u) for u in list(G.neighbors(v)))
    G.add_edge(0, n)
    return G


def test_symmetries_are_exactly_the_automorphisms_moving_two_nodes_or_two_pairs() -> None:
    rng = random.Random(3)
    graphs = _symmetric_graphs()
    graphs += [nx.gnp_random_graph(rng.randint(2, 8), 0.5, seed=s) for s in range(30)]
    some = 0
    for G in graphs:
        view = graph_view(G)
        found = symmetries(view)
        assert set(found) == _swaps_by_brute_force(view), sorted(G.edges())
        some += bool(found)
    assert some >= 40, some


def test_gamma_merg_outer_nodes_swap_with_the_clique_nodes_they_miss() -> None:
    # n = 9: clique 0..5, outer 6, 7, 8 miss 0, 1, 2; 3, 4 and 5 miss nobody (twins).
    found = set(symmetries(graph_view(build("merg", n=9))))
    assert {(0, 1, 6, 7), (0, 2, 6, 8), (1, 2, 7, 8)} <= found
    assert {(3, 4, -1, -1), (3, 5, -1, -1), (4, 5, -1, -1)} <= found


@pytest.mark.parametrize("compiled", [False, True])
def test_search_with_symmetry_decides_every_level(compiled: bool) -> None:
    if compiled and not compiled_search_available():
        pytest.skip("numba is not installed (pip install 'byzllm[fast]')")
    graphs = _symmetric_graphs() + [G for G in nx.graph_atlas_g() if G.number_of_nodes() >= 2]
    for G in graphs:
        view = graph_view(G)
        r = reference_r(G)
        for k in range(-1, r + 2):
            found = find_closed_pair(view, k, compiled=compiled, completions=k % 2 == 0)
            check_closed_pair(found, view, k, r)


@needs_numba
def test_both_searches_break_symmetry_node_for_node() -> None:
    graphs = [build("merg", n=n) for n in range(11, 24)] + [build("gg-merg", n=14)]
    graphs += [nx.complete_multipartite_graph(4, 4, 5), _with_twins(14)]
    for G in graphs:
        view = graph_view(G)
        assert symmetries(view)
        for k in range(view.n // 2 + 1):
            for completions in (False, True):
                expected = find_closed_pair(view, k, compiled=False, completions=completions)
                assert find_closed_pair(view, k, compiled=True, completions=completions) == (
                    expected
                )
                plain = find_closed_pair(view, k, compiled=True, symmetry=False)
                assert (expected is None) == (plain is None), (view.n, k)
