"""Persistence: save / load of model files, and pickling.

A model file is the core's checksummed format (it loads in C++ with
``budgetkernel::load_model``); the estimator's Python state (parameters, classes_, feature
names, the prequential curve) travels in its ``metadata`` field as JSON. ``load`` also
rebuilds an estimator from a file a C++ program wrote (no metadata) from the learner fields it
holds. Pickling carries the model as the same bytes.
"""

from __future__ import annotations

import importlib
import json
import os

import numpy as np
from sklearn.utils.multiclass import unique_labels
from sklearn.utils.validation import check_is_fitted

from ._files import write_atomically
from ._labels import label_to_json
from ._native import core as _core

__all__ = ["_PersistenceMixin", "load", "register"]

_FORMAT_TAG = "budgetkernel.estimator/1"
# Estimator classes that `load` can rebuild, filled by each module defining one.
_REGISTRY: dict[str, type] = {}
# The modules whose estimators register themselves. ``import budgetkernel`` imports them on
# first use only, so load() imports them all before it looks a file's estimator up.
_ESTIMATOR_MODULES = (
    "pegasos", "pegasos_regressor", "passive_aggressive", "pa_regressor", "kaf", "perceptron", "bogd",
    "sparse_pa", "svm",
)


def _registry():
    """_REGISTRY with every estimator of the package in it."""
    for name in _ESTIMATOR_MODULES:
        importlib.import_module(f"budgetkernel.{name}")
    return _REGISTRY


def register(cls):
    """Class decorator: lets :func:`load` and pickling find the estimator by name."""
    _REGISTRY[cls.__name__] = cls
    return cls


