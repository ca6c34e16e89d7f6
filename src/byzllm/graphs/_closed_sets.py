"""Exact r-robustness for larger graphs: branch and bound over *k-closed* sets.

Call a set ``S`` *k-closed* when ``f(S) ≤ k``, i.e. no node of ``S`` has more than ``k``
in-neighbours outside ``S`` (``S`` is not (k+1)-reachable, the SAC paper, Def. 3.3). A graph is
(k+1)-robust iff it has no two disjoint nonempty k-closed sets (Def. 3.4). The search rests on
three facts:

* k-closed sets are closed under union (outside counts only fall as a set grows), so every set
  ``T`` has a unique largest k-closed subset, found by *peeling*: repeatedly drop the nodes of
  ``T`` with more than ``k`` in-neighbours outside ``T`` (as in a k-core computation). A k-closed
  set inside ``T`` survives the peeling of ``T``, so peeled sets are valid upper bounds.
* A member ``i`` of a k-closed set ``S`` keeps at least ``need_i = d_i - k`` in-neighbours inside
  ``S``; when its upper bound ``P`` holds exactly ``need_i`` of them, they are all forced in.
* Ordered pairs are counted once by fixing ``v = min(S1 ∪ S2) ∈ S1`` and ``w = min(S2)``.
* A node needed by a member of each set can serve only one of them, which bounds how many
  such shared undecided neighbours a pair of members can have (:meth:`_shared_bound`); a pair
  exactly at that bound has its whole slack spent on the shared ones, so every other
  in-neighbour of either member in its upper bound is forced into its set. The same bound,
  applied to a node as if it had joined a set, rules out the sets it cannot join
  (:meth:`_hopeless`).
* An automorphism maps pairs to pairs, so of the pairs it relates only the lexicographically
  largest need be searched (:func:`symmetries`, :func:`_breaks_symmetry`).

For each seed pair the search keeps ``IN1 ⊆ S1 ⊆ P1`` and ``IN2 ⊆ S2 ⊆ P2`` (``P1``, ``P2``
peeled, ``P1 ∩ IN2 = P2 ∩ IN1 = ∅``), propagates forced members, and branches on an undecided
node ``u ∈ P1 ∩ P2`` next to the tightest member: ``u`` joins that member's set, or leaves its
upper bound. Each branch removes ``u`` from ``P1 ∩ P2``, so the search is complete; it stops at
``P1 ∩ P2 = ∅``, where ``(P1, P2)`` is a witness pair.

Graphs of up to 64 nodes run the same search compiled (``_closed_sets_jit``, needs numba).
Nodes may be exempted from the condition (``free``); the probe for s = 1 of the (r,s)
search (:mod:`._rs_budget`) uses that.
"""

from __future__ import annotations

import functools
import importlib.util
import os
import threading
import time
from typing import Any

from ._core import GraphView

__all__ = [
    "COMPILED_MAX_NODES",
    "SearchTimeout",
    "compiled_search_applies",
    "compiled_search_available",
    "find_closed_pair",
    "peel",
    "symmetries",
]

#: Largest graph the compiled search handles (one ``uint64`` mask per node set).
COMPILED_MAX_NODES = 64

#: Search nodes per compiled slice between two looks at the clock (a few milliseconds).
_SLICE = 20_000

#: Completions cost two big peels; worth it only near the leaves, and only when a pair is
#: likely: in a proof that none exists they never succeed (a search without them visits the
#: same nodes 8% faster on G(50, 1/2) and 40% faster on a 31-node γ-MERG).
_COMPLETION_LIMIT = 8


class SearchTimeout(Exception):
    """The decision search ran past its deadline."""


