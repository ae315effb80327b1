"""combine: the weighted average of several fitted models of one estimator class, as one model.

The work is the core's (``budgetkernel::combine``, learners/combine.hpp): the union of the
models' support vectors with weighted coefficients, reduced to the budget by the learner's own
maintenance. This module checks the estimators, maps a classifier's classes onto the union of
their labels (a regressor has none: learners/combine_regression.hpp), and wraps the combined
core model in an estimator of the same class.
"""

from __future__ import annotations

import numbers

import numpy as np
from sklearn.base import clone
from sklearn.utils.validation import check_is_fitted

from ._labels import class_set

__all__ = ["combine"]

# Parameters that never reach the core model: models that differ only in these combine.
_PYTHON_ONLY = frozenset({"n_epochs", "shuffle", "random_state"})

# Why the estimators whose core has no combine are not combined (else a generic message).
_NOT_COMBINED = {
    "KRLSRegressor": (
        "KRLS's coefficients are not free: they are the least-squares solution alpha = (K + lam P)^-1 beta of "
        "its state (the inverses, P and beta), re-solved at every step, and a weighted average of models is "
        "the solution of no such state (the next partial_fit would replace it), while the union of their "
        "dictionaries breaks the approximate linear independence its inverse relies on. Combine "
        "KLMSRegressor or BudgetedSGDRegressor models, or train one KRLS on the pooled data"
    ),
    "SlidingWindowKRLSRegressor": (
        "its model is kernel ridge regression on the last `budget` examples of one stream, and an average of "
        "several windows is no window: the next step would re-solve (K + lam I)^-1 y on a window and drop "
        "the average. Combine KLMSRegressor or BudgetedSGDRegressor models instead"
    ),
}


def combine(models, weights=None, budget=None, *, base=None):
    """The weighted average of fitted models of one class, as a model of that class.

    The result's decision function (a regressor's prediction) is ``sum_k w_k f_k`` with the
    weights normalised to sum 1: exactly, when the union of the models' support vectors fits
    the budget (an SV that several models hold is kept once, its coefficients added);
    otherwise the union is reduced to the budget by the learner's own maintenance (merging,
    projection, removal, ...), the most important SVs kept first, and the weight degradation
    of that reduction is reported. A classifier's classes are the union of the models'. It keeps learning (``partial_fit``),
    saves, loads and pickles like any model. For a :class:`TwinVectorMachine` the twins are
    pooled with their counts, reduced by the TVM's own merging, and its exact SVM is retrained
    on them (so the result is that SVM, not the average); a :class:`ReservoirSVC` pools the
    reservoirs and, over the budget, draws a sample of their union as reservoirs merge. The
    exact :class:`IncrementalSVC` is not combined: ``budgetkernel.dask.fit`` trains it as a
    cascade.

    Regressors combine the same way, without classes: a :class:`BudgetedSGDRegressor`'s union
    is reduced by its maintenance, its intercept is averaged too; a :class:`BudgetedPARegressor`'s
    by its BPA variant's rule (the SV whose removal costs least goes, projected onto its nearest
    neighbour or the other SVs for ``'nn'`` / ``'project'``), an averaged one keeping its average
    exactly (the removed SVs retire with their sums); a :class:`KLMSRegressor`
    keeps the whole union (no budget), which with ``epsilon > 0`` (QKLMS) is quantised by
    QKLMS's own rule (a centre within ``epsilon`` of a kept one adds its coefficient to it; the
    report's degradation sums those folds). :class:`KRLSRegressor` and
    :class:`SlidingWindowKRLSRegressor` are not combined (a TypeError says why: their
    coefficients are the solution of a least-squares state that an average does not have).

    Parameters
    ----------
    models : sequence of fitted estimators of one class
        With the same hyper-parameters (``random_state`` aside) and number of features. The
        features are averaged by position, so models fitted with feature names (a DataFrame's
        columns, ``learn_one``'s dict keys) must have the same names in the same order (a model
        fitted on arrays takes the others' order; the result has the names); a classifier's
        labels must be of one kind (all numbers, all str or all bool), else a ValueError.
    weights : array-like of shape (n_models,), default=None
        Non-negative, finite, not all zero (their sum may overflow: only their ratios count).
        None: the examples each model saw (``n_seen_``).
    budget : int, default=None
        Support vectors the result keeps; None: the models' own budget. Its ``budget``
        parameter is set to it.
    base : estimator, default=None
        The model every one of ``models`` continued from (iterative parameter mixing, as
        :func:`budgetkernel.dask.fit` does): the result's counters then count base's
        examples once (Pegasos' step size depends on that count).

    Returns
    -------
    estimator
        A fitted estimator of the models' class, with ``combine_report_``: a dict with the
        ``degradation`` (sum of ||Delta w||^2 of the reduction), ``union_size`` (distinct SVs),
        ``duplicates`` (SVs held by several models) and ``reductions`` (maintenance steps).

    Examples
    --------
    >>> import numpy as np
    >>> from budgetkernel import BudgetedSGDClassifier, combine, datasets
    >>> X, y = datasets.checkerboard(2000, random_state=0)
    >>> parts = [BudgetedSGDClassifier(budget=50, gamma=2.0).fit(X[i::2], y[i::2]) for i in range(2)]
    >>> mixed = combine(parts, weights=[0.5, 0.5], budget=100)
    >>> f = 0.5 * parts[0].decision_function(X) + 0.5 * parts[1].decision_function(X)
    >>> bool(np.allclose(mixed.decision_function(X), f))
    True

    A regressor's predictions average the same way:

    >>> from budgetkernel import BudgetedSGDRegressor
    >>> Xr = np.random.default_rng(0).uniform(-1, 1, size=(1000, 2))
    >>> yr = np.sin(3 * Xr[:, 0]) + Xr[:, 1]
    >>> regs = [BudgetedSGDRegressor(budget=40, gamma=2.0).fit(Xr[i::2], yr[i::2]) for i in range(2)]
    >>> mixed = combine(regs, weights=[0.25, 0.75], budget=80)
    >>> bool(np.allclose(mixed.predict(Xr), 0.25 * regs[0].predict(Xr) + 0.75 * regs[1].predict(Xr)))
    True
    """
    models = _check_models(models)
    template = models[0]
    if _is_regressor(template):  # one output, no classes (and no class maps)
        classes, maps, n_classes = None, [], 0
    else:
        classes = _union_classes(models)
        maps = [np.searchsorted(classes, m.classes_).astype(np.int32).tolist() for m in models]
        n_classes = len(classes)
    w = [] if weights is None else _check_weights(weights, len(models))
    b = -1 if budget is None else _check_budget(budget, template)
    base_core = None
    if base is not None:
        _check_models([template, base])
        base_core = base._model
    cores = [m._model for m in models]
    model, report = type(cores[0]).combine(cores, w, b, maps, n_classes, base_core)
    return _wrap(models, model, classes, budget, report)


