"""Public robustness API: exact r- and (r,s)-robustness with certificates, F-local checks.

Definitions (LeBlanc et al. 2013; the SAC paper, §3.3, Defs. 3.2-3.4): ``S`` is r-reachable when
some
``i ∈ S`` has at least ``r`` in-neighbours outside ``S``; ``G`` is r-robust when of every two
nonempty disjoint sets at least one is r-reachable; ``G`` is (r,s)-robust when for every such
pair at least one holds: every node of ``S1`` has ``r`` in-neighbours outside ``S1``, the same
for ``S2``, or at least ``s`` nodes of ``S1 ∪ S2`` have ``r`` in-neighbours outside their set.
SAC's guarantees (the SAC paper, §4.2, Properties 4.2-4.3) need an (F+1)-robust graph.

Solvers are chosen by size: the O(n·2^n) subset dynamic programme up to
:data:`~byzllm.graphs._subset_dp.DP_MAX_NODES` nodes, then a branch and bound over k-closed sets
(``_closed_sets``), both exact; proven bounds settle many graphs before either runs.

The bounds (numpy, networkx) and the MILP (scipy) load only where a graph is too large for the
subset DP: checking a small graph then needs neither library.
"""

from __future__ import annotations

import math
import time
from collections import OrderedDict
from collections.abc import Hashable, Iterable
from numbers import Integral, Real
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from byzllm.errors import InputError

from ._closed_sets import SearchTimeout, compiled_search_applies, find_closed_pair
from ._core import GraphView, graph_view, mask_of, node_list, nodes_of
from ._rs_budget import rs_by_budget
from ._subset_dp import DP_MAX_NODES, dp_r_robustness, dp_rs_robustness

__all__ = [
    "Certificate",
    "Method",
    "RSRobustnessResult",
    "RobustnessResult",
    "check_f_local",
    "is_r_robust",
    "r_robustness",
    "robustness_bounds",
    "rs_robustness",
    "spectral_lower_bound",
    "tolerable_f",
    "verify_certificate",
    "verify_rs_certificate",
]

Method = Literal["auto", "dp", "search", "milp"]

#: The share of the time left that the (r,s) budget search gets; the MILP has the rest.
_BUDGET_SHARE = 0.85

#: Seconds the probe for s = 1 (one search per likely node) gets when there is no time limit.
_PROBE_SECONDS = 2.0

#: The level :func:`r_robustness` proved for each of the last few graphs it solved (G is
#: lb-robust), keyed by :func:`_solved_key`. ``rs_robustness(G, r=...)`` after
#: ``r_robustness(G)`` needs G to be r-robust; proving it again is a second search as costly
#: as the first (a third of the (r,s) solve of a G(50, 1/2)).
_SOLVED: OrderedDict[tuple[tuple[int, ...], bool], int] = OrderedDict()
_SOLVED_KEPT = 16


class Certificate(BaseModel):
    """Two disjoint nonempty node sets; checkable by hand with :func:`verify_certificate`.

    For r-robustness: neither set is ``(value + 1)``-reachable, so the graph is not
    ``(value + 1)``-robust. ``value = max(f(S1), f(S2))`` where ``f(S)`` is the largest number of
    in-neighbours outside ``S`` that a member of ``S`` has.
    """

    model_config = ConfigDict(frozen=True)

    s1: list[Any]
    s2: list[Any]
    value: int


class RobustnessResult(BaseModel):
    """Outcome of :func:`r_robustness`.

    ``r`` is the exact robustness when ``exact`` is true, else the largest proven level
    (``bounds[0]``). ``bounds = (lb, ub)``: the graph is lb-robust and not (ub+1)-robust;
    ``certificate`` is a pair witnessing the upper bound.
    """

    model_config = ConfigDict(frozen=True)

    r: int
    exact: bool
    bounds: tuple[int, int]
    certificate: Certificate
    method: str
    seconds: float = Field(ge=0)
    n: int
    directed: bool


