"""Exact incremental-decremental SVM and the Twin Vector Machine built on it."""

from __future__ import annotations

import math
import numbers

import numpy as np
from sklearn.utils.validation import _check_sample_weight, check_is_fitted

from ._docs import shared_docs
from ._base import OnlineClassifierMixin, _recorded
from ._kernel_params import _KernelParamsMixin
from ._persistence import register
from ._validation import _check_bool, _check_choice, _check_positive, _real, _store_params
from ._native import core as _core

__all__ = ["IncrementalSVC", "TwinVectorMachine", "ReservoirSVC"]

# Where twins merge, as the core names it (learners/twin_vector_machine.hpp).
_MERGE = _core.TVMParams.choices["merge"]


def _twin_memory_plan(budget, n_features, n_classes, examples_per_twin):
    """The memory plan (OnlineClassifierMixin._memory_plan) of the TVM core at a full budget:
    per machine (one, or one per class), the twins (budget + 1 rows: point, two counts, a
    score) and the exact SVM's stored examples (2 per twin for the TVM, its two sides; 1 for
    the reservoir), each a row of n_features plus ten per-example values (norm, label, alpha,
    gradient, weight and work columns) and two ints (IncrementalSVM::grow_rows). Rows grow by
    doubling, so the allocation can be up to twice this."""
    machines = 1 if n_classes == 2 else n_classes
    twins = machines * (budget + 1) * (n_features + 3) * 8
    svm = machines * examples_per_twin * budget * (n_features + 12) * 8
    per = "2 budget" if examples_per_twin == 2 else "budget"
    return [
        (twins, "twin vectors", "n_machines x (budget + 1) x (n_features + 3) float64 values"),
        (svm, "exact SVMs' examples", f"n_machines x {per} x (n_features + 12) float64 values"),
    ]


_MARGIN_SET_NOTE = (
    ", plus the exact SVMs' margin-set matrices, which grow with the margin support vectors they hold (Q_{:,S}, "
    "Q_SS and the inverse: up to 3 n^2 float64 values per machine for n stored examples)"
)


class _ExpansionViews:
    """support_vectors_ / dual_coef_ / intercept_ of an SVM-type model (with a bias)."""

    @property
    def support_vectors_(self):
        check_is_fitted(self, "_model")
        return self._model.expansion()["support_vectors"]

    @property
    def dual_coef_(self):
        """y_i alpha_i per support vector (one column per binary machine)."""
        check_is_fitted(self, "_model")
        return self._model.expansion()["coefficients"]

    @property
    def intercept_(self):
        check_is_fitted(self, "_model")
        return self._model.expansion()["bias"][0]

    @property
    def n_support_(self):
        check_is_fitted(self, "_model")
        return len(self.support_vectors_)


