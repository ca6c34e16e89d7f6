"""The monitor classifier of the rogue-agents paper, §2 and App. D.2, as a scikit-learn estimator.

Pipeline (D.2): min-max scale the chosen features to ``[-1, 1]`` using the *training* data,
expand them with ``PolynomialFeatures(degree)``, fit a ``Ridge`` regression on the boolean
"this game succeeded" label of every training turn. The regression output, clipped to
``[0, 1]``, is the estimate of ``P(success | turn features)`` (§2). The turn count is always
an input; the uncertainty features are any subset of entropy, varentropy, kurtosis. The paper's
grid uses the seven non-empty subsets; the empty one, :data:`TURN_ONLY`, is the
turn-count-only control that ``byzllm monitor train`` fits next to it (the ablation that says
what the uncertainty features add over counting turns, ``docs/monitor.md``).

Inputs are always ``(n, 4)`` matrices in :data:`~byzllm.monitor.features.FEATURE_COLUMNS`
order (entropy, varentropy, kurtosis, turn); the monitor picks its own columns, so monitors
with different feature subsets take the same input.

:class:`UncertaintyMonitor` is a binary scikit-learn classifier (``ClassifierMixin`` +
``BaseEstimator``): ``get_params`` / ``set_params`` / ``clone`` work, so it fits into
``GridSearchCV``, ``cross_val_score`` or a ``Pipeline``; ``docs/monitor.md`` lists the
scikit-learn estimator checks that cannot apply to its fixed 4-column input. Prediction needs
only numpy and the learned arrays, so a monitor saved as JSON
(:meth:`UncertaintyMonitor.to_json`, never pickle) loads and predicts without any fitted
scikit-learn object.
"""

from __future__ import annotations

import json
import math
import numbers
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Self

import numpy as np
import numpy.typing as npt
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.exceptions import NotFittedError
from sklearn.utils.multiclass import check_classification_targets, type_of_target
from sklearn.utils.validation import check_is_fitted

from byzllm import __version__
from byzllm.errors import InputError

from .features import FEATURE_COLUMNS, UNCERTAINTY_FEATURES, TurnFeatures

if TYPE_CHECKING:
    from sklearn.utils import Tags

from sklearn.utils.validation import validate_data as _sk_validate_data

__all__ = [
    "MONITOR_FORMAT",
    "TURN_ONLY",
    "MonitorNotFittedError",
    "UncertaintyMonitor",
    "as_feature_matrix",
]

FloatArray = npt.NDArray[np.float64]

#: Identifies a serialized monitor; bumped if the JSON layout ever changes.
MONITOR_FORMAT = "byzllm.monitor/uncertainty-ridge/1"

#: The feature subset of a monitor that reads the turn count only (no uncertainty feature).
TURN_ONLY: tuple[str, ...] = ()

#: ``classes_`` of a monitor fitted on 0/1 (or boolean) outcomes, and of every loaded one.
_OUTCOME_CLASSES = (0, 1)


class MonitorNotFittedError(InputError, NotFittedError):  # type: ignore[misc]
    """A monitor used before :meth:`UncertaintyMonitor.fit` (or loading).

    Both a byzllm :class:`~byzllm.errors.InputError` (the CLI prints one line) and
    scikit-learn's ``NotFittedError``.
    """


def _turn_features_input(x: Any) -> Any:
    """``TurnFeatures`` (one, or a non-empty list) as an ``(n, 4)`` array; else ``x`` as is."""
    if isinstance(x, TurnFeatures):
        return x.as_array()[None, :]
    if isinstance(x, Sequence) and x and isinstance(x[0], TurnFeatures):
        return np.array([t.as_array() for t in x])
    return x


def as_feature_matrix(x: Any) -> FloatArray:
    """Coerce ``TurnFeatures``, a list of them, or an array to an ``(n, 4)`` float matrix.

    A 1-D array is read as one row. (The estimator's own methods validate with
    scikit-learn's ``validate_data`` instead, which wants 2-D arrays.)
    """
    arr = np.asarray(_turn_features_input(x), dtype=np.float64)
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


def _validate_features(features: Any) -> tuple[str, ...]:
    if isinstance(features, str) or not isinstance(features, Sequence):
        raise InputError(f"features must be a sequence of feature names, got {features!r}")
    chosen = tuple(features)
    unknown = [f for f in chosen if f not in UNCERTAINTY_FEATURES]
    if unknown:
        raise InputError(f"unknown monitor features {unknown}; choose from {UNCERTAINTY_FEATURES}")
    if len(set(chosen)) != len(chosen):
        raise InputError(f"duplicate monitor features in {list(chosen)}")
    # Canonical order, so equal subsets give equal monitors and equal JSON.
    return tuple(f for f in UNCERTAINTY_FEATURES if f in chosen)


def _is_outcome_classes(classes: npt.NDArray[Any]) -> bool:
    """Whether ``classes`` are the outcomes 0 and 1, as numbers or booleans."""
    if classes.dtype.kind not in "biuf" or classes.shape != (2,):
        return False
    return bool(np.array_equal(classes.astype(np.float64), np.array(_OUTCOME_CLASSES, float)))


