"""The base of the online classifiers: a scikit-learn style shell around one core learner.

Every estimator is a thin shell around one learner object of the C++ core
(``budgetkernel._core``); the chunk itself runs in C++ with the GIL released. The mixin is
composed of focused parts:

- _validation: parameter checks, and a chunk's validation (once, at the edge of a call);
- _labels: checks of ``classes`` / ``y``, labels encoded as the core's indices;
- _memory: a budgeted model's memory, checked before anything is allocated;
- _publish: the fitted state built privately and published whole (threads);
- _learn_one: learn_one / predict_one, dict and Series examples;
- _persistence: save / load / pickling;
- _kernel_params: the kernel parameters and the fitted views of kernel expansions;
- _proba: predict_proba / predict_log_proba and the ``probability`` switch.

This module holds the chunk path itself. A chunk given to partial_fit goes one way down:
``partial_fit`` -> (first call: ``_publish_new``, on a private copy) -> ``_chunk`` ->
``_chunk_data`` (validated once; the first chunk builds the model, ``_init_model``) ->
``encode`` -> ``_learn_chunk`` -> the core. fit: ``fit`` -> ``_refit`` -> ``_publish_new`` ->
``_fit_passes`` -> ``_fit_data`` -> ``_learn_chunk`` per pass. learn_one (_learn_one):
``learn_one`` -> (first call: ``_publish_new`` -> ``_first_one``) -> ``_learn_one`` -> the core.
"""

from __future__ import annotations

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.validation import check_is_fitted

from ._labels import check_targets, class_set, encode, same_class_set
from ._memory import _MemoryPlanMixin
from ._learn_one import _SingleExampleMixin
from ._native import _CoreLearnerMixin
from ._persistence import _PersistenceMixin, load, register
from ._proba import _ProbabilityMixin
from ._publish import _PublishedStateMixin
from ._validation import _check_bool, _check_positive, _check_random_state, _shuffler, plain_chunk, validated

__all__ = ["OnlineClassifierMixin", "load", "register"]


