"""Acceptance 2: known robustness values (LeBlanc et al. 2013; Lee & Panagou, Thm. 1)."""

from __future__ import annotations

import itertools
import math
import subprocess
import sys

import networkx as nx
import pytest

from byzllm.graphs import (
    build,
    check_f_local,
    gamma_merg_edge_count,
    is_r_robust,
    r_robustness,
    robustness_bounds,
    rs_robustness,
    spectral_lower_bound,
    tolerable_f,
    verify_certificate,
)


@pytest.mark.parametrize("n", range(2, 15))
def test_complete_graph(n: int) -> None:
    G = nx.complete_graph(n)
    res = r_robustness(G)
    assert res.r == math.ceil(n / 2)
    assert rs_robustness(G, r=res.r).s == n


@pytest.mark.parametrize("n", range(4, 16))
def test_cycle_is_1_robust(n: int) -> None:
    assert r_robustness(nx.cycle_graph(n)).r == 1


def test_triangle_is_2_robust() -> None:
    assert r_robustness(nx.cycle_graph(3)).r == 2


@pytest.mark.parametrize(("n", "k"), [(6, 2), (9, 2), (12, 2), (8, 3), (11, 3), (14, 3), (10, 4)])
def test_ring_lattice(n: int, k: int) -> None:
    assert n >= 2 * k + 2
    G = build("ring-lattice", n=n, k=k)
    assert all(d == 2 * k for _, d in G.degree())
    assert r_robustness(G).r == k


@pytest.mark.parametrize("n", range(3, 15))
def test_gamma_merg(n: int) -> None:
    gamma = math.ceil(n / 2)
    G = build("merg", n=n)
    assert G.number_of_edges() == gamma_merg_edge_count(n)
    assert r_robustness(G).r == gamma
    for u, v in list(G.edges()):
        H = G.copy()
        H.remove_edge(u, v)
        assert r_robustness(H).r < gamma, (n, u, v)


def test_gamma_merg_edge_counts_by_hand() -> None:
    # odd n: 3γ(γ-1)/2; even n: ⌊(γ(3γ-2)+2)/2⌋
    assert [gamma_merg_edge_count(n) for n in (3, 5, 7, 9)] == [3, 9, 18, 30]
    assert [gamma_merg_edge_count(n) for n in (4, 6, 8, 10)] == [5, 11, 21, 33]


@pytest.mark.parametrize("n", range(2, 15))
def test_gamma_gamma_merg(n: int) -> None:
    gamma = math.ceil(n / 2)
    G = build("gg-merg", n=n)
    assert r_robustness(G).r == gamma
    assert rs_robustness(G, r=gamma).s >= gamma
    if n <= 10:
        for u, v in list(G.edges()):
            H = G.copy()
            H.remove_edge(u, v)
            broken = r_robustness(H).r < gamma or rs_robustness(H, r=gamma).s < gamma
            assert broken, (n, u, v)


@pytest.mark.parametrize("n", range(3, 9))
def test_no_graph_with_fewer_edges_is_gamma_gamma_robust(n: int) -> None:
    # Exhaustive: adding edges never lowers robustness, so if some graph with fewer edges than
    # gg-merg were (γ,γ)-robust, so would be one with exactly one edge fewer, i.e. K_n minus
    # (|missing| + 1) edges. None is.
    gamma = math.ceil(n / 2)
    complete = nx.complete_graph(n)
    missing = complete.number_of_edges() - build("gg-merg", n=n).number_of_edges()
    for removed in itertools.combinations(list(complete.edges()), missing + 1):
        H = complete.copy()
        H.remove_edges_from(removed)
        assert rs_robustness(H, r=gamma).s < gamma, (n, removed)


@pytest.mark.parametrize("m", range(2, 9))
def test_two_cliques_joined_by_matching(m: int) -> None:
    G = nx.disjoint_union(nx.complete_graph(m), nx.complete_graph(m))
    G.add_edges_from((i, m + i) for i in range(m))
    res = r_robustness(G)
    assert res.r == 1
    assert verify_certificate(G, res.certificate.s1, res.certificate.s2, 2)


def test_disconnected_graph_is_not_1_robust() -> None:
    G = nx.disjoint_union(nx.path_graph(3), nx.path_graph(3))
    assert r_robustness(G).r == 0
    assert tolerable_f(G) == -1
    assert is_r_robust(G, 0) and not is_r_robust(G, 1)


def test_tolerable_f_is_r_minus_one() -> None:
    assert tolerable_f(build("merg", n=7)) == 3
    assert tolerable_f(build("star", n=7)) == 0


def test_directed_cycle_uses_in_neighbours() -> None:
    # Each node has one in-neighbour: singletons are 1-reachable, so r = 1.
    assert r_robustness(nx.cycle_graph(5, create_using=nx.DiGraph)).r == 1
    # {0} hears nobody (f = 0); {1, 2}: node 1 hears 0 from outside (f = 1), and every other
    # set containing 1 or 2 has a member hearing ≥ 1 outsider: r = 1.
    G = nx.DiGraph([(0, 1), (0, 2), (1, 2), (2, 1)])
    assert r_robustness(G).r == 1
    # Two sources hear nobody: {0} and {1} are both closed, r = 0, although the underlying
    # undirected graph (a path) is 1-robust.
    H = nx.DiGraph([(0, 2), (1, 2)])
    assert r_robustness(H).r == 0
    assert r_robustness(H.to_undirected()).r == 1


