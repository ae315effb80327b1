"""Shared machinery of the online classifiers: validation, labels, streaming, persistence.

Every estimator is a thin scikit-learn style shell around one learner object of the C++
core (``budgetkernel._core``). Input is validated here once per chunk; the chunk itself
runs in C++ with the GIL released.
"""

from __future__ import annotations

import contextlib
import json
import numbers
import os
import sys
import threading
from collections.abc import Mapping

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.multiclass import check_classification_targets, unique_labels
from sklearn.utils.validation import check_is_fitted, check_random_state, validate_data

from ._files import write_atomically
from ._native import core as _core

__all__ = ["OnlineClassifierMixin", "load"]

# The kernels' names, as the core defines them (kernel.hpp).
_KERNELS = _core.BSGDParams.choices["kernel"]
_FORMAT_TAG = "budgetkernel.estimator/1"
# Estimator classes that `load` can rebuild, filled by each module defining one.
_REGISTRY: dict[str, type] = {}


def register(cls):
    """Class decorator: lets :func:`load` and pickling find the estimator by name."""
    _REGISTRY[cls.__name__] = cls
    return cls


def _check_positive(name, value, *, integer=False, allow_none=False):
    if value is None and allow_none:
        return
    kind = numbers.Integral if integer else numbers.Real
    # Integers are compared as Python ints (np.isfinite rejects ints beyond 64 bits), and
    # capped at 2^62 so that the core's 64-bit fields take them (the core caps sizes further).
    ok = not isinstance(value, bool) and isinstance(value, kind)
    if ok and integer:
        ok = 0 < int(value) <= 2**62
    elif ok:
        try:
            ok = bool(np.isfinite(float(value))) and value > 0
        except OverflowError:  # an int beyond the float range
            ok = False
    if not ok:
        what = "a positive integer (at most 2^62)" if integer else "a positive finite number"
        raise ValueError(f"{name} must be {what}; got {value!r}")


def _check_choice(name, value, choices):
    if not isinstance(value, str) or value not in choices:
        raise ValueError(f"{name} must be one of {sorted(choices)}; got {value!r}")


def _check_bool(name, value):
    """Only True / False (numpy's too): a str such as 'False' is true in an `if`, so
    shuffle='False' used to shuffle, and None or 1 passed silently."""
    if not isinstance(value, (bool, np.bool_)):
        raise ValueError(f"{name} must be True or False; got {value!r}")


def _check_random_state(value):
    """What scikit-learn's check_random_state takes (None, an int, a RandomState), plus a numpy
    Generator, with ints limited to what the core's 64-bit seed holds: [0, 2^64 - 1]. Values
    used to be taken mod 2^64 (2**64 gave the model of 0), and the estimators that draw no
    seed (IncrementalSVC, LinearPegasosClassifier) accepted anything unless shuffle=True.
    bool is refused although it is an int to Python (True is a mistake for a seed, e.g. for
    shuffle=True), as every numeric parameter here refuses it."""
    if value is None or isinstance(value, (np.random.RandomState, np.random.Generator)):
        return
    if isinstance(value, numbers.Integral) and not isinstance(value, (bool, np.bool_)) and 0 <= int(value) < 2**64:
        return
    raise ValueError(
        "random_state must be None, an int in [0, 2**64 - 1], a numpy RandomState or a numpy Generator; "
        f"got {value!r}"
    )


def _seed(random_state):
    """A 64-bit seed for the core's own mt19937_64 (reproducible on every platform), from a
    random_state that _check_random_state accepted."""
    _check_random_state(random_state)
    if random_state is None:
        return int(np.random.default_rng().integers(0, 2**63))
    if isinstance(random_state, np.random.RandomState):
        return int(random_state.randint(0, 2**31 - 1))
    if isinstance(random_state, np.random.Generator):
        return int(random_state.integers(0, 2**63))
    return int(random_state)


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


def _plain(v):
    """A label as a plain Python value for messages ([1], not [np.int64(1)])."""
    return v.item() if isinstance(v, np.generic) else v


def _shuffler(random_state):
    """fit's row shuffler: a Generator as given, ints beyond RandomState's 2^32 through
    default_rng, everything else as scikit-learn's check_random_state."""
    if isinstance(random_state, np.random.Generator):
        return random_state
    if isinstance(random_state, numbers.Integral) and not isinstance(random_state, bool) and random_state >= 2**32:
        return np.random.default_rng(int(random_state))
    return check_random_state(random_state)


_GAMMA_SCALE_HINT = (
    "scikit-learn's 'auto' (1 / n_features) is not offered: 'scale' is 1 / (n_features * X.var()) over the "
    "first chunk, which is 1 / n_features for standardised features (and for a single first example); for "
    "'auto' itself pass gamma=1 / n_features"
)