def peel(view: GraphView, members: int, k: int, removed: int = 0, *, free: int = 0) -> int:
    """Largest k-closed subset of ``members`` (as a bitmask).

    With ``removed`` given, ``members`` must already be k-closed: the nodes of ``removed`` are
    dropped and only their out-neighbours are re-checked. Nodes are dropped in rounds (all
    offenders at once); the result does not depend on the order. The nodes of ``free`` are
    exempt: they stay whatever their in-neighbours outside (the (r,s) budget search's
    r-reachable members, :mod:`._rs_budget`).
    """
    in_masks = view.in_masks
    out_masks = view.out_masks
    if removed:
        members &= ~removed
        candidates = 0
        while removed:
            low = removed & -removed
            candidates |= out_masks[low.bit_length() - 1]
            removed ^= low
        candidates &= members & ~free
    else:
        candidates = members & ~free
    while candidates:
        bad = 0
        outside = ~members
        while candidates:
            low = candidates & -candidates
            if (in_masks[low.bit_length() - 1] & outside).bit_count() > k:
                bad |= low
            candidates ^= low
        if not bad:
            break
        members &= ~bad
        while bad:
            low = bad & -bad
            candidates |= out_masks[low.bit_length() - 1]
            bad ^= low
        candidates &= members & ~free
    return members


#: An automorphism ``(a b)(c d)`` of the search's graph (``c = d = -1``: the transposition
#: ``(a b)``), with ``a`` the smallest node it moves, ``a < b`` and ``c < d``.
_Swap = tuple[int, int, int, int]
_Propagated = tuple[int, int, int, int, list[tuple[int, int]], list[tuple[int, int]]]
#: A member with undecided in-neighbours: ``(node, those neighbours, their count, slack)``.
_Member = tuple[int, int, int, int]


def _check_deadline(deadline: float | None) -> None:
    if deadline is not None and time.perf_counter() > deadline:
        raise SearchTimeout


class _Ticked:
    """A search that counts its nodes (``visited``) and looks at its ``deadline`` (a
    :func:`time.perf_counter` value, or ``None``) every 128 of them."""

    deadline: float | None
    visited: int

    def _tick(self) -> None:
        self.visited += 1
        if (
            self.deadline is not None
            and self.visited % 128 == 0
            and time.perf_counter() > self.deadline
        ):
            raise SearchTimeout


