"""The polynomial-ridge monitor (the rogue-agents paper, App. D.2).

Hand-computed fit, parity with a scikit-learn pipeline, the scikit-learn estimator contract
(``check_estimator``), JSON save/load.
"""

from __future__ import annotations

import json
import warnings
from typing import Any

import numpy as np
import pytest
from sklearn.base import clone, is_classifier
from sklearn.exceptions import NotFittedError
from sklearn.linear_model import Ridge
from sklearn.model_selection import GridSearchCV, cross_val_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import MinMaxScaler, PolynomialFeatures
from sklearn.utils import get_tags
from sklearn.utils.estimator_checks import check_estimator

from byzllm import __version__
from byzllm.errors import InputError
from byzllm.monitor import FEATURE_COLUMNS, TurnFeatures, UncertaintyMonitor
from byzllm.monitor.estimator import MonitorNotFittedError

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
        UncertaintyMonitor(features=("entropy", "entropy")).fit(x, [1, 1, 0, 0])
    with pytest.raises(InputError):
        UncertaintyMonitor(features="entropy").fit(x, [1, 1, 0, 0])
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


# -- scikit-learn estimator contract ---------------------------------------------------------


def _random_turns(n: int = 300, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = np.column_stack([rng.gamma(2, 0.5, (n, 3)), rng.integers(1, 21, n)])
    y = (rng.random(n) < 1 / (1 + np.exp(3 * (x[:, 0] - 1)))).astype(int)
    return x, y


def test_hyper_parameters_are_stored_unmodified_and_clone() -> None:
    features = ["kurtosis", "entropy"]
    m = UncertaintyMonitor(features=features, degree=3, alpha=0.5)
    assert m.features is features  # stored as given; fit validates and orders them
    assert m.get_params() == {"features": features, "degree": 3, "alpha": 0.5}
    assert vars(m) == m.get_params()  # __init__ sets nothing else
    x, y = _random_turns()
    m.fit(x, y)
    assert m.features is features
    c = clone(m)
    assert c.get_params() == m.get_params()
    assert not hasattr(c, "coef_")
    assert c.set_params(degree=2, features=("entropy",)) is c
    assert (c.degree, c.features) == (2, ("entropy",))
    with pytest.raises(InputError):
        c.set_params(loudness=3)
    assert repr(UncertaintyMonitor(degree=2)) == "UncertaintyMonitor(degree=2)"


def test_is_a_binary_classifier() -> None:
    m = UncertaintyMonitor()
    assert is_classifier(m)
    tags = get_tags(m)
    assert tags.estimator_type == "classifier"
    assert tags.classifier_tags.multi_class is False
    assert not tags.input_tags.allow_nan and not tags.input_tags.sparse
    x, y = _random_turns()
    m.fit(x, y)
    assert m.n_features_in_ == 4
    learned = set(vars(m)) - set(m.get_params())
    assert learned and all(a.endswith("_") and not a.startswith("_") for a in learned)
    assert m.score(x, y) == pytest.approx(float(np.mean(m.predict(x) == y)))


def test_not_fitted_is_both_input_error_and_not_fitted_error() -> None:
    m = UncertaintyMonitor()
    for method in (m.predict, m.predict_proba, m.predict_success, m.decision_function):
        with pytest.raises(MonitorNotFittedError) as info:
            method(np.zeros((1, 4)))
        assert isinstance(info.value, InputError) and isinstance(info.value, NotFittedError)
    with pytest.raises(NotFittedError):
        m.to_dict()


def test_boolean_and_float_outcomes_give_classes_zero_one() -> None:
    x, y = _random_turns()
    as_int = UncertaintyMonitor(degree=2).fit(x, y)
    for labels in (y.astype(bool), y.astype(float), y.tolist()):
        m = UncertaintyMonitor(degree=2).fit(x, labels)
        assert m.classes_.dtype.kind == "i" and m.classes_.tolist() == [0, 1]
        assert m.predict(x[:5]).dtype.kind == "i"
        assert np.array_equal(m.decision_function(x), as_int.decision_function(x))
        assert m.to_dict() == as_int.to_dict()


def test_other_binary_labels_follow_scikit_learn_but_cannot_be_saved() -> None:
    x, y = _random_turns()
    labels = np.where(y == 1, "success", "failure")
    m = UncertaintyMonitor(degree=2).fit(x, labels)
    ref = UncertaintyMonitor(degree=2).fit(x, y)
    assert m.classes_.tolist() == ["failure", "success"]  # the second label is success
    assert np.array_equal(m.predict_proba(x), ref.predict_proba(x))
    assert np.array_equal(m.predict(x), np.where(ref.predict(x) == 1, "success", "failure"))
    with pytest.raises(InputError, match="0/1"):
        m.to_dict()


@pytest.mark.parametrize(
    ("labels", "match"),
    [
        (np.ones(8), "class"),  # one outcome only
        (np.arange(8) % 3, "Only binary classification"),
        (np.linspace(0, 1, 8), "Unknown label type"),  # a regression target
    ],
)
def test_outcomes_must_be_binary_with_both_classes(labels: np.ndarray, match: str) -> None:
    x, _ = _random_turns(8)
    with pytest.raises(InputError, match=match):
        UncertaintyMonitor().fit(x, labels)


def test_input_validation_uses_scikit_learn_messages() -> None:
    x, y = _random_turns()
    m = UncertaintyMonitor().fit(x, y)
    with pytest.raises(InputError, match="X has 3 features, but UncertaintyMonitor is expecting 4"):
        m.predict(x[:, :3])
    with pytest.raises(InputError, match="Expected 2D array"):
        m.predict_success(x[0])  # one turn: a (1, 4) array or TurnFeatures
    with pytest.raises(InputError, match="got 3 feature"):
        UncertaintyMonitor().fit(x[:, :3], y)
    with pytest.raises(InputError, match="infinity"):
        m.predict(np.array([[np.inf, 0.0, 0.0, 1.0]]))
    with pytest.raises(InputError, match="0 sample"):
        UncertaintyMonitor().fit(np.zeros((0, 4)), [])
    with pytest.raises(InputError, match="NaN"):
        m.predict_success(TurnFeatures(entropy=float("nan")))


def test_dataframe_input_records_feature_names() -> None:
    pd = pytest.importorskip("pandas")
    x, y = _random_turns()
    frame = pd.DataFrame(x, columns=list(FEATURE_COLUMNS))
    m = UncertaintyMonitor(features=("entropy", "kurtosis"), degree=2).fit(frame, y)
    assert m.feature_names_in_.tolist() == list(FEATURE_COLUMNS)
    ref = UncertaintyMonitor(features=("entropy", "kurtosis"), degree=2).fit(x, y)
    assert np.array_equal(m.predict_success(frame), ref.predict_success(x))


def test_works_in_grid_search_and_pipelines() -> None:
    x, y = _random_turns(400)
    grid = {"features": [("varentropy",), ("entropy",)], "degree": [1, 2]}
    search = GridSearchCV(UncertaintyMonitor(), grid, cv=3, scoring="roc_auc").fit(x, y)
    assert search.best_params_["features"] == ("entropy",)  # the only informative feature
    scores = cross_val_score(make_pipeline(UncertaintyMonitor(degree=2)), x, y, cv=3)
    assert scores.shape == (3,) and (scores > 0.6).all()


# Checks of scikit-learn's suite that cannot apply, each with its reason (docs/monitor.md,
# "scikit-learn compatibility"). All of them fit on random data of 1, 2, 3, 5 or 10 columns;
# the monitor's input is the fixed 4-column FEATURE_COLUMNS layout, so fit refuses it.
_WIDTH = "fits data of {} columns; the monitor's input is exactly the 4 FEATURE_COLUMNS"
_BOUNDARY = (
    "decision_function is the raw ridge P(success), cut at 0.5 by predict; "
    "the check expects a margin cut at 0"
)
EXPECTED_FAILED_CHECKS: dict[str, str] = {
    "check_classifier_data_not_an_array": _WIDTH.format(2),
    "check_classifiers_classes": _WIDTH.format(2) + "; and " + _BOUNDARY,
    "check_classifiers_train": _WIDTH.format(2) + "; and " + _BOUNDARY,
    "check_decision_proba_consistency": _WIDTH.format(2),
    "check_dict_unchanged": _WIDTH.format(3),
    "check_dont_overwrite_parameters": _WIDTH.format(3),
    "check_dtype_object": _WIDTH.format(10),
    "check_estimators_dtypes": _WIDTH.format(5),
    "check_estimators_fit_returns_self": _WIDTH.format(2),
    "check_estimators_nan_inf": _WIDTH.format(3),
    "check_estimators_overwrite_params": _WIDTH.format(2),
    "check_estimators_pickle": _WIDTH.format(3),
    "check_f_contiguous_array_estimator": _WIDTH.format(3),
    "check_fit2d_predict1d": _WIDTH.format(3),
    "check_fit_check_is_fitted": _WIDTH.format(2),
    "check_fit_idempotent": _WIDTH.format(2),
    "check_fit_score_takes_y": _WIDTH.format(3),
    "check_methods_sample_order_invariance": _WIDTH.format(3),
    "check_methods_subset_invariance": _WIDTH.format(3),
    "check_n_features_in": _WIDTH.format(2),
    "check_pipeline_consistency": _WIDTH.format(3),
    "check_readonly_memmap_input": _WIDTH.format(2),
    "check_supervised_y_2d": _WIDTH.format(3),
}
#: On the any-width adapter below, only the decision_function convention remains.
ADAPTER_EXPECTED_FAILED_CHECKS: dict[str, str] = {
    "check_classifiers_classes": _BOUNDARY,
    "check_classifiers_train": _BOUNDARY,
}


class _AnyWidthMonitor(UncertaintyMonitor):
    """Test-only: tiles input of any width into the 4 feature slots (slot j <- column j mod d).

    Everything else is UncertaintyMonitor's own code, so the width-dependent checks run on
    its real validation, fit and predict.
    """

    def _feature_matrix(self, matrix: np.ndarray) -> np.ndarray:
        return matrix[:, np.arange(len(FEATURE_COLUMNS)) % matrix.shape[1]]


def _run_checks(estimator: UncertaintyMonitor, expected: dict[str, str]) -> list[dict[str, Any]]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        results: list[dict[str, Any]] = check_estimator(
            estimator, expected_failed_checks=expected, on_fail=None, on_skip=None
        )
    failed = [f"{r['check_name']}: {r['exception']!r}" for r in results if r["status"] == "failed"]
    assert not failed, "\n".join(failed)
    passed_anyway = {r["check_name"] for r in results if r["expected_to_fail"]} - {
        r["check_name"] for r in results if r["status"] == "xfail"
    }
    assert not passed_anyway, f"listed as expected failures but passed: {passed_anyway}"
    assert sum(r["status"] == "passed" for r in results) >= 25
    return results


@pytest.mark.parametrize(
    "monitor",
    [
        UncertaintyMonitor(),
        UncertaintyMonitor(features=("kurtosis", "entropy", "varentropy"), degree=3, alpha=0.5),
    ],
    ids=["default", "all-features-degree-3"],
)
def test_scikit_learn_estimator_checks(monitor: UncertaintyMonitor) -> None:
    results = _run_checks(monitor, EXPECTED_FAILED_CHECKS)
    for r in results:
        if r["status"] == "xfail":  # and for the listed reason: the fixed input width
            assert isinstance(r["exception"], InputError), r["check_name"]
            assert "monitor input must have 4 columns" in str(r["exception"]), r["check_name"]


@pytest.mark.parametrize(
    "monitor",
    [_AnyWidthMonitor(), _AnyWidthMonitor(features=("entropy", "varentropy"), degree=3)],
    ids=["default", "two-features-degree-3"],
)
def test_scikit_learn_estimator_checks_at_any_width(monitor: UncertaintyMonitor) -> None:
    results = _run_checks(monitor, ADAPTER_EXPECTED_FAILED_CHECKS)
    for r in results:
        if r["status"] == "xfail":
            assert isinstance(r["exception"], AssertionError), r["check_name"]


# -- JSON compatibility --------------------------------------------------------------------

# Written by byzllm 0.1.0 before UncertaintyMonitor became a scikit-learn BaseEstimator:
# UncertaintyMonitor(features=("varentropy", "entropy"), degree=2).fit(*_old_format_data()).
OLD_FORMAT_JSON = (
    '{"format": "byzllm.monitor/uncertainty-ridge/1", "byzllm_version": "0.1.0", '
    '"features": ["entropy", "varentropy"], "degree": 2, "alpha": 1.0, '
    '"columns": ["entropy", "varentropy", "turn"], '
    '"data_min": [0.010357731630864286, 0.007468484104151907, 1.0], '
    '"data_max": [1.8558113694890488, 1.9910005668687853, 8.0], '
    '"powers": [[1, 0, 0], [0, 1, 0], [0, 0, 1], [2, 0, 0], [1, 1, 0], [1, 0, 1], [0, 2, 0], '
    "[0, 1, 1], [0, 0, 2]], "
    '"coef": [-0.6250394420456803, 0.09570641797637451, -0.20839411882250145, '
    "0.06832354666429535, 0.026039732505254064, -0.04968839053634752, "
    "-0.04487332483452682, 0.012627764498961944, -0.08758585334214128], "
    '"intercept": 0.49739039407938057}'
)
OLD_FORMAT_QUERY = np.array([[0.2, 0.5, 1.0, 2.0], [1.5, 0.1, 0.3, 7.0], [3.0, 2.5, 0.0, 12.0]])
OLD_FORMAT_RAW = [1.068470831311073, -0.22253517210860485, -1.475839666089549]


def _old_format_data() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(7)
    x = np.column_stack([rng.random((40, 3)) * 2, rng.integers(1, 9, 40)])
    return x, (x[:, 0] + 0.1 * x[:, 3] < 1.2).astype(int)


def test_json_written_before_still_loads_and_predicts_the_same() -> None:
    m = UncertaintyMonitor.from_json(OLD_FORMAT_JSON)
    assert m.get_params() == {"features": ("entropy", "varentropy"), "degree": 2, "alpha": 1.0}
    assert m.classes_.tolist() == [0, 1] and m.n_features_in_ == 4
    # The same numbers up to the last bits, which BLAS builds may round differently.
    assert m.decision_function(OLD_FORMAT_QUERY).tolist() == pytest.approx(
        OLD_FORMAT_RAW, rel=1e-12
    )
    assert m.predict(OLD_FORMAT_QUERY).tolist() == [1, 0, 0]
    # Refitting on the same data writes the same file, key for key and digit for digit.
    refit = UncertaintyMonitor(features=("varentropy", "entropy"), degree=2).fit(
        *_old_format_data()
    )
    old = json.loads(OLD_FORMAT_JSON)
    new = json.loads(refit.to_json())
    assert list(new) == list(old)
    floats = {
        k
        for k, v in old.items()
        if isinstance(v, float) or (isinstance(v, list) and v and isinstance(v[0], float))
    }
    assert {**{k: v for k, v in new.items() if k not in floats}, "byzllm_version": "0.1.0"} == {
        k: v for k, v in old.items() if k not in floats
    }
    for key in floats:  # the same numbers up to the last bits (BLAS builds round differently)
        assert new[key] == pytest.approx(old[key], rel=1e-12, abs=1e-15)


def test_json_round_trip_keeps_every_prediction_and_refits_identically() -> None:
    x, y = _random_turns(500, seed=5)
    m = UncertaintyMonitor(features=["varentropy", "entropy"], degree=3, alpha=2.0).fit(x, y)
    back = UncertaintyMonitor.from_json(m.to_json())
    assert back.to_json() == m.to_json()
    for method in ("decision_function", "predict_success", "predict_proba", "predict"):
        assert np.array_equal(getattr(back, method)(x), getattr(m, method)(x)), method
    assert back.score(x, y) == m.score(x, y)
    # A loaded monitor is a normal estimator: clone gives an unfitted copy that refits the same.
    refit = clone(back).fit(x, y)
    assert np.array_equal(refit.decision_function(x), m.decision_function(x))
