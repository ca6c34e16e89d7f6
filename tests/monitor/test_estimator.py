"""The polynomial-ridge monitor (seed 002 D.2): hand-computed fit, sklearn parity, JSON."""

from __future__ import annotations

import json

import numpy as np
import pytest
from sklearn.linear_model import Ridge
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import MinMaxScaler, PolynomialFeatures

from byzllm import __version__
from byzllm.errors import InputError
from byzllm.monitor import TurnFeatures, UncertaintyMonitor

from ._fixtures import train_set


def _fitted(features: tuple[str, ...] = ("entropy",), degree: int = 1) -> UncertaintyMonitor:
    data = train_set()
    return UncertaintyMonitor(features=features, degree=degree).fit(data.x, data.turn_success)


def test_hand_computed_degree_one_fit() -> None:
    m = _fitted()
    # P = 0.5 - 0.4 e' with e' = e - 1 (see _fixtures); turn has zero weight.
    assert m.intercept_ == pytest.approx(0.5)
    assert m.coef_ == pytest.approx([-0.4, 0.0])
    x = np.array([[0.0, 0.3, 1.0, 2.0], [1.0, 0.3, 1.0, 1.0], [0.5, 9.0, 9.0, 3.0]])
    assert m.predict_success(x) == pytest.approx([0.9, 0.5, 0.7])


def test_output_is_clipped_and_proba_columns_sum_to_one() -> None:
    m = _fitted()
    x = np.array([[-1.0, 0.3, 1.0, 2.0], [3.0, 0.3, 1.0, 2.0]])  # raw 1.3 and -0.3
    assert m.decision_function(x) == pytest.approx([1.3, -0.3])
    assert m.predict_success(x).tolist() == [1.0, 0.0]
    proba = m.predict_proba(x)
    assert proba.shape == (2, 2) and np.allclose(proba.sum(axis=1), 1.0)
    assert m.predict(x).tolist() == [1, 0]
    assert m.classes_.tolist() == [0, 1]


def test_constant_column_scales_to_minus_one() -> None:
    m = _fitted(("varentropy",))
    assert m._scale(np.array([[0.3, 2.0]]))[0].tolist() == [-1.0, 0.0]


def test_matches_sklearn_pipeline_on_random_data() -> None:
    rng = np.random.default_rng(3)
    x = np.column_stack(
        [rng.gamma(2, 1, 500), rng.gamma(1, 1, 500), rng.gamma(3, 1, 500), rng.integers(1, 31, 500)]
    )
    y = (rng.random(500) < 1 / (1 + np.exp(x[:, 0] - 2))).astype(float)
    for features, degree in [
        (("entropy",), 1),
        (("varentropy", "kurtosis"), 3),
        (("entropy", "varentropy", "kurtosis"), 5),
    ]:
        ours = UncertaintyMonitor(features=features, degree=degree).fit(x, y)
        cols = [["entropy", "varentropy", "kurtosis"].index(f) for f in features] + [3]
        ref = make_pipeline(MinMaxScaler((-1, 1)), PolynomialFeatures(degree), Ridge(alpha=1.0))
        ref.fit(x[:, cols], y)
        test = x[:50] * 1.1
        assert ours.decision_function(test) == pytest.approx(ref.predict(test[:, cols]), abs=1e-8)


def test_json_round_trip_is_exact_and_versioned() -> None:
    rng = np.random.default_rng(0)
    x = np.column_stack([rng.random((200, 3)), rng.integers(1, 20, 200)])
    y = (x[:, 0] < 0.5).astype(int)
    m = UncertaintyMonitor(features=("kurtosis", "entropy"), degree=4, alpha=0.5).fit(x, y)
    text = m.to_json()
    data = json.loads(text)
    assert data["byzllm_version"] == __version__
    assert data["features"] == ["entropy", "kurtosis"]
    back = UncertaintyMonitor.from_json(text)
    assert back.features == ("entropy", "kurtosis")
    assert (back.degree, back.alpha) == (4, 0.5)
    assert np.array_equal(back.predict_success(x), m.predict_success(x))


def test_accepts_turn_features() -> None:
    m = _fitted()
    p = m.predict_success(TurnFeatures(entropy=1.0, turn=2))
    assert p.tolist() == pytest.approx([0.5])
    assert m.predict_success(
        [TurnFeatures(turn=1), TurnFeatures(entropy=2.0, turn=1)]
    ).tolist() == (pytest.approx([0.9, 0.1]))


@pytest.mark.parametrize(
    "mutate",
    [
        lambda d: d.pop("coef"),
        lambda d: d.update(format="other"),
        lambda d: d.update(coef=[1.0]),
        lambda d: d.update(features=["loudness"]),
        lambda d: d.update(intercept="x"),
        lambda d: d.update(data_min=[float("nan"), 0.0]),
        lambda d: d.update(columns=["turn", "entropy"]),
    ],
)
def test_malformed_json_is_rejected(mutate: object) -> None:
    data = _fitted().to_dict()
    mutate(data)  # type: ignore[operator]
    with pytest.raises(InputError):
        UncertaintyMonitor.from_dict(data)


def test_garbage_json_text() -> None:
    with pytest.raises(InputError):
        UncertaintyMonitor.from_json("{not json")
    with pytest.raises(InputError):
        UncertaintyMonitor.from_json("[1, 2]")


def test_bad_parameters_and_inputs() -> None:
    x = train_set().x
    with pytest.raises(InputError):
        UncertaintyMonitor(features=()).fit(x, [1, 1, 0, 0])
    with pytest.raises(InputError):
        UncertaintyMonitor(degree=0).fit(x, [1, 1, 0, 0])
    with pytest.raises(InputError):
        UncertaintyMonitor().fit(x, [1, 1, 0])
    with pytest.raises(InputError):
        UncertaintyMonitor().fit(x, [1, 2, 0, 0])
    with pytest.raises(InputError):
        UncertaintyMonitor().predict_success(x)  # not fitted
    with pytest.raises(InputError):
        _fitted().predict_success(np.zeros((2, 3)))
    with pytest.raises(InputError):
        _fitted().predict_success(np.full((1, 4), np.nan))