class OnlineClassifierMixin(
    _ProbabilityMixin,
    _SingleExampleMixin,
    _CoreLearnerMixin,
    _PersistenceMixin,
    _PublishedStateMixin,
    _MemoryPlanMixin,
    ClassifierMixin,
    BaseEstimator,
):
    """Base of the budgetkernel classifiers.

    Subclasses implement ``_validate_params()`` and ``_make_core(n_features, n_classes, X)``
    (returning a fresh core learner), and list their parameters in ``__init__``.
    """

    # river's protocol. river (compose.Pipeline, evaluate) reads these two off every estimator
    # it drives: _supervised makes a Pipeline pass y to learn_one, _multiclass says that labels
    # need not be binary. Plain attributes, so that river stays optional (no import, no base
    # class). A Pipeline calls learn_one(x=x, y=y) and predict_one(x) with the transformed dict,
    # and forwards keyword arguments a step declares: pipeline.learn_one(x, y, classes=[...])
    # reaches our learn_one (the way to name the classes of non-bool labels in river).
    _supervised = True
    _multiclass = True

    # ----------------------------------------------------------------- hooks
    def _validate_params(self):  # pragma: no cover - overridden
        raise NotImplementedError

    def _make_core(self, n_features, n_classes, X):  # pragma: no cover - overridden
        raise NotImplementedError

    def _check_fit_params(self):
        """The parameters every estimator takes, for _validate_params: n_epochs, shuffle and
        random_state (checked whatever shuffle is: a random_state that only shuffling would
        use was accepted unchecked, then failed once shuffle=True)."""
        _check_positive("n_epochs", self.n_epochs, integer=True)
        _check_bool("shuffle", self.shuffle)
        _check_random_state(self.random_state)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True  # accepted, and densified (see _dense)
        tags.classifier_tags.multi_class = True
        tags.non_deterministic = False
        return tags

    def _init_model(self, X, classes, feature_order=None):
        """Builds a fresh model for ``classes`` and the n_features of X (X: the first data)."""
        self._validate_params()
        classes = class_set(classes, type(self).__name__)
        self._check_memory(X.shape[1], len(classes))
        self.classes_ = classes
        self._label_index = {c: i for i, c in enumerate(classes.tolist())}
        try:
            self._model = self._make_core(X.shape[1], len(classes), X)
            self._switch_calibration()
        except MemoryError:  # std::bad_alloc said nothing about what asked for the memory
            raise MemoryError(self._memory_message(X.shape[1], len(classes))) from None
        self.prequential_curve_ = [(0, 0)]
        self._curve_due = 1
        self._set_feature_order(feature_order)
        self._built_params = self.get_params(deep=False)
        self._params_changed = False

    # Parameters that only fit() reads: changing them never disagrees with a built model.
    _FIT_ONLY_PARAMS = frozenset({"n_epochs", "shuffle"})

    def set_params(self, **params):
        """scikit-learn's set_params. On a fitted model, a changed parameter that the built model
        cannot follow makes the next partial_fit/learn_one/save raise (fit() starts over)."""
        with self._state_lock():  # not lost to a fit publishing the __dict__ it copied before
            super().set_params(**params)
            if hasattr(self, "_model") and getattr(self, "_built_params", None) is not None:
                self._params_changed = bool(self._changed_params())
        return self

    def _changed_params(self):
        now, built = self.get_params(deep=False), self._built_params
        return [
            f"{k}={now[k]!r} (the model was built with {built.get(k)!r})"
            for k in now
            if k not in self._FIT_ONLY_PARAMS and not _same_param(now[k], built.get(k))
        ]

    def _check_params_unchanged(self):
        if getattr(self, "_params_changed", False):
            changed = self._changed_params()
            if changed:
                raise ValueError(
                    "parameters changed after the model was built: " + ", ".join(changed)
                    + "; fit() starts over with them, or set them back"
                )

    def _set_feature_order(self, names):
        """The key order of dict examples (learn_one's first dict; None: arrays only)."""
        self._feature_order = names
        self._feature_pos = None if names is None else {k: i for i, k in enumerate(names)}

    # --------------------------------------------------------------- fitting
    def fit(self, X, y):
        """Fresh model, then ``n_epochs`` passes over (X, y) in the given order.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)

        Returns
        -------
        self
        """
        return self._refit(lambda est: est._fit_passes(X, y))

    def _refit(self, passes):
        """fit's fresh model, built and trained by ``passes(est)`` on a private copy of the
        estimator and published whole (_publish_new): a fit that fails before learning keeps
        the model fitted before."""
        self._publish_new(passes, rebuild=True)
        return self

    def _fit_passes(self, X, y):
        X, yi = self._fit_data(X, y)
        for order in self._epochs(len(yi)):
            self._learn_chunk(X[order], yi[order])
            self._end_of_pass()

    def _end_of_pass(self):
        """Called by fit after each pass over the data (a finite data set ends there)."""

    def _fit_data(self, X, y):
        """fit's validation: a fresh model for the labels of y; returns X and the label indices."""
        X, y = validated(self, X, y, reset=True)
        check_targets(y)
        self._init_model(X, np.unique(y))
        return X, encode(y, self.classes_, self._label_index)

    def _epochs(self, n):
        """Row orders of fit's n_epochs passes (shuffled when ``shuffle``)."""
        rng = _shuffler(self.random_state) if getattr(self, "shuffle", False) else None
        for _ in range(self.n_epochs):
            yield rng.permutation(n) if rng is not None else slice(None)

    def partial_fit(self, X, y, classes=None):
        """Learns one chunk of the stream (test-then-train, in C++ with the GIL released).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
        classes : array-like of shape (n_classes,), default=None
            Every label the stream can contain. Required on the first call, ignored after.

        Returns
        -------
        self
        """
        return self._partial_fit(X, y, classes)

    def _partial_fit(self, X, y, classes, learn=None):
        """partial_fit's path: a first call builds the model and learns the chunk on a private
        copy, published whole (_publish_new); every other call, and a first call that found a
        model built meanwhile, hands its chunk to the published model. ``learn(est, X, yi,
        model, curve)`` gives the checked chunk to the model and ends the curve (default:
        _learn_chunk)."""
        if "_model" not in self.__dict__ and self._publish_new(lambda new: new._chunk(X, y, classes, learn)):
            return self
        self._chunk(X, y, classes, learn)
        return self

    def _chunk(self, X, y, classes, learn):
        d = self.__dict__  # one state throughout (see _publish): labels encoded for its model
        X, y = self._chunk_data(X, y, classes)
        yi = encode(y, d["classes_"], d["_label_index"])
        model, curve = d["_model"], d["prequential_curve_"]
        if learn is None:
            self._learn_chunk(X, yi, model=model, curve=curve)
        else:
            learn(self, X, yi, model, curve)

    def _chunk_data(self, X, y, classes, method="partial_fit"):
        """A streaming chunk's validation, the only one on the Python side (y may be None:
        labels asked for later). The first chunk builds the model from ``classes``; a later one
        is checked against it (a plain chunk, see plain_chunk, is left to the core's row
        checks). Returns X and y."""
        if "_model" not in self.__dict__:
            if classes is None:
                raise ValueError(f"classes must be passed on the first call to {method}")
            if y is None:
                X = validated(self, X, reset=True)
            else:
                X, y = validated(self, X, y, reset=True)
                check_targets(y)  # later chunks: encode rejects every label outside classes_
            self._init_model(X, classes)
            return X, y
        if not plain_chunk(self, X, y):
            if y is None:
                X = validated(self, X, reset=False)
            else:
                X, y = validated(self, X, y, reset=False)
        self._check_params_unchanged()
        if classes is not None:
            same_class_set(classes, self.classes_)
        return X, y

    def _learn_chunk(self, X, yi, record=False, model=None, curve=None):
        """One chunk through the core ``model`` (default: the estimator's), its point added to
        ``curve`` (that model's prequential curve)."""
        model = self._model if model is None else model
        curve = self.prequential_curve_ if curve is None else curve
        try:
            return _recorded(model, curve, lambda: model.partial_fit(X, yi, record))
        except MemoryError as e:  # a cache reached its full size (e.g. projection's on activation)
            self._explain_memory_error(e, model)

    # ------------------------------------------------------------ prediction
    def decision_function(self, X):
        """Decision values: shape (n,) for two classes, (n, n_classes) otherwise."""
        model = self._state()["_model"]
        X = self._check_X(X)
        d = model.decision_function(X)
        return d[:, 0] if d.shape[1] == 1 else d

    def predict(self, X):
        """Predicted class labels."""
        d = self._state()  # the classes_ of the model that predicts (a fit may publish new ones)
        X = self._check_X(X)
        return d["classes_"][d["_model"].predict(X)]

    def _check_X(self, X):
        """A chunk of features to predict for: finite float64, 2-D, of the fitted width (a
        plain chunk, see plain_chunk, is that already: the core checks its rows)."""
        return X if plain_chunk(self, X, None) else validated(self, X, reset=False)

    # -------------------------------------------------------- introspection
    @property
    def n_seen_(self):
        """Examples learned so far."""
        check_is_fitted(self, "_model")
        return self._model.counters["examples"]

    @property
    def online_error_(self):
        """Prequential (test-then-train) mistake rate over everything learned."""
        c = self._model.counters if hasattr(self, "_model") else None
        if c is None:
            raise AttributeError("online_error_ is available after fitting")
        return c["mistakes"] / max(c["examples"], 1)

    @property
    def counters_(self):
        """Examples seen, updates, maintenance steps, accumulated degradation, mistakes."""
        check_is_fitted(self, "_model")
        return dict(self._model.counters)