class _PairSearch(_Ticked):
    def __init__(
        self,
        view: GraphView,
        k: int,
        deadline: float | None,
        completion_limit: int,
        symmetry: list[_Swap] | None = None,
    ) -> None:
        self.view = view
        self.symmetry = symmetry or []
        self.k = k
        self.deadline = deadline
        self.visited = 0
        self.need = [max(0, m.bit_count() - k) for m in view.in_masks]
        self.completion_limit = completion_limit

    def _propagate(self, in1: int, in2: int, p1: int, p2: int) -> _Propagated | None:
        """Add forced members until nothing changes; ``None`` when a contradiction appears.

        Also returns every member's slack ``|N_i ∩ P| - need_i`` from the final pass.
        """
        while True:
            add1, slack1 = self._forced(in1, p1)
            add2, slack2 = self._forced(in2, p2)
            if not (add1 or add2):
                return in1, in2, p1, p2, slack1, slack2
            if add1 & add2:
                return None
            if add1:
                in1 |= add1
                p2 = self._give_up(add1, p2, in2)
                if p2 < 0:
                    return None
            if add2:
                in2 |= add2
                p1 = self._give_up(add2, p1, in1)
                if p1 < 0:
                    return None

    def _forced(self, members: int, pool: int) -> tuple[int, list[tuple[int, int]]]:
        """The nodes of ``pool`` that ``members`` force in (every in-neighbour in ``pool`` of
        a member with slack 0), and each member's slack ``|N_i ∩ pool| - need_i``."""
        in_masks, need = self.view.in_masks, self.need
        add = 0
        slacks = []
        rest = members
        while rest:
            low = rest & -rest
            i = low.bit_length() - 1
            rest ^= low
            inside = in_masks[i] & pool
            slack = inside.bit_count() - need[i]
            if slack == 0:
                add |= inside & ~members
            slacks.append((i, slack))
        return add, slacks

    def _give_up(self, taken: int, pool: int, members: int) -> int:
        """The other set's ``pool`` once the nodes ``taken`` by this set leave it (peeled
        again); -1 when that costs the other set one of its ``members``."""
        if not pool & taken:
            return pool
        pool = peel(self.view, pool, self.k, pool & taken)
        return pool if pool & members == members else -1

    def _shared_bound(
        self, first: list[_Member], second: list[_Member], in1: int, in2: int, p1: int, p2: int
    ) -> tuple[int, int] | None:
        """Pairwise counting bound between ``a ∈ IN1`` and ``b ∈ IN2``.

        Entries are ``(member, undecided in-neighbours, their count, slack)``. ``a`` may still
        lose ``slack_a`` in-neighbours of ``P1`` from ``S1``, and likewise ``b``. An undecided
        node in ``N_a ∩ N_b`` ends in ``S1`` (costing ``b``), in ``S2`` (costing ``a``) or in
        neither (costing both), so there can be at most ``slack_a + slack_b`` of them: ``None``
        when some pair has more. With exactly that many, the shared nodes use up both slacks,
        so ``a`` keeps every other in-neighbour in ``P1`` and ``b`` every other one in ``P2``:
        returns those nodes, forced into ``S1`` and ``S2`` (3-4 times fewer search nodes on
        G(50, 1/2)).
        """
        in_masks = self.view.in_masks
        force1 = force2 = 0
        for a, cand_a, count_a, slack_a in first:
            for b, cand_b, count_b, slack_b in second:
                budget = slack_a + slack_b
                if count_a >= budget and count_b >= budget:
                    shared = (cand_a & cand_b).bit_count()
                    if shared > budget:
                        return None
                    if shared == budget:
                        both = cand_a & cand_b
                        force1 |= in_masks[a] & p1 & ~both & ~in1
                        force2 |= in_masks[b] & p2 & ~both & ~in2
        return force1, force2

    def _hopeless(
        self,
        first: list[_Member],
        second: list[_Member],
        in1: int,
        in2: int,
        p1: int,
        p2: int,
    ) -> tuple[int, int]:
        """The nodes of ``P1 \\ IN1`` that cannot join ``S1``, and likewise for ``S2``.

        Were ``u`` to join ``S1`` it would be a member with slack ``|N_u ∩ P1| - need_u``,
        and each ``b ∈ IN2`` would lose ``u`` from its upper bound (if it is there): the
        pairwise bound of :meth:`_shared_bound` between ``u`` and some ``b`` may already fail
        (and only gets worse as the search goes on), so ``u`` leaves ``P1``; likewise for
        ``S2`` (5-6 times fewer search nodes on G(50, 1/2)).
        """
        in_masks, need = self.view.in_masks, self.need
        out1 = out2 = 0
        rest = (p1 & ~in1) | (p2 & ~in2)
        while rest:
            low = rest & -rest
            u = low.bit_length() - 1
            rest ^= low
            others = in_masks[u] & ~low
            if p1 & ~in1 & low and _overloaded(
                others, (in_masks[u] & p1).bit_count() - need[u], second, low
            ):
                out1 |= low
            if p2 & ~in2 & low and _overloaded(
                others, (in_masks[u] & p2).bit_count() - need[u], first, low
            ):
                out2 |= low
        return out1, out2

    def run(self, in1: int, in2: int, p1: int, p2: int) -> tuple[int, int] | None:
        self._tick()
        state = self._propagate(in1, in2, p1, p2)
        if state is None:
            return None
        in1, in2, p1, p2, slack1, slack2 = state
        common = p1 & p2
        if not common:
            return p1, p2
        if self.symmetry and _breaks_symmetry(self.symmetry, in1, in2, p1, p2):
            return None
        # Size bound: a member with need_i keeps need_i neighbours beside itself in its set,
        # and the two disjoint sets fit inside P1 ∪ P2.
        need = self.need
        size1 = max(in1.bit_count(), 1 + max(need[i] for i, _ in slack1))
        size2 = max(in2.bit_count(), 1 + max(need[i] for i, _ in slack2))
        if size1 + size2 > (p1 | p2).bit_count():
            return None
        in_masks = self.view.in_masks
        first = []
        for i, slack in slack1:
            cand = in_masks[i] & common
            if cand:
                first.append((i, cand, cand.bit_count(), slack))
        second = []
        for i, slack in slack2:
            cand = in_masks[i] & common
            if cand:
                second.append((i, cand, cand.bit_count(), slack))
        forced = self._shared_bound(first, second, in1, in2, p1, p2)
        if forced is None:
            return None
        view, k = self.view, self.k
        force1, force2 = forced
        if force1 or force2:
            if force1 & force2:
                return None
            q1 = peel(view, p1, k, p1 & force2) if p1 & force2 else p1
            q2 = peel(view, p2, k, p2 & force1) if p2 & force1 else p2
            in1, in2 = in1 | force1, in2 | force2
            if q1 & in1 != in1 or q2 & in2 != in2:
                return None
            return self.run(in1, in2, q1, q2)
        out1, out2 = self._hopeless(first, second, in1, in2, p1, p2)
        if out1 or out2:
            q1 = peel(view, p1, k, out1) if out1 else p1
            q2 = peel(view, p2, k, out2) if out2 else p2
            if q1 & in1 != in1 or q2 & in2 != in2:
                return None
            return self.run(in1, in2, q1, q2)
        if common.bit_count() <= self.completion_limit:
            # Cheap completions: give every undecided node to one side.
            q1 = peel(view, p1, k, common)
            if q1 & in1 == in1:
                return q1, p2
            q2 = peel(view, p2, k, common)
            if q2 & in2 == in2:
                return p1, q2
        side, u = self._choose(first, second, in1, in2, common)
        bit = 1 << u
        if side == 1:
            p2_without = peel(view, p2, k, bit)
            if p2_without & in2 == in2:
                found = self.run(in1 | bit, in2, p1, p2_without)
                if found is not None:
                    return found
            p1_without = peel(view, p1, k, bit)
            if p1_without & in1 == in1:
                return self.run(in1, in2, p1_without, p2)
            return None
        p1_without = peel(view, p1, k, bit)
        if p1_without & in1 == in1:
            found = self.run(in1, in2 | bit, p1_without, p2)
            if found is not None:
                return found
        p2_without = peel(view, p2, k, bit)
        if p2_without & in2 == in2:
            return self.run(in1, in2, p1, p2_without)
        return None

    def _choose(
        self,
        first: list[_Member],
        second: list[_Member],
        in1: int,
        in2: int,
        common: int,
    ) -> tuple[int, int]:
        """Branch next to the member with the least slack (most constrained first).

        Between members of equal slack, the one with the fewest undecided in-neighbours: it is
        the closest to having all of them forced (a quarter fewer search nodes on G(50, 1/2)).
        Among that member's undecided in-neighbours, take the one most needed by the *other*
        set: putting it on the member's side then costs the other side the most.
        """
        in_masks, out_masks = self.view.in_masks, self.view.out_masks
        best_slack, best_count, best_side, best_cand = 1 << 30, 1 << 30, 1, 0
        for _, cand, count, slack in first:
            if (slack, count) < (best_slack, best_count):
                best_slack, best_count, best_side, best_cand = slack, count, 1, cand
        for _, cand, count, slack in second:
            if (slack, count) < (best_slack, best_count):
                best_slack, best_count, best_side, best_cand = slack, count, 2, cand
        if not best_cand:
            return 1, (common & -common).bit_length() - 1
        other = in2 if best_side == 1 else in1
        best_u, best_key = -1, (-1, -1)
        while best_cand:
            low = best_cand & -best_cand
            u = low.bit_length() - 1
            best_cand ^= low
            key = ((out_masks[u] & other).bit_count(), (in_masks[u] & common).bit_count())
            if key > best_key:
                best_u, best_key = u, key
        return best_side, best_u


