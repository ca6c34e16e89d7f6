"""Confidence intervals for the metrics reports print: the percentile bootstrap, seeded.

A metric of a run is a statistic of independent units (questions, games): resampling the
units with replacement and recomputing the statistic gives its sampling distribution
(Efron and Tibshirani, 1993, ch. 13). Seeded, so a report is reproducible to the digit.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

__all__ = ["BOOTSTRAP_METHOD", "Interval", "bootstrap_interval"]

#: How every interval is computed, as reports write it under their tables.
BOOTSTRAP_METHOD = "95% percentile bootstrap over units (2000 resamples, seed 0)"


@dataclass(frozen=True)
class Interval:
    """A point estimate with its confidence interval ``[low, high]`` (NaN when undefined)."""

    value: float
    low: float
    high: float
    n: int

    def to_dict(self) -> dict[str, float | int]:
        return {"value": self.value, "low": self.low, "high": self.high, "n": self.n}


def _mean(x: npt.NDArray[np.float64]) -> float:
    return float(np.mean(x))


def bootstrap_interval(
    values: Sequence[float] | npt.ArrayLike,
    statistic: Callable[[npt.NDArray[np.float64]], float] = _mean,
    *,
    level: float = 0.95,
    resamples: int = 2000,
    seed: int = 0,
) -> Interval:
    """Percentile bootstrap interval of ``statistic`` over the units ``values``.

    ``values`` may be 1-D (one number per unit) or 2-D (one row per unit, e.g. numerator and
    denominator of a ratio); rows are resampled whole. A single unit gives a zero-width
    interval; no unit gives NaN.
    """
    data = np.asarray(values, dtype=float)
    n = int(data.shape[0]) if data.ndim else 0
    if n == 0:
        return Interval(float("nan"), float("nan"), float("nan"), 0)
    point = statistic(data)
    if n == 1:
        return Interval(point, point, point, 1)
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, n, size=(resamples, n))
    stats = np.array([statistic(data[idx]) for idx in picks], dtype=float)
    stats = stats[np.isfinite(stats)]
    if stats.size == 0:
        return Interval(point, float("nan"), float("nan"), n)
    alpha = (1.0 - level) / 2.0
    low, high = np.quantile(stats, [alpha, 1.0 - alpha])
    return Interval(point, float(low), float(high), n)
