"""The seeded percentile bootstrap behind every interval, on cases worked out by hand."""

from __future__ import annotations

import math

import numpy as np
import pytest

from byzllm.runs._intervals import (
    Interval,
    bootstrap_interval,
    bootstrap_intervals,
    percentile_bounds,
    resample_counts,
    sign_counts,
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


def test_several_statistics_three_units_hand_computed() -> None:
    # The {0, 0, 1} case above through the shared bootstrap: the 97.5% quantile lies in the
    # mass at 1 (above 96.3%), the 90% one in the mass at 2/3 (74.1%..96.3%).
    data = np.array([0.0, 0.0, 1.0])

    def mean(idx: np.ndarray) -> dict[str, float | None]:
        return {"mean": float(data[idx].mean())}

    iv = bootstrap_intervals(3, mean, resamples=4000)["mean"]
    assert (iv.low, iv.high) == (0.0, 1.0)
    eighty = bootstrap_intervals(3, mean, level=0.8, resamples=4000)["mean"]
    assert (eighty.low, eighty.high) == (0.0, pytest.approx(2 / 3))


def test_resamples_where_the_statistic_is_undefined_are_left_out() -> None:
    # Units (1 of 1) and (0 of 0): a resample of only the second has no trials (0 / 0, one
    # resample in four); every other one has the ratio 1. The interval is that of the
    # defined resamples, [1, 1], not NaN.
    units = np.array([[1.0, 1.0], [0.0, 0.0]])

    def ratio(x: np.ndarray) -> float:
        with np.errstate(invalid="ignore"):
            return float(x[:, 0].sum() / x[:, 1].sum())

    iv = bootstrap_interval(units, ratio)
    assert (iv.value, iv.low, iv.high) == (1.0, 1.0, 1.0)

    def ratios(idx: np.ndarray) -> dict[str, float | None]:
        return {"ratio": ratio(units[idx])}

    shared = bootstrap_intervals(2, ratios)["ratio"]
    assert (shared.value, shared.low, shared.high) == (1.0, 1.0, 1.0)


def test_sign_counts_leave_ties_out_and_resamples_keep_every_unit() -> None:
    assert sign_counts([1.0, 0.0, -2.0, 0.5, 0.0]) == (2, 1)
    # Each resample draws n units with replacement: every row of counts adds up to n.
    assert (resample_counts(5, resamples=50).sum(axis=1) == 5).all()


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
    low, high = percentile_bounds(samples, level=0.95)
    for k in range(samples.shape[1]):
        column = samples[:, k][np.isfinite(samples[:, k])]
        if column.size:
            alpha = (1.0 - 0.95) / 2.0
            want = np.quantile(column, [alpha, 1.0 - alpha])
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
    assert (intervals.resample_counts(40, resamples=500, seed=3) == fresh_counts).all()
    with np.errstate(invalid="ignore", divide="ignore"):
        means = (fresh_counts @ (v * w)) / (fresh_counts @ w)
    low, high = intervals.percentile_bounds(means, level=0.95)
    for got in (first, again):
        assert np.array_equal(got[1], low, equal_nan=True)
        assert np.array_equal(got[2], high, equal_nan=True)
    assert not intervals.resample_counts(40, resamples=500, seed=3).flags.writeable
    # A draw too large to keep is made afresh, the same numbers.
    big = intervals._CACHED_DRAWS // 500 + 1
    assert (
        intervals.resample_counts(big, resamples=500, seed=3) == intervals._draw_counts(big, 500, 3)
    ).all()


def test_cluster_sums_by_hand() -> None:
    from byzllm.runs import cluster_sums

    sums, n = cluster_sums([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], ["q2", "q1", "q2"])
    assert n == 2 and sums.tolist() == [[6.0, 8.0], [3.0, 4.0]]  # first-seen order
    alone, n = cluster_sums([[1.0], [2.0]], ["a", "b"])
    assert n == 2 and alone.tolist() == [[1.0], [2.0]]
    with pytest.raises(ValueError, match="3 cluster labels for 2 rows"):
        cluster_sums([[1.0], [2.0]], ["a", "b", "c"])


def test_copies_of_a_unit_resampled_together_give_the_intervals_of_one_copy() -> None:
    """Three seeds of the same 25 questions: resampled by question, the intervals are those
    of one seed's questions (the cluster sums are 3 × the rows, the weighted means equal);
    resampled one by one, they were narrower, as if there were 75 independent questions."""
    rng = np.random.default_rng(5)
    v, w = rng.integers(0, 2, (25, 3)).astype(float), rng.integers(1, 4, (25, 3)).astype(float)
    once = weighted_mean_intervals(v, w, resamples=500)
    copies = [f"q{i}" for i in range(25)] * 3
    clustered = weighted_mean_intervals(
        np.vstack([v] * 3), np.vstack([w] * 3), clusters=copies, resamples=500
    )
    for got, want in zip(clustered, once, strict=True):
        assert np.allclose(got, want)
    pooled = weighted_mean_intervals(np.vstack([v] * 3), np.vstack([w] * 3), resamples=500)
    assert ((pooled[2] - pooled[1]) < (once[2] - once[1])).all()


def test_an_interval_of_a_rate_at_0_or_1_is_the_wilson_interval() -> None:
    """n of n is not certainty: Wilson's [n / (n + z²), 1], z² = 1.959964² = 3.841459."""
    all_right = bootstrap_interval([1.0] * 16, rate=True)
    assert (all_right.value, all_right.high) == (1.0, 1.0)
    assert all_right.low == pytest.approx(16 / (16 + 3.841459), abs=1e-6)  # 0.80639
    all_wrong = bootstrap_interval([0.0] * 20, rate=True)
    assert (all_wrong.low, all_wrong.high) == (0.0, pytest.approx(3.841459 / 23.841459))
    assert bootstrap_interval([1.0], rate=True).low == pytest.approx(1 / 4.841459)
    # Not a rate (a difference, a mean of turns): the bootstrap's interval as it is.
    assert bootstrap_interval([1.0] * 16).low == 1.0
    # A rate whose units differ keeps its bootstrap interval.
    mixed = [1.0, 0.0, 1.0, 1.0]
    assert bootstrap_interval(mixed, rate=True) == bootstrap_interval(mixed)
    _, low, _ = weighted_mean_intervals(np.ones((16, 2)), np.ones((16, 2)), rates=[True, False])
    assert low[0] == pytest.approx(16 / 19.841459, abs=1e-6) and low[1] == 1.0
    # The units of a column are those with weight in it: 4 here.
    weights = np.ones((16, 1))
    weights[4:] = 0.0
    _, low, _ = weighted_mean_intervals(np.ones((16, 1)), weights, rates=True)
    assert low[0] == pytest.approx(4 / 7.841459, abs=1e-6)


@pytest.mark.parametrize(
    ("better", "worse", "p"),
    [(3, 0, 0.25), (6, 0, 0.03125), (5, 1, 14 / 64), (0, 0, 1.0), (2, 2, 1.0), (0, 5, 0.0625)],
)
def test_sign_test_by_hand(better: int, worse: int, p: float) -> None:
    from byzllm.runs import sign_test_p

    # (5, 1): 2 × (C(6,0) + C(6,1)) / 2^6 = 2 × 7 / 64.
    assert sign_test_p(better, worse) == pytest.approx(p)


def test_sign_test_past_a_floats_range() -> None:
    """2.0**n overflowed past 1,023 units: a LiveCodeBench-sized report crashed."""
    from byzllm.runs import sign_test_p

    assert 0.0 < sign_test_p(600, 500) < 0.01
    assert sign_test_p(5000, 5000) == 1.0


def test_sign_test_equals_its_defining_sum_on_every_small_split() -> None:
    """The running product gives the binomial tail's definition, 2 * sum C(n, i) / 2**n."""
    import math
    from fractions import Fraction

    from byzllm.runs import sign_test_p

    for n in range(1, 41):
        for positive in range(n + 1):
            k = min(positive, n - positive)
            tail = sum(math.comb(n, i) for i in range(k + 1))
            expected = min(1.0, float(Fraction(2 * tail, 2**n)))
            assert sign_test_p(positive, n - positive) == expected, (positive, n)
