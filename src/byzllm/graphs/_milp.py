"""Mixed-integer programs for r- and (r,s)-robustness on HiGHS (``scipy.optimize.milp``).

The r-robustness model is that of Usevitch & Panagou (Automatica 111, 2020, §4): binary
indicator vectors ``σ1, σ2`` of the two sets and an integer ``t``,

    minimize t  s.t.  t ≥ (L σ1)_i,  t ≥ (L σ2)_i  for every i,   σ1 + σ2 ≤ 1,
                      1 ≤ Σσ1,  1 ≤ Σσ2,

where ``L`` is the in-Laplacian: ``(Lσ)_i = |N_i \\ S|`` when ``i ∈ S`` and ``≤ 0`` otherwise,
so the optimum is ``min max(f(S1), f(S2)) = r(G)``. ``plain=True`` solves exactly that (the
published baseline). Otherwise the model is strengthened with proven bounds on ``t`` and a
symmetry cut (the first node of ``S1 ∪ S2`` lies in ``S1``).

The (r,s) model adds binaries ``y`` marking the r-reachable members:
``(Lσ)_i ≤ r - 1 + (d_i - r + 1)·y_i`` with ``y ≤ σ``, requires ``Σy < Σσ`` for both sets
(neither is wholly r-reachable) and minimizes ``Σy1 + Σy2``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from ._core import GraphView, bits

if TYPE_CHECKING:
    from scipy.sparse import csr_matrix

# scipy.optimize and scipy.sparse are imported by the functions that solve: importing them
# takes about a second, which every run that only builds or checks small graphs (by the
# subset DP or the search) would otherwise pay.

__all__ = ["MilpOutcome", "milp_r_robustness", "milp_rs_robustness"]


@dataclass(frozen=True)
class MilpOutcome:
    """Best pair found (masks), its objective, the proven lower bound, and optimality."""

    value: int | None
    s1: int
    s2: int
    lower: int
    optimal: bool


def _laplacian(view: GraphView) -> csr_matrix:
    from scipy.sparse import coo_matrix

    rows: list[int] = []
    cols: list[int] = []
    vals: list[float] = []
    for i, mask in enumerate(view.in_masks):
        rows.append(i)
        cols.append(i)
        vals.append(float(mask.bit_count()))
        for j in bits(mask):
            rows.append(i)
            cols.append(j)
            vals.append(-1.0)
    return coo_matrix((vals, (rows, cols)), shape=(view.n, view.n)).tocsr()


def _mask(values: npt.NDArray[np.float64]) -> int:
    mask = 0
    for i, v in enumerate(values):
        if v > 0.5:
            mask |= 1 << i
    return mask


def _options(time_limit: float | None) -> dict[str, float | bool]:
    options: dict[str, float | bool] = {"disp": False}
    if time_limit is not None:
        options["time_limit"] = max(0.01, float(time_limit))
    return options


def milp_r_robustness(
    view: GraphView,
    *,
    time_limit: float | None = None,
    plain: bool = False,
    lower: int = 0,
    upper: int | None = None,
) -> MilpOutcome:
    """Solve the r-robustness MILP; see the module docstring for the model."""
    from scipy.optimize import Bounds, LinearConstraint, milp
    from scipy.sparse import csr_matrix, hstack, identity, vstack

    n = view.n
    lap = _laplacian(view)
    zero = csr_matrix((n, n))
    ones_col = csr_matrix(np.ones((n, 1)))
    zero_col = csr_matrix((n, 1))
    eye = identity(n, format="csr")
    blocks = [
        hstack([ones_col, -lap, zero]),  # t - Lσ1 ≥ 0
        hstack([ones_col, zero, -lap]),  # t - Lσ2 ≥ 0
        hstack([zero_col, eye, eye]),  # σ1 + σ2 ≤ 1
        hstack([csr_matrix((1, 1)), csr_matrix(np.ones((1, n))), csr_matrix((1, n))]),
        hstack([csr_matrix((1, 1)), csr_matrix((1, n)), csr_matrix(np.ones((1, n)))]),
    ]
    lo: list[npt.NDArray[np.float64]] = [
        np.zeros(n),
        np.zeros(n),
        np.full(n, -np.inf),
        np.ones(1),
        np.ones(1),
    ]
    hi: list[npt.NDArray[np.float64]] = [
        np.full(n, np.inf),
        np.full(n, np.inf),
        np.ones(n),
        np.full(1, n - 1.0),
        np.full(1, n - 1.0),
    ]
    t_low, t_high = 0.0, float(n)
    if not plain:
        t_low = float(lower)
        if upper is not None:
            t_high = float(upper)
        # Symmetry cut: σ2_i ≤ Σ_{j<i} σ1_j (the first node of S1 ∪ S2 is in S1).
        rows = []
        for i in range(n):
            row = np.zeros(2 * n + 1)
            row[1 : 1 + i] = -1.0
            row[1 + n + i] = 1.0
            rows.append(row)
        blocks.append(csr_matrix(np.array(rows)))
        lo.append(np.full(n, -np.inf))
        hi.append(np.zeros(n))
    matrix = vstack(blocks).tocsr()
    cost = np.zeros(2 * n + 1)
    cost[0] = 1.0
    result = milp(
        cost,
        constraints=LinearConstraint(matrix, np.concatenate(lo), np.concatenate(hi)),
        integrality=np.ones(2 * n + 1),
        bounds=Bounds(np.r_[t_low, np.zeros(2 * n)], np.r_[t_high, np.ones(2 * n)]),
        options=_options(time_limit),
    )
    bound = getattr(result, "mip_dual_bound", None)
    proven = int(np.ceil(bound - 1e-6)) if bound is not None and np.isfinite(bound) else 0
    if result.x is None:
        # Infeasible within [lower, upper] proves r > upper... only when solved to the end.
        infeasible = result.status == 2
        return MilpOutcome(None, 0, 0, int(t_high) + 1 if infeasible else proven, infeasible)
    s1 = _mask(result.x[1 : 1 + n])
    s2 = _mask(result.x[1 + n :])
    value = max(view.f(s1), view.f(s2))
    optimal = result.status == 0
    return MilpOutcome(value, s1, s2, value if optimal else max(proven, int(t_low)), optimal)


def milp_rs_robustness(view: GraphView, r: int, *, time_limit: float | None = None) -> MilpOutcome:
    """Minimize ``|X_S1^r| + |X_S2^r|`` over pairs where neither set is wholly r-reachable."""
    from scipy.optimize import Bounds, LinearConstraint, milp
    from scipy.sparse import csr_matrix, hstack, identity, vstack

    n = view.n
    lap = _laplacian(view)
    deg = np.array(view.in_degrees, dtype=float)
    zero = csr_matrix((n, n))
    eye = identity(n, format="csr")
    slack = csr_matrix(np.diag(-(np.maximum(deg - r + 1, 0.0))))
    ones = csr_matrix(np.ones((1, n)))
    zrow = csr_matrix((1, n))
    # Variable order: σ1, σ2, y1, y2.
    blocks = [
        hstack([lap, zero, slack, zero]),  # Lσ1 - (d - r + 1) y1 ≤ r - 1
        hstack([zero, lap, zero, slack]),
        hstack([eye, eye, zero, zero]),  # σ1 + σ2 ≤ 1
        hstack([-eye, zero, eye, zero]),  # y1 ≤ σ1
        hstack([zero, -eye, zero, eye]),
        hstack([ones, zrow, zrow, zrow]),  # Σσ1 ≥ 1
        hstack([zrow, ones, zrow, zrow]),
        hstack([-ones, zrow, ones, zrow]),  # Σy1 - Σσ1 ≤ -1
        hstack([zrow, -ones, zrow, ones]),
    ]
    lo = [np.full(n, -np.inf)] * 5 + [np.array([1.0])] * 2 + [np.array([-np.inf])] * 2
    hi = (
        [np.full(n, r - 1.0)] * 2
        + [np.ones(n), np.zeros(n), np.zeros(n)]
        + [np.array([np.inf])] * 2
        + [np.array([-1.0])] * 2
    )
    matrix = vstack(blocks).tocsr()
    cost = np.r_[np.zeros(2 * n), np.ones(2 * n)]
    result = milp(
        cost,
        constraints=LinearConstraint(matrix, np.concatenate(lo), np.concatenate(hi)),
        integrality=np.ones(4 * n),
        bounds=Bounds(np.zeros(4 * n), np.ones(4 * n)),
        options=_options(time_limit),
    )
    bound = getattr(result, "mip_dual_bound", None)
    proven = int(np.ceil(bound - 1e-6)) if bound is not None and np.isfinite(bound) else 0
    if result.x is None:
        infeasible = result.status == 2
        return MilpOutcome(None, 0, 0, n if infeasible else proven, infeasible)
    s1 = _mask(result.x[:n])
    s2 = _mask(result.x[n : 2 * n])
    value = view.reachable_count(s1, r) + view.reachable_count(s2, r)
    optimal = result.status == 0
    return MilpOutcome(value, s1, s2, value if optimal else proven, optimal)