class _KernelParamsMixin:
    """gamma='scale' is resolved once, from the first data seen, into ``gamma_``:
    1 / (n_features * X.var()) over the first chunk (scikit-learn's 'scale'; 1.0 if that chunk
    is constant), and 1 / n_features (scikit-learn's 'auto', right for standardised features)
    when the first data is a single example (learn_one, or a one-row chunk), whose variance
    across its own features says nothing about the spread of the data."""

    def _check_kernel_params(self):
        _check_choice("kernel", self.kernel, _KERNELS)
        if not (isinstance(self.gamma, str) and self.gamma == "scale"):
            try:
                _check_positive("gamma", self.gamma)
            except ValueError:
                hint = f". {_GAMMA_SCALE_HINT}" if isinstance(self.gamma, str) else ""
                raise ValueError(f"gamma must be a positive number or 'scale'; got {self.gamma!r}{hint}") from None
        _check_positive("degree", self.degree, integer=True)
        if self.degree > 2**31 - 1:
            raise ValueError(f"degree must be at most 2^31 - 1; got {self.degree!r}")
        if isinstance(self.coef0, bool) or not isinstance(self.coef0, numbers.Real) or not np.isfinite(self.coef0):
            raise ValueError(f"coef0 must be a finite number; got {self.coef0!r}")
        # One rule for every learner (the online ones' cores refuse it too): with coef0 < 0 the
        # polynomial kernel is not positive semi-definite, and the exact SVMs accepted it only to
        # break down mid-fit (TwinVectorMachine, ReservoirSVC) on its indefinite kernel matrix.
        if self.kernel == "poly" and self.coef0 < 0:
            raise ValueError(
                f"kernel='poly' needs coef0 >= 0; got coef0={self.coef0!r}: with coef0 < 0 the polynomial kernel "
                "is not positive semi-definite (k(x, x) = (gamma |x|^2 + coef0)^degree is zero or negative for some "
                "x), which every learner here assumes"
            )

    def _resolve_gamma(self, X):
        if isinstance(self.gamma, str):
            self.gamma_ = _scale_gamma(X)
        else:
            self.gamma_ = float(self.gamma)
        return self.gamma_

    def _kernel_args(self, X):
        """The kernel's keyword arguments of the core constructors (the Params fields)."""
        return dict(kernel=self.kernel, gamma=self._resolve_gamma(X), degree=int(self.degree), coef0=float(self.coef0))

    def _extra_fitted(self):
        return {"gamma_": self.gamma_}


def _kernel_from_core(p):
    """The kernel parameters of a core learner's ``params`` (see load of a file written by
    C++) as estimator parameters: the names are the same on both sides."""
    return dict(kernel=p.kernel, gamma=p.gamma, degree=p.degree, coef0=p.coef0)


def _scale_gamma(X):
    """gamma='scale' from the first chunk X (see _KernelParamsMixin)."""
    n, d = X.shape
    if n < 2:
        return 1.0 / d
    with np.errstate(over="ignore", invalid="ignore"):
        var = float(X.var())
    if not np.isfinite(var):  # the squares overflowed: the same variance, of X scaled to [-1, 1]
        s = float(np.abs(X).max())
        var = float((X / s).var()) * s * s
    if not np.isfinite(var):
        # Values so large that even the scaled variance overflows (|x| > 1e154): the core
        # rejects these rows, with the "too large; rescale it" message an explicit gamma gets;
        # any valid gamma lets it get that far (a failed first call leaves nothing fitted).
        return 1.0 / d
    gamma = 1.0 / d / var if var > 0.0 else 1.0
    return gamma if np.isfinite(gamma) else 1.0  # a variance that underflows: as constant X


class _KernelExpansionMixin:
    """Fitted views of a kernel-expansion model (support vectors and their coefficients)."""

    @property
    def support_vectors_(self):
        check_is_fitted(self, "_model")
        return self._model.support_vectors

    @property
    def dual_coef_(self):
        check_is_fitted(self, "_model")
        return self._model.coefficients

    @property
    def n_support_(self):
        check_is_fitted(self, "_model")
        return self._model.n_support


class _AveragedMixin:
    """Fitted views of the averaged classifier (the mean of every classifier held). They exist
    only when the fitted model was built with ``averaged=True``: otherwise it predicts with its
    last classifier (``n_support_``, ``support_vectors_``, ``dual_coef_``), and these raise
    AttributeError rather than silently describe that one."""

    def _memory_note(self):
        """A budgeted learner's average keeps the SVs its budget removes (OnlineClassifierMixin's
        memory estimate counts the budget's store only)."""
        return ", plus every SV the average retires (averaged=True keeps them all)" if self.averaged else ""

    def _averaged_model(self, name):
        check_is_fitted(self, "_model")
        if not self._built_params.get("averaged", False):
            raise AttributeError(
                f"{name} is defined only for a model fitted with averaged=True; this one predicts "
                "with its last classifier (see n_support_, support_vectors_, dual_coef_)"
            )
        return self._model

    @property
    def n_support_average_(self):
        """SVs the averaged classifier predicts with: the current ones plus every removed SV
        the average still holds (equal to ``n_support_`` when nothing was ever removed)."""
        return self._averaged_model("n_support_average_").n_support_average

    @property
    def average_support_vectors_(self):
        return self._averaged_model("average_support_vectors_").average_expansion[0]

    @property
    def average_dual_coef_(self):
        return self._averaged_model("average_dual_coef_").average_expansion[1]