def _overloaded(others: int, slack_u: int, members: list[_Member], bit: int) -> bool:
    """Whether a new member ``u`` (in-neighbours ``others`` besides itself, slack ``slack_u``,
    taken from the other set's upper bound: ``bit``) breaks the pairwise bound with one of
    the other set's ``members``."""
    for _, cand, _, slack in members:
        if cand & bit:
            slack -= 1
        if slack < 0 or (others & cand).bit_count() > slack_u + slack:
            return True
    return False


def symmetries(view: GraphView, deadline: float | None = None) -> list[_Swap]:
    """Automorphisms of ``view`` that swap two nodes, or two pairs of nodes.

    A transposition ``(a b)`` is an automorphism when ``a`` and ``b`` are twins (the same
    in-neighbours besides each other); ``(a b)(c d)`` can only be one when the in-neighbours of
    ``a`` and ``b`` differ in ``c`` and ``d`` alone, which is checked node by node (a product
    of two transpositions that are automorphisms themselves adds nothing and is left out).
    Found for every pair ``a < b`` in O(n) each, so O(n³) bit operations at most; raises
    :class:`SearchTimeout` past ``deadline`` (seconds at a few thousand nodes).
    """
    n = view.n
    in_masks = view.in_masks
    found: set[_Swap] = set()
    for a in range(n):
        _check_deadline(deadline)
        for b in range(a + 1, n):
            diff = (in_masks[a] ^ in_masks[b]) & ~((1 << a) | (1 << b))
            count = diff.bit_count()
            if count == 0:
                swap = (a, b, -1, -1)
            elif count == 2:
                c = (diff & -diff).bit_length() - 1
                d = diff.bit_length() - 1
                first, second = sorted([(a, b), (c, d)])
                swap = (*first, *second)
            else:
                continue
            if swap not in found and _is_automorphism(in_masks, swap):
                found.add(swap)
    return sorted(found)


