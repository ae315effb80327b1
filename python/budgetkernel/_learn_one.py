"""Single examples: learn_one / predict_one, and examples given as a dict or a pandas Series.

A dict example is read by key in a fixed order (``_feature_order``: the first dict learned,
or the DataFrame columns fit saw); a Series whose index names features is read like a dict.
learn_one is the true-streaming path: a built model takes one dict lookup for the label and
the core's own row check, nothing else.
"""

from __future__ import annotations

import numbers
import sys
from collections.abc import Mapping

import numpy as np
import scipy.sparse as sp

from ._labels import _hashable, check_same_classes

__all__ = ["_SingleExampleMixin"]


class _SingleExampleMixin:
    # learn_one adds a point to prequential_curve_ when the examples seen since its last point
    # reach max(1, examples at that point // _CURVE_SPACING): every one of the first 32
    # examples, then about 75 points per tenfold of the stream (~400 over 10^6 examples), so the
    # curve stays small however long one streams.
    _CURVE_SPACING = 32

    def _model_names(self):
        """The key order dict examples use: learn_one's first dict, else the DataFrame column
        names fit saw; None for a model fitted on arrays (or no model yet)."""
        names = getattr(self, "_feature_order", None)
        if names is None and hasattr(self, "_model"):
            fn = getattr(self, "feature_names_in_", None)
            names = None if fn is None else list(fn)
        return names

    def _series_as_dict(self, x):
        """A pandas Series as a dict of its index -> value when its index names features, so
        that it is used by name like a dict (not by position, which silently disagreed with the
        same row as a DataFrame or a dict); None: use it by position. By name when the model
        has feature names and every index label is one of them, or the labels are all str (an
        unknown one is then an error); before any learning, when the labels are all str (they
        become the feature names, as a DataFrame's columns do)."""
        pd = sys.modules.get("pandas")  # a Series exists only if pandas was imported
        if pd is None or not isinstance(x, pd.Series):
            return None
        keys = x.index.tolist()
        names = self._model_names()
        all_str = all(isinstance(k, str) for k in keys)
        if names is None:
            by_name = all_str and not hasattr(self, "_model")
        else:
            known = set(names)
            by_name = all_str or all(_hashable(k) and k in known for k in keys)
        if not by_name:
            return None
        if not x.index.is_unique:
            twice = sorted(set(map(str, x.index[x.index.duplicated()])))
            raise ValueError(f"the Series' index names a feature twice: {twice}")
        return dict(zip(keys, x.tolist()))

    def _as_vector(self, x):
        """One example as a float64 vector, and the key order used when x is a dict."""
        if type(x) is np.ndarray and x.dtype == np.float64 and x.ndim == 1 and x.flags.c_contiguous:
            return x, None
        if not isinstance(x, Mapping):
            as_dict = self._series_as_dict(x)
            if as_dict is not None:
                x = as_dict
        if isinstance(x, Mapping):
            names = getattr(self, "_feature_order", None)
            pos = getattr(self, "_feature_pos", None)
            if names is None:
                if hasattr(self, "_model"):
                    if getattr(self, "feature_names_in_", None) is None:
                        raise ValueError(
                            "this model was fitted on arrays without feature names: pass x as a 1-D array "
                            f"of {self.n_features_in_} values"
                        )
                    names = list(self.feature_names_in_)
                else:  # before the first learn_one: this dict's keys (recorded once a model exists)
                    names = list(x.keys())
                pos = {k: i for i, k in enumerate(names)}
            v = np.zeros(len(names))
            for k, val in x.items():
                i = pos.get(k) if _hashable(k) else None
                if i is None:
                    raise ValueError(f"unknown feature {k!r}; the model was built with features {names}")
                v[i] = val
            return v, names
        if sp.issparse(x):  # a row of a sparse matrix (S[i] is 1 x d): the example it holds
            if x.ndim == 2 and x.shape[0] != 1:
                raise ValueError(f"x must be one example; got a sparse matrix of shape {x.shape}")
            x = x.toarray().ravel()
        v = np.asarray(x)
        if np.iscomplexobj(v):  # as fit/partial_fit: no silent drop of the imaginary part
            raise ValueError("complex data is not supported")
        v = v.astype(np.float64, copy=False)
        if v.ndim != 1:
            raise ValueError(f"x must be one example (1-D); got shape {v.shape}")
        return np.ascontiguousarray(v), None

    def learn_one(self, x, y, classes=None):
        """Scores and learns one example (the true-streaming path).

        Works as the last step of a river pipeline (``preprocessing.StandardScaler() | clf``):
        river needs nothing from this package but ``learn_one``/``predict_one`` and the
        ``_supervised``/``_multiclass`` flags. river's ``evaluate.progressive_val_score`` also
        asks ``isinstance(model, river.base.Classifier)``, which a package without river
        cannot answer: register the class once, ``river.base.Classifier.register(type(clf))``.

        Parameters
        ----------
        x : 1-D array-like, dict of feature name -> value, or pandas Series
            A dict is read by key (missing keys are 0); its keys, fixed by the first dict
            learned, must be str or int (what a model file can store). A Series whose index
            names the model's features is read by name, like a dict.
        y : label
        classes : array-like, default=None
            All labels, needed on the first call unless ``y`` is a bool. river never passes
            it: call ``learn_one(x, y, classes=[...])`` once yourself, on the estimator or on
            the pipeline (``pipeline.learn_one(x, y, classes=[...])`` forwards it to this
            step), before streaming non-bool labels.

        Returns
        -------
        self

        Notes
        -----
        ``prequential_curve_`` gets a point (examples, mistakes) after the first learned
        example and then whenever the examples learned one by one since its last point reach
        1/32 of the examples seen at that point (every example up to 32, then ~75 points per
        tenfold of the stream), so that it stays small on an endless stream.
        """
        if "_model" not in self.__dict__ and self._publish_new(lambda new: new._first_one(x, y, classes)):
            return self  # the first example built the model (on a private copy, see _publish)
        self._check_params_unchanged()
        if classes is not None:
            check_same_classes(self.__dict__, classes)
        v, _ = self._as_vector(x)
        self._learn_one(v, y)
        return self

    def _first_one(self, x, y, classes):
        """learn_one's first example: builds the model from it and learns it."""
        v, names = self._as_vector(x)
        if classes is None:
            if isinstance(y, (bool, np.bool_)):
                classes = [False, True]
            else:
                raise ValueError(
                    f"classes must be passed on the first call to learn_one unless labels are bool (got y={y!r}): "
                    "call learn_one(x, y, classes=[...every label...]) once; in a river pipeline, "
                    "pipeline.learn_one(x, y, classes=[...]) forwards it to this step"
                )
        X1 = _first_row(v, names)
        self._init_model(X1, classes, feature_order=names)
        self._set_first_features(X1, names)
        self._learn_one(v, y)

    def _set_first_features(self, X1, names):
        """n_features_in_ and feature_names_in_ of a model built from learn_one's first example."""
        self.n_features_in_ = X1.shape[1]
        # scikit-learn's feature_names_in_ holds str names only; int keys keep their order in
        # _feature_order (which save/load and pickling carry exactly).
        if names is not None and all(isinstance(k, str) for k in names):
            self.feature_names_in_ = np.asarray(names, dtype=object)
        elif hasattr(self, "feature_names_in_"):
            del self.feature_names_in_

    def _learn_one(self, v, y):
        d = self.__dict__  # label map and model of one state (see _publish)
        try:  # the label's index, inline: this is the per-example path
            yi = d["_label_index"][y]
        except (KeyError, TypeError):
            raise ValueError(f"label {y!r} is not in classes_={d['classes_'].tolist()}") from None
        model = d["_model"]
        try:
            model.learn_one(v, yi)  # the core checks x's length (and says what it expected)
        except MemoryError as e:
            self._explain_memory_error(e, model)
        # The curve's sampling: see learn_one's Notes (one counter, no per-example query).
        due = d.get("_curve_due", 1) - 1
        if due <= 0:
            c = model.counters
            d["prequential_curve_"].append((c["examples"], c["mistakes"]))
            due = max(1, c["examples"] // self._CURVE_SPACING)
        d["_curve_due"] = due

    def predict_one(self, x):
        """Predicted label of one example; works before any learning (None without classes)."""
        v, _ = self._as_vector(x)
        d = self.__dict__
        if "_model" not in d:
            return None
        n = d["n_features_in_"]
        if v.shape[0] != n:  # the chunk predict below would say "X has ..., expected ..."
            raise ValueError(f"x has {v.shape[0]} features, but the model was fitted with {n} (n_features_in_)")
        return d["classes_"][d["_model"].predict(v.reshape(1, -1))[0]]


def _first_row(v, names):
    """learn_one's first example v (dict keys ``names``, or None) as the 1 x d chunk that builds
    the model, checked: keys a model file can store, at least one feature, finite values."""
    if names is not None:
        for k in names:
            if isinstance(k, (bool, np.bool_)) or not isinstance(k, (str, numbers.Integral)):
                raise ValueError(
                    f"feature name {k!r} of type {type(k).__name__} cannot be stored in a model file: "
                    "dict keys must be str or int"
                )
    X1 = v.reshape(1, -1)
    if X1.shape[1] == 0:
        raise ValueError("x has 0 features")
    if not np.all(np.isfinite(X1)):
        raise ValueError("x contains NaN or infinity")
    return X1