def _projection_memory(side, formula):
    """The plan entry of projection-based maintenance: the SVs' kernel matrix and its
    maintained inverse (budget/projection.hpp), each side x side at a full budget, where the
    learner's growth leaves the capacity (which stays as it is: it is part of the arithmetic,
    Eigen blocks its sums by the column stride)."""
    return 2 * side**2 * 8, "kernel matrix and its inverse", f"2 x {formula} float64 values"


def _gb(n):
    return f"{n / 1e9:.3g} GB"


def _allocatable_bytes():
    """(bytes, reason): about the most memory this process can still allocate, and what sets
    it: the address-space limit (RLIMIT_AS) less what the process already maps, and the
    machine's physical memory plus swap (Linux's default overcommit refuses one allocation
    beyond that, and touching more than it ends in the OOM killer). (None, None) where
    neither is known (Windows): a std::bad_alloc is then explained after the fact."""
    found = []
    try:
        import resource
    except ImportError:  # Windows
        resource = None
    if resource is not None:
        soft, _ = resource.getrlimit(resource.RLIMIT_AS)
        if soft != resource.RLIM_INFINITY:
            left = max(soft - _mapped_bytes(), 0)
            found.append((left, "its address-space limit RLIMIT_AS, less what it maps already"))
    try:
        physical = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):
        physical = 0
    if physical > 0:
        found.append((physical + _meminfo_bytes("SwapTotal"), "the machine's physical memory and swap"))
    return min(found) if found else (None, None)


def _mapped_bytes():
    """The address space this process maps (Linux: /proc/self/statm; 0 elsewhere)."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError, AttributeError):
        return 0


def _meminfo_bytes(field):
    """A size from /proc/meminfo (Linux; 0 elsewhere)."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return 0


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


def _label_to_json(v):
    if isinstance(v, (np.generic,)):
        v = v.item()
    if isinstance(v, (bool, int, float, str)):
        return v
    raise TypeError(f"class label {v!r} of type {type(v).__name__} cannot be stored in a model file")


_NO_Y = object()  # _validated's "no y" (None is a y that validate_data must refuse)