def _swap_bits(mask: int, a: int, b: int) -> int:
    if (mask >> a ^ mask >> b) & 1:
        mask ^= (1 << a) | (1 << b)
    return mask


def _is_automorphism(in_masks: tuple[int, ...], swap: _Swap) -> bool:
    a, b, c, d = swap
    image = list(range(len(in_masks)))
    image[a], image[b] = b, a
    if c >= 0:
        image[c], image[d] = d, c
    for x, mask in enumerate(in_masks):
        moved = _swap_bits(mask, a, b)
        if c >= 0:
            moved = _swap_bits(moved, c, d)
        if moved != in_masks[image[x]]:
            return False
    return True


def _breaks_symmetry(swaps: list[_Swap], in1: int, in2: int, p1: int, p2: int) -> bool:
    """Whether every pair inside the bounds breaks one of the lex-leader constraints.

    Give each node the value 2 in S1, 1 in S2, 0 in neither, and read the pair as the vector of
    its nodes' values in index order. An automorphism σ maps pairs to pairs, and so does
    swapping S1 with S2; of all the pairs that these maps reach from one pair, the
    lexicographically largest vector also beats its own image under each σ. The seeds already
    keep only pairs whose first node in a set is in S1 (beating the swap), so the search may
    also ask ``X ≥ σX`` for every σ in ``swaps`` and lose no answer (a set of such
    constraints is the *lex-leader* method of symmetry breaking). For ``σ = (a b)(c d)`` with
    ``a`` the smallest node moved, ``X ≥ σX`` reads ``X_a > X_b``, or ``X_a = X_b`` and
    ``X_c ≥ X_d``; a node's highest possible value is 2 in P1, 1 in P2 only, else 0, and its
    lowest 2 in IN1, 1 in IN2, else 0.
    """
    for a, b, c, d in swaps:
        high_a = 2 if p1 >> a & 1 else (1 if p2 >> a & 1 else 0)
        low_b = 2 if in1 >> b & 1 else (1 if in2 >> b & 1 else 0)
        if high_a < low_b:
            return True
        if high_a == low_b and c >= 0:
            high_c = 2 if p1 >> c & 1 else (1 if p2 >> c & 1 else 0)
            low_d = 2 if in1 >> d & 1 else (1 if in2 >> d & 1 else 0)
            if high_c < low_d:
                return True
    return False


