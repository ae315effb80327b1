"""The base of the online regressors: the classifiers' shell (_base.py) for real targets.

A regressor drives one core learner of ``budgetkernel._core`` (an OnlineRegressor in C++,
learners/regressor_base.hpp) exactly as a classifier does: the chunk runs in C++ with the GIL
released and stops at Ctrl-C, the model is built privately and published whole (_publish),
save / load / pickling carry the core's bytes (_persistence), learn_one / predict_one take
arrays, dicts and Series (_learn_one), and parameters are validated once (_validation). What
differs is the target: a finite real number per row instead of a label, no classes, and the
prequential record is the sum of squared (and absolute) errors instead of mistakes.

A chunk given to partial_fit goes one way down: ``partial_fit`` -> (first call:
``_publish_new``, on a private copy) -> ``_chunk`` -> ``_chunk_data`` (validated once; the
first chunk builds the model, ``_init_model``) -> ``_learn_chunk`` -> the core.
"""

from __future__ import annotations

import numbers

import numpy as np
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.utils.validation import check_is_fitted

from ._base import OnlineClassifierMixin
from ._learn_one import _first_row, _SingleExampleMixin
from ._memory import _MemoryPlanMixin
from ._native import _CoreLearnerMixin
from ._persistence import _PersistenceMixin
from ._publish import _PublishedStateMixin
from ._validation import plain_chunk, validated

__all__ = ["OnlineRegressorMixin"]

_classifier = OnlineClassifierMixin  # the task-independent pieces are shared from there


