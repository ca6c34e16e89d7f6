"""Acceptance 1: agreement with a brute-force 3^n reference, certificates re-verified."""

from __future__ import annotations

import itertools
import random
from typing import Any

import networkx as nx
import pytest

from byzllm.graphs import (
    is_r_robust,
    r_robustness,
    rs_robustness,
    verify_certificate,
    verify_rs_certificate,
)

from ._reference import check_closed_pair, reference_r, reference_s


def _check_r(G: nx.Graph[Any], expected: int, method: str = "auto") -> None:
    res = r_robustness(G, method=method)  # type: ignore[arg-type]
    assert res.exact
    assert res.r == expected, (method, sorted(G.edges()))
    assert res.bounds == (expected, expected)
    cert = res.certificate
    assert cert.value == expected
    # Neither set is (r+1)-reachable: G is not (r+1)-robust ...
    assert verify_certificate(G, cert.s1, cert.s2, expected + 1)
    # ... and the pair is tight: one of them is r-reachable (when r > 0).
    if expected > 0:
        assert not verify_certificate(G, cert.s1, cert.s2, expected)


def _check_s(G: nx.Graph[Any], r: int) -> None:
    expected = reference_s(G, r)
    res = rs_robustness(G, r=r)
    assert res.exact
    assert res.s == expected, (r, sorted(G.edges()))
    if res.certificate is not None:
        assert res.s < G.number_of_nodes()
        assert verify_rs_certificate(G, res.certificate.s1, res.certificate.s2, r, res.s + 1)
        if res.s > 0:
            assert not verify_rs_certificate(G, res.certificate.s1, res.certificate.s2, r, res.s)
    else:
        assert res.s == G.number_of_nodes()


def _atlas() -> list[nx.Graph[Any]]:
    return [G for G in nx.graph_atlas_g() if G.number_of_nodes() >= 2]


def test_every_atlas_graph_matches_reference() -> None:
    graphs = _atlas()
    assert len(graphs) > 1200
    for G in graphs:
        r = reference_r(G)
        _check_r(G, r)
        _check_s(G, max(r, 1))


def _random_graphs(count: int, seed: int) -> list[nx.Graph[Any]]:
    rng = random.Random(seed)
    graphs: list[nx.Graph[Any]] = []
    for k in range(count):
        n = rng.randint(2, 9)
        p = rng.uniform(0.15, 0.95)
        graphs.append(nx.gnp_random_graph(n, p, seed=rng.randrange(10**9), directed=k % 2 == 1))
    return graphs


@pytest.mark.parametrize("chunk", range(3))
def test_random_graphs_and_digraphs_match_reference(chunk: int) -> None:
    for G in _random_graphs(100, seed=1000 + chunk):
        r = reference_r(G)
        _check_r(G, r)
        for rr in {max(r, 1), r + 1}:
            _check_s(G, rr)
        assert is_r_robust(G, r)
        assert not is_r_robust(G, r + 1)


@pytest.mark.parametrize("method", ["search", "milp"])
def test_other_solvers_match_reference(method: str) -> None:
    for G in _random_graphs(60, seed=77):
        _check_r(G, reference_r(G), method=method)


def test_search_path_of_is_r_robust_matches_reference() -> None:
    # n ≥ 15 takes the bound + branch-and-bound path instead of the DP.
    rng = random.Random(5)
    for _ in range(6):
        G = nx.gnp_random_graph(15, rng.uniform(0.3, 0.8), seed=rng.randrange(10**6))
        r = r_robustness(G, method="dp").r
        assert is_r_robust(G, r)
        assert not is_r_robust(G, r + 1)


@pytest.mark.parametrize("compiled", [False, True])
def test_closed_pair_search_decides_every_level(compiled: bool) -> None:
    from byzllm.graphs._closed_sets import compiled_search_available, find_closed_pair
    from byzllm.graphs._core import graph_view

    if compiled and not compiled_search_available():
        pytest.skip("numba is not installed (pip install 'byzllm[fast]')")
    for G in _random_graphs(80, seed=31):
        view = graph_view(G)
        r = reference_r(G)
        for k in range(-1, r + 2):
            check_closed_pair(find_closed_pair(view, k, compiled=compiled), view, k, r)


