"""Confidence intervals for the metrics reports print: the percentile bootstrap, seeded.

A metric of a run is a statistic of independent units (questions, games): resampling the
units with replacement and recomputing the statistic gives its sampling distribution
(Efron and Tibshirani, 1993, ch. 13). Seeded, so a report is reproducible to the digit.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from fractions import Fraction
from statistics import NormalDist
from typing import Any

import numpy as np
import numpy.typing as npt

__all__ = [
    "BOOTSTRAP_METHOD",
    "Interval",
    "bootstrap_interval",
    "bootstrap_intervals",
    "cluster_sums",
    "degenerate_rate_bounds",
    "percentile_bounds",
    "resample_counts",
    "sign_counts",
    "sign_test_p",
    "weighted_mean_intervals",
]

#: How every interval is computed, as reports write it under their tables.
BOOTSTRAP_METHOD = (
    "95% percentile bootstrap over units (2000 resamples, seed 0; "
    "a rate of 0 or 100%: Wilson score interval)"
)


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
    rate: bool = False,
) -> Interval:
    """Percentile bootstrap interval of ``statistic`` over the units ``values``.

    ``values`` may be 1-D (one number per unit) or 2-D (one row per unit, e.g. numerator and
    denominator of a ratio); rows are resampled whole. A single unit gives a zero-width
    interval; no unit gives NaN. ``rate``: the statistic is a rate in [0, 1], whose
    zero-width interval at 0 or 1 becomes :func:`degenerate_rate_bounds`'.
    """
    data = np.asarray(values, dtype=float)
    n = int(data.shape[0]) if data.ndim else 0
    if n == 0:
        return Interval(float("nan"), float("nan"), float("nan"), 0)
    point = statistic(data)
    if n == 1:
        low = high = point
    else:
        rng = np.random.default_rng(seed)
        picks = rng.integers(0, n, size=(resamples, n))
        stats = np.array([statistic(data[idx]) for idx in picks], dtype=float)
        stats = stats[np.isfinite(stats)]
        if stats.size == 0:
            return Interval(point, float("nan"), float("nan"), n)
        alpha = (1.0 - level) / 2.0
        low, high = (float(b) for b in np.quantile(stats, [alpha, 1.0 - alpha]))
    if rate:
        rate_low, rate_high = degenerate_rate_bounds(point, low, high, n, level=level)
        low, high = float(rate_low), float(rate_high)
    return Interval(point, low, high, n)


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


def cluster_sums(
    rows: npt.ArrayLike, clusters: Sequence[object]
) -> tuple[npt.NDArray[np.float64], int]:
    """``rows`` (one per observation) summed within each cluster, in order of first
    appearance, and the number of clusters.

    The units a bootstrap resamples must be independent: the same question asked under
    several seeds, or the same game played in several repeats, shares its difficulty, and
    resampling the copies one by one gives intervals too narrow (about √k for k copies). A
    statistic made of sums (a weighted mean: sums of ``w * v`` and of ``w``) is the same on
    the cluster sums, which are then resampled whole (the cluster bootstrap: Davison and
    Hinkley, 1997, §3.8). Rows that are all their own clusters come back unchanged.
    """
    data = np.asarray(rows, dtype=float)
    labels: dict[object, int] = {}
    index = np.fromiter(
        (labels.setdefault(c, len(labels)) for c in clusters), dtype=np.intp, count=len(clusters)
    )
    if len(index) != data.shape[0]:
        raise ValueError(f"{len(index)} cluster labels for {data.shape[0]} rows")
    if len(labels) == len(index):
        return data, len(labels)
    sums = np.zeros((len(labels), *data.shape[1:]))
    np.add.at(sums, index, data)
    return sums, len(labels)


def weighted_mean_intervals(
    values: npt.ArrayLike,
    weights: npt.ArrayLike,
    *,
    clusters: Sequence[object] | None = None,
    rates: bool | Sequence[bool] = False,
    level: float = 0.95,
    resamples: int = 2000,
    seed: int = 0,
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """Percentile bootstrap of many weighted means over the same units, vectorized.

    ``values`` and ``weights`` have one row per unit and one column per quantity; quantity k
    is ``sum(w[:, k] * v[:, k]) / sum(w[:, k])``. A resample draws how often each unit
    appears (multinomial counts), so every quantity of one resample uses the same units.
    ``clusters`` (one label per row) resamples the rows of a label together
    (:func:`cluster_sums`): the same points, honest intervals for repeated units. ``rates``
    (all columns, or a mask of them) marks rates in [0, 1]: a zero-width interval at 0 or 1
    becomes :func:`degenerate_rate_bounds`', counting the units with weight in that column.
    Returns ``(point, low, high)``, NaN where a quantity has no weight.
    """
    v = np.asarray(values, dtype=float)
    w = np.asarray(weights, dtype=float)
    weighted = v * w
    if clusters is not None:  # both sums from one grouping of the rows
        both, _ = cluster_sums(np.hstack([weighted, w]), clusters)
        weighted, w = both[:, : weighted.shape[1]], both[:, weighted.shape[1] :]
    n = weighted.shape[0]
    with np.errstate(invalid="ignore", divide="ignore"):
        point = weighted.sum(axis=0) / w.sum(axis=0)
        if n <= 1:
            low, high = point.copy(), point.copy()
        else:
            counts = resample_counts(n, resamples=resamples, seed=seed)
            with _one_blas_thread():
                means = (counts @ weighted) / (counts @ w)
            low, high = percentile_bounds(means, level=level)
    mask = np.broadcast_to(np.asarray(rates, dtype=bool), point.shape)
    if mask.any():
        units = (w > 0).sum(axis=0) if w.ndim > 1 else np.full(point.shape, (w > 0).sum())
        rate_low, rate_high = degenerate_rate_bounds(point, low, high, units, level=level)
        low, high = np.where(mask, rate_low, low), np.where(mask, rate_high, high)
    return point, low, high


def sign_counts(differences: Iterable[float]) -> tuple[int, int]:
    """How many paired ``differences`` are above 0 and how many below (ties left out): what
    :func:`sign_test_p` tests."""
    values = list(differences)
    return sum(d > 0 for d in values), sum(d < 0 for d in values)


def sign_test_p(positive: int, negative: int) -> float:
    """Two-sided exact sign test: the chance of a split at least as uneven as ``positive``
    against ``negative`` paired differences (ties left out) if either sign were as likely.

    The check a paired percentile interval needs on few units: three problems the monitor
    wins and none it loses give the interval ``[+100, +100]``, which excludes 0, while
    three coin flips agree that often one time in four (p = 0.25).
    """
    n = positive + negative
    if n == 0:
        return 1.0
    k = min(positive, negative)
    # C(n, i + 1) from C(n, i), exactly: one small multiplication each, where a fresh
    # comb per term took seconds on a ten-thousand-unit report.
    term = tail = 1
    for i in range(k):
        term = term * (n - i) // (i + 1)
        tail += term
    # Exact integers to the end: 2.0**n overflows a float past 1,023 units.
    return min(1.0, float(Fraction(2 * tail, 2**n)))


def degenerate_rate_bounds(
    point: npt.ArrayLike,
    low: npt.ArrayLike,
    high: npt.ArrayLike,
    units: npt.ArrayLike,
    *,
    level: float = 0.95,
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """``(low, high)``, with every zero-width interval of a rate at 0 or 1 replaced by the
    Wilson score interval of that rate over ``units`` independent units (Wilson, 1927):
    ``[n / (n + z²), 1]`` for n of n, ``[0, z² / (n + z²)]`` for 0 of n. Arrays (one entry
    per quantity) or single numbers (0-d arrays back).

    When every unit scored the same (16 questions all right, a single unit), no resample
    differs from the data and the percentile bootstrap says ``[100, 100]``: certainty it
    does not have. With 20 units at a true rate of 95% that happened in a third of the
    samples, and the bootstrap's intervals covered the truth 64% of the time.
    """
    n = np.asarray(units, dtype=float)
    point, low, high = (np.asarray(x, dtype=float) for x in (point, low, high))
    z2 = NormalDist().inv_cdf(0.5 + level / 2.0) ** 2
    flat = (low == high) & (point == low) & ((point == 0.0) | (point == 1.0)) & (n > 0)
    with np.errstate(invalid="ignore", divide="ignore"):
        all_right = np.where(flat & (point == 1.0), n / (n + z2), low)
        all_wrong = np.where(flat & (point == 0.0), z2 / (n + z2), high)
    return np.asarray(all_right, dtype=float), np.asarray(all_wrong, dtype=float)


#: Draws that :func:`resample_counts` keeps at most (resamples × units): 32 MB of floats.
_CACHED_DRAWS = 4_000_000


def resample_counts(n: int, *, resamples: int = 2000, seed: int = 0) -> npt.NDArray[np.float64]:
    """How often each of ``n`` units appears in each resample (``resamples`` × ``n``
    multinomial counts from ``seed``), as floats for the products: ``counts @ sums`` is every
    resample's sums at once. Read-only (it may be shared). The draws depend only on
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


def percentile_bounds(
    samples: npt.NDArray[np.float64], *, level: float = 0.95
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """The percentile interval of each column of bootstrap ``samples`` (one row per
    resample): the ``alpha`` and ``1 - alpha`` quantiles of its finite values, ``alpha =
    (1 - level) / 2`` (NaN for a column without any). Columns without NaN go through one
    call: the same numbers as one call per column, without its overhead (a matrix report has
    hundreds of columns)."""
    alpha = (1.0 - level) / 2.0
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