def _min_max_scale(chosen: FloatArray, data_min: FloatArray, data_max: FloatArray) -> FloatArray:
    # MinMaxScaler(feature_range=(-1, 1)) semantics: a constant training column maps to -1;
    # test values outside the training range are not clipped.
    span = data_max - data_min
    scale = 2.0 / np.where(span > 0, span, 1.0)
    return np.asarray((chosen - data_min) * scale - 1.0, dtype=np.float64)


class UncertaintyMonitor(ClassifierMixin, BaseEstimator):  # type: ignore[misc]
    """Polynomial ridge estimate of ``P(success)`` from one turn's features.

    The monitor of the rogue-agents paper, App. D.2: min-max scaling to ``[-1, 1]``,
    ``PolynomialFeatures(degree)``, ``Ridge(alpha)`` on the game outcome of every turn; the
    ridge output clipped to ``[0, 1]`` is ``P(success)`` (§2).

    Parameters
    ----------
    features:
        The uncertainty features used (a subset of entropy/varentropy/kurtosis, any order);
        the turn count is always added, so ``()`` (:data:`TURN_ONLY`) is a monitor of the
        turn count alone. Stored as given, validated by :meth:`fit`.
    degree:
        Degree of the polynomial expansion (the paper searches 1–5; 1..10 accepted).
    alpha:
        Ridge regularisation strength (scikit-learn's default, 1.0, as the paper used).

    ``X`` is ``(n, 4)`` in :data:`~byzllm.monitor.features.FEATURE_COLUMNS` order, read by
    position (or ``TurnFeatures``, one or a list). ``y`` is the game outcome: 1 / ``True``
    succeeded, 0 / ``False`` failed, and both must occur. Other binary labels work as in
    scikit-learn (``classes_`` is the sorted pair; the second counts as success), but only a
    monitor fitted on 0/1 outcomes can be saved as JSON.

    Learned attributes (set by :meth:`fit`, or by :meth:`from_dict` when loading):
    ``columns_`` (indices into the 4-column input), ``data_min_``, ``data_max_`` (training
    range per column), ``powers_`` (exponents of each polynomial term, as
    ``PolynomialFeatures.powers_``), ``coef_``, ``intercept_``, ``classes_`` (``[0, 1]`` for
    0/1 or boolean outcomes), ``n_features_in_`` (4) and, after fitting on a DataFrame,
    ``feature_names_in_``.

    ``score(X, y)`` is scikit-learn's accuracy of :meth:`predict`; the per-turn
    ``P(success)`` that a threshold τ is compared with is :meth:`predict_success`.
    """

    def __init__(
        self,
        features: Sequence[str] = ("entropy",),
        degree: int = 1,
        alpha: float = 1.0,
    ) -> None:
        self.features = features
        self.degree = degree
        self.alpha = alpha

    # -- scikit-learn contract -------------------------------------------------------------

    def __sklearn_tags__(self) -> Tags:
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = False  # game failed / succeeded
        tags.input_tags.allow_nan = False
        tags.input_tags.sparse = False
        return tags

    def set_params(self, **params: Any) -> Self:
        """scikit-learn's ``set_params``; an unknown name raises :class:`InputError`."""
        try:
            super().set_params(**params)
        except InputError:
            raise
        except ValueError as err:
            raise InputError(str(err)) from err
        return self

    def _check_params(self) -> tuple[str, ...]:
        """Validate the hyper-parameters; the features in canonical order."""
        features = _validate_features(self.features)
        degree = self.degree
        if (
            not isinstance(degree, numbers.Integral)
            or isinstance(degree, bool)
            or not 1 <= int(degree) <= 10
        ):
            raise InputError(f"degree must be an integer in 1..10, got {degree!r}")
        alpha = self.alpha
        if (
            not isinstance(alpha, numbers.Real)
            or isinstance(alpha, bool)
            or not math.isfinite(float(alpha))
            or float(alpha) < 0
        ):
            raise InputError(f"alpha must be a finite number >= 0, got {alpha!r}")
        return features

    def _validate(self, x: Any, y: Any = "no_validation", *, reset: bool) -> Any:
        """scikit-learn's ``validate_data`` (2-D, float64, finite); errors as InputError."""
        try:
            return _sk_validate_data(self, x, y, reset=reset, dtype=np.float64)
        except InputError:
            raise
        except ValueError as err:
            raise InputError(str(err)) from err

    def _feature_matrix(self, matrix: FloatArray) -> FloatArray:
        """The validated input as the ``(n, 4)`` FEATURE_COLUMNS matrix (a width check)."""
        if matrix.shape[1] != len(FEATURE_COLUMNS):
            raise InputError(
                f"monitor input must have {len(FEATURE_COLUMNS)} columns {FEATURE_COLUMNS}, "
                f"got {matrix.shape[1]} feature(s)"
            )
        return matrix

    def fit(self, X: Any, y: Any) -> Self:
        """Fit on per-turn features ``X`` (``(n, 4)``) and game outcomes ``y`` (1 = success)."""
        from sklearn.linear_model import Ridge
        from sklearn.preprocessing import PolynomialFeatures

        features = self._check_params()
        matrix, target = self._validate(_turn_features_input(X), y, reset=True)
        try:
            check_classification_targets(target)  # "Unknown label type" for a regression y
        except ValueError as err:
            raise InputError(str(err)) from err
        y_type = type_of_target(target, input_name="y")
        if y_type != "binary":
            raise InputError(
                "Only binary classification is supported (game failed / succeeded). "
                f"The type of the target is {y_type}."
            )
        classes, encoded = np.unique(target, return_inverse=True)
        if classes.size != 2:
            raise InputError(
                "a monitor needs both game outcomes in y (0 = failed, 1 = succeeded); "
                f"got only one class: {classes.tolist()}"
            )
        matrix = self._feature_matrix(matrix)
        columns = np.array([FEATURE_COLUMNS.index(f) for f in (*features, "turn")])
        chosen = matrix[:, columns]
        data_min = chosen.min(axis=0)
        data_max = chosen.max(axis=0)
        poly = PolynomialFeatures(degree=int(self.degree), include_bias=False)
        expanded = poly.fit_transform(_min_max_scale(chosen, data_min, data_max))
        ridge = Ridge(alpha=self.alpha).fit(expanded, encoded.astype(np.float64))
        self.columns_ = columns
        self.data_min_ = data_min
        self.data_max_ = data_max
        self.powers_ = np.asarray(poly.powers_, dtype=np.int64)
        self.coef_ = np.asarray(ridge.coef_, dtype=np.float64)
        self.intercept_ = float(ridge.intercept_)
        self.classes_ = np.array(_OUTCOME_CLASSES) if _is_outcome_classes(classes) else classes
        return self

    def _scale(self, chosen: FloatArray) -> FloatArray:
        return _min_max_scale(chosen, self.data_min_, self.data_max_)

    def _check_fitted(self) -> None:
        try:
            check_is_fitted(self, ["columns_", "data_min_", "data_max_", "powers_", "coef_"])
        except NotFittedError as err:
            raise MonitorNotFittedError(
                "this monitor is not fitted yet; call fit() or load one"
            ) from err

    def _input_matrix(self, x: Any) -> FloatArray:
        self._check_fitted()
        if isinstance(x, TurnFeatures) or (
            isinstance(x, Sequence) and x and isinstance(x[0], TurnFeatures)
        ):
            # The live path (one turn per call): TurnFeatures are FEATURE_COLUMNS by
            # construction, so only finiteness is checked; validate_data would cost ~0.1 ms.
            return as_feature_matrix(x)
        matrix = self._validate(x, reset=False)
        return self._feature_matrix(np.asarray(matrix, dtype=np.float64))

    def decision_function(self, X: Any) -> FloatArray:
        """The raw (unclipped) ridge output per row of ``X``; :meth:`predict` cuts it at 0.5."""
        scaled = self._scale(self._input_matrix(X)[:, self.columns_])
        expanded = np.prod(scaled[:, None, :] ** self.powers_[None, :, :], axis=2)
        return np.asarray(expanded @ self.coef_ + self.intercept_, dtype=np.float64)

    def predict_success(self, X: Any) -> FloatArray:
        """``P(success)`` per row: the ridge output clipped to ``[0, 1]`` (§2)."""
        return np.clip(self.decision_function(X), 0.0, 1.0)

    def predict_proba(self, X: Any) -> FloatArray:
        """Columns ``[P(failure), P(success)]``, matching ``classes_`` (``[0, 1]``)."""
        p = self.predict_success(X)
        return np.column_stack([1.0 - p, p])

    def predict(self, X: Any) -> npt.NDArray[Any]:
        """``classes_[1]`` (1: success) where ``P(success) >= 0.5``, else ``classes_[0]``."""
        success = self.predict_success(X) >= 0.5
        return np.asarray(self.classes_[success.astype(np.int64)])

    # -- JSON persistence -------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready description of the fitted monitor (with the byzllm version)."""
        self._check_fitted()
        if not _is_outcome_classes(np.asarray(self.classes_)):
            raise InputError(
                "only a monitor fitted on 0/1 (or boolean) game outcomes can be saved; "
                f"this one has classes {np.asarray(self.classes_).tolist()}"
            )
        alpha = self.alpha if isinstance(self.alpha, int | float) else float(self.alpha)
        return {
            "format": MONITOR_FORMAT,
            "byzllm_version": __version__,
            "features": list(_validate_features(self.features)),
            "degree": int(self.degree),
            "alpha": alpha,
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
        monitor.classes_ = np.array(_OUTCOME_CLASSES)
        monitor.n_features_in_ = len(FEATURE_COLUMNS)
        return monitor

    def to_json(self) -> str:
        """:meth:`to_dict` as JSON text (the ``monitors.json`` entries)."""
        return json.dumps(self.to_dict())

    @classmethod
    def from_json(cls, text: str) -> UncertaintyMonitor:
        """Load a monitor saved by :meth:`to_json`."""
        try:
            data = json.loads(text)
        except json.JSONDecodeError as err:
            raise InputError(f"monitor JSON does not parse: {err}") from err
        return cls.from_dict(data)
