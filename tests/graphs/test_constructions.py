"""Constructions: shapes, robustness levels they promise, and bad parameters."""

from __future__ import annotations

import math

import networkx as nx
import pytest

from byzllm.errors import InputError
from byzllm.graphs import (
    CONSTRUCTIONS,
    MAX_EDGES,
    build,
    erdos_renyi_probability,
    r_robustness,
)


@pytest.mark.parametrize("name", sorted(CONSTRUCTIONS))
def test_every_construction_labels_nodes_0_to_n_minus_1(name: str) -> None:
    params = {"k": 4} if name == "k-circulant" else {}
    G = build(name, n=10, seed=3, **params)
    assert sorted(G.nodes) == list(range(10))
    assert not G.is_directed()
    assert nx.number_of_selfloops(G) == 0
    assert G.graph["construction"] == name


def test_baselines_have_the_expected_shape() -> None:
    assert sorted(d for _, d in build("star", n=6).degree()) == [1, 1, 1, 1, 1, 5]
    assert nx.is_isomorphic(build("chain", n=6), nx.path_graph(6))
    tree = build("tree", n=7)
    assert nx.is_tree(tree) and tree.degree(0) == 2
    layered = build("layered", n=9, layers=3)  # 3 + 3 + 3 nodes, K_{3,3} between neighbours
    assert layered.number_of_edges() == 18
    assert all(d == 3 for _, d in build("k-circulant", n=8, k=3).degree())


@pytest.mark.parametrize(("n", "r"), [(9, 4), (10, 3), (12, 2), (7, 1), (11, 5)])
def test_preferential_attachment_is_r_robust(n: int, r: int) -> None:
    G = build("preferential", n=n, r=r, seed=n)
    assert G.number_of_edges() == (2 * r - 1) * (2 * r - 2) // 2 + r * (n - 2 * r + 1)
    assert r_robustness(G).r >= r


def test_preferential_attachment_default_matches_seed_paper() -> None:
    # The SAC paper, §5.4: n = 9 is K_7 plus two nodes joined to 4 of its nodes.
    G = build("preferential", n=9, seed=0)
    assert G.graph["params"]["r"] == 4
    assert G.number_of_edges() == 21 + 8


def test_erdos_renyi_is_verified_and_reproducible() -> None:
    a = build("erdos-renyi", n=12, r=3, seed=5)
    b = build("erdos-renyi", n=12, r=3, seed=5)
    assert sorted(a.edges()) == sorted(b.edges())
    assert r_robustness(a).r >= 3
    p = (math.log(12) + 2 * math.log(math.log(12))) / 12
    assert erdos_renyi_probability(12, 3) == pytest.approx(p)
    assert a.graph["params"]["p"] == pytest.approx(p)


def test_erdos_renyi_gives_up_with_a_clear_error() -> None:
    with pytest.raises(InputError, match="no 4-robust"):
        build("erdos-renyi", n=8, r=4, p=0.2, max_tries=3, seed=1)


@pytest.mark.parametrize(
    ("name", "kwargs"),
    [
        ("merg", {"n": 1}),
        ("complete", {"n": "7"}),
        ("nope", {"n": 5}),
        ("preferential", {"n": 5, "r": 4}),
        ("ring-lattice", {"n": 6, "k": 3}),
        ("k-circulant", {"n": 7, "k": 3}),
        ("layered", {"n": 5, "layers": 1}),
        ("tree", {"n": 5, "branching": 0}),
        ("star", {"n": 5, "bogus": 1}),
        ("erdos-renyi", {"n": 6, "p": 1.5}),
        ("star", {"n": 200_000}),  # more nodes than a graph file may hold
        # From the command line (-p key=value): a value JSON does not read stays text, and
        # NaN reached a comparison ("'<' not supported between float and str").
        ("erdos-renyi", {"n": 6, "p": "nan"}),
        ("erdos-renyi", {"n": 6, "p": float("nan")}),
        ("erdos-renyi", {"n": 6, "p": True}),
        ("erdos-renyi", {"n": 6, "r": 2.5}),
        ("tree", {"n": 5, "branching": "3"}),
    ],
)
def test_bad_parameters_raise_input_error(name: str, kwargs: dict[str, object]) -> None:
    with pytest.raises(InputError):
        build(name, **kwargs)  # type: ignore[arg-type]