@register
@shared_docs
class IncrementalSVC(_KernelParamsMixin, _ExpansionViews, OnlineClassifierMixin):
    """The exact soft-margin SVM, kept at its optimum as examples arrive or leave.

    Cauwenberghs & Poggio, "Incremental and Decremental Support Vector Machine Learning"
    (NIPS 2000), with the extensions of Diehl & Cauwenberghs (IJCNN 2003): every
    ``partial_fit`` example is added by adiabatic increments that keep all Kuhn-Tucker
    conditions, :meth:`unlearn` removes an example the same way, :meth:`set_C` and
    :meth:`set_sample_weight` move the solution to a new C or example weight. The result
    equals a batch SVM (LIBSVM's SVC) trained on the same weighted data (with ``ridge > 0``:
    on the precomputed kernel matrix K + ridge * I). Memory and time per example grow with
    the number of stored examples (the paper's unbudgeted "IDSVM"). Predicting reads the
    support vectors only, as LIBSVM does.

    Parameters
    ----------
    C : float, default=1.0
    kernel : {'rbf', 'linear', 'poly'}, default='rbf'
    gamma : float or 'scale', default='scale'
    degree : int, default=3
    coef0 : float, default=0.0
        Independent term of the polynomial kernel: >= 0 (as for every learner; with coef0 < 0
        the kernel is not positive semi-definite).
    n_epochs : int, default=1
        ``fit`` passes; a second pass learns every example again (as a new copy).
    shuffle : bool, default=False
    random_state : int, numpy Generator or None, default=None
        Seeds shuffling only.
    ridge : float, default=0.0
        Added to the diagonal of the training kernel matrix: the SVM dual on K + ridge * I
        (Q_ii = k(x_i, x_i) + ridge for every stored example; off-diagonal entries and the
        decision values, on any point, use the plain kernel). 0 is the exact SVM, unchanged.
        A small ridge (1e-8 to 1e-6 times the kernel scale, k(x, x) = 1 for RBF; about
        10 / C at a large C, e.g. 1e-4 at C = 1e5) is the way out of the numerical breakdown
        (``RuntimeError``) on a numerically rank-deficient kernel matrix, e.g. RBF with gamma
        far below 1 / spread**2 and a large C.
    {{probability}}

    Notes
    -----
    Binary at heart; more than two classes are learned one-vs-rest (one exact SVM per class,
    each on all examples). With a ridge, :meth:`machine_state` reports
    g = y f(x) + ridge * alpha - 1 (the gradient of the ridged dual) and ``dual_objective``
    of that dual, while ``decision_function`` is the plain f. Weights and copies are no
    longer interchangeable with a ridge (each stored copy gets its own ridge).

    A numerical breakdown (``RuntimeError``) loses nothing learned: the failing example, or
    :meth:`unlearn` / :meth:`set_C` / :meth:`set_sample_weight` call, is undone in every
    one-vs-rest machine and the model is exactly as before it. In a ``fit`` / ``partial_fit``
    chunk the rows before the failing one stay learned; the message says how many
    (``n_seen_`` counts them, the failed row is not counted) and learning can go on.

    Examples
    --------
    >>> import numpy as np
    >>> from budgetkernel import IncrementalSVC, datasets
    >>> X, y = datasets.checkerboard(300, random_state=0)
    >>> X_test, y_test = datasets.checkerboard(1000, random_state=1)
    >>> svc = IncrementalSVC(C=10.0, gamma=2.0).fit(X, y)
    >>> round(svc.score(X_test, y_test), 2)
    0.93

    Moving to another C and forgetting the first example leaves exactly the SVM trained at
    that C on the other examples:

    >>> svc = svc.set_C(1.0).unlearn(0)
    >>> fresh = IncrementalSVC(C=1.0, gamma=2.0).fit(X[1:], y[1:])
    >>> bool(np.allclose(svc.decision_function(X_test), fresh.decision_function(X_test)))
    True
    """

    def __init__(self, C=1.0, kernel="rbf", gamma="scale", degree=3, coef0=0.0, n_epochs=1, shuffle=False,
                 random_state=None, ridge=0.0, probability=False):
        _store_params(self, locals())

    def _validate_params(self):
        # the ranges of C and ridge are the core's
        self._check_shared_and_forward()

    def _core_fields(self, gamma):
        """These parameters as the fields of the core's IDSVMParams, for _validate_params and
        _make_core alike."""
        return dict(**self._kernel_fields(gamma), C=_real(self.C), ridge=_real(self.ridge))

    def _make_core(self, n_features, n_classes, X):
        return _core.IncrementalSVC(n_features, n_classes, **self._core_fields(self._resolve_gamma(X)))

    _core_name, _params_name = "IncrementalSVC", "IDSVMParams"

    # budgetkernel.load of a model file without Python metadata (written by C++).
    _learner_kind = "idsvm"

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.pairwise = False
        return tags

    # sample_weight versions of fit / partial_fit: weight s bounds the example's alpha by C*s.
    def fit(self, X, y, sample_weight=None):
        """Fresh model, then ``n_epochs`` passes over (X, y) with optional sample weights."""
        # as the base fit: a fit rejected before learning (bad y, bad sample_weight) keeps the
        # model fitted before, instead of an empty one with the rejected data's n_features_in_
        return self._refit(lambda est: est._fit_weighted(X, y, sample_weight))

    def _fit_weighted(self, X, y, sample_weight):
        X, yi = self._fit_data(X, y)
        w = self._weights(sample_weight, X)
        for order in self._epochs(len(yi)):
            self._learn_weighted(X[order], yi[order], w[order])

    def partial_fit(self, X, y, classes=None, sample_weight=None):
        """Learns a chunk of examples exactly (optionally weighted)."""
        # the base chunk path; the weights are checked against the validated chunk (after a
        # first chunk built the model: a failed first call publishes nothing)
        return self._partial_fit(
            X, y, classes, lambda est, X, yi, model, curve: est._learn_weighted(X, yi, est._weights(sample_weight, X), model, curve)
        )

    @staticmethod
    def _weights(sample_weight, X):
        w = _check_sample_weight(sample_weight, X, dtype=np.float64, ensure_non_negative=True)
        if not np.all(np.isfinite(w)):
            raise ValueError("sample_weight contains NaN or infinity")
        return np.ascontiguousarray(w)

    def _learn_weighted(self, X, yi, w, model=None, curve=None):
        """A weighted chunk through the core ``model`` (default: the estimator's), its point
        added to ``curve`` (that model's prequential curve)."""
        model = self._model if model is None else model
        curve = self.prequential_curve_ if curve is None else curve
        # Zero-weight examples cannot change an SVM (alpha <= C * 0): skip them.
        keep = w > 0
        if not np.all(keep):
            X, yi, w = np.ascontiguousarray(X[keep]), yi[keep], w[keep]

        def learn():
            if len(yi):  # (all weights 0: nothing to learn, but the chunk still gets its point)
                model.partial_fit_weighted(np.ascontiguousarray(X), yi, w)

        _recorded(model, curve, learn)

    def unlearn(self, example):
        """Forgets example number ``example`` (0-based, in the order learned) exactly.

        Rows given ``sample_weight`` 0 are not learned and get no number, so after them row
        and example numbers differ (as they do after ``shuffle``)."""
        check_is_fitted(self, "_model")
        self._model.unlearn(self._example_index(example))
        return self

    forget = unlearn

    def set_C(self, C):
        """Moves the fitted SVM to a new C (regularisation-parameter perturbation)."""
        _check_positive("C", C)
        with self._state_lock():  # C and the machine's C together (not lost to a fit's publish)
            if hasattr(self, "_model"):
                self._model.set_C(float(C))
                self._built_params["C"] = C  # the machine follows: not a pending change
            self.C = C
        return self

    def set_sample_weight(self, example, weight):
        """Changes the weight of one learned example (its alpha bound becomes C * weight)."""
        check_is_fitted(self, "_model")
        _check_positive("weight", weight)
        self._model.set_weight(self._example_index(example), float(weight))
        return self

    def _example_index(self, example):
        """``example`` as the core's int64 key, checked here: numbers beyond int64 reached
        pybind11 as "incompatible function arguments"; a negative one, or one never learned,
        is named with the range of numbers learned so far (examples are numbered in the order
        learned, 0 .. n_seen_ - 1; an unlearned one stays numbered, and the core says that it
        is gone)."""
        if isinstance(example, (bool, np.bool_)) or not isinstance(example, numbers.Integral):
            raise TypeError(f"example must be an int (the number of a learned example); got {example!r}")
        n = self._model.counters["examples"]
        if not 0 <= int(example) < n:
            raise ValueError(
                f"example must be the number of a learned example, 0 <= example < {n} (n_seen_); got {example}"
            )
        return int(example)

    def machine_state(self, k=0):
        """The state of binary machine k: stored examples, alpha, g, S/E/R sets, bias, C, ridge.

        g_i = y_i f(x_i) + ridge * alpha_i - 1 (the gradient of the dual on K + ridge * I;
        y_i f(x_i) - 1 when ridge = 0); ``dual_objective`` is that dual's objective.
        """
        check_is_fitted(self, "_model")
        return self._model.machine_state(int(k))


