"""The monitor classifier of seed 002 §2 and App. D.2, as a scikit-learn-style estimator.

Pipeline (D.2): min-max scale the chosen features to ``[-1, 1]`` using the *training* data,
expand them with ``PolynomialFeatures(degree)``, fit a ``Ridge`` regression on the boolean
"this game succeeded" label of every training turn. The regression output, clipped to
``[0, 1]``, is the estimate of ``P(success | turn features)`` (§2). The turn count is always
an input; the uncertainty features are any non-empty subset of entropy, varentropy, kurtosis.

Inputs are always ``(n, 4)`` matrices in :data:`~byzllm.monitor.features.FEATURE_COLUMNS`
order (entropy, varentropy, kurtosis, turn); the monitor picks its own columns, so monitors
with different feature subsets take the same input.

Fitting uses scikit-learn; prediction needs only numpy and the learned arrays, so a monitor
saved as JSON (:meth:`UncertaintyMonitor.to_json`, never pickle) loads and predicts without
any scikit-learn object.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from byzllm import __version__
from byzllm.errors import InputError

from .features import FEATURE_COLUMNS, UNCERTAINTY_FEATURES, TurnFeatures

__all__ = ["MONITOR_FORMAT", "UncertaintyMonitor", "as_feature_matrix"]

FloatArray = npt.NDArray[np.float64]

#: Identifies a serialized monitor; bumped if the JSON layout ever changes.
MONITOR_FORMAT = "byzllm.monitor/uncertainty-ridge/1"


def as_feature_matrix(x: Any) -> FloatArray:
    """Coerce ``TurnFeatures``, a list of them, or an array to an ``(n, 4)`` float matrix."""
    if isinstance(x, TurnFeatures):
        return x.as_array()[None, :]
    if isinstance(x, Sequence) and x and isinstance(x[0], TurnFeatures):
        return np.array([t.as_array() for t in x])
    arr = np.asarray(x, dtype=np.float64)
    if arr.ndim == 1:
        arr = arr[None, :]
    if arr.ndim != 2 or arr.shape[1] != len(FEATURE_COLUMNS):
        raise InputError(
            f"monitor input must have {len(FEATURE_COLUMNS)} columns {FEATURE_COLUMNS}, "
            f"got shape {arr.shape}"
        )
    if not np.isfinite(arr).all():
        raise InputError("monitor input contains NaN or infinite values")
    return arr


def _validate_features(features: Sequence[str]) -> tuple[str, ...]:
    chosen = tuple(features)
    if not chosen:
        raise InputError("a monitor needs at least one uncertainty feature")
    unknown = [f for f in chosen if f not in UNCERTAINTY_FEATURES]
    if unknown:
        raise InputError(f"unknown monitor features {unknown}; choose from {UNCERTAINTY_FEATURES}")
    if len(set(chosen)) != len(chosen):
        raise InputError(f"duplicate monitor features in {list(chosen)}")
    # Canonical order, so equal subsets give equal monitors and equal JSON.
    return tuple(f for f in UNCERTAINTY_FEATURES if f in chosen)


class UncertaintyMonitor:
    """Polynomial ridge estimate of ``P(success)`` from one turn's features (seed 002 D.2).

    Parameters
    ----------
    features:
        The uncertainty features used (non-empty subset of entropy/varentropy/kurtosis); the
        turn count is always added.
    degree:
        Degree of the polynomial expansion (the paper searches 1–5).
    alpha:
        Ridge regularisation strength (scikit-learn's default, 1.0, as the paper used).

    Learned attributes: ``columns_`` (indices into the 4-column input), ``data_min_``,
    ``data_max_`` (training range per column), ``powers_`` (exponents of each polynomial
    term, as ``PolynomialFeatures.powers_``), ``coef_``, ``intercept_``, ``classes_``.
    """

    def __init__(
        self,
        features: Sequence[str] = ("entropy",),
        degree: int = 1,
        alpha: float = 1.0,
    ) -> None:
        self.features = tuple(features)
        self.degree = degree
        self.alpha = alpha

    # -- scikit-learn contract -------------------------------------------------------------

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        return {"features": self.features, "degree": self.degree, "alpha": self.alpha}

    def set_params(self, **params: Any) -> UncertaintyMonitor:
        for key, value in params.items():
            if key not in ("features", "degree", "alpha"):
                raise InputError(f"unknown parameter {key!r}")
            setattr(self, key, tuple(value) if key == "features" else value)
        return self

    def __repr__(self) -> str:
        return (
            f"UncertaintyMonitor(features={self.features!r}, degree={self.degree}, "
            f"alpha={self.alpha})"
        )

    def _check_params(self) -> tuple[str, ...]:
        features = _validate_features(self.features)
        if not isinstance(self.degree, int) or not 1 <= self.degree <= 10:
            raise InputError(f"degree must be an integer in 1..10, got {self.degree!r}")
        if not self.alpha >= 0:
            raise InputError(f"alpha must be >= 0, got {self.alpha!r}")
        return features

    def fit(self, x: Any, y: Any) -> UncertaintyMonitor:
        """Fit on per-turn features ``x`` (``(n, 4)``) and game outcomes ``y`` (0/1)."""
        from sklearn.linear_model import Ridge
        from sklearn.preprocessing import PolynomialFeatures

        features = self._check_params()
        matrix = as_feature_matrix(x)
        target = np.asarray(y, dtype=np.float64).ravel()
        if matrix.shape[0] == 0:
            raise InputError("cannot fit a monitor on zero turns")
        if target.shape[0] != matrix.shape[0]:
            raise InputError(f"{matrix.shape[0]} turns but {target.shape[0]} labels")
        if not np.isin(target, (0.0, 1.0)).all():
            raise InputError("labels must be 0 (game failed) or 1 (game succeeded)")
        self.columns_ = np.array([FEATURE_COLUMNS.index(f) for f in (*features, "turn")])
        chosen = matrix[:, self.columns_]
        self.data_min_ = chosen.min(axis=0)
        self.data_max_ = chosen.max(axis=0)
        poly = PolynomialFeatures(degree=self.degree, include_bias=False)
        expanded = poly.fit_transform(self._scale(chosen))
        ridge = Ridge(alpha=self.alpha).fit(expanded, target)
        self.powers_ = np.asarray(poly.powers_, dtype=np.int64)
        self.coef_ = np.asarray(ridge.coef_, dtype=np.float64)
        self.intercept_ = float(ridge.intercept_)
        self.classes_ = np.array([0, 1])
        self.n_features_in_ = len(FEATURE_COLUMNS)
        return self

    def _scale(self, chosen: FloatArray) -> FloatArray:
        # MinMaxScaler(feature_range=(-1, 1)) semantics: a constant training column maps to -1;
        # test values outside the training range are not clipped.
        span = self.data_max_ - self.data_min_
        scale = 2.0 / np.where(span > 0, span, 1.0)
        return np.asarray((chosen - self.data_min_) * scale - 1.0, dtype=np.float64)

    def _check_fitted(self) -> None:
        if not hasattr(self, "coef_"):
            raise InputError("this monitor is not fitted yet; call fit() or load one")

    def decision_function(self, x: Any) -> FloatArray:
        """The raw (unclipped) ridge output for each row of ``x``."""
        self._check_fitted()
        scaled = self._scale(as_feature_matrix(x)[:, self.columns_])
        expanded = np.prod(scaled[:, None, :] ** self.powers_[None, :, :], axis=2)
        return np.asarray(expanded @ self.coef_ + self.intercept_, dtype=np.float64)

    def predict_success(self, x: Any) -> FloatArray:
        """``P(success)`` per row: the ridge output clipped to ``[0, 1]`` (§2)."""
        return np.clip(self.decision_function(x), 0.0, 1.0)

    def predict_proba(self, x: Any) -> FloatArray:
        """Columns ``[P(failure), P(success)]``, matching ``classes_ = [0, 1]``."""
        p = self.predict_success(x)
        return np.column_stack([1.0 - p, p])

    def predict(self, x: Any) -> npt.NDArray[np.int64]:
        """1 where ``P(success) >= 0.5``."""
        return (self.predict_success(x) >= 0.5).astype(np.int64)

    # -- JSON persistence -------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready description of the fitted monitor (with the byzllm version)."""
        self._check_fitted()
        return {
            "format": MONITOR_FORMAT,
            "byzllm_version": __version__,
            "features": list(_validate_features(self.features)),
            "degree": self.degree,
            "alpha": self.alpha,
            "columns": [FEATURE_COLUMNS[i] for i in self.columns_],
            "data_min": self.data_min_.tolist(),
            "data_max": self.data_max_.tolist(),
            "powers": self.powers_.tolist(),
            "coef": self.coef_.tolist(),
            "intercept": self.intercept_,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> UncertaintyMonitor:
        """Rebuild a fitted monitor from :meth:`to_dict` output; validates every field."""
        if not isinstance(data, dict) or data.get("format") != MONITOR_FORMAT:
            raise InputError(f"not a serialized monitor (expected format {MONITOR_FORMAT!r})")
        try:
            monitor = cls(
                features=tuple(data["features"]),
                degree=int(data["degree"]),
                alpha=float(data["alpha"]),
            )
            features = monitor._check_params()
            columns = list(data["columns"])
            if columns != [*features, "turn"]:
                raise InputError(f"columns {columns} do not match features {list(features)}")
            monitor.columns_ = np.array([FEATURE_COLUMNS.index(c) for c in columns])
            monitor.data_min_ = np.asarray(data["data_min"], dtype=np.float64)
            monitor.data_max_ = np.asarray(data["data_max"], dtype=np.float64)
            monitor.powers_ = np.asarray(data["powers"], dtype=np.int64)
            monitor.coef_ = np.asarray(data["coef"], dtype=np.float64)
            monitor.intercept_ = float(data["intercept"])
        except (KeyError, TypeError, ValueError) as err:
            raise InputError(f"malformed serialized monitor: {err}") from err
        n_in = len(columns)
        if (
            monitor.data_min_.shape != (n_in,)
            or monitor.data_max_.shape != (n_in,)
            or monitor.powers_.ndim != 2
            or monitor.powers_.shape[1] != n_in
            or monitor.coef_.shape != (monitor.powers_.shape[0],)
            or (monitor.powers_ < 0).any()
            or (monitor.powers_.sum(axis=1) > monitor.degree).any()
        ):
            raise InputError("malformed serialized monitor: inconsistent array shapes")
        finite = [monitor.data_min_, monitor.data_max_, monitor.coef_, [monitor.intercept_]]
        if not all(np.isfinite(a).all() for a in finite):
            raise InputError("malformed serialized monitor: non-finite numbers")
        monitor.classes_ = np.array([0, 1])
        monitor.n_features_in_ = len(FEATURE_COLUMNS)
        return monitor

    def to_json(self) -> str:
        return json.dumps(self.to_dict())

    @classmethod
    def from_json(cls, text: str) -> UncertaintyMonitor:
        try:
            data = json.loads(text)
        except json.JSONDecodeError as err:
            raise InputError(f"monitor JSON does not parse: {err}") from err
        return cls.from_dict(data)