class RSRobustnessResult(BaseModel):
    """Outcome of :func:`rs_robustness`: the largest ``s`` with G (r, s)-robust.

    ``s = 0`` means G is not even r-robust. ``certificate`` (when ``s < n``) is a pair where
    neither set is wholly r-reachable and only ``certificate.value`` nodes of ``S1 ∪ S2`` are
    r-reachable, so G is not (r, value+1)-robust (:func:`verify_rs_certificate`). When
    ``exact``, ``value == s``: G is not (r, s+1)-robust. Otherwise (a time limit) the pair
    witnesses the upper bound, ``value == bounds[1]``, and ``s`` is the proven lower bound.
    """

    model_config = ConfigDict(frozen=True)

    r: int
    s: int
    exact: bool
    bounds: tuple[int, int]
    certificate: Certificate | None
    method: str
    seconds: float = Field(ge=0)
    n: int
    directed: bool


def _certificate(view: GraphView, s1: int, s2: int) -> Certificate:
    return Certificate(
        s1=nodes_of(view, s1), s2=nodes_of(view, s2), value=max(view.f(s1), view.f(s2))
    )


def _solved_key(view: GraphView) -> tuple[tuple[int, ...], bool]:
    """The graph itself (in-neighbour masks in node order): equal keys, equal robustness."""
    return view.in_masks, view.directed


def _remember(view: GraphView, lb: int) -> None:
    key = _solved_key(view)
    _SOLVED[key] = lb
    _SOLVED.move_to_end(key)
    while len(_SOLVED) > _SOLVED_KEPT:
        _SOLVED.popitem(last=False)


def _search_label(n: int) -> str:
    """The ``method`` reported for the k-closed search: compiled (numba) or pure Python."""
    return "search-compiled" if compiled_search_applies(n) else "search"


def _check_method(method: str) -> None:
    if method not in ("auto", "dp", "search", "milp"):
        raise InputError(f"unknown method {method!r}; use auto, dp, search or milp")


def _check_time_limit(time_limit: float | None) -> None:
    # A number, and not a bool: True passed as a limit of 1 s, and a string raised a
    # TypeError from the comparison.
    if time_limit is None:
        return
    if isinstance(time_limit, bool) or not isinstance(time_limit, Real) or not time_limit > 0:
        raise InputError(f"time_limit must be a positive number of seconds, got {time_limit!r:.40}")


def _check_integer(name: str, value: Any) -> None:
    """An :class:`InputError` unless ``value`` is an integer (``int`` or numpy's: a count read
    from an array is one; a bool is not one here)."""
    if isinstance(value, bool) or not isinstance(value, Integral):
        raise InputError(f"{name} must be an integer, got {value!r:.40}")