@register
@shared_docs
class TwinVectorMachine(_KernelParamsMixin, _ExpansionViews, OnlineClassifierMixin):
    """Twin Vector Machine: an exact SVM on B weighted twin vectors (Wang & Vucetic, SDM 2009).

    Each twin vector j is a point q_j with the counts s_j+ / s_j- of positive / negative
    stream examples it stands for, trained as two weighted examples on the exact
    incremental SVM (:class:`IncrementalSVC`). Examples inside the margin (``|TVM(x)| <= m1``)
    enter as new twins; a full set makes room by removing a twin beyond m2 or merging the
    best pair (input- or feature-space, one-sided or global, with rejection); C is rescaled
    so that C * sum(s) stays constant. O(B^2) per accepted example, constant memory.

    Parameters
    ----------
    budget : int, default=100
    C : float, default=1.0
    m1 : float, default=1.0
    m2 : float, default=2.0
    merge : {'input', 'feature'}, default='input'
    one_sided : bool, default=True
    rejection_eta : float or None, default=0.2
        None turns rejection off.
    fixed_C_total : bool, default=True
    kernel, gamma, degree, coef0, n_epochs, shuffle, random_state
        As in :class:`budgetkernel.BudgetedSGDClassifier`.
    ridge : float, default=0.0
        As in :class:`IncrementalSVC` (K + ridge * I; 0 = the exact SVM).
        Each side of a twin is a stored example of the machine and gets the ridge.
    {{probability}}

    Notes
    -----
    Binary at heart; more than two classes one-vs-rest (one TVM per class).

    A numerical breakdown of the exact SVM (``RuntimeError``, see ``ridge``) loses nothing
    learned: the step of the failing example is undone (twins, machines, counters) and the
    model is exactly as before it. In a ``fit`` / ``partial_fit`` chunk the rows before the
    failing one stay learned; the message says how many and learning can go on.

    Examples
    --------
    >>> from budgetkernel import TwinVectorMachine, datasets
    >>> X, y = datasets.checkerboard(5000, random_state=0)
    >>> X_test, y_test = datasets.checkerboard(1000, random_state=1)
    >>> tvm = TwinVectorMachine(budget=50, C=10.0, gamma=2.0, random_state=0).fit(X, y)
    >>> round(tvm.score(X_test, y_test), 2)
    0.9

    The exact SVM runs on at most 50 twin vectors, each with the counts of positive and
    negative examples it stands for:

    >>> tvm.twin_vectors_.shape, tvm.twin_weights_.shape
    ((50, 2), (50, 2))
    """

    def __init__(self, budget=100, C=1.0, m1=1.0, m2=2.0, merge="input", one_sided=True, rejection_eta=0.2,
                 fixed_C_total=True, kernel="rbf", gamma="scale", degree=3, coef0=0.0, n_epochs=1, shuffle=False,
                 random_state=None, ridge=0.0, probability=False):
        _store_params(self, locals())

    def _validate_params(self):
        # Python's: types, the merge's name, rejection_eta as a positive number or None (off);
        # the ranges of C, m1, m2 > m1 and ridge are the core's (budget, a 64-bit count, keeps
        # Python's check of its type and size)
        _check_positive("budget", self.budget, integer=True)
        _check_choice("merge", self.merge, _MERGE)
        _check_bool("one_sided", self.one_sided)
        _check_bool("fixed_C_total", self.fixed_C_total)
        _check_positive("rejection_eta", self.rejection_eta, allow_none=True)
        if math.isinf(_real(self.m2)):
            # the core's m2 = +inf (never remove a twin) is not a parameter of this estimator
            raise ValueError(f"m2 must be a finite number greater than m1; got {self.m2!r}")
        self._check_shared_and_forward()

    def _core_fields(self, gamma):
        """These parameters as the fields of the core's TVMParams (the seed aside: it is drawn
        once, in _make_core), for _validate_params and _make_core alike."""
        return dict(
            **self._kernel_fields(gamma),
            budget=int(self.budget),
            C=_real(self.C),
            m1=_real(self.m1),
            m2=_real(self.m2),
            merge=self.merge,
            one_sided=bool(self.one_sided),
            rejection_eta=-1.0 if self.rejection_eta is None else float(self.rejection_eta),  # < 0: off
            fixed_C_total=bool(self.fixed_C_total),
            random_baseline=False,
            ridge=_real(self.ridge),
        )

    def _memory_plan(self, budget, n_features, n_classes):
        return _twin_memory_plan(budget, n_features, n_classes, 2)

    def _memory_note(self):
        return _MARGIN_SET_NOTE

    _core_name, _params_name = "TwinVectorMachine", "TVMParams"

    # budgetkernel.load of a model file without Python metadata (written by C++). The 'tvm'
    # learner is also ReservoirSVC's: its random_baseline flag tells them apart.
    _learner_kind = "tvm"

    @classmethod
    def _params_from_core(cls, model):
        """(constructor parameters, fitted attributes) of a core TwinVectorMachine; None for
        one in its random-baseline mode (a ReservoirSVC)."""
        if model.params.random_baseline:
            return None
        params, fitted = super()._params_from_core(model)
        if params["rejection_eta"] < 0:  # the core's "off"
            params["rejection_eta"] = None
        return params, fitted

    @property
    def twin_vectors_(self):
        """Twin points q_j, one row per twin (per machine for one-vs-rest, see ``twin_weights_``)."""
        check_is_fitted(self, "_model")
        return self._model.twin_points

    @property
    def twin_weights_(self):
        """Per twin: the counts s_j+ and s_j- it stands for."""
        check_is_fitted(self, "_model")
        return self._model.twin_weights


