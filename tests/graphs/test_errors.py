"""Bad input gives a clear InputError, never a traceback from deep inside."""

from __future__ import annotations

import networkx as nx
import pytest

from byzllm.errors import InputError
from byzllm.graphs import (
    build,
    check_f_local,
    is_r_robust,
    r_robustness,
    rs_robustness,
    spectral_lower_bound,
    verify_certificate,
    verify_rs_certificate,
)


def test_self_loops_are_rejected() -> None:
    G = nx.cycle_graph(4)
    G.add_edge(2, 2)
    with pytest.raises(InputError, match="self-loop"):
        r_robustness(G)


@pytest.mark.parametrize("n", [0, 1])
def test_fewer_than_two_nodes(n: int) -> None:
    with pytest.raises(InputError, match="at least 2 nodes"):
        r_robustness(nx.empty_graph(n))


def test_directed_graph_where_undirected_is_required() -> None:
    with pytest.raises(InputError, match="undirected"):
        spectral_lower_bound(nx.DiGraph([(0, 1), (1, 0)]))


def test_not_a_graph() -> None:
    with pytest.raises(InputError, match="networkx graph"):
        r_robustness([(0, 1)])


def test_bad_arguments() -> None:
    G = nx.complete_graph(5)
    with pytest.raises(InputError):
        r_robustness(G, method="magic")  # type: ignore[arg-type]
    with pytest.raises(InputError):
        r_robustness(G, time_limit=0)
    with pytest.raises(InputError):
        r_robustness(nx.complete_graph(30), method="dp")
    with pytest.raises(InputError):
        is_r_robust(G, 2.5)  # type: ignore[arg-type]
    with pytest.raises(InputError):
        rs_robustness(G, r="2")  # type: ignore[arg-type]
    with pytest.raises(InputError, match="not a node"):
        check_f_local(G, [7], 1)
    with pytest.raises(InputError):
        check_f_local(G, [1], -1)
    with pytest.raises(InputError, match="disjoint"):
        verify_certificate(G, [0, 1], [1, 2], 2)
    with pytest.raises(InputError, match="nonempty"):
        verify_certificate(G, [], [1, 2], 2)
    with pytest.raises(InputError, match="not in the graph"):
        verify_certificate(G, [0], [9], 2)


def test_labels_need_not_be_integers_for_robustness() -> None:
    G = nx.relabel_nodes(nx.complete_graph(4), {0: "a", 1: "b", 2: "c", 3: "d"})
    res = r_robustness(G)
    assert res.r == 2
    assert set(res.certificate.s1) | set(res.certificate.s2) <= {"a", "b", "c", "d"}
    assert verify_certificate(G, res.certificate.s1, res.certificate.s2, 3)


def test_time_limit_returns_proven_bounds() -> None:
    G = nx.gnp_random_graph(34, 0.5, seed=2)
    res = r_robustness(G, time_limit=0.05)
    lower, upper = res.bounds
    assert lower <= upper
    assert res.r == (upper if res.exact else lower)
    assert verify_certificate(G, res.certificate.s1, res.certificate.s2, upper + 1)


def test_arguments_of_the_wrong_type_are_input_errors() -> None:
    """Each raised a TypeError or AttributeError from inside, or was taken as something else:
    ``time_limit=True`` ran with a limit of 1 s, and ``verify_rs_certificate`` with
    ``s="3"`` answered False."""
    G = nx.cycle_graph(6)
    for limit in ("1", True, [1]):
        with pytest.raises(InputError, match="time_limit"):
            r_robustness(G, time_limit=limit)  # type: ignore[arg-type]
        with pytest.raises(InputError, match="time_limit"):
            rs_robustness(G, time_limit=limit)  # type: ignore[arg-type]
        with pytest.raises(InputError, match="time_limit"):
            is_r_robust(G, 2, time_limit=limit)  # type: ignore[arg-type]
    for r in ("2", 2.5, True):
        with pytest.raises(InputError, match="r must be an integer"):
            verify_certificate(G, [0], [3], r)  # type: ignore[arg-type]
        with pytest.raises(InputError, match="r must be an integer"):
            verify_rs_certificate(G, [0], [3], r, 2)  # type: ignore[arg-type]
    with pytest.raises(InputError, match="s must be an integer"):
        verify_rs_certificate(G, [0], [3], 1, "3")  # type: ignore[arg-type]
    with pytest.raises(InputError, match="not in the graph"):
        verify_certificate(G, [[0]], [3], 2)
    for nodes in (None, 3):
        with pytest.raises(InputError, match="byzantine_nodes"):
            check_f_local(G, nodes, 1)  # type: ignore[arg-type]
    with pytest.raises(InputError, match="unknown graph"):
        build(7, n=7)  # type: ignore[arg-type]
    # The right types still work.
    assert r_robustness(G, time_limit=5).r == 1
    assert verify_rs_certificate(G, [0, 1, 2], [3, 4, 5], 1, 5)


def test_numpy_integers_are_integers_to_the_checks() -> None:
    """A count read from an array is an integer: only bools and non-integers are refused."""
    import networkx as nx
    import numpy as np

    from byzllm.graphs import is_r_robust, verify_certificate

    G = nx.cycle_graph(6)
    assert verify_certificate(G, [0, 1, 2], [3, 4, 5], np.int64(2))
    assert is_r_robust(G, np.int64(1))