def _solve_r(
    view: GraphView, method: str, time_limit: float | None, started: float
) -> tuple[int, int, int, int, bool, str]:
    """Returns ``(lb, ub, s1, s2, exact, method)`` with ``(s1, s2)`` witnessing ``ub``."""
    n = view.n
    if method == "dp" or (method == "auto" and n <= DP_MAX_NODES):
        if n > DP_MAX_NODES:
            raise InputError(f"method 'dp' handles at most {DP_MAX_NODES} nodes, got {n}")
        r, s1, s2 = dp_r_robustness(view)
        return r, r, s1, s2, True, "dp"
    from ._bounds import best_known_pair, local_search_pair, lower_bound
    from ._milp import milp_r_robustness

    ub, s1, s2 = best_known_pair(view)
    lb = lower_bound(view)
    if lb >= ub:
        return ub, ub, s1, s2, True, "bounds"
    deadline = None if time_limit is None else started + time_limit
    # A heuristic: a third of the time at most, the search needs the rest.
    local_deadline = None if time_limit is None else started + time_limit / 3
    improved = local_search_pair(view, ub, deadline=local_deadline)
    if improved is not None and improved[0] < ub:
        ub, s1, s2 = improved
    if lb >= ub:
        return ub, ub, s1, s2, True, "bounds"
    if method == "milp":
        remaining = None if deadline is None else max(0.01, deadline - time.perf_counter())
        out = milp_r_robustness(view, time_limit=remaining, lower=lb, upper=ub - 1)
        if out.value is not None and out.value < ub:
            ub, s1, s2 = out.value, out.s1, out.s2
        lb = max(lb, min(out.lower, ub))
        return lb, ub, s1, s2, lb == ub, "milp"
    search = _search_label(n)
    # Branch and bound, top down: the heuristic upper bound is usually tight, so one proof at
    # ub - 1 settles it. Under a time limit that proof gets 85% of the time; if it does not
    # finish, the rest goes bottom up, where every level proven pair-free raises the lower
    # bound (proofs far below r are cheap), so the answer still carries the best proven level.
    first_deadline = None
    if deadline is not None:
        first_deadline = time.perf_counter() + 0.85 * max(0.0, deadline - time.perf_counter())
    try:
        while lb < ub:
            # Expected to prove that no pair exists: completions would only cost time.
            found = find_closed_pair(view, ub - 1, first_deadline, completions=False)
            if found is None:
                return ub, ub, s1, s2, True, search
            ub, s1, s2 = max(view.f(found[0]), view.f(found[1])), found[0], found[1]
        return ub, ub, s1, s2, True, search
    except SearchTimeout:
        pass
    try:
        while lb < ub:
            found = find_closed_pair(view, lb, deadline)
            if found is None:
                lb += 1
                continue
            ub, s1, s2 = max(view.f(found[0]), view.f(found[1])), found[0], found[1]
            lb = min(lb, ub)
    except SearchTimeout:
        return lb, ub, s1, s2, False, search
    return lb, ub, s1, s2, True, search


def r_robustness(
    G: Any, *, method: Method = "auto", time_limit: float | None = None
) -> RobustnessResult:
    """The largest ``r`` such that ``G`` is r-robust, with a certificate (LeBlanc et al. 2013).

    ``method``: ``"auto"`` (subset DP for n ≤ 26, else bounds + branch and bound), ``"dp"``,
    ``"search"`` or ``"milp"`` (Usevitch & Panagou's MILP with bounds, on HiGHS). With
    ``time_limit`` (seconds) the answer may be inexact: ``exact=False``, ``r`` = proven lower
    bound, ``bounds`` = (proven, witnessed).

    >>> import networkx as nx
    >>> r_robustness(nx.complete_graph(7)).r
    4
    """
    _check_method(method)
    _check_time_limit(time_limit)
    started = time.perf_counter()
    view = graph_view(G)
    lb, ub, s1, s2, exact, used = _solve_r(view, method, time_limit, started)
    _remember(view, lb)
    return RobustnessResult(
        r=ub if exact else lb,
        exact=exact,
        bounds=(lb, ub),
        certificate=_certificate(view, s1, s2),
        method=used,
        seconds=time.perf_counter() - started,
        n=view.n,
        directed=view.directed,
    )


def is_r_robust(G: Any, r: int, *, time_limit: float | None = None) -> bool:
    """Whether ``G`` is r-robust; stops at the first witness pair or proof.

    Raises :class:`~byzllm.errors.InputError` when ``time_limit`` runs out undecided.
    """
    _check_integer("r", r)
    _check_time_limit(time_limit)
    view = graph_view(G)
    if r <= 0:
        return True
    if r > (view.n + 1) // 2:
        return False  # no graph on n nodes is more than ⌈n/2⌉-robust (LeBlanc et al. 2013)
    if r >= 2 and min(view.in_degrees) < r:
        # ({v}, the rest), v with fewer than r in-neighbours: the rest has at most one
        # in-neighbour outside it, v. Most of an Erdős–Rényi resampling's draws end here.
        return False
    if view.n <= 14:
        return dp_r_robustness(view)[0] >= r
    from ._bounds import best_known_pair, lower_bound

    ub, _, _ = best_known_pair(view, connectivity=False)
    if ub < r:
        return False
    if lower_bound(view) >= r:
        return True
    deadline = None if time_limit is None else time.perf_counter() + time_limit
    try:
        return find_closed_pair(view, r - 1, deadline) is None
    except SearchTimeout:
        raise InputError(
            f"could not decide {r}-robustness within {time_limit} s; raise time_limit"
        ) from None