def _recorded(model, curve, learn):
    """Runs ``learn()``, one chunk through ``model``, and ends its prequential ``curve`` at
    what the model has learned: after it returns, and after it raised (_curve_point_after)."""
    try:
        out = learn()
    except BaseException as e:
        _curve_point_after(e, model, curve)
        raise
    c = model.counters
    curve.append((c["examples"], c["mistakes"]))
    return out


def _curve_point(model, curve):
    """Adds to ``curve`` the point of what model has learned, unless it already ends there."""
    c = model.counters
    if c["examples"] != curve[-1][0]:
        curve.append((c["examples"], c["mistakes"]))


def _curve_point_after(error, model, curve):
    """The curve point of a chunk call that raised ``error``: Ctrl-C during a chunk stops it
    between two examples (KeyboardInterrupt; the rows before the stop stay learned), and its
    point was lost (the curve ended before rows the model had learned); an exact SVM can fail
    after learning rows. None for a call interrupted while it waited for another thread's use
    of the model (the core marks it: nothing ran, and reading the counters would wait for that
    use)."""
    if not getattr(error, "_budgetkernel_not_run", False):
        _curve_point(model, curve)


def _same_param(a, b):
    try:
        return a is b or bool(a == b)
    except (TypeError, ValueError):  # e.g. arrays
        return False