class OnlineRegressorMixin(
    _SingleExampleMixin,
    _CoreLearnerMixin,
    _PersistenceMixin,
    _PublishedStateMixin,
    _MemoryPlanMixin,
    RegressorMixin,
    BaseEstimator,
):
    """Base of the budgetkernel regressors.

    Subclasses implement ``_validate_params()`` and ``_make_core(n_features, X)`` (returning a
    fresh core regressor), and list their parameters in ``__init__``.
    """

    # river's protocol (see OnlineClassifierMixin): a Pipeline passes y to learn_one.
    _supervised = True

    _check_fit_params = _classifier._check_fit_params
    _FIT_ONLY_PARAMS = _classifier._FIT_ONLY_PARAMS
    _changed_params = _classifier._changed_params
    _check_params_unchanged = _classifier._check_params_unchanged
    _set_feature_order = _classifier._set_feature_order
    _refit = _classifier._refit
    _epochs = _classifier._epochs
    _check_X = _classifier._check_X

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True  # accepted, and densified (_validation._dense)
        tags.non_deterministic = False
        return tags

    def _init_model(self, X, feature_order=None):
        """Builds a fresh model for the n_features of X (X: the first data)."""
        self._validate_params()
        self._check_memory(X.shape[1], 2)  # one output column, as a binary classifier's
        try:
            self._model = self._make_core(X.shape[1], X)
        except MemoryError:
            raise MemoryError(self._memory_message(X.shape[1], 2)) from None
        self._set_feature_order(feature_order)
        self._built_params = self.get_params(deep=False)
        self._params_changed = False

    def _memory_shape(self, n_features, n_classes):
        return f"{n_features} features"

    def set_params(self, **params):
        """scikit-learn's set_params; as OnlineClassifierMixin.set_params for a built model."""
        with self._state_lock():
            super().set_params(**params)
            if hasattr(self, "_model") and getattr(self, "_built_params", None) is not None:
                self._params_changed = bool(self._changed_params())
        return self

    # --------------------------------------------------------------- fitting
    def fit(self, X, y):
        """Fresh model, then ``n_epochs`` passes over (X, y) in the given order.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
            Finite real targets.

        Returns
        -------
        self
        """
        return self._refit(lambda est: est._fit_passes(X, y))

    def _fit_passes(self, X, y):
        X, y = validated(self, X, y, reset=True)
        y = _targets(y)
        self._init_model(X)
        for order in self._epochs(len(y)):
            self._learn_chunk(X[order], y[order])

    def partial_fit(self, X, y):
        """Learns one chunk of the stream (test-then-train, in C++ with the GIL released).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)

        Returns
        -------
        self
        """
        if "_model" not in self.__dict__ and self._publish_new(lambda new: new._chunk(X, y)):
            return self
        self._chunk(X, y)
        return self

    def _chunk(self, X, y):
        model = self.__dict__.get("_model")  # one state throughout (see _publish)
        X, y = self._chunk_data(X, y)
        self._learn_chunk(X, y, model=model)

    def _chunk_data(self, X, y):
        """A streaming chunk's validation; the first chunk builds the model."""
        if "_model" not in self.__dict__:
            X, y = validated(self, X, y, reset=True)
            y = _targets(y)
            self._init_model(X)
            return X, y
        if not plain_chunk(self, X, y):
            X, y = validated(self, X, y, reset=False)
        self._check_params_unchanged()
        return X, _targets(y)

    def _learn_chunk(self, X, y, model=None):
        """One chunk through the core ``model`` (default: the estimator's)."""
        model = self._model if model is None else model
        try:
            model.partial_fit(X, y)
        except MemoryError as e:
            self._explain_memory_error(e, model)

    # ------------------------------------------------------------ one example
    def learn_one(self, x, y):
        """Scores and learns one example (the true-streaming path; river's ``learn_one``).

        Parameters
        ----------
        x : 1-D array-like, dict of feature name -> value, or pandas Series
            As for the classifiers' ``learn_one``.
        y : float
            Its target.

        Returns
        -------
        self
        """
        y = _target(y)
        if "_model" not in self.__dict__ and self._publish_new(lambda new: new._first_one(x, y)):
            return self
        self._check_params_unchanged()
        v, _ = self._as_vector(x)
        self._learn_one(v, y)
        return self

    def _first_one(self, x, y):
        v, names = self._as_vector(x)
        X1 = _first_row(v, names)
        self._init_model(X1, feature_order=names)
        self._set_first_features(X1, names)
        self._learn_one(v, y)

    def _learn_one(self, v, y):
        model = self._model
        try:
            model.learn_one(v, y)  # the core checks x (and says what it expected)
        except MemoryError as e:
            self._explain_memory_error(e, model)

    def predict_one(self, x):
        """Prediction for one example; 0.0 before any learning (river's convention)."""
        v, _ = self._as_vector(x)
        d = self.__dict__
        if "_model" not in d:
            return 0.0
        n = d["n_features_in_"]
        if v.shape[0] != n:
            raise ValueError(f"x has {v.shape[0]} features, but the model was fitted with {n} (n_features_in_)")
        return float(d["_model"].predict_one(v))

    # ------------------------------------------------------------ prediction
    def predict(self, X):
        """Predicted targets, shape (n_samples,)."""
        model = self._state()["_model"]
        return model.predict(self._check_X(X))

    def score(self, X, y, sample_weight=None):
        """The coefficient of determination R^2 of ``predict(X)`` for the targets y
        (scikit-learn's ``r2_score``: 1 is a perfect fit, 0 the mean of y).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
        sample_weight : array-like of shape (n_samples,), default=None

        Returns
        -------
        float
        """
        return super().score(X, y, sample_weight=sample_weight)

    # -------------------------------------------------------- introspection
    @property
    def n_seen_(self):
        """Examples learned so far."""
        check_is_fitted(self, "_model")
        return self._model.counters["examples"]

    @property
    def online_mse_(self):
        """Prequential (test-then-train) mean squared error over everything learned."""
        if "_model" not in self.__dict__:
            raise AttributeError("online_mse_ is available after fitting")
        c = self._model.counters
        return c["squared_error"] / max(c["examples"], 1)

    @property
    def online_mae_(self):
        """Prequential mean absolute error over everything learned."""
        if "_model" not in self.__dict__:
            raise AttributeError("online_mae_ is available after fitting")
        c = self._model.counters
        return c["absolute_error"] / max(c["examples"], 1)

    @property
    def counters_(self):
        """Examples seen, updates, maintenance steps, degradation, squared and absolute errors."""
        check_is_fitted(self, "_model")
        return dict(self._model.counters)

    # ------------------------------------------------------------ persistence
    def _label_meta(self):
        return {}

    def _curve_meta(self):
        return {}

    def _restore_labels(self, meta):
        pass

    def _restore_curve(self, meta):
        pass

    def _restore_from_model(self, model):
        pass

    def _model_mismatch(self, model, loaded=False):
        n = getattr(self, "n_features_in_", None)
        if model.n_features == n:
            return None
        if loaded:
            return f"the metadata ({n} features) disagrees with the model ({model.n_features} features)"
        return f"its model ({model.n_features} features) disagrees with n_features_in_"


def _targets(y):
    """Validated targets as the C-contiguous float64 vector the core takes. validate_data has
    checked y's shape and finiteness; a non-numeric y is refused here."""
    try:
        out = np.ascontiguousarray(y, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"y must hold real numbers; got dtype {np.asarray(y).dtype}") from None
    if out.ndim != 1:
        raise ValueError(f"y must be 1-D; got shape {out.shape}")
    if not np.all(np.isfinite(out)):
        raise ValueError("y contains NaN or infinity")
    return out


def _target(y):
    """learn_one's target as a float (the core checks its range)."""
    if isinstance(y, (bool, np.bool_)) or not isinstance(y, numbers.Real):
        raise ValueError(f"y must be a real number; got {y!r}")
    return float(y)