def spectral_lower_bound(G: Any) -> int:
    """``⌈λ₂/2⌉ ≤ r(G)`` for an undirected graph (λ₂: algebraic connectivity).

    Of two disjoint sets one has ``m ≤ n/2`` nodes, and its members have on average
    ``e(S, V∖S)/m ≥ λ₂(n-m)/n ≥ λ₂/2`` neighbours outside it (Shahrivar, Pirani & Sundaram
    2015). The solvers use a slightly stronger form (``_bounds.lower_bound``).
    """
    from ._bounds import spectral_lambda2

    view = graph_view(G, require_undirected=True)
    return max(0, math.ceil(spectral_lambda2(view) / 2 - 1e-7))


def robustness_bounds(G: Any) -> tuple[int, int]:
    """Cheap ``(lower, upper)`` bounds on r(G): proven lower, witnessed upper (no search)."""
    from ._bounds import best_known_pair, lower_bound

    view = graph_view(G)
    upper = best_known_pair(view)[0]
    return min(lower_bound(view), upper), upper


def tolerable_f(G: Any, *, time_limit: float | None = None) -> int:
    """The largest F such that G is (F+1)-robust, i.e. ``r - 1`` (the SAC paper, §4.2).

    Under a time limit this is the proven (conservative) value. ``-1`` means that G is not
    even 1-robust (for undirected graphs: disconnected), so no F is tolerated.
    """
    return r_robustness(G, time_limit=time_limit).r - 1