def _check_models(models):
    if isinstance(models, (str, bytes)) or not hasattr(models, "__len__"):
        raise TypeError("models must be a sequence of fitted estimators")
    models = list(models)
    if not models:
        raise ValueError("combine needs at least one model")
    cls = type(models[0])
    if not hasattr(cls, "_core_class"):
        raise TypeError(f"combine takes budgetkernel estimators, not {cls.__name__}")
    for i, m in enumerate(models):
        if type(m) is not cls:
            raise TypeError(f"models[{i}] is a {type(m).__name__}, not a {cls.__name__}: combine takes one class")
        check_is_fitted(m, "_model")
        m._check_params_unchanged()
        if not hasattr(type(m._model), "combine"):
            why = _NOT_COMBINED.get(cls.__name__)
            raise TypeError(f"{cls.__name__} models cannot be combined" + (f": {why}" if why else ""))
    ref = _compared_params(models[0])
    for i, m in enumerate(models[1:], 1):
        for k, v in _compared_params(m).items():
            if not _same(v, ref.get(k)):
                raise ValueError(f"models[{i}] has {k}={v!r}, models[0] {k}={ref.get(k)!r}: combine needs equal parameters")
        if m.n_features_in_ != models[0].n_features_in_:
            raise ValueError(
                f"models[{i}] has {m.n_features_in_} features, models[0] {models[0].n_features_in_}"
            )
    _feature_names(models)
    _key_order(models)
    return models


def _compared_params(model):
    """The parameters that must agree: a BSGD model's 'auto' maintenance as the rule it
    resolves to, so that a default model and one naming that rule combine."""
    params = {k: v for k, v in model.get_params(deep=False).items() if k not in _PYTHON_ONLY}
    if hasattr(model, "_maintenance"):
        params["maintenance"] = model._maintenance()
    return params


def _feature_names(models):
    return _common_names(models, lambda m: getattr(m, "feature_names_in_", None), "feature names")


def _key_order(models):
    return _common_names(models, lambda m: m._feature_order, "learn_one dict keys")


