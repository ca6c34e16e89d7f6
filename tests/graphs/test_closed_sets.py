"""The k-closed pair search's pairwise bound, against every pair a brute force finds."""

from __future__ import annotations

import random
from typing import Any

import networkx as nx

from byzllm.graphs._closed_sets import _PairSearch, find_closed_pair, peel
from byzllm.graphs._core import GraphView, bits, graph_view


def _closed_sets_between(view: GraphView, k: int, low: int, high: int) -> list[int]:
    """Every k-closed ``S`` with ``low ⊆ S ⊆ high`` (brute force over subsets of ``high``)."""
    extra = list(bits(high & ~low))
    found = []
    for pick in range(1 << len(extra)):
        members = low | sum(1 << extra[j] for j in range(len(extra)) if pick >> j & 1)
        if all(view.outside(i, members) <= k for i in bits(members)):
            found.append(members)
    return found


def _members(search: _PairSearch, members: int, pool: int, common: int) -> list[Any]:
    need = search.need
    out = []
    for i in bits(members):
        cand = search.view.in_masks[i] & common
        if cand:
            slack = (search.view.in_masks[i] & pool).bit_count() - need[i]
            out.append((i, cand, cand.bit_count(), slack))
    return out


_State = tuple[GraphView, int, _PairSearch, int, int, int, int, list[Any], list[Any]]


def _random_states(count: int) -> list[_State]:
    """Random search states: IN1 ⊆ P1, IN2 ⊆ P2, both upper bounds peeled, no member short."""
    rng = random.Random(5)
    states = []
    for case in range(count):
        n = rng.randint(4, 9)
        G = nx.gnp_random_graph(n, rng.uniform(0.4, 0.9), seed=case, directed=case % 5 == 0)
        view = graph_view(G)
        k = rng.randint(0, n // 2)
        order = list(range(n))
        rng.shuffle(order)
        split = rng.randint(2, min(4, n))
        in1 = sum(1 << i for i in order[: split // 2 or 1])
        in2 = sum(1 << i for i in order[split // 2 or 1 : split])
        drop1 = sum(1 << i for i in order[split:] if rng.random() < 0.2)
        drop2 = sum(1 << i for i in order[split:] if rng.random() < 0.2)
        p1 = peel(view, view.full & ~in2 & ~drop1, k)
        p2 = peel(view, view.full & ~in1 & ~drop2, k)
        if in1 & ~p1 or in2 & ~p2:
            continue
        search = _PairSearch(view, k, None, 0)
        common = p1 & p2
        first = _members(search, in1, p1, common)
        second = _members(search, in2, p2, common)
        if any(m[3] < 0 for m in first + second):
            continue  # the propagation would already have found this state dead
        states.append((view, k, search, in1, in2, p1, p2, first, second))
    return states


def _pairs_inside(view: GraphView, k: int, in1: int, in2: int, p1: int, p2: int) -> list[Any]:
    return [
        (s1, s2)
        for s1 in _closed_sets_between(view, k, in1, p1)
        for s2 in _closed_sets_between(view, k, in2, p2)
        if not s1 & s2
    ]


def test_shared_bound_keeps_every_pair_and_forces_only_what_they_all_hold() -> None:
    # Every pair of k-closed sets inside the bounds survives the bound: none when it says
    # dead, and each holds the nodes it forces.
    dead = forcing = 0
    for view, k, search, in1, in2, p1, p2, first, second in _random_states(1500):
        outcome = search._shared_bound(first, second, in1, in2, p1, p2)
        pairs = _pairs_inside(view, k, in1, in2, p1, p2)
        if outcome is None:
            dead += 1
            assert pairs == []
            continue
        force1, force2 = outcome
        forcing += bool(force1 | force2)
        for s1, s2 in pairs:
            assert s1 & force1 == force1 and s2 & force2 == force2
    assert dead >= 20 and forcing >= 20, (dead, forcing)


def test_hopeless_nodes_are_in_no_pair_on_that_side() -> None:
    excluded = 0
    for view, k, search, in1, in2, p1, p2, first, second in _random_states(1500):
        if search._shared_bound(first, second, in1, in2, p1, p2) is None:
            continue
        out1, out2 = search._hopeless(first, second, in1, in2, p1, p2)
        excluded += bool(out1 | out2)
        for s1, s2 in _pairs_inside(view, k, in1, in2, p1, p2):
            assert not s1 & out1 and not s2 & out2
    assert excluded >= 20, excluded


def test_members_with_two_shared_neighbours_force_their_private_ones() -> None:
    # a = 0 in S1 and b = 5 in S2 are adjacent and both see 2 and 3; a also sees 1, b sees 4.
    # With k = 2 and each other already outside, each may lose one more neighbour: the two
    # shared ones use up both slacks (each ends on one side at most), so 1 joins S1, 4 S2.
    G = nx.Graph([(0, 1), (0, 2), (0, 3), (0, 5), (5, 4), (5, 2), (5, 3)])
    G.add_edges_from([(1, 2), (1, 3), (4, 2), (4, 3)])
    view = graph_view(G)
    k = 2
    search = _PairSearch(view, k, None, 0)
    in1, in2 = 1 << 0, 1 << 5
    p1 = peel(view, view.full & ~in2 & ~(1 << 4), k)
    p2 = peel(view, view.full & ~in1 & ~(1 << 1), k)
    common = p1 & p2
    first = _members(search, in1, p1, common)
    second = _members(search, in2, p2, common)
    outcome = search._shared_bound(first, second, in1, in2, p1, p2)
    assert outcome is not None
    force1, force2 = outcome
    assert (force1, force2) == (1 << 1, 1 << 4)
    # The search still answers what the brute force does on the whole graph.
    for level in range(4):
        pairs = [
            (s1, s2)
            for s1 in _closed_sets_between(view, level, 0, view.full)
            for s2 in _closed_sets_between(view, level, 0, view.full)
            if s1 and s2 and not s1 & s2
        ]
        assert (find_closed_pair(view, level, compiled=False) is None) == (pairs == [])
