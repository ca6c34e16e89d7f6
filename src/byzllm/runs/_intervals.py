"""Confidence intervals for the metrics reports print: the percentile bootstrap, seeded.

A metric of a run is a statistic of independent units (questions, games): resampling the
units with replacement and recomputing the statistic gives its sampling distribution
(Efron and Tibshirani, 1993, ch. 13). Seeded, so a report is reproducible to the digit.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

__all__ = [
    "BOOTSTRAP_METHOD",
    "Interval",
    "bootstrap_interval",
    "bootstrap_intervals",
    "weighted_mean_intervals",
]

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

    def columns(self, name: str) -> dict[str, float]:
        """The interval as a report row's columns: ``name``, ``name_low``, ``name_high``."""
        return {name: self.value, f"{name}_low": self.low, f"{name}_high": self.high}


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


def bootstrap_intervals(
    n_units: int,
    statistics: Callable[[npt.NDArray[np.intp]], Mapping[str, float | None]],
    *,
    level: float = 0.95,
    resamples: int = 2000,
    seed: int = 0,
) -> dict[str, Interval]:
    """Percentile bootstrap intervals of several statistics of the same units at once.

    ``statistics(indices)`` computes every statistic on the units at ``indices`` (with
    repeats); each resample draws one index vector shared by all statistics, so the intervals
    are those of one bootstrap. Statistics that are ``None`` on the full data are left out.
    """
    everything = np.arange(n_units, dtype=np.intp)
    if n_units == 0:
        return {}
    point = {k: v for k, v in statistics(everything).items() if v is not None}
    if n_units == 1:
        return {k: Interval(float(v), float(v), float(v), 1) for k, v in point.items()}
    rng = np.random.default_rng(seed)
    samples: dict[str, list[float]] = {k: [] for k in point}
    for _ in range(resamples):
        values = statistics(rng.integers(0, n_units, size=n_units))
        for k in point:
            v = values.get(k)
            if v is not None and np.isfinite(v):
                samples[k].append(float(v))
    alpha = (1.0 - level) / 2.0
    out = {}
    for k, v in point.items():
        if samples[k]:
            low, high = np.quantile(samples[k], [alpha, 1.0 - alpha])
            out[k] = Interval(float(v), float(low), float(high), n_units)
        else:
            out[k] = Interval(float(v), float("nan"), float("nan"), n_units)
    return out


def weighted_mean_intervals(
    values: npt.ArrayLike,
    weights: npt.ArrayLike,
    *,
    level: float = 0.95,
    resamples: int = 2000,
    seed: int = 0,
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """Percentile bootstrap of many weighted means over the same units, vectorized.

    ``values`` and ``weights`` have one row per unit and one column per quantity; quantity k
    is ``sum(w[:, k] * v[:, k]) / sum(w[:, k])``. A resample draws how often each unit
    appears (multinomial counts), so every quantity of one resample uses the same units.
    Returns ``(point, low, high)``, NaN where a quantity has no weight.
    """
    v = np.asarray(values, dtype=float)
    w = np.asarray(weights, dtype=float)
    n = v.shape[0]
    weighted = v * w
    with np.errstate(invalid="ignore", divide="ignore"):
        point = weighted.sum(axis=0) / w.sum(axis=0)
        if n <= 1:
            return point, point.copy(), point.copy()
        counts = _resample_counts(n, resamples, seed)
        with _one_blas_thread():
            means = (counts @ weighted) / (counts @ w)
    low, high = _column_quantiles(means, (1.0 - level) / 2.0)
    return point, low, high


#: Draws that :func:`_resample_counts` keeps at most (resamples × units): 32 MB of floats.
_CACHED_DRAWS = 4_000_000


def _resample_counts(n: int, resamples: int, seed: int) -> npt.NDArray[np.float64]:
    """How often each of ``n`` units appears in each resample (``resamples`` × ``n``
    multinomial counts from ``seed``), as floats for the products. The draws depend only on
    these three numbers, and a report's configurations usually have the same number of
    questions: they share one draw, the same numbers as drawing it again (a 56-configuration
    matrix page spent 1.2 s drawing the same counts 56 times)."""
    if n * resamples <= _CACHED_DRAWS:
        return _cached_counts(n, resamples, seed)
    return _draw_counts(n, resamples, seed)


def _draw_counts(n: int, resamples: int, seed: int) -> npt.NDArray[np.float64]:
    rng = np.random.default_rng(seed)
    return rng.multinomial(n, np.full(n, 1.0 / n), size=resamples).astype(float)


@functools.lru_cache(maxsize=4)
def _cached_counts(n: int, resamples: int, seed: int) -> npt.NDArray[np.float64]:
    counts = _draw_counts(n, resamples, seed)
    counts.flags.writeable = False  # shared by every caller
    return counts


@functools.cache
def _blas_threads() -> Any:
    from threadpoolctl import ThreadpoolController

    return ThreadpoolController()


@contextmanager
def _one_blas_thread() -> Iterator[None]:
    """BLAS on one thread: the products of a report are small (resamples × units × cells),
    and on a busy 2-core machine waking and spinning BLAS threads took longer than the
    products (a matrix report: 15 s against 7 s). The numbers are the same: BLAS threads
    split the rows and columns of a product, never its sums."""
    with _blas_threads().limit(limits=1, user_api="blas"):
        yield


def _column_quantiles(
    samples: npt.NDArray[np.float64], alpha: float
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """The ``alpha`` and ``1 - alpha`` quantiles of each column's finite values (NaN for a
    column without any). Columns without NaN go through one call: the same numbers as one
    call per column, without its overhead (a matrix report has hundreds of columns)."""
    low = np.full(samples.shape[1], np.nan)
    high = np.full(samples.shape[1], np.nan)
    whole = np.isfinite(samples).all(axis=0)
    if whole.any():
        # Each column made a contiguous row first: the same order statistics, half the time
        # (partitioning strided columns dominated a 180-configuration report's quantiles).
        rows = np.ascontiguousarray(samples[:, whole].T)
        low[whole], high[whole] = np.quantile(rows, [alpha, 1.0 - alpha], axis=1)
    for k in np.flatnonzero(~whole):
        column = samples[:, k]
        column = column[np.isfinite(column)]
        if column.size:
            low[k], high[k] = np.quantile(column, [alpha, 1.0 - alpha])
    return low, high