@register
@shared_docs
class ReservoirSVC(_KernelParamsMixin, _ExpansionViews, OnlineClassifierMixin):
    """The TVM paper's "Random" baseline: an exact SVM on a reservoir sample of B examples.

    Reservoir sampling keeps a uniform sample of the stream (example t replaces a random
    one with probability B/t); each change of the sample is applied to the exact incremental
    SVM (decremental unlearning of the evicted example, incremental learning of the new one).
    C is fixed.

    Parameters
    ----------
    budget : int, default=100
    C : float, default=1.0
    kernel, gamma, degree, coef0, n_epochs, shuffle, random_state
        As in :class:`budgetkernel.BudgetedSGDClassifier`.
    ridge : float, default=0.0
        As in :class:`IncrementalSVC` (K + ridge * I; 0 = the exact SVM).
    {{probability}}

    Examples
    --------
    >>> from budgetkernel import ReservoirSVC, datasets
    >>> X, y = datasets.checkerboard(5000, random_state=0)
    >>> X_test, y_test = datasets.checkerboard(1000, random_state=1)
    >>> clf = ReservoirSVC(budget=100, C=10.0, gamma=2.0, random_state=0).fit(X, y)
    >>> clf.n_support_ <= 100
    True
    >>> round(clf.score(X_test, y_test), 2)
    0.86
    """

    def __init__(self, budget=100, C=1.0, kernel="rbf", gamma="scale", degree=3, coef0=0.0, n_epochs=1,
                 shuffle=False, random_state=None, ridge=0.0, probability=False):
        _store_params(self, locals())

    def _validate_params(self):
        # the ranges of C and ridge are the core's (budget, a 64-bit count, keeps Python's check)
        _check_positive("budget", self.budget, integer=True)
        self._check_shared_and_forward()

    def _core_fields(self, gamma):
        """These parameters as the fields of the core's TVMParams in its reservoir mode (the
        seed aside: it is drawn once, in _make_core): m1, m2, merge, one_sided (their defaults
        here) and Rejection are unused; the file records rejection_eta = -1 (off),
        fixed_C_total off."""
        return dict(
            **self._kernel_fields(gamma),
            budget=int(self.budget),
            C=_real(self.C),
            rejection_eta=-1.0,
            fixed_C_total=False,
            random_baseline=True,
            ridge=_real(self.ridge),
        )

    def _memory_plan(self, budget, n_features, n_classes):
        return _twin_memory_plan(budget, n_features, n_classes, 1)

    def _memory_note(self):
        return _MARGIN_SET_NOTE

    _core_name, _params_name = "TwinVectorMachine", "TVMParams"

    # budgetkernel.load of a model file without Python metadata (written by C++): a 'tvm'
    # learner in its random-baseline mode (the others are TwinVectorMachine's).
    _learner_kind = "tvm"

    @classmethod
    def _params_from_core(cls, model):
        """(constructor parameters, fitted attributes) of a core TwinVectorMachine in its
        random-baseline mode (whose TVM-only parameters it ignores); None for a TVM."""
        if not model.params.random_baseline:
            return None
        return super()._params_from_core(model)