def _permute(view: GraphView, order: list[int]) -> GraphView:
    """The same graph with node ``order[p]`` renumbered ``p``."""
    position = {old: new for new, old in enumerate(order)}

    def remap(mask: int) -> int:
        out = 0
        while mask:
            low = mask & -mask
            out |= 1 << position[low.bit_length() - 1]
            mask ^= low
        return out

    return GraphView(
        labels=tuple(view.labels[i] for i in order),
        index={view.labels[i]: p for p, i in enumerate(order)},
        in_masks=tuple(remap(view.in_masks[i]) for i in order),
        out_masks=tuple(remap(view.out_masks[i]) for i in order),
        directed=view.directed,
    )


def _restore(mask: int, order: list[int]) -> int:
    out = 0
    while mask:
        low = mask & -mask
        out |= 1 << order[low.bit_length() - 1]
        mask ^= low
    return out


@functools.cache
def compiled_search_available() -> bool:
    """Whether the compiled search can run: ``numba`` installed and its JIT not switched off.

    Asked once per process: the (r,s) search may run many searches.
    """
    if importlib.util.find_spec("numba") is None:
        return False
    from numba import config

    # Under NUMBA_DISABLE_JIT the "compiled" search would run as slow interpreted numpy code.
    return not getattr(config, "DISABLE_JIT", False)


def compiled_search_applies(n: int) -> bool:
    """Whether :func:`find_closed_pair` will run compiled on an ``n``-node graph by default."""
    return n <= COMPILED_MAX_NODES and compiled_search_available()


def _find_compiled(
    work: GraphView,
    k: int,
    deadline: float | None,
    free: int,
    completion_limit: int,
    swaps: list[_Swap],
) -> tuple[int, int] | None:
    """:class:`_PairSearch` over all seeds, compiled; same nodes visited, same answer.

    A search still running after :data:`_SERIAL_SLICES` slices goes on in
    :func:`search_threads` threads, one seed pair at a time each (:func:`_find_threaded`).
    """
    import numpy as np  # here, not at the top: the pure-Python search needs no numpy

    from . import _closed_sets_jit as jit

    n = work.n
    in_masks = np.array(work.in_masks, dtype=np.uint64)
    out_masks = np.array(work.out_masks, dtype=np.uint64)
    need = np.array([max(0, m.bit_count() - k) for m in work.in_masks], dtype=np.int64)
    stack, cursor, found = jit.new_state(n)
    symmetry = np.array(swaps, dtype=np.int64).reshape(len(swaps), 4)
    threads = search_threads()
    slices = 0
    while True:
        # Before each slice, the first included: a search that ends within one slice never
        # looked at the clock, so a caller running thousands of short searches ran many
        # times past its deadline. The Python search looks before its first seed too.
        _check_deadline(deadline)
        if threads > 1 and slices >= _SERIAL_SLICES:
            args = (in_masks, out_masks, need, k, completion_limit, np.uint64(free), symmetry)
            return _find_threaded(args, stack, cursor, free, deadline, threads)
        code = jit.search(
            in_masks,
            out_masks,
            need,
            k,
            stack,
            cursor,
            found,
            _SLICE,
            completion_limit,
            np.uint64(free),
            symmetry,
            n * n,
        )
        slices += 1
        if code == jit.FOUND:
            return int(found[0]), int(found[1])
        if code == jit.EXHAUSTED:
            return None


#: Slices a compiled search runs on one thread before it spreads over several: most searches
#: (the (r,s) probes run thousands) end within them and never pay for threads.
_SERIAL_SLICES = 10