def test_search_agrees_with_dp_on_mid_sized_graphs() -> None:
    rng = random.Random(11)
    for k in range(8):
        n = rng.randint(12, 18)
        G = nx.gnp_random_graph(n, rng.uniform(0.25, 0.75), seed=k, directed=k % 3 == 0)
        dp = r_robustness(G, method="dp")
        search = r_robustness(G, method="search")
        assert search.exact and search.r == dp.r
        assert verify_certificate(G, search.certificate.s1, search.certificate.s2, dp.r + 1)


def test_rs_milp_matches_reference() -> None:
    from byzllm.graphs._core import graph_view
    from byzllm.graphs._milp import milp_rs_robustness

    for G in _random_graphs(40, seed=91):
        view = graph_view(G)
        r = max(reference_r(G), 1)
        for rr in (r, r + 1):
            expected = reference_s(G, rr)
            out = milp_rs_robustness(view, rr)
            assert out.optimal
            value = G.number_of_nodes() if out.value is None else out.value
            assert value == expected
            if out.value is not None:
                assert verify_rs_certificate(
                    G,
                    [i for i in G if out.s1 >> i & 1],
                    [i for i in G if out.s2 >> i & 1],
                    rr,
                    value + 1,
                )


def test_rs_above_dp_size_uses_proofs_and_milp() -> None:
    G = nx.gnp_random_graph(28, 0.5, seed=4)
    r = r_robustness(G).r
    # Not (r+1)-robust: s = 0 exactly, with the pair that shows it.
    above = rs_robustness(G, r=r + 1)
    assert above.exact and above.s == 0 and above.certificate is not None
    assert verify_certificate(G, above.certificate.s1, above.certificate.s2, r + 1)
    # r-robust: s ≥ 1 is proven even when the MILP stops early.
    at = rs_robustness(G, r=r, time_limit=2)
    assert 1 <= at.bounds[0] <= at.s <= at.bounds[1]
    if at.certificate is not None:
        cert = at.certificate
        assert verify_rs_certificate(G, cert.s1, cert.s2, r, at.bounds[1] + 1)


def test_rs_after_r_robustness_does_not_prove_r_again(monkeypatch: pytest.MonkeyPatch) -> None:
    from byzllm.graphs import _robustness
    from byzllm.graphs._bounds import lower_bound
    from byzllm.graphs._core import graph_view

    G = nx.gnp_random_graph(30, 0.5, seed=5)
    r = r_robustness(G).r
    assert lower_bound(graph_view(G)) < r  # so that only a search can prove r
    proofs: list[int] = []
    search = _robustness.find_closed_pair

    def spy(view: Any, k: int, deadline: float | None = None, **kw: Any) -> Any:
        if k == r - 1 and not kw.get("free"):
            proofs.append(k)
        return search(view, k, deadline, **kw)

    monkeypatch.setattr(_robustness, "find_closed_pair", spy)
    after = rs_robustness(G, r=r)
    assert proofs == []
    # The same graph built again (another object, same edges) is recognised too.
    assert rs_robustness(nx.Graph(sorted(G.edges())), r=r).s == after.s
    assert proofs == []
    _robustness._SOLVED.clear()
    fresh = rs_robustness(G, r=r)
    assert proofs == [r - 1]
    assert (fresh.s, fresh.exact, fresh.bounds) == (after.s, after.exact, after.bounds)
    assert after.certificate is not None
    cert = after.certificate
    assert verify_rs_certificate(G, cert.s1, cert.s2, r, after.s + 1)


