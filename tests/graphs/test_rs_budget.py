"""The (r,s) budget search: exact against the subset DP, the same in both twins, on time."""

from __future__ import annotations

import random
import time
from typing import Any

import networkx as nx
import pytest

from byzllm.graphs import build, rs_robustness, verify_rs_certificate
from byzllm.graphs._closed_sets import SearchTimeout, compiled_search_available
from byzllm.graphs._core import graph_view, nodes_of
from byzllm.graphs._rs_budget import find_budget_pair, rs_by_budget
from byzllm.graphs._subset_dp import dp_r_robustness, dp_rs_robustness

needs_numba = pytest.mark.skipif(
    not compiled_search_available(), reason="numba is not installed (pip install 'byzllm[fast]')"
)
TWINS = [False, pytest.param(True, marks=needs_numba)]


def _graphs(count: int, seed: int, largest: int) -> list[nx.Graph[Any]]:
    """Random graphs and digraphs, some with isolated nodes, complete graphs, γ-MERGs."""
    rng = random.Random(seed)
    graphs: list[nx.Graph[Any]] = []
    for case in range(count):
        n = rng.randint(2, largest)
        p = rng.choice([0.2, 0.4, 0.6, 0.8, 1.0])
        G = nx.gnp_random_graph(n, p, seed=seed + case, directed=case % 3 == 0)
        if case % 5 == 0:
            G.add_nodes_from(range(n, n + rng.randint(1, 2)))  # isolated nodes
        graphs.append(G)
    graphs += [nx.complete_graph(n) for n in (2, 5, 8)]
    graphs += [build("merg", n=n) for n in range(3, min(largest, 12) + 1)]
    return graphs


def _fewest(view: Any, r: int) -> int:
    """s from the DP: the fewest r-reachable members, ``n + 1`` when no pair qualifies."""
    found = dp_rs_robustness(view, r)
    return view.n + 1 if found is None else found[0]


@pytest.mark.parametrize("compiled", TWINS)
def test_budget_search_finds_a_pair_exactly_when_s_is_within_budget(compiled: bool) -> None:
    # Budgets 0 to s + 1 at every r: a pair at budget B iff s <= B, and the pair found is a
    # certificate (checked without the solvers) that G is not (r, B + 1)-robust.
    checked = 0
    for G in _graphs(45, 300, 10):
        view = graph_view(G)
        n = view.n
        for r in range(1, (n + 1) // 2 + 2):
            s = _fewest(view, r)
            for budget in range(min(n, s + 2)):
                found = find_budget_pair(view, r - 1, budget, compiled=compiled)
                assert (found is not None) == (s <= budget), (sorted(G.edges()), n, r, budget)
                checked += 1
                if found is not None:
                    s1, s2 = nodes_of(view, found[0]), nodes_of(view, found[1])
                    assert verify_rs_certificate(G, s1, s2, r, budget + 1)
    assert checked > 300


@pytest.mark.parametrize("compiled", TWINS)
def test_budget_walk_gives_s_exactly_on_r_robust_graphs(
    compiled: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    # rs_by_budget (what rs_robustness runs above the DP's size) against the DP at r = r(G).
    from byzllm.graphs import _rs_budget

    search = _rs_budget.find_budget_pair

    def one_twin(*args: Any, **kwargs: Any) -> Any:
        return search(*args, compiled=compiled, **kwargs)

    monkeypatch.setattr(_rs_budget, "find_budget_pair", one_twin)
    settled = 0
    for G in _graphs(40, 900, 16):
        view = graph_view(G)
        r = dp_r_robustness(view)[0]
        if r < 1:
            continue
        s = _fewest(view, r)
        walk = rs_by_budget(view, r, None)
        if s > view.n:
            assert walk.pair is None and walk.proven == view.n
            continue
        assert walk.pair is not None and walk.pair[0] == walk.proven == s
        settled += 1
        _, s1, s2 = walk.pair
        assert verify_rs_certificate(G, nodes_of(view, s1), nodes_of(view, s2), r, s + 1)
    assert settled >= 25


@needs_numba
def test_both_twins_return_the_same_pair() -> None:
    rng = random.Random(41)
    for case in range(25):
        n = rng.randint(2, 24)
        G = nx.gnp_random_graph(
            n, rng.choice([0.3, 0.5, 0.7]), seed=4100 + case, directed=case % 4 == 0
        )
        view = graph_view(G)
        for k in range(n // 2 + 1):
            for budget in range(3):
                expected = find_budget_pair(view, k, budget, compiled=False)
                assert find_budget_pair(view, k, budget, compiled=True) == expected


def test_rs_above_dp_size_needs_no_milp_for_s_above_one() -> None:
    # s = 3 on this 30-node graph: the level search (one search per set of exempt nodes)
    # left it to the MILP (30 s); the budget search proves budgets 1 and 2 empty.
    G = nx.gnp_random_graph(30, 0.5, seed=30003)
    res = rs_robustness(G, r=8, time_limit=60)
    assert (res.s, res.exact, res.bounds) == (3, True, (3, 3))
    assert res.method.startswith("search")
    assert res.certificate is not None
    cert = res.certificate
    assert verify_rs_certificate(G, cert.s1, cert.s2, 8, 4)
    assert not verify_rs_certificate(G, cert.s1, cert.s2, 8, 3)


@pytest.mark.parametrize("compiled", TWINS)
def test_budget_search_stops_at_a_past_deadline(compiled: bool) -> None:
    view = graph_view(nx.gnp_random_graph(30, 0.5, seed=1))
    with pytest.raises(SearchTimeout):
        find_budget_pair(view, 4, 1, time.perf_counter() - 1.0, compiled=compiled, symmetry=False)


def test_budget_walk_proves_nothing_past_its_deadline() -> None:
    view = graph_view(nx.gnp_random_graph(30, 0.5, seed=1))
    walk = rs_by_budget(view, 5, time.perf_counter() - 1.0)
    assert (walk.proven, walk.pair) == (1, None)


@needs_numba
def test_both_twins_visit_the_same_search_nodes() -> None:
    import numpy as np

    from byzllm.graphs import _rs_budget
    from byzllm.graphs import _rs_budget_jit as jit
    from byzllm.graphs._closed_sets import _permute

    rng = random.Random(9)
    for case in range(12):
        n = rng.randint(4, 20)
        view = graph_view(nx.gnp_random_graph(n, 0.5, seed=case))
        order = sorted(range(n), key=lambda i: (-view.in_masks[i].bit_count(), i))
        work = _permute(view, order)
        for k in range(n // 2):
            for budget in range(3):
                python = _rs_budget._BudgetSearch(work, k, None, _rs_budget._COMPLETION_LIMIT, [])
                python.run(budget)
                stack, cursor, found = jit.new_state(n, budget)
                code = jit.PAUSED
                while code == jit.PAUSED:
                    code = jit.search(
                        np.array(work.in_masks, dtype=np.uint64),
                        np.array(work.out_masks, dtype=np.uint64),
                        np.array([max(0, m.bit_count() - k) for m in work.in_masks]),
                        np.array([m.bit_count() - k - 1 for m in work.in_masks]),
                        k,
                        budget,
                        stack,
                        cursor,
                        found,
                        1000,
                        _rs_budget._COMPLETION_LIMIT,
                        np.zeros((0, 4), dtype=np.int64),
                    )
                assert cursor[3] == python.visited, (case, k, budget)
