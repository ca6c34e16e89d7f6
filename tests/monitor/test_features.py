"""Hand-computed tests of the uncertainty features (the rogue-agents paper, App. A)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from byzllm.envs import TurnObservation
from byzllm.errors import InputError
from byzllm.monitor import distribution_stats, observation_features, turn_features
from byzllm.monitor.features import FEATURE_COLUMNS, TurnFeatures, features_matrix

LN2 = math.log(2.0)


def _dist(*probs: float) -> list[tuple[str, float]]:
    return [(f"t{i}", math.log(p)) for i, p in enumerate(probs)]


def test_half_quarter_quarter_by_hand() -> None:
    # Surprisals ln2, 2ln2, 2ln2: H = 1.5 ln2, deviations ±0.5 ln2 -> V = 0.25 ln²2, K = 1.
    f = turn_features([_dist(0.5, 0.25, 0.25)], turn=3)
    assert f.entropy == pytest.approx(1.5 * LN2)
    assert f.varentropy == pytest.approx(0.25 * LN2**2)
    assert f.kurtosis == pytest.approx(1.0)
    assert f.turn == 3 and f.n_positions == 1


def test_dyadic_four_way_by_hand() -> None:
    # p = 1/2, 1/4, 1/8, 1/8: surprisals (1, 2, 3, 3) ln2, H = 1.75 ln2,
    # deviations (-0.75, 0.25, 1.25, 1.25) ln2.
    # V = (0.5*0.5625 + 0.25*0.0625 + 0.25*1.5625) ln²2 = 0.6875 ln²2
    # 4th moment = (0.5*0.31640625 + 0.25*0.00390625 + 0.25*2.44140625) ln⁴2 = 0.76953125 ln⁴2
    f = turn_features([_dist(0.5, 0.25, 0.125, 0.125)], turn=1)
    assert f.entropy == pytest.approx(1.75 * LN2)
    assert f.varentropy == pytest.approx(0.6875 * LN2**2)
    assert f.kurtosis == pytest.approx(0.76953125 / 0.6875**2)
    assert f.varentropy >= 0.0  # the paper's printed minus sign would make this negative


def test_zero_varentropy_gives_zero_kurtosis() -> None:
    point = distribution_stats(np.array([[0.0]]))
    uniform = distribution_stats(np.log(np.array([[0.5, 0.5]])))
    assert [float(a[0]) for a in point] == [0.0, 0.0, 0.0]
    assert float(uniform[0][0]) == pytest.approx(LN2)
    assert float(uniform[1][0]) == pytest.approx(0.0, abs=1e-15)
    assert float(uniform[2][0]) == 0.0


def test_maximum_over_positions_is_taken_per_feature() -> None:
    positions = [_dist(1.0), _dist(0.5, 0.25, 0.25), _dist(0.5, 0.5)]
    f = turn_features(positions, turn=7)
    assert f.entropy == pytest.approx(1.5 * LN2)  # second position
    assert f.varentropy == pytest.approx(0.25 * LN2**2)  # second position
    assert f.kurtosis == pytest.approx(1.0)  # second position (others are 0)
    assert f.n_positions == 3


def test_renormalized_versus_raw_top_k() -> None:
    # Top-3 of 0.4, 0.2, 0.2 (mass 0.8); renormalized it is (0.5, 0.25, 0.25).
    dist = _dist(0.4, 0.2, 0.2)
    renorm = turn_features([dist], turn=1)
    raw = turn_features([dist], turn=1, renormalize=False)
    assert renorm.entropy == pytest.approx(1.5 * LN2)
    h_raw = 0.4 * -math.log(0.4) + 2 * 0.2 * -math.log(0.2)  # 1.0102913...
    v_raw = 0.4 * (-math.log(0.4) - h_raw) ** 2 + 0.4 * (-math.log(0.2) - h_raw) ** 2
    m4_raw = 0.4 * (-math.log(0.4) - h_raw) ** 4 + 0.4 * (-math.log(0.2) - h_raw) ** 4
    assert raw.entropy == pytest.approx(h_raw)
    assert raw.entropy == pytest.approx(1.0102913, abs=1e-6)
    assert raw.varentropy == pytest.approx(v_raw)
    assert raw.kurtosis == pytest.approx(m4_raw / v_raw**2)


def test_no_decision_position_gives_zero_features() -> None:
    for distributions in ([], [[]], [[], []]):
        f = turn_features(distributions, turn=5)
        assert (f.entropy, f.varentropy, f.kurtosis, f.turn, f.n_positions) == (0, 0, 0, 5, 0)


def test_empty_positions_are_skipped_among_real_ones() -> None:
    f = turn_features([[], _dist(0.5, 0.5)], turn=2)
    assert f.n_positions == 1 and f.entropy == pytest.approx(LN2)


def test_minus_infinity_logprob_is_probability_zero() -> None:
    f = turn_features([[("a", math.log(0.5)), ("b", math.log(0.5)), ("c", -math.inf)]], turn=1)
    assert f.entropy == pytest.approx(LN2)


@pytest.mark.parametrize(
    "bad",
    [
        [("a", math.nan)],
        [("a", math.inf)],
        [("a", 0.5)],
        [("a", "oops")],
    ],
)
def test_malformed_logprobs_raise_input_error(bad: list[tuple[str, float]]) -> None:
    with pytest.raises(InputError):
        turn_features([bad], turn=1)


def test_raw_mass_above_one_is_rejected() -> None:
    with pytest.raises(InputError):
        turn_features([_dist(0.9, 0.9)], turn=1, renormalize=False)
    # Only rounding slack (1e-3) is tolerated: 0.55 + 0.55 = 1.1 is no distribution.
    with pytest.raises(InputError):
        turn_features([_dist(0.55, 0.55)], turn=1, renormalize=False)
    assert turn_features([_dist(0.5, 0.5004)], turn=1, renormalize=False).n_positions == 1


def test_one_alternative_is_refused_where_renormalized() -> None:
    from byzllm.monitor.features import check_alternatives

    with pytest.raises(InputError, match="top_logprobs"):
        check_alternatives(1, renormalize=True)
    check_alternatives(1, renormalize=False)
    check_alternatives(2, renormalize=True)


def test_matrix_columns_follow_feature_columns() -> None:
    row = TurnFeatures(entropy=1.0, varentropy=2.0, kurtosis=3.0, turn=4, n_positions=1)
    assert FEATURE_COLUMNS == ("entropy", "varentropy", "kurtosis", "turn")
    assert features_matrix([row]).tolist() == [[1.0, 2.0, 3.0, 4.0]]
    assert row.as_array().tolist() == [1.0, 2.0, 3.0, 4.0]


def test_turn_must_be_positive() -> None:
    with pytest.raises(InputError):
        turn_features([], turn=0)


def test_observation_features_and_matrix() -> None:
    obs = TurnObservation(
        game_id="g", turn=4, role="accuser", agent="a", distributions=[_dist(0.5, 0.5)]
    )
    f = observation_features(obs)
    assert f == TurnFeatures(entropy=f.entropy, varentropy=f.varentropy, turn=4, n_positions=1)
    m = features_matrix([f, TurnFeatures(turn=2)])
    assert m.shape == (2, len(FEATURE_COLUMNS))
    assert m[1].tolist() == [0.0, 0.0, 0.0, 2.0]
    assert features_matrix([]).shape == (0, 4)


def test_many_positions_are_vectorized() -> None:
    rng = np.random.default_rng(0)
    raw = rng.dirichlet(np.ones(20), size=5_000)
    positions = [[(str(j), float(np.log(p))) for j, p in enumerate(row)] for row in raw]
    f = turn_features(positions, turn=1)
    assert 0.0 < f.entropy <= math.log(20) + 1e-9
    assert f.n_positions == 5_000


_logprob = st.one_of(
    st.floats(min_value=-50.0, max_value=0.0),
    st.just(-math.inf),
    st.floats(allow_nan=True, allow_infinity=True),
)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.lists(st.tuples(st.text(max_size=5), _logprob), max_size=12), max_size=6))
def test_garbage_distributions_give_valid_features_or_input_error(
    distributions: list[list[tuple[str, float]]],
) -> None:
    for renormalize in (True, False):
        try:
            f = turn_features(distributions, turn=1, renormalize=renormalize)
        except InputError:
            continue
        values = [f.entropy, f.varentropy, f.kurtosis]
        assert all(math.isfinite(v) and v >= 0.0 for v in values)
        assert f.kurtosis == 0.0 or f.kurtosis >= 1.0 - 1e-6 or not renormalize


def test_huge_adversarial_tokens_do_not_matter() -> None:
    token = "{" * 1_000_000
    f = turn_features([[(token, math.log(0.5)), (token, math.log(0.5))]], turn=1)
    assert f.entropy == pytest.approx(LN2)


def test_a_lone_token_has_exactly_zero_uncertainty() -> None:
    # Renormalizing one token of probability e^-0.55 gives p = 1 up to rounding; the
    # entropy must come out 0, not -1e-16.
    f = turn_features([[("a", -0.5499434821690983)]], turn=1)
    assert (f.entropy, f.varentropy, f.kurtosis) == (0.0, 0.0, 0.0)


def test_position_entropies_hand_computed() -> None:
    import math

    from byzllm.monitor import position_entropies

    # A fair coin: ln 2; a sure token: 0; (0.5, 0.25, 0.25): 1.5 ln 2. Empty positions skip.
    dists = [
        [("a", math.log(0.5)), ("b", math.log(0.5))],
        [("x", 0.0)],
        [],
        [("p", math.log(0.5)), ("q", math.log(0.25)), ("r", math.log(0.25))],
    ]
    values = position_entropies(dists)
    assert values == pytest.approx([math.log(2), 0.0, 1.5 * math.log(2)])


def test_malformed_entry_is_named_by_its_position_among_all() -> None:
    # An empty top-k list (absent) before the malformed one: the message must name the
    # position the bad entry is at (2, then 1), not its index among the non-empty ones.
    good = [("a", math.log(0.5)), ("b", math.log(0.5))]
    with pytest.raises(InputError, match="decision position 2:"):
        turn_features([good, [], [("c", "x")]], turn=1)
    with pytest.raises(InputError, match="decision position 1:"):
        turn_features([[], [("c", None)]], turn=1)