class OnlineClassifierMixin(ClassifierMixin, BaseEstimator):
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

    # learn_one adds a point to prequential_curve_ when the examples seen since its last point
    # reach max(1, examples at that point // _CURVE_SPACING): every one of the first 32
    # examples, then about 75 points per tenfold of the stream (~400 over 10^6 examples), so the
    # curve stays small however long one streams.
    _CURVE_SPACING = 32

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

    # ------------------------------------------------------------ validation
    def _check_X(self, X, *, reset):
        """Validates a chunk of features: finite float64, 2-D, consistent width (a plain chunk
        as _plain_chunk describes is already that: the core checks its rows)."""
        if not reset and self._plain_chunk(X, None):
            return X
        return self._validated(X, reset=reset)

    def _validated(self, X, y=_NO_Y, *, reset):
        """scikit-learn's validate_data with what the core takes: finite float64 in C order (a
        sparse X densified, see _dense). Returns X, or (X, y) when y is passed (y=None too:
        validate_data then says that a classifier needs y)."""
        kw = dict(reset=reset, dtype=np.float64, order="C", ensure_all_finite=True, accept_sparse="csr")
        if y is _NO_Y:
            return _dense(validate_data(self, X, **kw))
        X, y = validate_data(self, X, y, **kw)
        return _dense(X), y

    def _encode(self, y, d=None):
        """Maps labels to 0..c-1 (those of state d, see _state); raises ValueError naming unseen
        labels."""
        d = self.__dict__ if d is None else d
        classes_, label_index = d["classes_"], d["_label_index"]
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

    def _init_model(self, X, classes, feature_order=None):
        self._validate_params()
        classes = _classes_array(classes)
        if classes.ndim != 1:
            raise ValueError("classes must be a 1-D array of labels")
        classes = unique_labels(classes)
        if len(classes) < 2:
            raise ValueError(
                f"{type(self).__name__} needs at least 2 classes; got {len(classes)} class(es): {classes.tolist()}"
            )
        self._check_memory(X.shape[1], len(classes))
        self.classes_ = classes
        self._label_index = {c: i for i, c in enumerate(classes.tolist())}
        try:
            self._model = self._make_core(X.shape[1], len(classes), X)
        except MemoryError:  # std::bad_alloc said nothing about what asked for the memory
            raise MemoryError(self._memory_message(X.shape[1], len(classes))) from None
        self.prequential_curve_ = [(0, 0)]
        self._curve_due = 1
        self._set_feature_order(feature_order)
        self._built_params = self.get_params(deep=False)
        self._params_changed = False

    # ---------------------------------------------------------------- memory
    # A large budget used to fail with a bare MemoryError('std::bad_alloc') once the first
    # example reached a B x B structure (merging's kernel cache: ~7 GB at B = 30,000). The
    # model's memory at a full budget is estimated from its parameters and checked against
    # what the process can get before anything is allocated; a std::bad_alloc that still
    # happens (a limit we cannot see) gets the same explanation.

    def _memory_budget(self, n_features):
        """The budget the memory estimate is for: None for an unbudgeted model (its memory grows
        with the stream) and for a budget the core refuses itself ((budget + 1) * n_features
        beyond 2^31 preallocated values: its ValueError says so)."""
        budget = self.get_params(deep=False).get("budget")
        if isinstance(budget, bool) or not isinstance(budget, numbers.Integral):
            return None
        budget = int(budget)
        return budget if 0 < budget <= 2**31 // n_features - 1 else None

    def _memory_plan(self, budget, n_features, n_classes):
        """[(bytes, structure, its size as a formula)] of what the model holds once ``budget``
        SVs are stored: the support-vector store here; learners add their caches. Structures
        of O(budget) float64 values besides the store are left out (scratch rows), so the
        estimate is a slight underestimate."""
        n_out = 1 if n_classes == 2 else n_classes
        return [
            (
                (budget + 1) * (n_features + n_out + 3) * 8,
                "support-vector store",
                "(budget + 1) x (n_features + n_outputs + 3) float64 values",
            )
        ]

    def _memory_note(self):
        """What the estimate leaves out that can grow further (appended to the message)."""
        return ""

    def _memory_total(self, budget, n_features, n_classes):
        return sum(b for b, _, _ in self._memory_plan(budget, n_features, n_classes))

    def _check_memory(self, n_features, n_classes):
        """MemoryError, before anything is allocated, when the estimate at a full budget exceeds
        what this process can allocate (_allocatable_bytes)."""
        budget = self._memory_budget(n_features)
        if budget is None:
            return
        total = self._memory_total(budget, n_features, n_classes)
        available, why = _allocatable_bytes()
        if available is not None and total > available:
            raise MemoryError(self._memory_message(n_features, n_classes, (available, why)))

    def _memory_message(self, n_features, n_classes, limit=None):
        """What the model needs and why, for a refused or failed allocation (limit: the
        (bytes, reason) it was refused against; None when an allocation failed)."""
        what = f"{type(self).__name__}: not enough memory"
        budget = self._memory_budget(n_features)
        if budget is None:
            return f"{what} to build the model ({n_features} features, {n_classes} classes)"
        plan = self._memory_plan(budget, n_features, n_classes)
        total = sum(b for b, _, _ in plan)
        msg = (
            f"{what} for budget={budget} ({n_features} features, {n_classes} classes): the model needs about "
            f"{_gb(total)} once the budget is full"
        )
        if limit is not None:
            msg += f", more than the {_gb(limit[0])} this process can allocate ({limit[1]})"
        msg += ". Of that: " + "; ".join(f"the {name}, {formula}: {_gb(b)}" for b, name, formula in plan)
        msg += self._memory_note() + ". "
        quadratic = [name for _, name, formula in plan if "^2" in formula]
        if quadratic:
            msg += f"The {quadratic[0]} grows with budget^2: "
        fits = self._largest_budget(limit[0], budget, n_features, n_classes) if limit is not None else None
        if fits:
            msg += f"use a budget of at most {fits}"
        else:
            msg += "use a smaller budget"
        return msg

    def _largest_budget(self, available, budget, n_features, n_classes):
        """The largest budget below ``budget`` whose estimate fits in ``available`` bytes (the
        estimate grows with the budget), or None if not even 1 does."""
        lo, hi = 0, budget - 1
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if self._memory_total(mid, n_features, n_classes) <= available:
                lo = mid
            else:
                hi = mid - 1
        return lo or None

    def _explain_memory_error(self, error, d):
        """Raises the core's std::bad_alloc while learning (model of state d) as _memory_message
        explains it, for a budgeted model (whose caches reach their full size while it learns).
        Any other MemoryError (numpy's "Unable to allocate ...", an unbudgeted model's growing
        store) is raised as it is."""
        if str(error) != "std::bad_alloc" or self._memory_budget(d["n_features_in_"]) is None:
            raise error
        raise MemoryError(self._memory_message(d["n_features_in_"], len(d["classes_"]))) from None

    @contextlib.contextmanager
    def _undo_on_error(self):
        """Puts every attribute back if the block raises before the model it built learned
        anything: a failed call leaves the estimator as it was (in particular unfitted if it
        was, instead of half-built with the classes, features or model of the call that failed).
        A model that learned rows before it failed (an exact SVM breaking down mid-chunk) is
        kept with them, as the core documents: its state is consistent and nothing learned is
        lost. The snapshot is shallow: a call either rebinds attributes (the first call, fit)
        or changes the model only once its input has been checked."""
        saved = dict(self.__dict__)
        try:
            yield
        except BaseException:
            model = self.__dict__.get("_model")
            if model is None or model is saved.get("_model") or model.counters["examples"] == 0:
                self.__dict__.clear()
                self.__dict__.update(saved)
            raise

    def _undo_if_first(self):
        """_undo_on_error for a call that may be the first (it builds the model): a failed first
        call leaves the estimator unfitted. Later calls check their input before they change the
        model and need no snapshot. A first call holds the estimator's lock (see _build)."""
        return contextlib.nullcontext() if "_model" in self.__dict__ else self._first_in_place()

    @contextlib.contextmanager
    def _first_in_place(self):
        """_undo_if_first of a first call that builds the model in place, under the lock: one
        whose callbacks may use the estimator (partial_fit_active's oracle predicts with the
        model it is building). A call that waited for another first call sees its model."""
        with self._state_lock():
            if "_model" in self.__dict__:
                yield
            else:
                with self._undo_on_error():
                    yield

    # ------------------------------------------------------------ threads
    # Calls on one estimator from several threads must act as if they ran one after another
    # (README). The core serialises uses of one model (UseGuard), but the estimator's own state
    # was changed step by step in Python: two first calls at once each built a model and one
    # chunk was lost; a predict during fit saw a model not yet trained (or the new classes_ with
    # the old model: wrong labels), a learn_one the new label map with the old model. So the
    # calls that build a model (fit, a first partial_fit / learn_one / partial_fit_active) run
    # on a private copy of the estimator's __dict__ and publish it whole, by one assignment to
    # __dict__, once it holds a trained model; they hold the estimator's lock, so that they run
    # one at a time and a first call that waited sees the model another one built. Calls on
    # a built model take no lock (learn_one's cost): they read the state they use from one
    # __dict__ (_state), which a concurrent fit replaces but never changes under them.

    def _state_lock(self):
        """The estimator's lock (made on first use; never pickled)."""
        lock = self.__dict__.get("_lock")
        if lock is None:
            lock = self.__dict__.setdefault("_lock", threading.RLock())  # atomic: one lock wins
        return lock

    def _state(self):
        """The fitted state, as one __dict__ (see the comment above): NotFittedError if none."""
        d = self.__dict__
        if "_model" not in d:
            check_is_fitted(self, "_model")
            d = self.__dict__  # published meanwhile
        return d

    def _unbuilt(self):
        """Whether this call has to build the model (and is not already on the private copy)."""
        d = self.__dict__
        return "_model" not in d and "_building" not in d

    def _build(self, call, rebuild=False):
        """Runs ``call(est)``, a call that builds the model, as the comment above describes:
        under the lock, on a private copy published whole at the end. A first call that waited
        for another one runs on the built model instead (rebuild: fit, always a new model).
        Returns what call returns (self for the copy)."""
        with self._state_lock():
            if not rebuild and "_model" in self.__dict__:
                return call(self)  # built by another thread while this one waited
            return self._on_copy(call)

    def _on_copy(self, call):
        copy = object.__new__(type(self))
        copy.__dict__.update(self.__dict__)
        copy.__dict__["_building"] = True
        try:
            out = call(copy)
        finally:
            del copy.__dict__["_building"]
            # the call's own _undo_on_error left the copy as it was unless its model learned
            # something: publish exactly then (also when it failed or was interrupted after)
            if copy.__dict__.get("_model") is not self.__dict__.get("_model"):
                self.__dict__ = copy.__dict__
        return self if out is copy else out

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
        """fit's fresh model from ``passes(est)``, built on a private copy (see _build)."""
        return self._build(passes, rebuild=True)

    def _fit_passes(self, X, y):
        with self._undo_on_error():  # a fit rejected before learning keeps the model fitted before
            X, yi = self._fit_data(X, y)
            for order in self._epochs(len(yi)):
                self._learn_chunk(X[order], yi[order])
                self._end_of_pass()
        return self

    def _end_of_pass(self):
        """Called by fit after each pass over the data (a finite data set ends there)."""

    def _fit_data(self, X, y):
        """fit's validation: a fresh model for the labels of y; returns X and the label indices."""
        X, y = self._validated(X, y, reset=True)
        _check_label_types(y, "y")
        check_classification_targets(y)
        self._init_model(X, np.unique(y))
        return X, self._encode(y)

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
        if self._unbuilt():
            return self._build(lambda est: est.partial_fit(X, y, classes))
        with self._undo_if_first():  # on the private copy of a first call
            d = self.__dict__  # one state throughout (see _state): labels encoded for its model
            X, y = self._chunk_data(X, y, classes)
            self._learn_chunk(X, self._encode(y, d), d=d)
        return self

    def _chunk_data(self, X, y, classes, method="partial_fit"):
        """A streaming chunk's validation (y may be None: labels asked for later); the first
        chunk builds the model from ``classes``. Returns X and y."""
        first = not hasattr(self, "_model")
        if first and classes is None:
            raise ValueError(f"classes must be passed on the first call to {method}")
        if first:
            # Subclasses' partial_fit variants call this too: the first call builds the model
            # only from a chunk whose labels are all in classes, and undoes it otherwise.
            with self._undo_on_error():
                X, y = self._chunk_data_checked(X, y, classes, first)
                if y is not None:
                    self._encode(y)
            return X, y
        return self._chunk_data_checked(X, y, classes, first)

    def _chunk_data_checked(self, X, y, classes, first):
        if first or not self._plain_chunk(X, y):
            if y is None:
                X = self._validated(X, reset=first)
            else:
                X, y = self._validated(X, y, reset=first)
                if first:  # later chunks: _encode rejects every label outside classes_
                    _check_label_types(y, "y")
                    check_classification_targets(y)
        if first:
            self._init_model(X, classes)
        else:
            self._check_params_unchanged()
            if classes is not None and not np.array_equal(unique_labels(_classes_array(classes)), self.classes_):
                raise ValueError(
                    f"classes={list(classes)} differs from the classes of the first call {self.classes_.tolist()}"
                )
        return X, y

    def _plain_chunk(self, X, y):
        """Whether a later chunk is already what validate_data would return: a C-contiguous
        float64 ndarray with n_features_in_ columns and at least one row (and y a 1-D ndarray of
        one label per row), for a model fitted without feature names. Such a chunk skips
        scikit-learn's validation, a fixed ~0.3 ms per call (~5% of training time and ~6% of
        prediction time in chunks of 10,000 at B = 100, bench_speed's setting): the core checks
        every row for NaN, inf and overflow before it uses any (ValueError "X row i contains NaN
        or infinity") and _encode every label."""
        return (
            type(X) is np.ndarray
            and X.dtype == np.float64
            and X.ndim == 2
            and X.flags.c_contiguous
            and X.shape[0] >= 1
            and X.shape[1] == getattr(self, "n_features_in_", None)
            and getattr(self, "feature_names_in_", None) is None
            and (y is None or (type(y) is np.ndarray and y.ndim == 1 and y.shape[0] == X.shape[0]))
        )

    def _learn_chunk(self, X, yi, record=False, d=None):
        d = self.__dict__ if d is None else d
        model = d["_model"]
        try:
            return _recorded(model, d, lambda: model.partial_fit(X, yi, record))
        except MemoryError as e:  # a cache reached its full size (e.g. projection's on activation)
            self._explain_memory_error(e, d)

    # ------------------------------------------------------------ prediction
    def decision_function(self, X):
        """Decision values: shape (n,) for two classes, (n, n_classes) otherwise."""
        model = self._state()["_model"]
        X = self._check_X(X, reset=False)
        d = model.decision_function(X)
        return d[:, 0] if d.shape[1] == 1 else d

    def predict(self, X):
        """Predicted class labels."""
        d = self._state()  # the classes_ of the model that predicts (a fit may publish new ones)
        X = self._check_X(X, reset=False)
        return d["classes_"][d["_model"].predict(X)]

    # ------------------------------------------------------- single examples
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
        if "_model" in self.__dict__:
            self._check_params_unchanged()
            if classes is not None:
                self._check_same_classes(classes)
            v, _ = self._as_vector(x)
            self._learn_one(v, y)
            return self
        if "_building" not in self.__dict__:
            return self._build(lambda est: est.learn_one(x, y, classes))
        with self._undo_on_error():  # a failed first call leaves the estimator unfitted
            v, names = self._as_vector(x)
            self._first_one(v, y, classes, names)
            self._learn_one(v, y)
        return self

    def _check_same_classes(self, classes):
        """A later learn_one's ``classes`` must be the first call's, as partial_fit requires: a
        different list was silently ignored (a class added later never became one). Compared as
        sets of labels (what the label lookup uses), O(c), since river users may pass it with
        every example; scikit-learn's unique_labels costs ~100x a learn_one."""
        try:
            given = classes.tolist() if isinstance(classes, np.ndarray) else classes
            same = set(given) == self._label_index.keys()
        except TypeError:  # not a collection of hashable labels
            same = False
        if not same:
            shown = classes.tolist() if isinstance(classes, np.ndarray) else classes
            raise ValueError(f"classes={shown!r} differs from the classes of the first call {self.classes_.tolist()}")

    def _first_one(self, v, y, classes, names):
        """Builds the model from learn_one's first example."""
        if classes is None:
            if isinstance(y, (bool, np.bool_)):
                classes = [False, True]
            else:
                raise ValueError(
                    f"classes must be passed on the first call to learn_one unless labels are bool (got y={y!r}): "
                    "call learn_one(x, y, classes=[...every label...]) once; in a river pipeline, "
                    "pipeline.learn_one(x, y, classes=[...]) forwards it to this step"
                )
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
        self._init_model(X1, classes, feature_order=names)
        self.n_features_in_ = X1.shape[1]
        # scikit-learn's feature_names_in_ holds str names only; int keys keep their order in
        # _feature_order (which save/load and pickling carry exactly).
        if names is not None and all(isinstance(k, str) for k in names):
            self.feature_names_in_ = np.asarray(names, dtype=object)
        elif hasattr(self, "feature_names_in_"):
            del self.feature_names_in_

    def _learn_one(self, v, y):
        d = self.__dict__  # label map and model of one state (see _state)
        try:
            yi = d["_label_index"][y]
        except (KeyError, TypeError):
            raise ValueError(f"label {y!r} is not in classes_={d['classes_'].tolist()}") from None
        model = d["_model"]
        try:
            model.learn_one(v, yi)  # the core checks x's length (and says what it expected)
        except MemoryError as e:
            self._explain_memory_error(e, d)
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

    # ------------------------------------------------------------ persistence
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
            if model.n_classes != len(getattr(self, "classes_", ())) or model.n_features != getattr(
                self, "n_features_in_", None
            ):
                raise ValueError(
                    f"cannot unpickle {type(self).__name__}: its model ({model.n_classes} classes, "
                    f"{model.n_features} features) disagrees with classes_ / n_features_in_"
                )
            self._model = model

    @classmethod
    def _core_class(cls):  # pragma: no cover - overridden
        raise NotImplementedError

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
            "classes": [_label_to_json(c) for c in self.classes_],
            "classes_dtype": self.classes_.dtype.str if self.classes_.dtype != object else "object",
            "n_features_in": int(self.n_features_in_),
            # Both hold str (or, for dict keys, int) names only, which JSON gives back exactly.
            "feature_names_in": [str(f) for f in getattr(self, "feature_names_in_", [])] or None,
            "feature_order": getattr(self, "_feature_order", None),
            "fitted": {k: _jsonable(v) for k, v in self._extra_fitted().items()},
            "curve": [list(map(int, p)) for p in self.prequential_curve_],
        }
        if getattr(self, "_svmlight_zero_based", None) is not None:
            # the index base of the LIBSVM file the CLI trained on, so that `predict` reads
            # test files the same way (auto-detection can disagree on a sparse file)
            meta["svmlight_zero_based"] = bool(self._svmlight_zero_based)
        if getattr(self, "_standardize_stats", None) is not None:
            # the CLI's --standardize: the model learned (X - mean) / scale, so `predict` applies it
            mean, scale = self._standardize_stats
            meta["standardize"] = {"mean": [float(v) for v in mean], "scale": [float(v) for v in scale]}
        self._model.metadata = json.dumps(meta, default=_jsonable).encode()
        write_atomically(path, self._model.to_bytes())

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


