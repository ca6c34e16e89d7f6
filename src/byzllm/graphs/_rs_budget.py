"""(r,s)-robustness in one search: pairs with at most ``budget`` r-reachable members.

G is (r,s)-robust when every pair of disjoint nonempty sets ``(S1, S2)`` has a set made wholly
of r-reachable nodes, or at least ``s`` r-reachable nodes in ``S1 ∪ S2`` (LeBlanc et al. 2013;
the SAC paper, §3.3). So s is the fewest r-reachable members over the pairs in which each set
keeps a member with at most ``k = r - 1`` in-neighbours outside it. Call a member *exempt*
when it is counted as r-reachable: it may have any number of in-neighbours outside its set;
every other member is *constrained* (at most ``k``). :func:`find_budget_pair` looks for a pair
with at most ``budget`` exempt members and a constrained member in each set, which exists
exactly when ``s ≤ budget``.

It is the branch and bound of :mod:`._closed_sets` (the same seeds, bounds, rules and
branching), in which a node becomes exempt only when a rule is about to use its constraint:

* *Upper bounds.* ``P1`` is the largest subset of the nodes still allowed in ``S1`` whose
  constrained nodes are k-closed, the exempt members being free (peeling). Exempting a node
  that survives the peel changes nothing, so when a peel drops the nodes ``R``, either no node
  of ``R`` is an exempt member of ``S1`` (then ``S1 ⊆ P1``: the search goes on), or some is:
  one child per ``x ∈ R``, in which ``x`` joins ``S1`` exempt and the nodes of ``R`` before it
  may not be exempt in ``S1`` (they may still come back as constrained members, which the
  peel with ``x`` free decides).
* *Members* join undecided. A rule that reads a member's constraint (its slack forcing its
  in-neighbours in, the pairwise bound, the size bound, a node kept out of a set by the
  pairwise bound) first *commits* the undecided members it reads: one child per such member
  ``m`` in which ``m`` is exempt (and those before it committed), then the rule applies with
  all of them committed. (Applying those rules to committed members only, with no children,
  visits ten times more nodes: the rules lose most of their pruning.)
* *Exempt members count only if r-reachable*: at most ``cap = d - k - 1`` in-neighbours in
  their set, so a member at the cap pushes its other in-neighbours out of the set. A pair
  whose exempt member is not r-reachable has fewer r-reachable members than exempt ones, and
  is found with that member constrained.

Every child with a new exempt member has one unit of budget less, so at budget 0 the search
is the plain closed-pair search with the exempt members free, and the children partition the
pairs: none is searched twice. With budget 1 the line without exemptions is the proof of
r-robustness itself, and each exemption hangs off it where it first matters, rather than one
whole search per candidate set of exempt nodes as a level search does (``C(n, t)`` searches
for ``t`` exempt nodes). Budget 1 still costs about what those n searches cost (G(50, 1/2):
3.7 against 5.7 s and 10.6 against 22 s of CPU where s > 1), but each further budget costs
one search, about ten times the one before, where a level search needs ``C(n, t)``: on
G(40, 1/2) s = 4 and 5 are proven in 5 and 8 s.

Graphs of up to 64 nodes run the same search compiled (``_rs_budget_jit``, needs numba),
node for node.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from ._closed_sets import (
    SearchTimeout,
    _permute,
    _restore,
    _Swap,
    _Ticked,
    find_closed_pair,
    peel,
    symmetries,
)
from ._core import GraphView

__all__ = ["BudgetOutcome", "find_budget_pair", "rs_by_budget"]

#: Search nodes per compiled slice between two looks at the clock.
_SLICE = 20_000

#: Undecided nodes at or below which the search tries to complete a pair directly.
_COMPLETION_LIMIT = 8

#: A stacked state: ``(in1, in2, p1, p2, z1, z2, h1, h2, exempt, ne1, ne2, budget)``. ``p1``
#: is closed (peeled, exempt members free); ``z1`` are nodes to drop from it by a decision,
#: ``h1`` nodes to drop from it because they cannot be constrained members (they may still
#: join exempt); ``ne1`` nodes that may not be exempt in ``S1`` (committed members among them).
_State = tuple[int, int, int, int, int, int, int, int, int, int, int, int]


def _bits_list(mask: int) -> list[int]:
    out = []
    while mask:
        low = mask & -mask
        out.append(low.bit_length() - 1)
        mask ^= low
    return out


class _BudgetSearch(_Ticked):
    """The search over one graph (nodes in seed order); :meth:`run` from the seeds."""

    def __init__(
        self,
        view: GraphView,
        k: int,
        deadline: float | None,
        completion_limit: int,
        symmetry: list[_Swap],
    ) -> None:
        self.view = view
        self.k = k
        self.deadline = deadline
        self.completion_limit = completion_limit
        self.symmetry = symmetry
        self.need = [max(0, m.bit_count() - k) for m in view.in_masks]
        # An exempt member has at least k + 1 in-neighbours outside its set.
        self.cap = [m.bit_count() - k - 1 for m in view.in_masks]
        self.visited = 0
        self.stack: list[_State] = []

    def _peel(self, members: int, removed: int, free: int) -> int:
        # ``members`` is closed already: with nothing removed, nothing changes.
        return peel(self.view, members, self.k, removed, free=free) if removed else members

    def run(self, budget: int) -> tuple[int, int, int] | None:
        """``(S1, S2, exempt)`` with at most ``budget`` exempt members, or ``None``."""
        n = self.view.n
        full = (1 << n) - 1
        for v in range(n):
            for w in range(v + 1, n):
                if self.deadline is not None and time.perf_counter() > self.deadline:
                    raise SearchTimeout
                # v = min(S1 ∪ S2) ∈ S1, w = min(S2); exempt members too.
                suffix_v = full & ~((1 << v) - 1)
                suffix_w = full & ~((1 << w) - 1)
                z1 = (full & ~suffix_v) | (1 << w)
                z2 = full & ~suffix_w
                self.stack.append((1 << v, 1 << w, full, full, z1, z2, 0, 0, 0, 0, 0, budget))
                while self.stack:
                    found = self._node(self.stack.pop())
                    if found is not None:
                        self.stack.clear()
                        return found
        return None

    def _spawn_commit(self, state: _State, side1: int, side2: int) -> tuple[int, int]:
        """Children in which one of the undecided members ``side1`` / ``side2`` is exempt
        (those before it committed); returns the new ``ne1``, ``ne2`` with all committed."""
        in1, in2, p1, p2, z1, z2, _, _, ex, ne1, ne2, b = state
        earlier1 = earlier2 = 0
        for m in _bits_list(side1):
            bit = 1 << m
            self.stack.append(
                (in1, in2, p1, p2, z1, z2, 0, 0, ex | bit, ne1 | earlier1, ne2, b - 1)
            )
            earlier1 |= bit
        for m in _bits_list(side2):
            bit = 1 << m
            self.stack.append(
                (in1, in2, p1, p2, z1, z2, 0, 0, ex | bit, ne1 | earlier1, ne2 | earlier2, b - 1)
            )
            earlier2 |= bit
        return ne1 | side1, ne2 | side2

    def _node(self, state: _State) -> tuple[int, int, int] | None:
        self._tick()
        in1, in2, p1, p2, z1, z2, h1, h2, ex, ne1, ne2, b = state
        view, need, cap = self.view, self.need, self.cap
        in_masks, out_masks = view.in_masks, view.out_masks
        # Settle: pending drops (with children exempting what they peel), then forcing.
        while True:
            if z1 | h1:
                q1 = self._peel(p1, z1 | h1, ex)
                dropped = p1 & ~z1 & ~q1
                if b > 0:
                    earlier = 0
                    for x in _bits_list(dropped & ~ne1 & ~in2):
                        bit = 1 << x
                        self.stack.append(
                            (
                                in1 | bit,
                                in2,
                                p1,
                                p2,
                                z1,
                                z2 | (p2 & bit),
                                0,
                                0,
                                ex | bit,
                                ne1 | earlier,
                                ne2,
                                b - 1,
                            )
                        )
                        earlier |= bit
                if dropped & in1:
                    return None
                p1, z1, h1 = q1, 0, 0
            if z2 | h2:
                q2 = self._peel(p2, z2 | h2, ex)
                dropped = p2 & ~z2 & ~q2
                if b > 0:
                    earlier = 0
                    for x in _bits_list(dropped & ~ne2 & ~in1):
                        bit = 1 << x
                        self.stack.append(
                            (
                                in1,
                                in2 | bit,
                                p1,
                                p2,
                                z1 | (p1 & bit),
                                z2,
                                0,
                                0,
                                ex | bit,
                                ne1,
                                ne2 | earlier,
                                b - 1,
                            )
                        )
                        earlier |= bit
                if dropped & in2:
                    return None
                p2, z2, h2 = q2, 0, 0
            # An exempt member counts only if it is r-reachable: at most ``need - 1`` of its
            # in-neighbours in its set (``cap``); at the cap, the others leave the set.
            drop1 = drop2 = 0
            for x in _bits_list(ex & in1):
                inside = (in_masks[x] & in1).bit_count()
                if inside > cap[x]:
                    return None
                if inside == cap[x]:
                    drop1 |= in_masks[x] & p1 & ~in1
            for x in _bits_list(ex & in2):
                inside = (in_masks[x] & in2).bit_count()
                if inside > cap[x]:
                    return None
                if inside == cap[x]:
                    drop2 |= in_masks[x] & p2 & ~in2
            if drop1 or drop2:
                z1 |= drop1
                z2 |= drop2
                continue
            # Forcing: a constrained member with no slack keeps all its in-neighbours.
            add1 = tight1 = 0
            for i in _bits_list(in1 & ~ex):
                inside = in_masks[i] & p1
                if inside.bit_count() == need[i] and inside & ~in1:
                    add1 |= inside & ~in1
                    tight1 |= 1 << i
            add2 = tight2 = 0
            for i in _bits_list(in2 & ~ex):
                inside = in_masks[i] & p2
                if inside.bit_count() == need[i] and inside & ~in2:
                    add2 |= inside & ~in2
                    tight2 |= 1 << i
            if not (add1 or add2):
                break
            if b > 0 and (tight1 & ~ne1 or tight2 & ~ne2):
                state = (in1, in2, p1, p2, 0, 0, 0, 0, ex, ne1, ne2, b)
                ne1, ne2 = self._spawn_commit(state, tight1 & ~ne1, tight2 & ~ne2)
            if add1 & add2 or add1 & in2 or add2 & in1:
                return None
            in1 |= add1
            in2 |= add2
            z2 |= p2 & add1
            z1 |= p1 & add2
        common = p1 & p2
        if not common:
            if p1 & ~ex and p2 & ~ex:
                return p1, p2, ex
            return None
        if self.symmetry and _breaks_symmetry(self.symmetry, in1, in2, p1, p2):
            return None
        state = (in1, in2, p1, p2, 0, 0, 0, 0, ex, ne1, ne2, b)
        # Size bound: the member with the largest need reads its constraint.
        size1, arg1 = in1.bit_count(), -1
        for i in _bits_list(in1 & ~ex):
            if 1 + need[i] > size1:
                size1, arg1 = 1 + need[i], i
        size2, arg2 = in2.bit_count(), -1
        for i in _bits_list(in2 & ~ex):
            if 1 + need[i] > size2:
                size2, arg2 = 1 + need[i], i
        if size1 + size2 > (p1 | p2).bit_count():
            if b > 0:
                u1 = (1 << arg1) & ~ne1 if arg1 >= 0 else 0
                u2 = (1 << arg2) & ~ne2 if arg2 >= 0 else 0
                if u1 or u2:
                    self._spawn_commit(state, u1, u2)
            return None
        # Members with undecided in-neighbours (all non-exempt members; the pairwise rules
        # commit the undecided ones they read).
        first = []
        for i in _bits_list(in1 & ~ex):
            cand = in_masks[i] & common
            if cand:
                first.append((i, cand, cand.bit_count(), (in_masks[i] & p1).bit_count() - need[i]))
        second = []
        for i in _bits_list(in2 & ~ex):
            cand = in_masks[i] & common
            if cand:
                second.append((i, cand, cand.bit_count(), (in_masks[i] & p2).bit_count() - need[i]))
        # Pairwise bound.
        force1 = force2 = used1 = used2 = 0
        for a, cand_a, count_a, slack_a in first:
            for bb, cand_b, count_b, slack_b in second:
                limit = slack_a + slack_b
                if count_a >= limit and count_b >= limit:
                    both = cand_a & cand_b
                    shared = both.bit_count()
                    if shared > limit:
                        if b > 0:
                            self._spawn_commit(state, (1 << a) & ~ne1, (1 << bb) & ~ne2)
                        return None
                    if shared == limit:
                        f1 = in_masks[a] & p1 & ~both & ~in1
                        f2 = in_masks[bb] & p2 & ~both & ~in2
                        if f1 or f2:
                            force1 |= f1
                            force2 |= f2
                            used1 |= 1 << a
                            used2 |= 1 << bb
        if force1 or force2:
            if b > 0:
                ne1, ne2 = self._spawn_commit(state, used1 & ~ne1, used2 & ~ne2)
            if force1 & force2:
                return None
            self.stack.append(
                (
                    in1 | force1,
                    in2 | force2,
                    p1,
                    p2,
                    p1 & force2,
                    p2 & force1,
                    0,
                    0,
                    ex,
                    ne1,
                    ne2,
                    b,
                )
            )
            return None
        # Nodes the pairwise bound keeps out of a set (as constrained members).
        out1 = out2 = used1 = used2 = 0
        for u in _bits_list((p1 & ~in1) | (p2 & ~in2)):
            bit = 1 << u
            others = in_masks[u] & ~bit
            if p1 & ~in1 & bit:
                culprit = _overloaded(others, (in_masks[u] & p1).bit_count() - need[u], second, bit)
                if culprit >= 0:
                    out1 |= bit
                    used2 |= 1 << culprit
            if p2 & ~in2 & bit:
                culprit = _overloaded(others, (in_masks[u] & p2).bit_count() - need[u], first, bit)
                if culprit >= 0:
                    out2 |= bit
                    used1 |= 1 << culprit
        if out1 or out2:
            if b > 0:
                ne1, ne2 = self._spawn_commit(state, used1 & ~ne1, used2 & ~ne2)
            self.stack.append((in1, in2, p1, p2, 0, 0, out1, out2, ex, ne1, ne2, b))
            return None
        if common.bit_count() <= self.completion_limit:
            q1 = self._peel(p1, common, ex)
            if q1 & in1 == in1 and q1 & ~ex and p2 & ~ex:
                return q1, p2, ex
            q2 = self._peel(p2, common, ex)
            if q2 & in2 == in2 and p1 & ~ex and q2 & ~ex:
                return p1, q2, ex
        # Branch next to the tightest member (committed or not: a heuristic reads no constraint).
        best = (1 << 30, 1 << 30)
        side, best_cand = 1, 0
        for _, cand, count, slack in first:
            if (slack, count) < best:
                best, side, best_cand = (slack, count), 1, cand
        for _, cand, count, slack in second:
            if (slack, count) < best:
                best, side, best_cand = (slack, count), 2, cand
        if not best_cand:
            side, u = 1, (common & -common).bit_length() - 1
        else:
            other = in2 if side == 1 else in1
            u, key = -1, (-1, -1)
            for x in _bits_list(best_cand):
                kx = ((out_masks[x] & other).bit_count(), (in_masks[x] & common).bit_count())
                if kx > key:
                    u, key = x, kx
        bit = 1 << u
        if side == 1:
            self.stack.append((in1, in2, p1, p2, bit, 0, 0, 0, ex, ne1, ne2, b))
            self.stack.append((in1 | bit, in2, p1, p2, 0, bit, 0, 0, ex, ne1, ne2, b))
        else:
            self.stack.append((in1, in2, p1, p2, 0, bit, 0, 0, ex, ne1, ne2, b))
            self.stack.append((in1, in2 | bit, p1, p2, bit, 0, 0, 0, ex, ne1, ne2, b))
        return None


def _overloaded(
    others: int, slack_u: int, members: list[tuple[int, int, int, int]], bit: int
) -> int:
    """``_closed_sets._overloaded``, returning the member that the new member breaks the
    pairwise bound with (``-1``: none)."""
    for m, cand, _, slack in members:
        if cand & bit:
            slack -= 1
        if slack < 0 or (others & cand).bit_count() > slack_u + slack:
            return m
    return -1


def _breaks_symmetry(swaps: list[_Swap], in1: int, in2: int, p1: int, p2: int) -> bool:
    from ._closed_sets import _breaks_symmetry as breaks

    return breaks(swaps, in1, in2, p1, p2)


def find_budget_pair(
    view: GraphView,
    k: int,
    budget: int,
    deadline: float | None = None,
    *,
    compiled: bool | None = None,
    symmetry: bool = True,
) -> tuple[int, int] | None:
    """A pair ``(S1, S2)`` of disjoint nonempty sets with at most ``budget`` members that have
    more than ``k`` in-neighbours outside their set, each set keeping a member that has at
    most ``k``; ``None`` when there is none (then G is (k+1, budget+1)-robust, given that it is
    (k+1)-robust). Raises :class:`SearchTimeout` past ``deadline``."""
    if k < 0 or budget < 0:
        return None
    n = view.n
    order = sorted(range(n), key=lambda i: (-view.in_masks[i].bit_count(), i))
    work = _permute(view, order)
    swaps = symmetries(work, deadline) if symmetry else []
    if compiled is None:
        from ._closed_sets import compiled_search_applies

        compiled = compiled_search_applies(n)
    if compiled:
        found = _find_compiled(work, k, budget, deadline, swaps)
    else:
        found = _BudgetSearch(work, k, deadline, _COMPLETION_LIMIT, swaps).run(budget)
    if found is None:
        return None
    return _restore(found[0], order), _restore(found[1], order)


def _find_compiled(
    work: GraphView, k: int, budget: int, deadline: float | None, swaps: list[_Swap]
) -> tuple[int, int, int] | None:
    """:class:`_BudgetSearch` compiled: the same nodes, the same answer."""
    import numpy as np

    from . import _rs_budget_jit as jit

    in_masks = np.array(work.in_masks, dtype=np.uint64)
    out_masks = np.array(work.out_masks, dtype=np.uint64)
    need = np.array([max(0, m.bit_count() - k) for m in work.in_masks], dtype=np.int64)
    cap = np.array([m.bit_count() - k - 1 for m in work.in_masks], dtype=np.int64)
    stack, cursor, found = jit.new_state(work.n, budget)
    symmetry = np.array(swaps, dtype=np.int64).reshape(len(swaps), 4)
    while True:
        if deadline is not None and time.perf_counter() > deadline:
            raise SearchTimeout
        code = jit.search(
            in_masks,
            out_masks,
            need,
            cap,
            k,
            budget,
            stack,
            cursor,
            found,
            _SLICE,
            _COMPLETION_LIMIT,
            symmetry,
        )
        if code == jit.FOUND:
            return int(found[0]), int(found[1]), int(found[2])
        if code == jit.EXHAUSTED:
            return None


@dataclass(frozen=True)
class BudgetOutcome:
    """``proven``: G is (r, proven)-robust (``n``: no pair qualifies at all). ``pair``:
    ``(s, S1, S2)`` when s was found exactly."""

    proven: int
    pair: tuple[int, int, int] | None


def rs_by_budget(
    view: GraphView,
    r: int,
    deadline: float | None,
    *,
    upper: int | None = None,
    hint: int = 0,
    probe_deadline: float | None = None,
) -> BudgetOutcome:
    """s bottom up: budgets ``1, 2, …`` until a pair turns up, ``upper`` (the value of a pair
    at hand, which is then s) is reached, or the ``deadline`` passes.

    The caller must already know that G is r-robust (no pair at budget 0). Each budget
    searched without a pair proves s is larger; the first pair found has exactly that many
    r-reachable members, since every smaller budget was proven empty.

    First, until ``probe_deadline``, a probe for s = 1: one closed-pair search per node of
    ``hint`` (the r-reachable members of a pair at hand are the likeliest), with that node
    exempt. Where s = 1 the right node often finds its pair at once (0.06-0.3 s on G(50, 1/2),
    where budget 1 takes 2.6-3.3 s); where it is not, the probe's time is lost.
    """
    k = r - 1
    order = sorted(range(view.n), key=lambda i: (-view.in_masks[i].bit_count(), i))
    try:
        for x in order:
            if hint >> x & 1:
                pair = find_closed_pair(view, k, probe_deadline, free=1 << x)
                if pair is not None:
                    s1, s2 = pair
                    value = view.reachable_count(s1, r) + view.reachable_count(s2, r)
                    return BudgetOutcome(proven=value, pair=(value, s1, s2))
    except SearchTimeout:
        pass
    proven = 1
    # Each set keeps a member that is not r-reachable: no pair has more than n - 2 that are.
    while proven <= view.n - 2 and (upper is None or proven < upper):
        try:
            found = find_budget_pair(view, k, proven, deadline)
        except SearchTimeout:
            return BudgetOutcome(proven=proven, pair=None)
        if found is not None:
            s1, s2 = found
            value = view.reachable_count(s1, r) + view.reachable_count(s2, r)
            return BudgetOutcome(proven=value, pair=(value, s1, s2))
        proven += 1
    if proven > view.n - 2:
        proven = view.n  # no pair qualifies: G is (r, n)-robust
    return BudgetOutcome(proven=proven, pair=None)
