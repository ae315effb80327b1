"""Class labels: the checks of ``classes`` and ``y``, and the encoding of labels as the core's
label indices 0..c-1 (positions in the sorted ``classes_``).

The encoding reads one fitted state ``d`` (an estimator's ``__dict__``, see _publish): its
``classes_`` and the ``_label_index`` map built with them, so that a label is encoded for the
model it is handed to even while another thread's fit publishes a new one.
"""

from __future__ import annotations

import numbers

import numpy as np
from sklearn.utils.multiclass import check_classification_targets, unique_labels

__all__ = [
    "check_same_classes",
    "check_targets",
    "class_set",
    "encode",
    "label_to_json",
    "same_class_set",
]


def _label_kinds(values):
    """The types of ``values`` when they are not all numbers or all str (which numpy can sort
    and a model file can store), else None."""
    kinds = {type(v) for v in values}
    if all(issubclass(t, str) for t in kinds) or all(issubclass(t, (numbers.Number, np.bool_)) for t in kinds):
        return None
    return kinds


def _check_label_types(values, name):
    """Labels of mixed kinds (an int among str, None) as a TypeError naming them: numpy cannot
    sort them, and the failure was "'<' not supported between instances of 'int' and 'str'"
    (or, for fit, scikit-learn's "Unknown label type ... regression target"). ``values`` is a
    list of the labels, or an object array (other arrays hold one kind)."""
    if isinstance(values, np.ndarray):
        if values.dtype != object:
            return
        values = values.ravel().tolist()
    kinds = _label_kinds(values)
    if kinds is None:
        return
    names = ", ".join(sorted({t.__name__ for t in kinds}))
    if name == "classes":
        shown = repr([_plain(v) for v in values]) if len(values) <= 20 else f"{len(values)} labels"
        got = f"{shown} (types {names})"
    else:
        got = f"labels of types {names} (e.g. {_distinct([_plain(v) for v in values], 5)})"
    raise TypeError(
        f"{name} must be all numbers (int, float, bool) or all str; got {got}. Convert the labels to one "
        f"kind, e.g. all str with [str(v) for v in {name}]"
    )


def _classes_array(classes):
    """``classes`` as an array, its labels checked for mixed kinds (_check_label_types): a list
    before np.asarray, which turns [1, 'a'] into the strings ['1', 'a'] without a word."""
    if isinstance(classes, (list, tuple)):
        _check_label_types(list(classes), "classes")
    classes = np.asarray(classes)
    _check_label_types(classes, "classes")
    return classes


def class_set(classes, estimator_name):
    """The sorted distinct labels of ``classes`` as a model is built for them (at least 2)."""
    classes = _classes_array(classes)
    if classes.ndim != 1:
        raise ValueError("classes must be a 1-D array of labels")
    classes = unique_labels(classes)
    if len(classes) < 2:
        raise ValueError(f"{estimator_name} needs at least 2 classes; got {len(classes)} class(es): {classes.tolist()}")
    return classes


def same_class_set(classes, classes_):
    """A later chunk's ``classes`` must be the first call's (compared as class sets)."""
    if not np.array_equal(unique_labels(_classes_array(classes)), classes_):
        raise ValueError(f"classes={list(classes)} differs from the classes of the first call {classes_.tolist()}")


def check_same_classes(d, classes):
    """A later learn_one's ``classes`` must be the first call's, as partial_fit requires: a
    different list was silently ignored (a class added later never became one). Compared as
    sets of labels (what the label lookup uses), O(c), since river users may pass it with
    every example; scikit-learn's unique_labels costs far more than a learn_one."""
    try:
        given = classes.tolist() if isinstance(classes, np.ndarray) else classes
        same = set(given) == d["_label_index"].keys()
    except TypeError:  # not a collection of hashable labels
        same = False
    if not same:
        shown = classes.tolist() if isinstance(classes, np.ndarray) else classes
        raise ValueError(f"classes={shown!r} differs from the classes of the first call {d['classes_'].tolist()}")


def check_targets(y):
    """fit's and a first chunk's y: labels of one kind, of a classification problem (later
    chunks need no such check: encode rejects every label outside classes_)."""
    _check_label_types(y, "y")
    check_classification_targets(y)


def encode(y, classes_, label_index):
    """Maps labels to 0..c-1, the indices of ``classes_`` (``label_index`` maps each class to
    its index); raises ValueError naming unseen labels."""
    y = np.asarray(y)
    if y.ndim != 1:
        y = y.ravel()
    try:
        idx = np.searchsorted(classes_, y)
    except TypeError:
        # Labels that numpy cannot order against classes_ (None, or a str among ints, in an
        # object array): looked up one by one, so that the error names them.
        idx = np.array([label_index.get(v, -1) if _hashable(v) else -1 for v in y.tolist()])
        bad = idx < 0
    else:
        idx = np.clip(idx, 0, len(classes_) - 1)
        bad = classes_[idx] != y
    if np.any(bad):
        unseen = _distinct(y[bad].tolist(), 10)
        raise ValueError(
            f"y contains labels not in classes_={classes_.tolist()}: {unseen}. "
            "Pass every class in `classes` on the first partial_fit call."
        )
    return idx.astype(np.int32)


def label_to_json(v):
    if isinstance(v, (np.generic,)):
        v = v.item()
    if isinstance(v, (bool, int, float, str)):
        return v
    raise TypeError(f"class label {v!r} of type {type(v).__name__} cannot be stored in a model file")


def _plain(v):
    """A label as a plain Python value for messages ([1], not [np.int64(1)])."""
    return v.item() if isinstance(v, np.generic) else v


def _hashable(v):
    try:
        hash(v)
    except TypeError:
        return False
    return True


def _distinct(values, most):
    """The first ``most`` distinct values, in order (also for values numpy cannot sort, such as
    None); stops there, so an error about a long chunk of bad labels stays O(len * most)."""
    out = []
    for v in values:
        if v not in out:
            out.append(v)
            if len(out) == most:
                break
    return out