def test_erdos_renyi_default_p_is_raised_where_it_cannot_work() -> None:
    """Zhang et al.'s p is asymptotic: at 13 nodes and the default r = 6 no sample of 1,000 was
    6-robust, so `graph build erdos-renyi -n 13` always failed. A default p is raised; a p
    given is kept, and refused as before."""
    from byzllm.graphs import is_r_robust
    from byzllm.graphs._constructions import erdos_renyi

    G = erdos_renyi(13, seed=0)
    params = G.graph["params"]
    assert params["r"] == 6 and is_r_robust(G, 6)
    assert params["p_default"] == erdos_renyi_probability(13, 6) < params["p"] <= 1.0
    small = erdos_renyi(9, seed=0)  # the default p works here: kept, nothing recorded
    assert "p_default" not in small.graph["params"]
    with pytest.raises(InputError, match="no 6-robust G"):
        erdos_renyi(13, seed=0, p=erdos_renyi_probability(13, 6), max_tries=50)


@pytest.mark.parametrize(
    ("name", "params", "edges"),
    [
        ("merg", {}, 18),  # n = 7, γ = 4: 3γ(γ-1)/2
        ("gg-merg", {}, 21),  # K_7
        ("complete", {}, 21),
        ("preferential", {"r": 3}, 16),  # K_5 (10 edges), then 2 nodes × 3
        ("k-circulant", {"k": 4}, 14),  # 7 · 4 / 2
        ("ring-lattice", {"k": 3}, 21),  # 7 · 3, all of K_7
        ("layered", {"layers": 3}, 12),  # groups 2, 3, 2: 2·3 + 3·2
        ("star", {}, 6),
        ("chain", {}, 6),
        ("tree", {"branching": 3}, 6),
    ],
)
def test_max_edges_is_checked_against_the_construction_s_edge_count(
    name: str, params: dict[str, int], edges: int
) -> None:
    """The count each construction is refused on is its edge count (hand-computed, n = 7):
    at that many edges it is built, one fewer is refused before building."""
    assert build(name, n=7, max_edges=edges, **params).number_of_edges() == edges
    with pytest.raises(InputError, match=f"would have up to {edges} edges, over the limit"):
        build(name, n=7, max_edges=edges - 1, **params)


def test_the_edge_counts_match_what_is_built() -> None:
    for name in sorted(set(CONSTRUCTIONS) - {"erdos-renyi"}):
        for n in range(2, 16):
            for params in [{}, {"k": 1}, {"k": 3}, {"r": 2}, {"layers": 4}, {"branching": 3}]:
                try:
                    G = build(name, n=n, **params)
                except InputError:
                    continue
                count = G.number_of_edges()
                build(name, n=n, max_edges=count, **params)
                with pytest.raises(InputError, match="over the limit"):
                    build(name, n=n, max_edges=count - 1, **params)


@pytest.mark.parametrize(
    ("name", "edges"),
    [
        ("complete", "4,999,950,000"),
        ("gg-merg", "4,999,925,000"),  # γ = 50,000: K_n less 25,000 edges
        ("merg", "3,749,950,001"),  # even n: ⌊(γ(3γ-2)+2)/2⌋, γ = 50,000
        ("erdos-renyi", "4,999,950,000"),  # p may be raised to 1
        ("preferential", "4,999,800,003"),  # r = 49,999: K_99,997 then 3 nodes × r
        ("layered", "2,222,244,444"),  # 33,333 · 33,334 · 2
    ],
)
def test_a_dense_graph_past_the_edge_limit_is_refused_before_building(
    name: str, edges: str
) -> None:
    """`graph build complete -n 100000` (and merg, preferential, erdos-renyi) ran until memory
    ran out; the count is now checked first, in no time."""
    with pytest.raises(InputError, match=f"on 100,000 nodes would have up to {edges} edges"):
        build(name, n=100_000)


def test_the_default_limit_is_a_million_edges() -> None:
    assert MAX_EDGES == 1_000_000
    with pytest.raises(InputError, match="up to 1,000,405 edges, over the limit of 1,000,000"):
        build("complete", n=1415)  # 1415 · 1414 / 2


@pytest.mark.parametrize("bad", [-1, 2.5, True, "10", None])
def test_max_edges_must_be_a_count(bad: object) -> None:
    with pytest.raises(InputError, match="max_edges must be a non-negative integer"):
        build("chain", n=4, max_edges=bad)  # type: ignore[arg-type]