@functools.cache
def search_threads() -> int:
    """Threads a long compiled closed-pair search uses: the CPUs this process may run on."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # not on every platform
        cpus = os.cpu_count() or 1
    return max(1, min(cpus, _MAX_THREADS))


#: At most this many threads, whatever the CPU count.
_MAX_THREADS = 8


def _find_threaded(
    args: tuple[Any, ...],
    stack: Any,
    cursor: Any,
    free: int,
    deadline: float | None,
    threads: int,
) -> tuple[int, int] | None:
    """The rest of a paused compiled search, its seed pairs spread over ``threads`` threads.

    Jobs are the seed pair in progress (the paused stack) and then every later seed pair
    ``(v, w)`` in the search's order; threads take them in that order. A thread that finds a
    pair records it, and jobs after the earliest pair found are dropped; every job before it
    runs to its end, so the pair returned is the one the search on one thread returns (the
    first pair of the first seed that has one). The same search nodes are visited when no
    pair exists; when one does, later seeds may have been searched in part.
    """
    import numpy as np

    from . import _closed_sets_jit as jit

    in_masks, out_masks, need, k, completion_limit, free_mask, symmetry = args
    n = in_masks.shape[0]
    v0, w0 = int(cursor[0]), int(cursor[1])
    # Job: (stack, cursor, stop). First the seed in progress: it stops before the cursor's seed.
    jobs: list[tuple[Any, Any, int]] = [(stack.copy(), cursor.copy(), v0 * n + w0)]
    for v in range(v0, n):
        if free >> v & 1:
            continue
        for w in range(max(w0, v + 1) if v == v0 else v + 1, n):
            if not free >> w & 1:
                jobs.append((None, np.array([v, w, 0, 0], dtype=np.int64), v * n + w + 1))
    lock = threading.Lock()
    next_job = [0]
    best: list[tuple[int, int, int]] = []  # (job, S1, S2) of the earliest pair found
    done = [False] * len(jobs)
    failures: list[BaseException] = []

    def ahead(job: int) -> bool:
        """Whether a pair was found in an earlier job (this one can be dropped)."""
        return bool(best) and best[0][0] < job

    def work() -> None:
        own_stack, _, found = jit.new_state(n)
        try:
            while True:
                with lock:
                    job = next_job[0]
                    if job >= len(jobs) or ahead(job):
                        return
                    next_job[0] += 1
                start, job_cursor, stop = jobs[job]
                job_stack = own_stack if start is None else start
                while True:
                    if cancelled or (deadline is not None and time.perf_counter() > deadline):
                        return
                    if ahead(job):
                        break
                    code = jit.search(
                        in_masks,
                        out_masks,
                        need,
                        k,
                        job_stack,
                        job_cursor,
                        found,
                        _SLICE,
                        completion_limit,
                        free_mask,
                        symmetry,
                        stop,
                    )
                    if code == jit.PAUSED:
                        continue
                    with lock:
                        done[job] = True
                        if code == jit.FOUND and not (best and best[0][0] < job):
                            best[:] = [(job, int(found[0]), int(found[1]))]
                    break
        except BaseException as error:  # re-raised by the caller's thread
            with lock:
                failures.append(error)
                next_job[0] = len(jobs)

    cancelled = False
    workers = [threading.Thread(target=work, daemon=True) for _ in range(threads)]
    for thread in workers:
        thread.start()
    try:
        for thread in workers:
            thread.join()
    finally:
        # Interrupted (Ctrl-C in the caller's thread): the threads stop after their slice,
        # rather than search on, unseen, in a process that lives on (a notebook).
        cancelled = True
    if failures:
        raise failures[0]
    last = best[0][0] if best else len(jobs)
    if not all(done[:last]):
        raise SearchTimeout
    if best:
        return best[0][1], best[0][2]
    return None


def _find_python(
    work: GraphView,
    k: int,
    deadline: float | None,
    free: int,
    completion_limit: int,
    swaps: list[_Swap],
) -> tuple[int, int] | None:
    n = work.n
    search = _PairSearch(work, k, deadline, completion_limit, swaps)
    suffix = [free] * (n + 1)
    for i in range(n - 1, -1, -1):
        suffix[i] = suffix[i + 1] | (1 << i)
    for v in range(n):
        _check_deadline(deadline)
        if free >> v & 1 or not peel(work, suffix[v], k) >> v & 1:
            continue
        for w in range(v + 1, n):
            # The seeds alone are n² peels on a large sparse graph (minutes at 600 nodes),
            # before the search's own checks come into play.
            _check_deadline(deadline)
            if free >> w & 1:
                continue
            p1 = peel(work, suffix[v] & ~(1 << w), k)
            if not p1 >> v & 1:
                continue
            p2 = peel(work, suffix[w], k)
            if not p2 >> w & 1:
                continue
            found = search.run(1 << v, 1 << w, p1, p2)
            if found is not None:
                return found
    return None


def find_closed_pair(
    view: GraphView,
    k: int,
    deadline: float | None = None,
    *,
    compiled: bool | None = None,
    free: int = 0,
    completions: bool = True,
    symmetry: bool = True,
) -> tuple[int, int] | None:
    """Two disjoint nonempty k-closed sets ``(S1, S2)``, or ``None`` when none exist.

    ``None`` proves that the graph is (k+1)-robust; a pair proves that it is not. Raises
    :class:`SearchTimeout` past ``deadline`` (a ``time.perf_counter()`` value).

    Seeds are taken in decreasing in-degree order: the first seeds own the largest subtrees,
    and high-degree members need the most inside neighbours, so they prune hardest.

    ``compiled``: run the numba-compiled search (graphs of at most 64 nodes). ``None`` uses it
    when it can run (:func:`compiled_search_available`); both give the same answer.

    ``free``: a mask of nodes exempt from the k-closed condition (they may have any number of
    in-neighbours outside their set). Each set still has a constrained member. This finds the
    pairs whose r-reachable members (r = k + 1) all lie in ``free``, which is how
    :func:`~byzllm.graphs.rs_robustness` probes for s = 1.

    ``completions``: near the leaves, try giving every undecided node to one side, which finds
    pairs sooner; pass ``False`` where no pair is expected (a proof), where they only cost time.
    The answer (a pair or ``None``) is the same either way, the pair itself may differ.

    ``symmetry``: skip the pairs that an automorphism swapping two nodes, or two pairs of
    nodes (:func:`symmetries`), maps onto a pair kept (:func:`_breaks_symmetry`); the answer
    is the same, the search smaller on graphs with many such automorphisms (a γ-MERG: its
    outer nodes, each with the clique node it misses, are interchangeable). Not with ``free``.
    """
    if k < 0:
        return None
    n = view.n
    order = sorted(range(n), key=lambda i: (-view.in_masks[i].bit_count(), i))
    work = _permute(view, order)
    if free:
        position = {old: new for new, old in enumerate(order)}
        free = sum(1 << position[i] for i in range(n) if free >> i & 1)
        work = GraphView(
            labels=work.labels,
            index=work.index,
            in_masks=tuple(0 if free >> i & 1 else m for i, m in enumerate(work.in_masks)),
            out_masks=work.out_masks,
            directed=work.directed,
        )
    if compiled is None:
        compiled = compiled_search_applies(n)
    elif compiled and n > COMPILED_MAX_NODES:
        raise ValueError(f"the compiled search handles at most {COMPILED_MAX_NODES} nodes, got {n}")
    limit = _COMPLETION_LIMIT if completions else 0
    swaps = symmetries(work, deadline) if symmetry and not free else []
    found = (_find_compiled if compiled else _find_python)(work, k, deadline, free, limit, swaps)
    if found is None:
        return None
    return _restore(found[0], order), _restore(found[1], order)
