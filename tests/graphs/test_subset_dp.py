"""The subset DP's two implementations (Python lists, numpy tables) give the same answers, pair
for pair; the solvers take a graph's bitmask view as they take the graph; a small graph is
checked without numpy or networkx."""

from __future__ import annotations

from pathlib import Path

import networkx as nx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from byzllm.errors import InputError
from byzllm.graphs import (
    build,
    check_f_local,
    draw_graph,
    is_r_robust,
    r_robustness,
    robustness_bounds,
    rs_robustness,
    spectral_lower_bound,
    tolerable_f,
    verify_certificate,
    verify_rs_certificate,
)
from byzllm.graphs._core import GraphView, graph_view, view_of_edges
from byzllm.graphs._subset_dp import (
    PURE_MAX_NODES,
    pure_r_robustness,
    pure_rs_robustness,
)
from byzllm.graphs._subset_tables import table_r_robustness, table_rs_robustness


@st.composite
def small_views(draw: st.DrawFn) -> GraphView:
    n = draw(st.integers(2, 9))
    directed = draw(st.booleans())
    possible = [(u, v) for u in range(n) for v in range(n) if u != v and (directed or u < v)]
    chosen = draw(st.lists(st.sampled_from(possible), max_size=len(possible)))
    return view_of_edges(n, directed, chosen)


@settings(max_examples=300, deadline=None)
@given(view=small_views(), r=st.integers(-1, 6))
def test_lists_and_tables_agree(view: GraphView, r: int) -> None:
    assert pure_r_robustness(view) == table_r_robustness(view)
    assert pure_rs_robustness(view, r) == table_rs_robustness(view, r)


def test_lists_and_tables_agree_at_the_largest_list_size() -> None:
    G = nx.gnp_random_graph(PURE_MAX_NODES, 0.5, seed=3)
    view = graph_view(G)
    r = table_r_robustness(view)[0]
    assert pure_r_robustness(view) == table_r_robustness(view)
    assert pure_rs_robustness(view, r) == table_rs_robustness(view, r)


def test_lists_by_hand() -> None:
    # Path 0-1-2: f({0}) = 1 and V∖{0} = {1, 2} holds {1, 2} with f = max(1, 0) = 1, so r = 1;
    # S1 = {0} is the first minimiser in index order (mask 1), and the descent stops at once
    # on {1, 2}, whose own f is the subset minimum.
    path = view_of_edges(3, False, [(0, 1), (1, 2)])
    assert pure_r_robustness(path) == (1, 0b001, 0b110)
    # Triangle: a pair of disjoint sets is a singleton and a set of at most 2 nodes; the
    # singleton has 2 outside neighbours, so no pair has f ≤ 1 on both sides: r = 2.
    triangle = view_of_edges(3, False, [(0, 1), (1, 2), (0, 2)])
    assert pure_r_robustness(triangle)[0] == 2
    # (2, s) needs pairs where neither side is wholly 2-reachable: a singleton always is, and
    # two disjoint sets of 2 or more nodes do not fit in 3 nodes, so there is none.
    assert pure_rs_robustness(triangle, 2) is None
    # K4 at r = 2: sets of 1 or 2 nodes are wholly 2-reachable (3 or 2 outside neighbours per
    # node); a set of 3 is not (1 each) but leaves a singleton: again no pair, and r = 2.
    k4 = graph_view(nx.complete_graph(4))
    assert pure_rs_robustness(k4, 2) is None
    assert pure_r_robustness(k4)[0] == 2


@pytest.mark.parametrize(
    "G",
    [
        build("merg", n=7),
        build("ring-lattice", n=10, k=2),
        nx.gnp_random_graph(11, 0.5, seed=7, directed=True),
        nx.gnp_random_graph(30, 0.3, seed=2),
    ],
    ids=["merg-7", "ring-10", "directed-11", "gnp-30"],
)
def test_the_solvers_take_the_view_as_they_take_the_graph(G: nx.Graph[int]) -> None:
    view = graph_view(G)
    drop = {"seconds"}
    assert r_robustness(view).model_dump(exclude=drop) == r_robustness(G).model_dump(exclude=drop)
    assert rs_robustness(view).model_dump(exclude=drop) == rs_robustness(G).model_dump(exclude=drop)


def test_certificates_are_checked_on_the_graph_not_the_view() -> None:
    view = view_of_edges(3, False, [(0, 1), (1, 2)])
    with pytest.raises(InputError, match="networkx graph"):
        verify_certificate(view, [0], [2], 2)
    with pytest.raises(InputError, match="networkx graph"):
        verify_rs_certificate(view, [0], [2], 2, 1)


def test_a_view_is_checked_like_a_graph() -> None:
    with pytest.raises(InputError, match="at least 2 nodes"):
        r_robustness(view_of_edges(1, False, []))
    with pytest.raises(InputError, match="undirected"):
        spectral_lower_bound(view_of_edges(3, True, [(0, 1)]))


def test_the_other_solvers_take_the_view_too(tmp_path: Path) -> None:
    G = build("merg", n=7)
    view = graph_view(G)
    assert is_r_robust(view, 4) and not is_r_robust(view, 5)
    assert tolerable_f(view) == tolerable_f(G) == 3
    assert check_f_local(view, [1, 2, 3], F=3) == check_f_local(G, [1, 2, 3], F=3)
    assert robustness_bounds(view) == robustness_bounds(G)
    with pytest.raises(InputError, match="networkx graph"):
        draw_graph(view, tmp_path / "g.png")


@settings(max_examples=150, deadline=None)
@given(
    n=st.integers(2, 9),
    directed=st.booleans(),
    bits=st.lists(st.booleans(), min_size=72, max_size=72),
    r=st.integers(1, 5),
)
def test_is_r_robust_agrees_with_the_dp_on_graphs_with_a_poorly_connected_node(
    n: int, directed: bool, bits: list[bool], r: int
) -> None:
    # is_r_robust refuses a graph with a node of fewer than r in-neighbours (r >= 2) before
    # the DP: that node and the rest are a pair neither side of which is r-reachable. At
    # r = 1 a directed graph's source node does not refuse it (what it points to is reachable).
    pairs = [(u, v) for u in range(n) for v in range(n) if u != v]
    edges = [(u, v) for (u, v), on in zip(pairs, bits, strict=False) if on and (directed or u < v)]
    G: nx.Graph[int] = nx.DiGraph() if directed else nx.Graph()
    G.add_nodes_from(range(n))
    G.add_edges_from(edges)
    assert is_r_robust(G, r) == (pure_r_robustness(graph_view(G))[0] >= r)