def _dense(X):
    """A validated chunk as the C-contiguous float64 rows the core takes. The core is dense (it
    stores SVs as dense rows and computes kernel rows with dense products), so a sparse chunk
    (scipy.sparse, e.g. from load_svmlight_file) is densified whole: it costs its dense size
    while it is used, and a stream of sparse chunks is the way to bound that."""
    return X.toarray(order="C") if sp.issparse(X) else X


def _recorded(model, d, learn):
    """Runs ``learn()``, one chunk through ``model`` (of state d), and ends the prequential curve
    at what the model has learned: after it returns, and after it raised (_curve_point_after)."""
    try:
        out = learn()
    except BaseException as e:
        _curve_point_after(e, model, d)
        raise
    c = model.counters
    d["prequential_curve_"].append((c["examples"], c["mistakes"]))
    return out


def _curve_point(model, d):
    """Adds the curve point of what model has learned, unless the curve already ends there."""
    c = model.counters
    curve = d["prequential_curve_"]
    if c["examples"] != curve[-1][0]:
        curve.append((c["examples"], c["mistakes"]))


def _curve_point_after(error, model, d):
    """The curve point of a chunk call that raised ``error``: Ctrl-C during a chunk stops it
    between two examples (KeyboardInterrupt; the rows before the stop stay learned), and its
    point was lost (the curve ended before rows the model had learned); an exact SVM can fail
    after learning rows. None for a call interrupted while it waited for another thread's use
    of the model (the core marks it: nothing ran, and reading the counters would wait for that
    use)."""
    if not getattr(error, "_budgetkernel_not_run", False):
        _curve_point(model, d)


