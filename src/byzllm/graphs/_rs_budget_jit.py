"""Compiled form of the budget search (:mod:`._rs_budget`) for graphs of up to 64 nodes.

The same search node for node: the same seeds, settling, rules, children and push order as
``_rs_budget._BudgetSearch``, on ``uint64`` masks, with an explicit stack that can pause after a
number of nodes so that the caller can look at the clock between slices. Needs numba; import
it only when ``_closed_sets.compiled_search_available()`` says yes.
"""

from __future__ import annotations

from typing import Any

import numba
import numpy as np
import numpy.typing as npt

from ._closed_sets_jit import _bit, _breaks_symmetry, _lowest, _popcount

__all__ = ["EXHAUSTED", "FOUND", "PAUSED", "new_state", "search"]

EXHAUSTED, FOUND, PAUSED = 0, 1, 2

_ONE = np.uint64(1)
_ZERO = np.uint64(0)
# Stack columns.
_IN1, _IN2, _P1, _P2, _Z1, _Z2, _H1, _H2, _EX, _NE1, _NE2, _B = range(12)
# Cursor slots: where a paused search resumes.
_V, _W, _TOP, _VISITED = 0, 1, 2, 3


@numba.njit(cache=True)
def _peel_free(in_masks: Any, out_masks: Any, members: Any, k: int, removed: Any, free: Any) -> Any:
    """``_closed_sets.peel`` with ``free`` exempt, for a closed ``members`` (compiled)."""
    limit = np.uint64(k)
    members &= ~removed
    candidates = _ZERO
    rest = removed
    while rest != _ZERO:
        candidates |= out_masks[_lowest(rest)]
        rest &= rest - _ONE
    candidates &= members & ~free
    while candidates != _ZERO:
        bad = _ZERO
        outside = ~members
        rest = candidates
        while rest != _ZERO:
            i = _lowest(rest)
            rest &= rest - _ONE
            if _popcount(in_masks[i] & outside) > limit:
                bad |= _bit(i)
        if bad == _ZERO:
            break
        members &= ~bad
        candidates = _ZERO
        while bad != _ZERO:
            candidates |= out_masks[_lowest(bad)]
            bad &= bad - _ONE
        candidates &= members & ~free
    return members


@numba.njit(cache=True, inline="always")
def _push(
    stack: Any, top: int, in1: Any, in2: Any, p1: Any, p2: Any, z1: Any, z2: Any, h1: Any,
    h2: Any, ex: Any, ne1: Any, ne2: Any, b: Any,
) -> int:  # fmt: skip
    stack[top, _IN1] = in1
    stack[top, _IN2] = in2
    stack[top, _P1] = p1
    stack[top, _P2] = p2
    stack[top, _Z1] = z1
    stack[top, _Z2] = z2
    stack[top, _H1] = h1
    stack[top, _H2] = h2
    stack[top, _EX] = ex
    stack[top, _NE1] = ne1
    stack[top, _NE2] = ne2
    stack[top, _B] = np.uint64(b)
    return top + 1


@numba.njit(cache=True)
def _spawn_commit(
    stack: Any, top: int, in1: Any, in2: Any, p1: Any, p2: Any, ex: Any, ne1: Any, ne2: Any,
    b: Any, side1: Any, side2: Any,
) -> int:  # fmt: skip
    """``_BudgetSearch._spawn_commit``: one child per undecided member, that member exempt."""
    earlier1 = _ZERO
    rest = side1
    while rest != _ZERO:
        bit = _bit(_lowest(rest))
        rest &= rest - _ONE
        top = _push(stack, top, in1, in2, p1, p2, _ZERO, _ZERO, _ZERO, _ZERO, ex | bit,
                    ne1 | earlier1, ne2, b - 1)  # fmt: skip
        earlier1 |= bit
    earlier2 = _ZERO
    rest = side2
    while rest != _ZERO:
        bit = _bit(_lowest(rest))
        rest &= rest - _ONE
        top = _push(stack, top, in1, in2, p1, p2, _ZERO, _ZERO, _ZERO, _ZERO, ex | bit,
                    ne1 | earlier1, ne2 | earlier2, b - 1)  # fmt: skip
        earlier2 |= bit
    return top