def test_rs_proves_r_again_above_the_level_r_robustness_proved() -> None:
    from byzllm.graphs import _robustness

    G = nx.gnp_random_graph(28, 0.5, seed=4)
    res = r_robustness(G, time_limit=30)
    assert res.exact
    assert _robustness._SOLVED[_robustness._solved_key(_robustness.graph_view(G))] == res.r
    # One level above what was proven, G is not robust: s = 0 with its pair, as without memory.
    above = rs_robustness(G, r=res.r + 1)
    assert above.exact and above.s == 0


def _brute_free_pair(G: nx.Graph[Any], k: int, free: set[int]) -> bool:
    """3^n reference: a pair whose constrained members have ≤ k in-neighbours outside."""
    nodes = list(G)

    def outside(v: int, members: set[int]) -> int:
        preds = G.predecessors(v) if G.is_directed() else G.neighbors(v)
        return sum(1 for u in preds if u not in members)

    for assign in itertools.product(range(3), repeat=len(nodes)):
        s1 = {v for v, a in zip(nodes, assign, strict=True) if a == 1}
        s2 = {v for v, a in zip(nodes, assign, strict=True) if a == 2}
        if not s1 - free or not s2 - free:
            continue
        if all(outside(v, s) <= k for s in (s1, s2) for v in s - free):
            return True
    return False


@pytest.mark.parametrize("compiled", [False, True])
def test_closed_pair_search_with_free_nodes_matches_brute_force(compiled: bool) -> None:
    from byzllm.graphs._closed_sets import compiled_search_available, find_closed_pair
    from byzllm.graphs._core import graph_view

    if compiled and not compiled_search_available():
        pytest.skip("numba is not installed (pip install 'byzllm[fast]')")
    rng = random.Random(8)
    for case in range(40):
        n = rng.randint(3, 7)
        G = nx.gnp_random_graph(n, rng.uniform(0.3, 0.9), seed=case, directed=case % 3 == 0)
        view = graph_view(G)
        for k in range(n // 2 + 1):
            for size in (1, 2):
                for chosen in itertools.combinations(range(n), size):
                    free = sum(1 << i for i in chosen)
                    found = find_closed_pair(view, k, free=free, compiled=compiled)
                    assert (found is not None) == _brute_free_pair(G, k, set(chosen))
                    if found is not None:
                        s1, s2 = found
                        assert s1 and s2 and not s1 & s2
                        for members in (s1, s2):
                            assert members & ~free
                            for i in range(n):
                                if members >> i & 1 and not free >> i & 1:
                                    assert view.outside(i, members) <= k


def test_rs_above_dp_size_is_exact_by_the_budget_search_on_a_random_graph() -> None:
    G = nx.gnp_random_graph(30, 0.5, seed=30002)
    res = rs_robustness(G, time_limit=60)
    assert res.exact and res.method.startswith("search")
    assert res.s == res.bounds[0] == res.bounds[1] >= 1
    assert res.certificate is not None
    cert = res.certificate
    assert verify_rs_certificate(G, cert.s1, cert.s2, res.r, res.s + 1)


def test_rs_takes_a_pair_at_hand_that_meets_the_proven_floor(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A pair with one r-reachable node settles s = 1 (s >= 1 is proven): no budget search."""
    from byzllm.graphs import _robustness
    from byzllm.graphs._core import graph_view, mask_of

    G = nx.gnp_random_graph(30, 0.5, seed=30002)
    first = rs_robustness(G, time_limit=60)
    assert first.exact and first.s == 1 and first.certificate is not None
    view = graph_view(G)
    pair = mask_of(view, first.certificate.s1), mask_of(view, first.certificate.s2)

    def no_budget(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the budget search ran")

    monkeypatch.setattr(_robustness, "_pair_at_level", lambda *args: pair)
    monkeypatch.setattr(_robustness, "rs_by_budget", no_budget)
    again = rs_robustness(G, r=first.r, time_limit=60)
    assert (again.s, again.exact, again.bounds) == (1, True, (1, 1))
    assert again.certificate is not None
    cert = again.certificate
    assert verify_rs_certificate(G, cert.s1, cert.s2, first.r, 2)