class _PersistenceMixin:
    """save and pickling of an OnlineClassifierMixin (its model as the core's bytes).

    An application that trains models can record its own entries in the model file: a dict
    of JSON values set as the estimator's ``_app_metadata`` is written by save() after the
    estimator's own entries (whose names it may not use), and load() gives back every entry
    of a file that is not the estimator's own in ``_app_metadata``. The command line records
    there how it read its training file (``cli/_training.py``); an estimator without it
    writes the estimator's entries only."""

    def __getstate__(self):
        state = super().__getstate__()
        state = dict(state)
        state.pop("_lock", None)  # a lock cannot be pickled; each copy makes its own
        model = state.pop("_model", None)
        if model is not None:
            state["_model_bytes"] = model.to_bytes()
        return state

    def __setstate__(self, state):
        state = dict(state)
        data = state.pop("_model_bytes", None)
        super().__setstate__(state)
        if data is not None:
            try:
                model = self._core_class().from_bytes(data)
            except RuntimeError as e:  # the core's "model file: ..." errors, as load() raises them
                raise ValueError(f"cannot unpickle {type(self).__name__}: {e}") from None
            problem = self._model_mismatch(model)
            if problem is not None:
                raise ValueError(f"cannot unpickle {type(self).__name__}: {problem}")
            self._model = model

    def _model_mismatch(self, model, loaded=False):
        """None when the core ``model`` agrees with the estimator's classes_ and
        n_features_in_, else what disagrees (``loaded``: worded for load, else for unpickling).
        Regressors (_regressor.py) compare n_features_in_ alone."""
        classes = len(getattr(self, "classes_", ()))
        if model.n_classes == classes and model.n_features == getattr(self, "n_features_in_", None):
            return None
        if loaded:
            return (
                f"the metadata ({classes} classes, {self.n_features_in_} features) disagrees with "
                f"the model ({model.n_classes} classes, {model.n_features} features)"
            )
        return (
            f"its model ({model.n_classes} classes, {model.n_features} features) disagrees with classes_ / "
            "n_features_in_"
        )

    def save(self, path):
        """Writes the model (enough to predict and to resume training) to ``path``.

        The file is the library's versioned binary format; it loads in C++
        (``budgetkernel::load_model``) and with :func:`budgetkernel.load`.
        """
        with self._state_lock():  # metadata and model of one state (not halfway through a fit)
            self._save(path)

    def _save(self, path):
        check_is_fitted(self, "_model")
        self._check_params_unchanged()
        meta = {
            "format": _FORMAT_TAG,
            "estimator": type(self).__name__,
            "params": self._saved_params(),
            **self._label_meta(),
            "n_features_in": int(self.n_features_in_),
            # Both hold str (or, for dict keys, int) names only, which JSON gives back exactly.
            "feature_names_in": [str(f) for f in getattr(self, "feature_names_in_", [])] or None,
            "feature_order": getattr(self, "_feature_order", None),
            "fitted": {k: _jsonable(v) for k, v in self._extra_fitted().items()},
            **self._curve_meta(),
        }
        app = self.__dict__.get("_app_metadata") or {}
        if not _OWN_ENTRIES.isdisjoint(app):
            raise ValueError(f"_app_metadata may not hold the estimator's own entries {sorted(_OWN_ENTRIES & set(app))}")
        meta.update(app)
        self._model.metadata = json.dumps(meta, default=_jsonable).encode()
        write_atomically(path, self._model.to_bytes())

    def _label_meta(self):
        """The metadata entries of the labels (a classifier's classes_; none for a regressor)."""
        return {
            "classes": [label_to_json(c) for c in self.classes_],
            "classes_dtype": self.classes_.dtype.str if self.classes_.dtype != object else "object",
        }

    def _curve_meta(self):
        """The metadata entry of the prequential curve (a classifier's; none for a regressor)."""
        return {"curve": [list(map(int, p)) for p in self.prequential_curve_]}

    def _restore_labels(self, meta):
        """classes_ and the label map from _label_meta's entries (load)."""
        dtype = meta["classes_dtype"]
        self.classes_ = np.asarray(meta["classes"], dtype=None if dtype == "object" else np.dtype(dtype))
        if self.classes_.ndim != 1:
            raise ValueError("classes must be a list of labels")
        # predict maps label indices through classes_ and _encode searches it: it must be what fit
        # builds, sorted and distinct (also after the dtype conversion: '|b1' collapsed [0, 1, 2]).
        if len(self.classes_) < 2 or not np.array_equal(unique_labels(self.classes_), self.classes_):
            raise ValueError("classes must be at least 2 distinct labels in sorted order")
        self._label_index = {c: i for i, c in enumerate(self.classes_.tolist())}

    def _restore_curve(self, meta):
        """prequential_curve_ from _curve_meta's entry (load)."""
        self.prequential_curve_ = [tuple(p) for p in meta.get("curve", [(0, 0)])]

    def _restore_from_model(self, model):
        """The labels and curve of a model file without metadata (C++'s label indices)."""
        self.classes_ = np.arange(model.n_classes)
        self._label_index = {c: i for i, c in enumerate(self.classes_.tolist())}
        c = model.counters
        self.prequential_curve_ = [(0, 0)] + ([(c["examples"], c["mistakes"])] if c["examples"] else [])

    def _extra_fitted(self):
        """Fitted attributes besides the core model that a subclass needs back on load."""
        return {}

    def _saved_params(self):
        """get_params() as save() writes them. A numpy RandomState / Generator as random_state
        (which JSON cannot hold: json.dumps failed with "Circular reference detected") is
        written as the seed the model drew from it, as a model file written by C++ gives it
        (None for an estimator whose model has no seed: random_state only shuffled fit's rows).
        The model's own generator state is in the file, so the loaded model still predicts and
        resumes exactly."""
        params = self.get_params(deep=False)
        if isinstance(params.get("random_state"), (np.random.RandomState, np.random.Generator)):
            seed = getattr(getattr(self._model, "params", None), "seed", None)  # the core's Params
            params["random_state"] = None if seed is None else int(seed)
        return params

    @classmethod
    def _params_from_file(cls, params):
        """The constructor parameters of a file's ``params`` entry (what _saved_params wrote)."""
        return params