def rs_robustness(
    G: Any, r: int | None = None, *, time_limit: float | None = None
) -> RSRobustnessResult:
    """The largest ``s`` such that ``G`` is (r, s)-robust (LeBlanc et al. 2013, Def. 6).

    ``r`` defaults to ``r_robustness(G).r``; given, it is proven again only if no earlier
    ``r_robustness`` call on the same graph (among the last 16 graphs) proved it. Exact by subset
    DP for n ≤ 26. Above that, once G is known to be r-robust (s ≥ 1), the budget search
    (``_rs_budget``) proves budgets 1, 2, … of r-reachable members empty until one holds a pair
    (after a short probe for s = 1); that settles the small s of most sparse and random graphs
    exactly. Otherwise the (r,s) MILP on HiGHS finishes the job, starting from the proven level
    (``exact=False`` with proven bounds if ``time_limit`` runs out; the budget search takes 85%
    of it).
    """
    _check_time_limit(time_limit)
    started = time.perf_counter()
    view = graph_view(G)
    r_proven = r is None  # r_robustness reports a proven level: G is r-robust, so s ≥ 1
    known: tuple[int, int] | None = None  # a pair at level r (f ≤ r), if one is at hand
    if r is None:
        r_res = r_robustness(G, time_limit=time_limit)
        r = r_res.r
        if r_res.exact:
            cert = r_res.certificate
            known = mask_of(view, cert.s1), mask_of(view, cert.s2)
    _check_integer("r", r)
    n = view.n

    def result(
        s: int, exact: bool, bounds: tuple[int, int], cert: Certificate | None, method: str
    ) -> RSRobustnessResult:
        return RSRobustnessResult(
            r=r,
            s=s,
            exact=exact,
            bounds=bounds,
            certificate=cert,
            method=method,
            seconds=time.perf_counter() - started,
            n=n,
            directed=view.directed,
        )

    if r <= 0:
        # Every member of a set has ≥ 0 outside in-neighbours: condition (1) always holds.
        return result(n, True, (n, n), None, "definition")
    if n <= DP_MAX_NODES:
        found = dp_rs_robustness(view, r)
        if found is None:
            return result(n, True, (n, n), None, "dp")
        value, s1, s2 = found
        return result(value, True, (value, value), _rs_certificate(view, s1, s2, r), "dp")
    from ._bounds import lower_bound
    from ._milp import MilpOutcome, milp_rs_robustness

    if not r_proven and r <= _SOLVED.get(_solved_key(view), 0):
        r_proven = True  # r_robustness proved it for this very graph
    if not r_proven:
        # s ≥ 1 exactly when G is r-robust: settle that first (cheap bound, then the search).
        r_proven = r <= lower_bound(view)
        if not r_proven:
            deadline = None if time_limit is None else started + 0.5 * time_limit
            try:
                pair = find_closed_pair(view, r - 1, deadline)
            except SearchTimeout:
                pass
            else:
                if pair is not None:
                    return result(
                        0, True, (0, 0), _rs_certificate(view, *pair, r), _search_label(n)
                    )
                r_proven = True
    floor = 1 if r_proven else 0
    method = "milp"
    best: tuple[int, int, int] | None = None  # (value, S1, S2): a witnessed upper bound on s
    if r_proven:
        # The budget search first (exact when s is small), with 85% of the time left.
        budget_deadline = None
        if time_limit is not None:
            now = time.perf_counter()
            budget_deadline = now + _BUDGET_SHARE * max(0.0, started + time_limit - now)
        if known is None:
            known = _pair_at_level(view, r, budget_deadline)
        hint = 0
        if known is not None:
            best = _rs_pair_value(view, *known, r)
            hint = view.reachable_mask(known[0], r) | view.reachable_mask(known[1], r)
        if best is not None and best[0] <= floor:
            # The pair at hand already meets the proven floor (s >= 1): nothing to search.
            value, s1, s2 = best
            cert = _rs_certificate(view, s1, s2, r)
            return result(value, True, (value, value), cert, _search_label(n))
        # A probe for s = 1 first, with a tenth of that time (or 2 s).
        now = time.perf_counter()
        probe_deadline = now + (
            _PROBE_SECONDS if budget_deadline is None else 0.1 * max(0.0, budget_deadline - now)
        )
        walk = rs_by_budget(
            view,
            r,
            budget_deadline,
            upper=None if best is None else best[0],
            hint=hint,
            probe_deadline=probe_deadline,
        )
        if walk.pair is not None:
            value, s1, s2 = walk.pair
            cert = _rs_certificate(view, s1, s2, r)
            return result(value, True, (value, value), cert, _search_label(n))
        if walk.proven >= n:
            return result(n, True, (n, n), None, _search_label(n))
        floor = max(floor, walk.proven)
        if best is not None and floor >= best[0]:
            # Every smaller budget proven empty: the pair at hand is optimal.
            value, s1, s2 = best
            cert = _rs_certificate(view, s1, s2, r)
            return result(value, True, (value, value), cert, _search_label(n))
        method = f"{_search_label(n)}+milp"
    remaining = (
        None if time_limit is None else max(0.01, time_limit - (time.perf_counter() - started))
    )
    out = milp_rs_robustness(view, r, time_limit=remaining)
    if best is not None and (out.value is None or best[0] < out.value):
        # The known pair beats what the MILP found in its time (it may have found nothing).
        out = MilpOutcome(
            value=best[0], s1=best[1], s2=best[2], lower=out.lower, optimal=out.optimal
        )
    if out.value is None:
        if out.optimal:
            return result(n, True, (n, n), None, method)
        low = max(floor, min(out.lower, n))
        return result(low, False, (low, n), None, method)
    cert = _rs_certificate(view, out.s1, out.s2, r)
    lower = max(floor, min(out.lower, out.value))
    exact = out.optimal or lower == out.value
    return result(out.value if exact else lower, exact, (lower, out.value), cert, method)


def _rs_pair_value(view: GraphView, s1: int, s2: int, r: int) -> tuple[int, int, int] | None:
    """``(|X1| + |X2|, S1, S2)`` when the pair shows G is not (r, value+1)-robust, else None."""
    x1, x2 = view.reachable_count(s1, r), view.reachable_count(s2, r)
    if x1 == s1.bit_count() or x2 == s2.bit_count():
        return None
    return x1 + x2, s1, s2


