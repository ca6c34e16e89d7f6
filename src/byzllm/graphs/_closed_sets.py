"""Exact r-robustness for larger graphs: branch and bound over *k-closed* sets.

Call a set ``S`` *k-closed* when ``f(S) ≤ k``, i.e. no node of ``S`` has more than ``k``
in-neighbours outside ``S`` (``S`` is not (k+1)-reachable, seed 001 Def. 3.3). A graph is
(k+1)-robust iff it has no two disjoint nonempty k-closed sets (Def. 3.4). The search rests on
three facts:

* k-closed sets are closed under union (outside counts only fall as a set grows), so every set
  ``T`` has a unique largest k-closed subset, found by *peeling*: repeatedly drop the nodes of
  ``T`` with more than ``k`` in-neighbours outside ``T`` (as in a k-core computation). A k-closed
  set inside ``T`` survives the peeling of ``T``, so peeled sets are valid upper bounds.
* A member ``i`` of a k-closed set ``S`` keeps at least ``need_i = d_i - k`` in-neighbours inside
  ``S``; when its upper bound ``P`` holds exactly ``need_i`` of them, they are all forced in.
* Ordered pairs are counted once by fixing ``v = min(S1 ∪ S2) ∈ S1`` and ``w = min(S2)``.

For each seed pair the search keeps ``IN1 ⊆ S1 ⊆ P1`` and ``IN2 ⊆ S2 ⊆ P2`` (``P1``, ``P2``
peeled, ``P1 ∩ IN2 = P2 ∩ IN1 = ∅``), propagates forced members, and branches on an undecided
node ``u ∈ P1 ∩ P2`` next to the tightest member: ``u`` joins that member's set, or leaves its
upper bound. Each branch removes ``u`` from ``P1 ∩ P2``, so the search is complete; it stops at
``P1 ∩ P2 = ∅``, where ``(P1, P2)`` is a witness pair.
"""

from __future__ import annotations

import time

from ._core import GraphView, bits

__all__ = ["SearchTimeout", "find_closed_pair", "peel"]


class SearchTimeout(Exception):
    """The decision search ran past its deadline."""


def peel(view: GraphView, members: int, k: int, removed: int = 0) -> int:
    """Largest k-closed subset of ``members`` (as a bitmask).

    With ``removed`` given, ``members`` must already be k-closed: the nodes of ``removed`` are
    dropped and only their out-neighbours are re-checked.
    """
    in_masks = view.in_masks
    out_masks = view.out_masks
    if not removed:
        stack = [i for i in bits(members) if (in_masks[i] & ~members).bit_count() > k]
    else:
        members &= ~removed
        touched = 0
        for i in bits(removed):
            touched |= out_masks[i]
        stack = [j for j in bits(touched & members) if (in_masks[j] & ~members).bit_count() > k]
    while stack:
        i = stack.pop()
        bit = 1 << i
        if not members & bit:
            continue
        members ^= bit
        for j in bits(out_masks[i] & members):
            if (in_masks[j] & ~members).bit_count() > k:
                stack.append(j)
    return members


_State = tuple[int, int, int, int]


class _PairSearch:
    def __init__(self, view: GraphView, k: int, deadline: float | None) -> None:
        self.view = view
        self.k = k
        self.deadline = deadline
        self.visited = 0
        self.need = [max(0, m.bit_count() - k) for m in view.in_masks]

    def _tick(self) -> None:
        self.visited += 1
        if (
            self.deadline is not None
            and self.visited % 128 == 0
            and time.perf_counter() > self.deadline
        ):
            raise SearchTimeout

    def _propagate(self, in1: int, in2: int, p1: int, p2: int) -> _State | None:
        """Add forced members until nothing changes; ``None`` when a contradiction appears."""
        in_masks, need, view, k = self.view.in_masks, self.need, self.view, self.k
        while True:
            add1 = 0
            for i in bits(in1):
                inside = in_masks[i] & p1
                if inside.bit_count() == need[i]:
                    add1 |= inside & ~in1
            add2 = 0
            for i in bits(in2):
                inside = in_masks[i] & p2
                if inside.bit_count() == need[i]:
                    add2 |= inside & ~in2
            if not (add1 or add2):
                return in1, in2, p1, p2
            if add1 & add2:
                return None
            if add1:
                in1 |= add1
                if p2 & add1:
                    p2 = peel(view, p2, k, p2 & add1)
                    if p2 & in2 != in2:
                        return None
            if add2:
                in2 |= add2
                if p1 & add2:
                    p1 = peel(view, p1, k, p1 & add2)
                    if p1 & in1 != in1:
                        return None

    def run(self, in1: int, in2: int, p1: int, p2: int) -> tuple[int, int] | None:
        self._tick()
        state = self._propagate(in1, in2, p1, p2)
        if state is None:
            return None
        in1, in2, p1, p2 = state
        common = p1 & p2
        if not common:
            return p1, p2
        view, k = self.view, self.k
        # Cheap completions: give every undecided node to one side.
        q1 = peel(view, p1, k, common)
        if q1 & in1 == in1:
            return q1, p2
        q2 = peel(view, p2, k, common)
        if q2 & in2 == in2:
            return p1, q2
        side, u = self._choose(in1, in2, p1, p2, common)
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

    def _choose(self, in1: int, in2: int, p1: int, p2: int, common: int) -> tuple[int, int]:
        """Branch next to the member with the least slack (most constrained first)."""
        in_masks, need = self.view.in_masks, self.need
        best_slack, best_side, best_cand = 1 << 30, 1, 0
        for side, members, upper in ((1, in1, p1), (2, in2, p2)):
            for i in bits(members):
                cand = in_masks[i] & common
                if cand:
                    slack = (in_masks[i] & upper).bit_count() - need[i]
                    if slack < best_slack:
                        best_slack, best_side, best_cand = slack, side, cand
        if not best_cand:
            return 1, (common & -common).bit_length() - 1
        u = max(bits(best_cand), key=lambda x: (in_masks[x] & common).bit_count())
        return best_side, u


def find_closed_pair(
    view: GraphView, k: int, deadline: float | None = None
) -> tuple[int, int] | None:
    """Two disjoint nonempty k-closed sets ``(S1, S2)``, or ``None`` when none exist.

    ``None`` proves that the graph is (k+1)-robust; a pair proves that it is not. Raises
    :class:`SearchTimeout` past ``deadline`` (a ``time.perf_counter()`` value).
    """
    if k < 0:
        return None
    n = view.n
    search = _PairSearch(view, k, deadline)
    suffix = [0] * (n + 1)
    for i in range(n - 1, -1, -1):
        suffix[i] = suffix[i + 1] | (1 << i)
    for v in range(n):
        for w in range(v + 1, n):
            p1 = peel(view, suffix[v] & ~(1 << w), k)
            if not p1 >> v & 1:
                continue
            p2 = peel(view, suffix[w], k)
            if not p2 >> w & 1:
                continue
            found = search.run(1 << v, 1 << w, p1, p2)
            if found is not None:
                return found
    return None