def _jsonable(v):
    if isinstance(v, np.generic):
        return v.item()
    if isinstance(v, np.ndarray):
        return v.tolist()
    return v


def load(path):
    """Loads an estimator written by ``save``; it predicts and resumes training exactly.

    A model file without the Python package's metadata (one a C++ program wrote, whose
    ``metadata`` it left empty) is rebuilt from the learner fields it holds, for every
    learner: the estimator of that learner (a Twin Vector Machine in its random-baseline mode
    is a :class:`ReservoirSVC`) with the file's kernel and parameters, classes 0..c-1 (the
    C++ label indices; for two classes, 1 is the positive class) and n_features from the
    file, no feature names. Parameters that only Python knows (``n_epochs``, ``shuffle``,
    SparsePAClassifier's ``target_svs`` / ``stream_length``) take their defaults; the seed
    becomes ``random_state``. It predicts and resumes training exactly as the core learner
    would. A file with parameters that its estimator does not take (which a C++ program can
    set: e.g. a TVM with ``m2`` infinite) raises ValueError naming the parameter and the
    core class whose ``from_bytes`` reads the file; so does a learner this version does not
    know.

    Raises
    ------
    ValueError
        If the file is not a budgetkernel model, is truncated or corrupt, or was written
        by an unknown estimator.

    Examples
    --------
    >>> import numpy as np
    >>> from budgetkernel import BudgetedSGDClassifier, datasets, load
    >>> X, y = datasets.checkerboard(2000, random_state=0)
    >>> clf = BudgetedSGDClassifier(budget=50, gamma=2.0, random_state=0).fit(X, y)
    >>> clf.save("model.bkm")
    >>> restored = load("model.bkm")
    >>> type(restored).__name__, restored.n_support_
    ('BudgetedSGDClassifier', 50)

    Both copies then learn the same next chunk to the same model, bit for bit:

    >>> X_next, y_next = datasets.checkerboard(1000, random_state=1)
    >>> a = clf.partial_fit(X_next, y_next).decision_function(X)
    >>> b = restored.partial_fit(X_next, y_next).decision_function(X)
    >>> bool(np.array_equal(a, b))
    True
    """
    with open(path, "rb") as f:
        data = f.read()
    where = f"cannot load {os.fspath(path)!r}"
    try:
        info = _core.load_model_info(data)
        raw = info["metadata"].decode()
        meta = json.loads(raw or "{}")
    except (RuntimeError, ValueError, UnicodeDecodeError) as e:
        raise ValueError(f"{where}: {e}") from None
    if not raw:
        return _load_core_file(data, info["learner"], where)
    if not isinstance(meta, dict) or meta.get("format") != _FORMAT_TAG:
        raise ValueError(f"{where}: not written by a budgetkernel estimator")
    cls = _registry().get(meta.get("estimator"))
    if cls is None:
        raise ValueError(f"{where}: unknown estimator {meta.get('estimator')!r}")
    try:
        est = _restore_metadata(cls, meta)
        est._model = cls._core_class().from_bytes(data)
    except (RuntimeError, ValueError, MemoryError) as e:
        raise ValueError(f"{where}: {e}") from None
    except (KeyError, TypeError, AttributeError) as e:
        raise ValueError(f"{where}: inconsistent metadata ({type(e).__name__}: {e})") from None
    problem = est._model_mismatch(est._model, loaded=True)
    if problem is not None:
        raise ValueError(f"{where}: {problem}")
    return est