def test_check_f_local_by_hand() -> None:
    G = build("merg", n=7)  # 0..3 form a clique with every outer node joined to 3 of them
    assert check_f_local(G, [], 0)
    assert check_f_local(G, [4], 1)
    # Node 0 sees 1, 2 and 3 inside {1, 2, 3}: 3-local but not 2-local.
    assert check_f_local(G, [1, 2, 3], 3)
    assert not check_f_local(G, [1, 2, 3], 2)
    D = nx.DiGraph([(0, 1), (2, 1)])
    assert not check_f_local(D, [0, 2], 1)  # node 1 hears from both
    assert check_f_local(D, [1], 0)  # nobody hears from node 1


def test_check_f_local_ignores_edges_among_byzantine_nodes() -> None:
    # Def. 3.2 of the SAC paper bounds the Byzantine in-neighbours of the *other* nodes:
    # Byzantine triangle {0, 1, 2} (each sees two of its own), honest node 3 sees only 0.
    G = nx.Graph([(0, 1), (1, 2), (0, 2), (0, 3)])
    assert check_f_local(G, [0, 1, 2], 1)
    assert not check_f_local(G, [0, 1, 2], 0)


def test_verify_certificate_by_hand() -> None:
    # LeBlanc et al. 2013: S is r-reachable when some member has at least r
    # in-neighbours outside S; (S1, S2) shows "not r-robust" when neither is.
    path = nx.path_graph(4)  # 0 - 1 - 2 - 3: nodes 1 and 2 each have one neighbour across
    assert verify_certificate(path, {0, 1}, {2, 3}, 2)
    assert not verify_certificate(path, {0, 1}, {2, 3}, 1)
    # K4 on 0..3 with a pendant 4 at node 3: {0} is 2-reachable (three outside), {4} is not.
    G = nx.complete_graph(4)
    G.add_edge(3, 4)
    assert not verify_certificate(G, {0}, {4}, 2)
    assert not verify_certificate(G, {4}, {0}, 2)
    # Directed: in-neighbours count. Node 1 hears 0 and 2; node 0 hears nobody.
    D = nx.DiGraph([(0, 1), (2, 1)])
    assert not verify_certificate(D, {1}, {0}, 2)
    assert verify_certificate(D, {0}, {2}, 1)


def test_verify_rs_certificate_by_hand() -> None:
    from byzllm.graphs import verify_rs_certificate

    # LeBlanc et al. 2013, (r, s)-robustness: (S1, S2) shows "not (r, s)-robust" when |X1| < |S1|,
    # |X2| < |S2| and |X1| + |X2| < s, X_k the members with >= r neighbours outside S_k.
    path = nx.path_graph(4)
    # r = 1: X1 = {1}, X2 = {2}: 1 < 2, 1 < 2, and 2 < s exactly when s >= 3.
    assert verify_rs_certificate(path, {0, 1}, {2, 3}, 1, 3)
    assert not verify_rs_certificate(path, {0, 1}, {2, 3}, 1, 2)
    # r = 2: nobody has two neighbours across: X1 = X2 = {}, 0 < s for s = 1.
    assert verify_rs_certificate(path, {0, 1}, {2, 3}, 2, 1)
    # S1 = {1} is wholly 1-reachable (X1 = S1): no certificate, whatever S2 and s.
    assert not verify_rs_certificate(path, {1}, {2, 3}, 1, 3)
    assert not verify_rs_certificate(path, {2, 3}, {1}, 1, 3)


def test_spectral_lower_bound_is_valid() -> None:
    for seed in range(30):
        G = nx.gnp_random_graph(10, 0.6, seed=seed)
        r = r_robustness(G).r
        assert spectral_lower_bound(G) <= r
        lower, upper = robustness_bounds(G)
        assert lower <= r <= upper


def test_spectral_lower_bound_by_hand() -> None:
    # K_n: λ₂ = n, bound ⌈n/2⌉ = r exactly.
    assert spectral_lower_bound(nx.complete_graph(8)) == 4
    # C_n: λ₂ = 2 - 2cos(2π/n) < 2, bound 1.
    assert spectral_lower_bound(nx.cycle_graph(9)) == 1


def test_bounds_settle_complete_graphs_without_search() -> None:
    res = r_robustness(nx.complete_graph(40))
    assert res.exact and res.r == 20 and res.method == "bounds"


def test_scipy_optimize_is_imported_only_by_a_milp_solve() -> None:
    """Building and checking small graphs (subset DP) never imports scipy.optimize."""
    probe = (
        "import sys\n"
        "from byzllm.graphs import build, r_robustness\n"
        "r_robustness(build('merg', n=7))\n"
        "before = 'scipy.optimize' in sys.modules\n"
        "r_robustness(build('merg', n=7), method='milp')\n"
        "print(before, 'scipy.optimize' in sys.modules)"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=120
    )
    assert done.stdout.split() == ["False", "True"]