def _common_names(models, names_of, what):
    """The feature names the models share (None: none has any). The core stores an SV's
    features by position, so models that name their columns differently (another order, other
    names) would be averaged feature by feature under different names: refused. A model without
    names (fitted on arrays) takes the others' positions, as predict on an array does."""
    common, first = None, None
    for i, m in enumerate(models):
        if names_of(m) is None:
            continue
        names = list(names_of(m))
        if common is None:
            common, first = names, i
        elif names != common:
            raise ValueError(
                f"models[{i}] was fitted with {what} {names}, models[{first}] with {common}: combine averages "
                "features by position, so the models must name them in the same order (reorder the columns "
                "of one model's data, or the keys of its dicts, and fit it again)"
            )
    return None if first is None else names_of(models[first])


def _is_regressor(est):
    from ._regressor import OnlineRegressorMixin

    return isinstance(est, OnlineRegressorMixin)


def _same(a, b):
    try:
        return bool(a == b)
    except (TypeError, ValueError):  # arrays (class_weight dicts of arrays, ...)
        return a is b


def _union_classes(models):
    """The sorted union of the models' classes, their kinds checked first: np.concatenate
    would turn int and str labels all into str, and merge bool True with int 1."""
    kinds = [_label_kind(m.classes_) for m in models]
    for i, kind in enumerate(kinds):
        if kind != kinds[0]:
            raise ValueError(
                f"models[{i}] has {kind} classes {np.asarray(models[i].classes_).tolist()}, models[0] {kinds[0]} "
                f"classes {np.asarray(models[0].classes_).tolist()}: combine takes models whose labels are of one "
                "kind (all numbers, all str or all bool)"
            )
    return class_set(np.concatenate([np.asarray(m.classes_) for m in models]), "combine")


def _label_kind(classes):
    """'bool', 'str' or 'number': the kind of a fitted model's classes_ (one kind: class_set)."""
    values = np.asarray(classes)
    if values.dtype == bool:
        return "bool"
    if values.dtype.kind in "US":
        return "str"
    if values.dtype == object:  # (one kind, checked when the model was built)
        first = values.ravel()[0]
        return "str" if isinstance(first, str) else "bool" if isinstance(first, (bool, np.bool_)) else "number"
    return "number"


def _check_weights(weights, n):
    w = np.asarray(weights, dtype=np.float64)
    if w.shape != (n,):
        raise ValueError(f"weights must have one entry per model ({n}), got shape {w.shape}")
    if not np.all(np.isfinite(w)) or np.any(w < 0):
        raise ValueError("weights must be finite and non-negative")
    if not np.any(w > 0):
        raise ValueError("weights must not all be zero")
    with np.errstate(over="ignore"):
        total = w.sum()
    if not np.isfinite(total):  # the core normalises by the sum: scale by a power of 2 (exact)
        w = np.ldexp(w, -np.frexp(w.max())[1])
    return w.tolist()


def _check_budget(budget, template):
    if isinstance(budget, bool) or not isinstance(budget, numbers.Integral) or budget < 1:
        raise ValueError(f"budget must be a positive integer or None, got {budget!r}")
    if "budget" not in template.get_params(deep=False):
        raise ValueError(f"{type(template).__name__} keeps no budget: pass budget=None")
    clone(template).set_params(budget=int(budget))._validate_params()  # the estimator's own limits (2^62, ...)
    return int(budget)


def _wrap(models, model, classes, budget, report):
    """An estimator of the models' class and parameters (models[0]'s) around the combined core
    model, with the feature names any of them has (_common_names)."""
    template = models[0]
    est = clone(template)
    if budget is not None:
        est.set_params(budget=int(budget))
    est._built_params = est.get_params(deep=False)
    est._params_changed = False
    if classes is not None:  # a classifier (a regressor has no classes)
        est.classes_ = classes
        est._label_index = {c: i for i, c in enumerate(classes.tolist())}
    est.n_features_in_ = template.n_features_in_
    names = _feature_names(models)
    if names is not None:
        est.feature_names_in_ = names.copy()
    est._set_feature_order(_key_order(models))
    for k, v in template._extra_fitted().items():
        setattr(est, k, v)
    if classes is not None:  # the classifiers' prequential curve (a regressor's errors are in its counters)
        c = model.counters
        est.prequential_curve_ = [(0, 0)] + ([(c["examples"], c["mistakes"])] if c["examples"] else [])
        if len(models) == 1 and model.to_bytes() == template._model.to_bytes():  # combine([m]): a copy, curve included
            est.prequential_curve_ = list(template.prequential_curve_)
    est._model = model
    est.combine_report_ = dict(report)
    return est