@numba.njit(cache=True, inline="always")
def _overloaded(
    in_masks: Any, others: Any, slack_u: Any, bit: Any, members: Any, p: Any, common: Any,
    need: Any,
) -> Any:  # fmt: skip
    """``_rs_budget._overloaded`` over the non-exempt ``members`` with undecided neighbours."""
    rest = members
    while rest != _ZERO:
        m = _lowest(rest)
        rest &= rest - _ONE
        cand = in_masks[m] & common
        if cand == _ZERO:
            continue
        slack = np.int64(_popcount(in_masks[m] & p)) - need[m]
        if cand & bit:
            slack -= 1
        if slack < 0 or np.int64(_popcount(others & cand)) > slack_u + slack:
            return m
    return -1


@numba.njit(cache=True)
def search(
    in_masks: npt.NDArray[np.uint64],
    out_masks: npt.NDArray[np.uint64],
    need: npt.NDArray[np.int64],
    cap: npt.NDArray[np.int64],
    k: int,
    budget: int,
    stack: npt.NDArray[np.uint64],
    cursor: npt.NDArray[np.int64],
    found: npt.NDArray[np.uint64],
    steps_left: int,
    completion_limit: int,
    symmetry: npt.NDArray[np.int64],
) -> int:
    """Run at most ``steps_left`` nodes; :data:`FOUND` (``found`` = S1, S2, exempt),
    :data:`EXHAUSTED` or :data:`PAUSED` (call again)."""
    n = in_masks.shape[0]
    full = _ZERO
    for i in range(n):
        full |= _bit(i)
    v = cursor[_V]
    w = cursor[_W]
    top = cursor[_TOP]
    visited = cursor[_VISITED]
    steps = 0
    while True:
        if top == 0:
            if w <= v:
                w = v + 1
            if w >= n:
                v += 1
                w = v + 1
            if v >= n - 1:
                cursor[_V] = v
                cursor[_W] = w
                cursor[_TOP] = 0
                cursor[_VISITED] = visited
                return EXHAUSTED
            suffix_v = full & ~(_bit(v) - _ONE)
            suffix_w = full & ~(_bit(w) - _ONE)
            top = _push(stack, 0, _bit(v), _bit(w), full, full, (full & ~suffix_v) | _bit(w),
                        full & ~suffix_w, _ZERO, _ZERO, _ZERO, _ZERO, _ZERO, budget)  # fmt: skip
            w += 1
        if steps >= steps_left:
            cursor[_V] = v
            cursor[_W] = w
            cursor[_TOP] = top
            cursor[_VISITED] = visited
            return PAUSED
        top -= 1
        in1 = stack[top, _IN1]
        in2 = stack[top, _IN2]
        p1 = stack[top, _P1]
        p2 = stack[top, _P2]
        z1 = stack[top, _Z1]
        z2 = stack[top, _Z2]
        h1 = stack[top, _H1]
        h2 = stack[top, _H2]
        ex = stack[top, _EX]
        ne1 = stack[top, _NE1]
        ne2 = stack[top, _NE2]
        b = np.int64(stack[top, _B])
        visited += 1
        steps += 1
        dead = False
        while True:
            if (z1 | h1) != _ZERO:
                q1 = _peel_free(in_masks, out_masks, p1, k, z1 | h1, ex)
                dropped = p1 & ~z1 & ~q1
                if b > 0:
                    earlier = _ZERO
                    rest = dropped & ~ne1 & ~in2
                    while rest != _ZERO:
                        bit = _bit(_lowest(rest))
                        rest &= rest - _ONE
                        top = _push(stack, top, in1 | bit, in2, p1, p2, z1, z2 | (p2 & bit),
                                    _ZERO, _ZERO, ex | bit, ne1 | earlier, ne2, b - 1)  # fmt: skip
                        earlier |= bit
                if dropped & in1:
                    dead = True
                    break
                p1 = q1
                z1 = _ZERO
                h1 = _ZERO
            if (z2 | h2) != _ZERO:
                q2 = _peel_free(in_masks, out_masks, p2, k, z2 | h2, ex)
                dropped = p2 & ~z2 & ~q2
                if b > 0:
                    earlier = _ZERO
                    rest = dropped & ~ne2 & ~in1
                    while rest != _ZERO:
                        bit = _bit(_lowest(rest))
                        rest &= rest - _ONE
                        top = _push(stack, top, in1, in2 | bit, p1, p2, z1 | (p1 & bit), z2,
                                    _ZERO, _ZERO, ex | bit, ne1, ne2 | earlier, b - 1)  # fmt: skip
                        earlier |= bit
                if dropped & in2:
                    dead = True
                    break
                p2 = q2
                z2 = _ZERO
                h2 = _ZERO
            drop1 = _ZERO
            drop2 = _ZERO
            rest = ex & in1
            while rest != _ZERO:
                x = _lowest(rest)
                rest &= rest - _ONE
                inside = np.int64(_popcount(in_masks[x] & in1))
                if inside > cap[x]:
                    dead = True
                    break
                if inside == cap[x]:
                    drop1 |= in_masks[x] & p1 & ~in1
            if dead:
                break
            rest = ex & in2
            while rest != _ZERO:
                x = _lowest(rest)
                rest &= rest - _ONE
                inside = np.int64(_popcount(in_masks[x] & in2))
                if inside > cap[x]:
                    dead = True
                    break
                if inside == cap[x]:
                    drop2 |= in_masks[x] & p2 & ~in2
            if dead:
                break
            if drop1 != _ZERO or drop2 != _ZERO:
                z1 |= drop1
                z2 |= drop2
                continue
            add1 = _ZERO
            tight1 = _ZERO
            rest = in1 & ~ex
            while rest != _ZERO:
                i = _lowest(rest)
                rest &= rest - _ONE
                inside_m = in_masks[i] & p1
                if np.int64(_popcount(inside_m)) == need[i] and inside_m & ~in1:
                    add1 |= inside_m & ~in1
                    tight1 |= _bit(i)
            add2 = _ZERO
            tight2 = _ZERO
            rest = in2 & ~ex
            while rest != _ZERO:
                i = _lowest(rest)
                rest &= rest - _ONE
                inside_m = in_masks[i] & p2
                if np.int64(_popcount(inside_m)) == need[i] and inside_m & ~in2:
                    add2 |= inside_m & ~in2
                    tight2 |= _bit(i)
            if add1 == _ZERO and add2 == _ZERO:
                break
            if b > 0 and ((tight1 & ~ne1) != _ZERO or (tight2 & ~ne2) != _ZERO):
                top = _spawn_commit(stack, top, in1, in2, p1, p2, ex, ne1, ne2, b,
                                    tight1 & ~ne1, tight2 & ~ne2)  # fmt: skip
                ne1 |= tight1
                ne2 |= tight2
            if (add1 & add2) != _ZERO or (add1 & in2) != _ZERO or (add2 & in1) != _ZERO:
                dead = True
                break
            in1 |= add1
            in2 |= add2
            z2 |= p2 & add1
            z1 |= p1 & add2
        if dead:
            continue
        common = p1 & p2
        if common == _ZERO:
            if (p1 & ~ex) != _ZERO and (p2 & ~ex) != _ZERO:
                found[0] = p1
                found[1] = p2
                found[2] = ex
                cursor[_TOP] = top
                cursor[_VISITED] = visited
                return FOUND
            continue
        if symmetry.shape[0] and _breaks_symmetry(symmetry, in1, in2, p1, p2):
            continue
        m1 = in1 & ~ex
        m2 = in2 & ~ex
        size1 = np.int64(_popcount(in1))
        arg1 = -1
        rest = m1
        while rest != _ZERO:
            i = _lowest(rest)
            rest &= rest - _ONE
            if 1 + need[i] > size1:
                size1 = 1 + need[i]
                arg1 = i
        size2 = np.int64(_popcount(in2))
        arg2 = -1
        rest = m2
        while rest != _ZERO:
            i = _lowest(rest)
            rest &= rest - _ONE
            if 1 + need[i] > size2:
                size2 = 1 + need[i]
                arg2 = i
        if size1 + size2 > np.int64(_popcount(p1 | p2)):
            if b > 0:
                u1 = _bit(arg1) & ~ne1 if arg1 >= 0 else _ZERO
                u2 = _bit(arg2) & ~ne2 if arg2 >= 0 else _ZERO
                if u1 != _ZERO or u2 != _ZERO:
                    top = _spawn_commit(stack, top, in1, in2, p1, p2, ex, ne1, ne2, b, u1, u2)
            continue
        # Pairwise bound over the non-exempt members with undecided in-neighbours.
        force1 = _ZERO
        force2 = _ZERO
        used1 = _ZERO
        used2 = _ZERO
        overload = False
        rest_a = m1
        while rest_a != _ZERO and not overload:
            a = _lowest(rest_a)
            rest_a &= rest_a - _ONE
            cand_a = in_masks[a] & common
            if cand_a == _ZERO:
                continue
            count_a = np.int64(_popcount(cand_a))
            slack_a = np.int64(_popcount(in_masks[a] & p1)) - need[a]
            rest_b = m2
            while rest_b != _ZERO:
                bb = _lowest(rest_b)
                rest_b &= rest_b - _ONE
                cand_b = in_masks[bb] & common
                if cand_b == _ZERO:
                    continue
                count_b = np.int64(_popcount(cand_b))
                limit = slack_a + np.int64(_popcount(in_masks[bb] & p2)) - need[bb]
                if count_a >= limit and count_b >= limit:
                    both = cand_a & cand_b
                    shared = np.int64(_popcount(both))
                    if shared > limit:
                        if b > 0:
                            top = _spawn_commit(stack, top, in1, in2, p1, p2, ex, ne1, ne2, b,
                                                _bit(a) & ~ne1, _bit(bb) & ~ne2)  # fmt: skip
                        overload = True
                        break
                    if shared == limit:
                        f1 = in_masks[a] & p1 & ~both & ~in1
                        f2 = in_masks[bb] & p2 & ~both & ~in2
                        if f1 != _ZERO or f2 != _ZERO:
                            force1 |= f1
                            force2 |= f2
                            used1 |= _bit(a)
                            used2 |= _bit(bb)
        if overload:
            continue
        if force1 != _ZERO or force2 != _ZERO:
            if b > 0:
                top = _spawn_commit(stack, top, in1, in2, p1, p2, ex, ne1, ne2, b,
                                    used1 & ~ne1, used2 & ~ne2)  # fmt: skip
                ne1 |= used1
                ne2 |= used2
            if force1 & force2:
                continue
            top = _push(stack, top, in1 | force1, in2 | force2, p1, p2, p1 & force2,
                        p2 & force1, _ZERO, _ZERO, ex, ne1, ne2, b)  # fmt: skip
            continue
        # Nodes the pairwise bound keeps out of a set as constrained members.
        out1 = _ZERO
        out2 = _ZERO
        used1 = _ZERO
        used2 = _ZERO
        rest = (p1 & ~in1) | (p2 & ~in2)
        while rest != _ZERO:
            u = _lowest(rest)
            rest &= rest - _ONE
            bu = _bit(u)
            others = in_masks[u] & ~bu
            if p1 & ~in1 & bu:
                slack_u = np.int64(_popcount(in_masks[u] & p1)) - need[u]
                culprit = _overloaded(in_masks, others, slack_u, bu, m2, p2, common, need)
                if culprit >= 0:
                    out1 |= bu
                    used2 |= _bit(culprit)
            if p2 & ~in2 & bu:
                slack_u = np.int64(_popcount(in_masks[u] & p2)) - need[u]
                culprit = _overloaded(in_masks, others, slack_u, bu, m1, p1, common, need)
                if culprit >= 0:
                    out2 |= bu
                    used1 |= _bit(culprit)
        if out1 != _ZERO or out2 != _ZERO:
            if b > 0:
                top = _spawn_commit(stack, top, in1, in2, p1, p2, ex, ne1, ne2, b,
                                    used1 & ~ne1, used2 & ~ne2)  # fmt: skip
                ne1 |= used1
                ne2 |= used2
            top = _push(stack, top, in1, in2, p1, p2, _ZERO, _ZERO, out1, out2, ex, ne1, ne2, b)
            continue
        if np.int64(_popcount(common)) <= completion_limit:
            q1 = _peel_free(in_masks, out_masks, p1, k, common, ex)
            if q1 & in1 == in1 and (q1 & ~ex) != _ZERO and (p2 & ~ex) != _ZERO:
                found[0] = q1
                found[1] = p2
                found[2] = ex
                cursor[_TOP] = top
                cursor[_VISITED] = visited
                return FOUND
            q2 = _peel_free(in_masks, out_masks, p2, k, common, ex)
            if q2 & in2 == in2 and (p1 & ~ex) != _ZERO and (q2 & ~ex) != _ZERO:
                found[0] = p1
                found[1] = q2
                found[2] = ex
                cursor[_TOP] = top
                cursor[_VISITED] = visited
                return FOUND
        # Branch next to the tightest non-exempt member.
        best_slack = np.int64(1) << 30
        best_cnt = np.int64(1) << 30
        side = 1
        best_cand = _ZERO
        rest = m1
        while rest != _ZERO:
            i = _lowest(rest)
            rest &= rest - _ONE
            cand = in_masks[i] & common
            if cand == _ZERO:
                continue
            s = np.int64(_popcount(in_masks[i] & p1)) - need[i]
            c = np.int64(_popcount(cand))
            if s < best_slack or (s == best_slack and c < best_cnt):
                best_slack = s
                best_cnt = c
                side = 1
                best_cand = cand
        rest = m2
        while rest != _ZERO:
            i = _lowest(rest)
            rest &= rest - _ONE
            cand = in_masks[i] & common
            if cand == _ZERO:
                continue
            s = np.int64(_popcount(in_masks[i] & p2)) - need[i]
            c = np.int64(_popcount(cand))
            if s < best_slack or (s == best_slack and c < best_cnt):
                best_slack = s
                best_cnt = c
                side = 2
                best_cand = cand
        u = -1
        if best_cand == _ZERO:
            side = 1
            u = _lowest(common)
        else:
            other = in2 if side == 1 else in1
            key_a = np.int64(-1)
            key_b = np.int64(-1)
            rest = best_cand
            while rest != _ZERO:
                i = _lowest(rest)
                rest &= rest - _ONE
                ka = np.int64(_popcount(out_masks[i] & other))
                kb = np.int64(_popcount(in_masks[i] & common))
                if ka > key_a or (ka == key_a and kb > key_b):
                    u = i
                    key_a = ka
                    key_b = kb
        bit = _bit(u)
        if side == 1:
            top = _push(stack, top, in1, in2, p1, p2, bit, _ZERO, _ZERO, _ZERO, ex, ne1, ne2, b)
            top = _push(stack, top, in1 | bit, in2, p1, p2, _ZERO, bit, _ZERO, _ZERO, ex, ne1,
                        ne2, b)  # fmt: skip
        else:
            top = _push(stack, top, in1, in2, p1, p2, _ZERO, bit, _ZERO, _ZERO, ex, ne1, ne2, b)
            top = _push(stack, top, in1, in2 | bit, p1, p2, bit, _ZERO, _ZERO, _ZERO, ex, ne1,
                        ne2, b)  # fmt: skip


def new_state(
    n: int, budget: int
) -> tuple[npt.NDArray[np.uint64], npt.NDArray[np.int64], npt.NDArray[np.uint64]]:
    """Fresh ``(stack, cursor, found)`` arrays for :func:`search`.

    Along a path every node decides a member, drops a node from a bound or spends budget, so
    a path has at most ``4n + budget + 1`` nodes, each leaving at most ``2n + 2`` children.
    """
    rows = (4 * n + budget + 2) * (2 * n + 2)
    stack = np.zeros((rows, 12), dtype=np.uint64)
    cursor = np.zeros(4, dtype=np.int64)
    found = np.zeros(3, dtype=np.uint64)
    return stack, cursor, found
