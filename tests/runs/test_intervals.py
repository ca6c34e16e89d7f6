"""The seeded percentile bootstrap behind every interval, on cases worked out by hand."""

from __future__ import annotations

import math

import numpy as np
import pytest

from byzllm.runs._intervals import (
    Interval,
    _column_quantiles,
    bootstrap_interval,
    bootstrap_intervals,
    weighted_mean_intervals,
)


def test_two_units_hand_computed() -> None:
    # Resampling {0, 1} twice: mean 0 w.p. 1/4, 0.5 w.p. 1/2, 1 w.p. 1/4. The 2.5% and 97.5%
    # quantiles of that distribution are 0 and 1.
    iv = bootstrap_interval([0.0, 1.0], resamples=4000)
    assert iv.value == 0.5 and iv.n == 2
    assert (iv.low, iv.high) == (0.0, 1.0)


def test_three_units_hand_computed() -> None:
    # {0, 0, 1}: the resampled mean is 0 w.p. 8/27 (29.6%), 1/3 w.p. 12/27, 2/3 w.p. 6/27 and
    # 1 w.p. 1/27 (3.7%): the 2.5% quantile is 0, and the 97.5% one lies in the mass at 1.
    iv = bootstrap_interval([0.0, 0.0, 1.0], resamples=4000)
    assert iv.value == pytest.approx(1 / 3)
    assert iv.low == 0.0 and iv.high == 1.0
    # An 80% interval: the 10% quantile is 0 (mass 29.6%), the 90% one is 2/3 (74.1%..96.3%).
    eighty = bootstrap_interval([0.0, 0.0, 1.0], level=0.8, resamples=4000)
    assert (eighty.low, eighty.high) == (0.0, pytest.approx(2 / 3))


def test_constant_data_and_degenerate_sizes() -> None:
    assert bootstrap_interval([0.7] * 5).low == pytest.approx(0.7)
    one = bootstrap_interval([3.0])
    assert (one.value, one.low, one.high, one.n) == (3.0, 3.0, 3.0, 1)
    none = bootstrap_interval([])
    assert none.n == 0 and math.isnan(none.value)


def test_seeded_and_reproducible() -> None:
    data = np.random.default_rng(1).random(50)
    assert bootstrap_interval(data, seed=3) == bootstrap_interval(data, seed=3)
    assert bootstrap_interval(data, seed=3) != bootstrap_interval(data, seed=4)


def test_rows_are_resampled_whole_for_ratios() -> None:
    # Successes / trials per unit: the ratio of sums, resampled by unit.
    units = np.array([[1, 2], [0, 2], [2, 2]], dtype=float)
    iv = bootstrap_interval(units, lambda x: float(x[:, 0].sum() / x[:, 1].sum()))
    assert iv.value == pytest.approx(0.5)
    assert 0.0 <= iv.low <= 0.5 <= iv.high <= 1.0


def test_several_statistics_share_one_bootstrap() -> None:
    data = np.array([0.0, 1.0, 1.0, 0.0, 1.0])

    def stats(idx: np.ndarray) -> dict[str, float | None]:
        x = data[idx]
        return {"mean": float(x.mean()), "complement": float(1 - x.mean()), "none": None}

    out = bootstrap_intervals(len(data), stats)
    assert set(out) == {"mean", "complement"}
    assert out["mean"].low == pytest.approx(1 - out["complement"].high)
    assert out["mean"].high == pytest.approx(1 - out["complement"].low)


def test_column_quantiles_match_one_quantile_per_column() -> None:
    """The vectorized quantiles of the weighted-mean bootstrap give exactly the per-column
    percentiles, NaN resamples (no weight in a resample) left out column by column."""
    rng = np.random.default_rng(4)
    samples = rng.random((500, 12))
    samples[rng.random((500, 12)) < 0.3 * (np.arange(12) % 3 == 0)] = np.nan
    samples[:, 4] = np.nan  # no finite resample at all
    low, high = _column_quantiles(samples, 0.025)
    for k in range(samples.shape[1]):
        column = samples[:, k][np.isfinite(samples[:, k])]
        if column.size:
            want = np.quantile(column, [0.025, 0.975])
            assert (low[k], high[k]) == (want[0], want[1])
        else:
            assert np.isnan(low[k]) and np.isnan(high[k])
    point, low, high = weighted_mean_intervals(np.ones((5, 2)), np.zeros((5, 2)))
    assert np.isnan(point).all() and np.isnan(low).all() and np.isnan(high).all()


def test_an_interval_as_a_rows_columns() -> None:
    interval = Interval(value=0.5, low=0.25, high=0.75, n=8)
    assert interval.columns("BFTI") == {"BFTI": 0.5, "BFTI_low": 0.25, "BFTI_high": 0.75}


def test_shared_resample_draws_give_the_numbers_of_a_fresh_draw() -> None:
    """Configurations with as many units share one cached multinomial draw: the intervals
    equal those computed from a draw made afresh from the same seed, and the shared draw
    cannot be changed by a caller."""
    import byzllm.runs._intervals as intervals

    rng = np.random.default_rng(7)
    v, w = rng.random((40, 6)), rng.integers(0, 4, (40, 6)).astype(float)
    first = weighted_mean_intervals(v, w, resamples=500, seed=3)
    again = weighted_mean_intervals(v, w, resamples=500, seed=3)  # from the cache
    fresh_counts = intervals._draw_counts(40, 500, 3)
    assert (intervals._resample_counts(40, 500, 3) == fresh_counts).all()
    with np.errstate(invalid="ignore", divide="ignore"):
        means = (fresh_counts @ (v * w)) / (fresh_counts @ w)
    low, high = intervals._column_quantiles(means, (1.0 - 0.95) / 2.0)
    for got in (first, again):
        assert np.array_equal(got[1], low, equal_nan=True)
        assert np.array_equal(got[2], high, equal_nan=True)
    assert not intervals._resample_counts(40, 500, 3).flags.writeable
    # A draw too large to keep is made afresh, the same numbers.
    big = intervals._CACHED_DRAWS // 500 + 1
    assert (intervals._resample_counts(big, 500, 3) == intervals._draw_counts(big, 500, 3)).all()