def _same_param(a, b):
    try:
        return a is b or bool(a == b)
    except (TypeError, ValueError):  # e.g. arrays
        return False


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
    cls = _REGISTRY.get(meta.get("estimator"))
    if cls is None:
        raise ValueError(f"{where}: unknown estimator {meta.get('estimator')!r}")
    try:
        est = _restore_metadata(cls, meta)
        est._model = cls._core_class().from_bytes(data)
    except (RuntimeError, ValueError, MemoryError) as e:
        raise ValueError(f"{where}: {e}") from None
    except (KeyError, TypeError, AttributeError) as e:
        raise ValueError(f"{where}: inconsistent metadata ({type(e).__name__}: {e})") from None
    model = est._model
    if model.n_classes != len(est.classes_) or model.n_features != est.n_features_in_:
        raise ValueError(
            f"{where}: the metadata ({len(est.classes_)} classes, {est.n_features_in_} features) disagrees with "
            f"the model ({model.n_classes} classes, {model.n_features} features)"
        )
    return est


def _load_core_file(data, learner, where):
    """load() of a file without metadata: the estimator whose class declares the file's learner
    kind (``_learner_kind``) and reads its parameters back (``_params_from_core``). Classes
    that share a learner kind (and so its core class: TwinVectorMachine and ReservoirSVC)
    tell their models apart there: ``_params_from_core`` returns None for another's."""
    classes = list(dict.fromkeys(_REGISTRY.values()))
    kin = [cls for cls in classes if getattr(cls, "_learner_kind", None) == learner]
    if kin:
        try:
            model = kin[0]._core_class().from_bytes(data)
            for cls in kin:
                found = cls._params_from_core(model)
                if found is not None:
                    return _restore_from_core(cls, model, *found)
        except (RuntimeError, ValueError, MemoryError) as e:
            raise ValueError(f"{where}: {e}") from None
        names = ", ".join(cls.__name__ for cls in kin)
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
    est.classes_ = np.arange(model.n_classes)
    est._label_index = {c: i for i, c in enumerate(est.classes_.tolist())}
    est.n_features_in_ = int(model.n_features)
    est._set_feature_order(None)
    for k, v in fitted.items():
        setattr(est, k, v)
    c = model.counters
    est.prequential_curve_ = [(0, 0)] + ([(c["examples"], c["mistakes"])] if c["examples"] else [])
    est._model = model
    return est