def _pair_at_level(view: GraphView, r: int, deadline: float | None) -> tuple[int, int] | None:
    """A pair with ``f ≤ r`` on both sides: a hint, so a tenth of the time left (or 10 s)."""
    now = time.perf_counter()
    short = now + (10.0 if deadline is None else 0.1 * max(0.0, deadline - now))
    try:
        return find_closed_pair(view, r, short)
    except SearchTimeout:
        return None


def _rs_certificate(view: GraphView, s1: int, s2: int, r: int) -> Certificate:
    value = view.reachable_count(s1, r) + view.reachable_count(s2, r)
    return Certificate(s1=nodes_of(view, s1), s2=nodes_of(view, s2), value=value)


def _in_neighbours(G: Any, v: Hashable) -> set[Hashable]:
    return set(G.predecessors(v)) if G.is_directed() else set(G.neighbors(v))


def _checked_pair(
    G: Any, s1: Iterable[Hashable], s2: Iterable[Hashable]
) -> tuple[set[Any], set[Any]]:
    listed = node_list(s1, what="a certificate set"), node_list(s2, what="a certificate set")
    for v in (*listed[0], *listed[1]):
        # Before the sets are made: an unhashable value raised a TypeError from set().
        if v not in G:
            raise InputError(f"certificate node {v!r:.40} is not in the graph")
    first, second = set(listed[0]), set(listed[1])
    if not first or not second:
        raise InputError("a certificate needs two nonempty sets")
    if first & second:
        raise InputError("the two sets of a certificate must be disjoint")
    return first, second


def _outside(G: Any, v: Hashable, members: set[Any]) -> int:
    return len(_in_neighbours(G, v) - members)


def verify_certificate(G: Any, s1: Iterable[Hashable], s2: Iterable[Hashable], r: int) -> bool:
    """True when ``(s1, s2)`` proves that ``G`` is *not* r-robust.

    Independent of the solvers: plain sets and ``networkx`` neighbour queries. The pair must be
    nonempty, disjoint and inside ``G``, and neither set r-reachable (no member has ``r`` or
    more in-neighbours outside its own set).
    """
    _check_integer("r", r)
    graph_view(G, min_nodes=1, allow_view=False)
    first, second = _checked_pair(G, s1, s2)
    return all(_outside(G, v, first) < r for v in first) and all(
        _outside(G, v, second) < r for v in second
    )


def verify_rs_certificate(
    G: Any, s1: Iterable[Hashable], s2: Iterable[Hashable], r: int, s: int
) -> bool:
    """True when ``(s1, s2)`` proves that ``G`` is *not* (r, s)-robust (LeBlanc et al. 2013)."""
    _check_integer("r", r)
    _check_integer("s", s)
    graph_view(G, min_nodes=1, allow_view=False)
    first, second = _checked_pair(G, s1, s2)
    reach1 = sum(1 for v in first if _outside(G, v, first) >= r)
    reach2 = sum(1 for v in second if _outside(G, v, second) >= r)
    return reach1 < len(first) and reach2 < len(second) and reach1 + reach2 < s


def check_f_local(G: Any, byzantine_nodes: Iterable[Hashable], F: int) -> bool:
    """Whether the set of Byzantine nodes is F-local (the SAC paper, Def. 3.2).

    True when every node outside the set has at most ``F`` (in-)neighbours inside it.
    """
    if isinstance(F, bool) or not isinstance(F, int) or F < 0:
        raise InputError(f"F must be a non-negative integer, got {F!r}")
    view = graph_view(G, min_nodes=1)
    bad = mask_of(view, byzantine_nodes, what="byzantine_nodes")
    for i, in_mask in enumerate(view.in_masks):
        if not bad >> i & 1 and (in_mask & bad).bit_count() > F:
            return False
    return True
