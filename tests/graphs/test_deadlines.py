"""Time limits on large sparse graphs: every stage of the search stops at its deadline.

A 600-node path used to run for minutes under ``--time-limit 2``: the search's seeds, its
symmetry step and the local search had no deadline of their own. A deadline already past
shows whether a stage looks at it at all, without timing anything.
"""

from __future__ import annotations

import time

import networkx as nx
import numpy as np
import pytest

from byzllm.graphs import r_robustness
from byzllm.graphs._bounds import local_search_pair, lower_bound
from byzllm.graphs._closed_sets import (
    SearchTimeout,
    compiled_search_available,
    find_closed_pair,
    symmetries,
)
from byzllm.graphs._core import graph_view


def _past() -> float:
    return time.perf_counter() - 1.0


def test_seed_loop_stops_at_a_past_deadline() -> None:
    # k = 0 on a path (connected, so no pair): the seeds' peels are the whole cost.
    view = graph_view(nx.path_graph(80))
    assert find_closed_pair(view, 0, None, compiled=False, symmetry=False) is None
    with pytest.raises(SearchTimeout):
        find_closed_pair(view, 0, _past(), compiled=False, symmetry=False)


@pytest.mark.parametrize("compiled", [False, True])
def test_a_short_search_stops_at_a_past_deadline(compiled: bool) -> None:
    """A search that ends within one compiled slice looked at the clock only after a slice."""
    if compiled and not compiled_search_available():
        pytest.skip("numba is not installed")
    view = graph_view(nx.complete_graph(8))
    # Without the symmetry step, which looks at the clock on its own.
    assert find_closed_pair(view, 3, None, compiled=compiled, symmetry=False) is None
    with pytest.raises(SearchTimeout):
        find_closed_pair(view, 3, _past(), compiled=compiled, symmetry=False)


def test_symmetry_step_stops_at_a_past_deadline() -> None:
    view = graph_view(nx.star_graph(30))
    assert symmetries(view)  # any two leaves are twins
    with pytest.raises(SearchTimeout):
        symmetries(view, _past())


def test_local_search_returns_what_it_has_at_a_past_deadline() -> None:
    view = graph_view(nx.random_regular_graph(4, 60, seed=3))
    assert local_search_pair(view, 4, deadline=_past()) is None
    assert local_search_pair(view, 4, deadline=None) == local_search_pair(view, 4)


def test_local_search_past_its_deadline_makes_no_eigen_decomposition(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Its Fiedler start (a dense decomposition: seconds at 2,000 nodes, where the bounds
    before it often use up its third of the limit) ran before the first look at the clock."""
    view = graph_view(nx.random_regular_graph(4, 60, seed=3))

    def refused(*args: object, **kwargs: object) -> None:
        raise AssertionError("eigen-decomposition past the deadline")

    monkeypatch.setattr(np.linalg, "eigh", refused)
    assert local_search_pair(view, 4, deadline=_past()) is None


@pytest.mark.parametrize("n", [3, 40, 2500])
def test_a_connected_undirected_graph_is_at_least_1_robust(n: int) -> None:
    # Above 2,000 nodes no spectral bound is computed; connectivity alone gives 1.
    path = graph_view(nx.path_graph(n))
    assert lower_bound(path) == 1
    split = nx.union(nx.path_graph(n), nx.path_graph(n), rename=("a", "b"))
    assert lower_bound(graph_view(split)) == 0
    assert lower_bound(graph_view(nx.path_graph(n, create_using=nx.DiGraph))) == 0


def test_a_long_path_is_settled_by_its_bounds() -> None:
    res = r_robustness(nx.path_graph(2500), time_limit=5.0)
    assert (res.r, res.exact, res.method) == (1, True, "bounds")