# fitted attributes that save() writes in their own metadata entries, never in "fitted"
_RECORDED_ELSEWHERE = frozenset({"classes_", "n_features_in_", "feature_names_in_", "prequential_curve_"})


def _restore_metadata(cls, meta):
    """An unfitted estimator of class cls with the fitted attributes that save() recorded."""
    est = cls(**meta["params"])
    est._built_params = est.get_params(deep=False)
    est._params_changed = False
    dtype = meta["classes_dtype"]
    est.classes_ = np.asarray(meta["classes"], dtype=None if dtype == "object" else np.dtype(dtype))
    if est.classes_.ndim != 1:
        raise ValueError("classes must be a list of labels")
    # predict maps label indices through classes_ and _encode searches it: it must be what fit
    # builds, sorted and distinct (also after the dtype conversion: '|b1' collapsed [0, 1, 2]).
    if len(est.classes_) < 2 or not np.array_equal(unique_labels(est.classes_), est.classes_):
        raise ValueError("classes must be at least 2 distinct labels in sorted order")
    est._label_index = {c: i for i, c in enumerate(est.classes_.tolist())}
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
    est.prequential_curve_ = [tuple(p) for p in meta.get("curve", [(0, 0)])]
    if meta.get("svmlight_zero_based") is not None:
        est._svmlight_zero_based = bool(meta["svmlight_zero_based"])
    if meta.get("standardize") is not None:
        est._standardize_stats = _standardize_stats(meta["standardize"], est.n_features_in_)
    return est


def _standardize_stats(entry, n_features):
    """The (mean, scale) arrays of a model file's "standardize" entry, checked: a corrupt
    entry must fail here, not turn every prediction into NaN or a silent shift."""
    try:
        mean = np.array(entry["mean"], dtype=np.float64)
        scale = np.array(entry["scale"], dtype=np.float64)
    except (TypeError, ValueError, KeyError) as e:
        raise ValueError(f"corrupt file: its standardize entry is not two lists of numbers ({e})") from None
    if mean.shape != (n_features,) or scale.shape != (n_features,):
        raise ValueError(f"corrupt file: its standardize entry must hold {n_features} means and scales")
    if not (np.all(np.isfinite(mean)) and np.all(np.isfinite(scale)) and np.all(scale > 0)):
        raise ValueError("corrupt file: its standardize entry must hold finite means and positive finite scales")
    return mean, scale
