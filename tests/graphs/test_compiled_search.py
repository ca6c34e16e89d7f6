"""The compiled (numba) k-closed pair search: the same answers as the pure-Python search."""

from __future__ import annotations

import random
import time

import networkx as nx
import pytest

from byzllm.graphs import _closed_sets as closed_sets
from byzllm.graphs import r_robustness, verify_certificate
from byzllm.graphs._closed_sets import (
    COMPILED_MAX_NODES,
    SearchTimeout,
    compiled_search_available,
    find_closed_pair,
)
from byzllm.graphs._core import graph_view

needs_numba = pytest.mark.skipif(
    not compiled_search_available(), reason="numba is not installed (pip install 'byzllm[fast]')"
)


@needs_numba
def test_same_pair_as_python_search_on_random_graphs_and_digraphs() -> None:
    # Same seeds, same branching: the two searches must return the very same pair.
    rng = random.Random(2026)
    for case in range(60):
        n = rng.randint(2, 34)
        G = nx.gnp_random_graph(
            n, rng.choice([0.15, 0.3, 0.5, 0.7]), seed=case, directed=case % 4 == 0
        )
        view = graph_view(G)
        for k in range(n // 2 + 1):
            expected = find_closed_pair(view, k, compiled=False)
            assert find_closed_pair(view, k, compiled=True) == expected, (case, k)


@needs_numba
def test_without_completions_same_answer_and_same_pair_in_both_searches() -> None:
    # Completions only shortcut to a pair: without them each search still decides the same
    # way, the two searches still agree node for node, and what they return is a k-closed pair.
    rng = random.Random(7)
    for case in range(30):
        n = rng.randint(4, 30)
        view = graph_view(nx.gnp_random_graph(n, rng.choice([0.3, 0.5, 0.7]), seed=100 + case))
        for k in range(n // 2 + 1):
            with_them = find_closed_pair(view, k, compiled=True)
            found = find_closed_pair(view, k, compiled=True, completions=False)
            assert found == find_closed_pair(view, k, compiled=False, completions=False)
            assert (found is None) == (with_them is None), (case, k)
            if found is not None:
                s1, s2 = found
                assert s1 and s2 and not s1 & s2 and view.f(s1) <= k and view.f(s2) <= k


@needs_numba
@pytest.mark.parametrize("n", [63, 64])
def test_top_bits_of_the_mask(n: int) -> None:
    # Node n-1 sits in the highest bit of the uint64 masks: C_n(1..3) is exactly 3-robust.
    G = nx.circulant_graph(n, [1, 2, 3])
    view = graph_view(G)
    assert find_closed_pair(view, 2, compiled=True) is None
    found = find_closed_pair(view, 3, compiled=True)
    assert found is not None
    assert found == find_closed_pair(view, 3, compiled=False)
    s1, s2 = found
    assert s1 and s2 and not s1 & s2 and view.f(s1) <= 3 and view.f(s2) <= 3


def test_more_than_64_nodes_is_refused_for_the_compiled_search() -> None:
    view = graph_view(nx.cycle_graph(COMPILED_MAX_NODES + 1))
    with pytest.raises(ValueError, match="at most 64 nodes"):
        find_closed_pair(view, 0, compiled=True)
    # The default falls back to the Python search.
    assert find_closed_pair(view, 0) is None


@pytest.mark.parametrize("compiled", [False, True])
def test_deadline_stops_both_searches(compiled: bool) -> None:
    if compiled and not compiled_search_available():
        pytest.skip("numba is not installed")
    # A dense 40-node graph at k = r - 1 takes far longer than the 1 ms allowed here.
    view = graph_view(nx.gnp_random_graph(40, 0.5, seed=40000))
    with pytest.raises(SearchTimeout):
        find_closed_pair(view, 10, time.perf_counter() + 0.001, compiled=compiled)


@needs_numba
def test_method_label_names_the_compiled_search() -> None:
    G = nx.gnp_random_graph(24, 0.5, seed=1)
    res = r_robustness(G, method="search")
    assert res.exact and res.method == "search-compiled"
    assert res.r == r_robustness(G, method="dp").r
    assert verify_certificate(G, res.certificate.s1, res.certificate.s2, res.r + 1)


def test_without_numba_the_python_search_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(closed_sets, "compiled_search_available", lambda: False)
    G = nx.gnp_random_graph(24, 0.5, seed=2)
    res = r_robustness(G, method="search")
    assert res.exact and res.method == "search"
    assert res.r == r_robustness(G, method="dp").r


def _threads_at_once(monkeypatch: pytest.MonkeyPatch, threads: int) -> None:
    """Every compiled search goes to threads after its first look at the clock, in slices
    of a few nodes, so that jobs pause, resume and finish out of order."""
    monkeypatch.setattr(closed_sets, "_SERIAL_SLICES", 0)
    monkeypatch.setattr(closed_sets, "_SLICE", 23)
    monkeypatch.setattr(closed_sets, "search_threads", lambda: threads)


@needs_numba
@pytest.mark.parametrize("threads", [2, 3])
def test_threaded_search_returns_the_pair_of_the_one_thread_search(
    monkeypatch: pytest.MonkeyPatch, threads: int
) -> None:
    # The earliest seed with a pair wins, whichever thread finds its pair first: the same
    # pair as the pure-Python search, with and without completions and exempt nodes.
    _threads_at_once(monkeypatch, threads)
    rng = random.Random(64)
    for case in range(40):
        n = rng.randint(2, 40)
        G = nx.gnp_random_graph(
            n, rng.choice([0.15, 0.3, 0.5, 0.7]), seed=500 + case, directed=case % 4 == 0
        )
        view = graph_view(G)
        free = 1 << rng.randrange(n) if case % 3 == 0 else 0
        for k in range(n // 2 + 1):
            for completions in (True, False):
                expected = find_closed_pair(
                    view, k, compiled=False, completions=completions, free=free
                )
                found = find_closed_pair(view, k, compiled=True, completions=completions, free=free)
                assert found == expected, (case, k, completions)


@needs_numba
def test_threaded_search_stops_at_its_deadline(monkeypatch: pytest.MonkeyPatch) -> None:
    _threads_at_once(monkeypatch, 2)
    view = graph_view(nx.gnp_random_graph(56, 0.5, seed=56001))
    started = time.perf_counter()
    with pytest.raises(SearchTimeout):
        find_closed_pair(view, 13, started + 0.2, completions=False)
    assert time.perf_counter() - started < 5


@needs_numba
def test_search_threads_is_at_least_one() -> None:
    assert 1 <= closed_sets.search_threads() <= closed_sets._MAX_THREADS