def _load_core_file(data, learner, where):
    """load() of a file without metadata: the estimator whose class declares the file's learner
    kind (``_learner_kind``) and reads its parameters back (``_params_from_core``). Classes
    that share a learner kind (and so its core class: TwinVectorMachine and ReservoirSVC)
    tell their models apart there: ``_params_from_core`` returns None for another's."""
    classes = list(dict.fromkeys(_registry().values()))
    # a class driving more than one core learner lists every kind in _learner_kinds (KLMSRegressor)
    readers = [cls for cls in classes if learner in getattr(cls, "_learner_kinds", (getattr(cls, "_learner_kind", None),))]
    if readers:
        try:
            model = readers[0]._core_class().from_bytes(data)
            for cls in readers:
                found = cls._params_from_core(model)
                if found is not None:
                    return _restore_from_core(cls, model, *found)
        except (RuntimeError, ValueError, MemoryError) as e:
            raise ValueError(f"{where}: {e}") from None
        names = ", ".join(cls.__name__ for cls in readers)
        raise ValueError(f"{where}: a '{learner}' model that none of {names} can be rebuilt from")
    # every estimator declares its learner kind (a test checks it), so only a file of a
    # learner this version does not know gets here
    raise ValueError(f"{where}: no estimator of this version reads a '{learner}' model")


def _restore_from_core(cls, model, params, fitted):
    """An estimator of class cls around a core model read from a file without metadata."""
    est = cls(**params)
    try:
        est._validate_params()  # parameters the estimator could not have been built with: an error
    except ValueError as e:
        raise ValueError(
            f"its '{cls._learner_kind}' learner has parameters that {cls.__name__} does not take ({e}); read it "
            f"with budgetkernel._native.core.{type(model).__name__}.from_bytes(data) (the core learner)"
        ) from None
    est._built_params = est.get_params(deep=False)
    est._params_changed = False
    est._restore_from_model(model)
    est.n_features_in_ = int(model.n_features)
    est._set_feature_order(None)
    for k, v in fitted.items():
        setattr(est, k, v)
    est._model = model
    return est


# The metadata entries save() writes of the estimator itself (a regressor has no classes and
# no curve); every other entry of a file is an application's (_app_metadata).
_OWN_ENTRIES = frozenset({
    "format", "estimator", "params", "classes", "classes_dtype", "n_features_in", "feature_names_in",
    "feature_order", "fitted", "curve",
})

# fitted attributes that save() writes in their own metadata entries, never in "fitted"
_RECORDED_ELSEWHERE = frozenset({"classes_", "n_features_in_", "feature_names_in_", "prequential_curve_"})


def _restore_metadata(cls, meta):
    """An unfitted estimator of class cls with the fitted attributes that save() recorded."""
    est = cls(**cls._params_from_file(dict(meta["params"])))
    est._built_params = est.get_params(deep=False)
    est._params_changed = False
    est._restore_labels(meta)
    est.n_features_in_ = int(meta["n_features_in"])
    order = meta.get("feature_order") or None
    if order is not None and not all(isinstance(k, (str, int)) and not isinstance(k, bool) for k in order):
        raise ValueError("feature_order must be a list of str or int names")
    # feature_names_in_ only for str names (files written before this rule stored int dict
    # keys as str there: the key order itself keeps their type)
    if meta.get("feature_names_in") and (order is None or all(isinstance(k, str) for k in order)):
        est.feature_names_in_ = np.asarray(meta["feature_names_in"], dtype=object)
    est._set_feature_order(order)
    for k, v in meta.get("fitted", {}).items():
        # only plain fitted values such as gamma_ (what _extra_fitted writes): never a method,
        # property or private attribute, nor one that save() records elsewhere
        plain = isinstance(k, str) and k.endswith("_") and not k.startswith("_") and not hasattr(cls, k)
        if not plain or k in _RECORDED_ELSEWHERE:
            raise ValueError(f"unexpected fitted attribute {k!r}")
        setattr(est, k, v)
    est._validate_params()  # parameters the estimator could not have been built with
    est._restore_curve(meta)
    app = {k: v for k, v in meta.items() if k not in _OWN_ENTRIES}
    if app:
        est._app_metadata = app
    return est
