"""Pegasos estimators: Budgeted SGD (kernel, budgeted or not) and linear Pegasos."""

from __future__ import annotations

import numpy as np
from sklearn.utils.validation import check_is_fitted

from ._docs import shared_docs
from ._base import OnlineClassifierMixin
from ._kernel_params import _KernelExpansionMixin, _KernelParamsMixin
from ._memory import _projection_memory
from ._persistence import register
from ._validation import _check_choice, _check_positive, _real, _store_params
from ._native import core as _core

__all__ = ["BudgetedSGDClassifier", "LinearPegasosClassifier"]

# The strategies' names, as the core defines them (budget/maintainer.hpp).
_MAINTENANCE = _core.BSGDParams.choices["maintenance"]
_LOSSES = _core.BSGDParams.choices["loss"]


class _AutoMaintenanceMixin:
    """``maintenance='auto'`` of the Budgeted SGD estimators: the rule the kernel allows.

    Merging needs the Gaussian kernel (the point that best replaces two SVs lies on their
    segment only for it: BSGD paper section 4.3, eq. 18-22), so 'auto' merges under 'rbf'.
    Under 'linear' and 'poly' it projects (section 4.2, the paper's next best): their feature
    space has a finite dimension, so once the SVs span it a projection loses nothing. A
    model file records the rule the model uses, which loads back as 'auto' where 'auto'
    gives it: the file of a model with 'auto' is the file of the same model with its rule
    named.
    """

    def _maintenance(self):
        """The budget-maintenance rule the core learner gets."""
        if isinstance(self.maintenance, str) and self.maintenance == "auto":
            return "merge" if self.kernel == "rbf" else "project"
        return self.maintenance

    def _check_maintenance(self, names):
        _check_choice("maintenance", self.maintenance, ("auto", *names))

    def _maintenance_memory(self, budget):
        """The memory plan's entry of the budget maintenance (valid parameters)."""
        maintenance = self._maintenance()
        if maintenance in ("project", "project-exact"):
            # activated when the store first holds budget + 1 SVs, at exactly that capacity
            return _projection_memory(budget + 1, "(budget + 1)^2")
        # merging and removal keep the kernel matrix of the SVs (GramCache)
        how = "merging" if maintenance == "merge" else "removal"
        return (budget + 1) ** 2 * 8, f"kernel-matrix cache of {how}", "(budget + 1)^2 float64 values"

    def _saved_params(self):
        params = super()._saved_params()
        params["maintenance"] = self._maintenance()
        return params

    @classmethod
    def _params_from_file(cls, params):
        params = super()._params_from_file(params)
        if params.get("maintenance") == cls(kernel=params.get("kernel", "rbf"))._maintenance():
            params["maintenance"] = "auto"
        return params

    @classmethod
    def _params_from_core(cls, model):
        params, fitted = super()._params_from_core(model)
        return cls._params_from_file(params), fitted


@register
@shared_docs
class BudgetedSGDClassifier(_AutoMaintenanceMixin, _KernelParamsMixin, _KernelExpansionMixin, OnlineClassifierMixin):
    """Budgeted SGD: kernel Pegasos with at most ``budget`` support vectors.

    Implements Algorithm 1 of Wang, Crammer & Vucetic, "Multi-class Pegasos on a Budget"
    (ICML 2010): a stochastic sub-gradient step on the (Crammer-Singer multi-class) SVM
    objective with step size 1/(lam t), projection onto the ball of radius 1/sqrt(lam),
    and, when the model holds more than ``budget`` SVs, one budget-maintenance step.
    With ``budget=None`` it is unbudgeted kernel Pegasos.

    Parameters
    ----------
    budget : int or None, default=100
        Maximum number of support vectors B; None for no budget.
    maintenance : {'auto', 'merge', 'project', 'project-exact', 'remove-random', \
'remove-oldest', 'remove-smallest'}, default='auto'
        Budget maintenance: merge the smallest SV with its best partner (RBF only, O(B)),
        project the smallest SV onto the rest (O(B^2)), or remove an SV (O(B)).
        'project-exact' projects the SV whose projection degrades the model least (eq. 17).
        'auto' merges under the RBF kernel and projects under the linear and polynomial
        ones, where merging is undefined (their feature space is finite-dimensional, so a
        projection is exact once the SVs span it).
    lam : float, default=1e-3
        Regularisation parameter lambda of the SVM objective. The default, with
        ``average=True``, was the best single setting measured across the project's benchmark
        streams (bench/tuning.py); the best lam depends on the stream's length (C = 1 /
        (lam n)): :class:`~budgetkernel.model_selection.PrequentialSearch` chooses it.
    kernel : {'rbf', 'linear', 'poly'}, default='rbf'
    gamma : float or 'scale', default='scale'
        Kernel coefficient; 'scale' uses 1 / (n_features * X.var()) of the first chunk seen
        (1.0 if it is constant). A single first example (``learn_one``, or a one-row chunk)
        has no spread to measure: 'scale' then gives 1 / n_features (scikit-learn's 'auto'),
        which suits standardised features (e.g. after river's ``StandardScaler``); pass a
        number for anything else.
    degree : int, default=3
        Degree of the polynomial kernel.
    coef0 : float, default=0.0
        Independent term of the polynomial kernel: >= 0 (with coef0 < 0 it is not positive
        semi-definite, which the learner's steps assume) and ``|coef0|^degree <= 1e300``.
    average : bool, int or 'auto', default='auto'
        Predict with an average of the iterates instead of the last one: True averages from
        the first example, an int t0 >= 1 from example t0 on; 'auto' is True with merging,
        projection or no budget and False with removal (which drops the averaged coefficients
        an SV holds: measured worse with the average, merging and projection better). The averaged coefficients live
        on the same SVs and follow every budget-maintenance step (a merge combines them by
        eq. 22, a projection projects them), so the averaged model has the same B SVs;
        learning itself is unchanged. ``dual_coef_`` stays the last iterate;
        ``predictor_coef_`` is what predictions use.
    average_decay : float, default=10.0
        eta of polynomial-decay averaging (Shamir & Zhang 2013): the k-th averaged iterate
        enters with weight (eta + 1) / (k + eta), so recent iterates count more; 0 is the
        plain mean (Polyak-Ruppert), which on a budget is dragged down by old iterates whose
        SVs have since been merged (see the BSGD paper page of the documentation).
    n_epochs : int, default=1
        Passes over the data in ``fit`` (``partial_fit`` always makes one).
    shuffle : bool, default=False
        Whether ``fit`` shuffles the data before each pass (a stream keeps its order).
    random_state : int, numpy Generator or None, default=None
        Seeds random removal and shuffling.
    loss : {'hinge', 'log'}, default='hinge'
        The loss of the SGD steps. 'hinge' is the SVM of the BSGD paper. 'log' is budgeted
        kernel logistic regression: the same steps (size 1/(lam t), the ball projection, the
        same budget maintenance) on the logistic loss log(1 + exp(-y f)) for two classes and
        the softmax cross-entropy over the n_classes outputs for more. Its decision values are
        log-odds, so ``predict_proba`` is their sigmoid / softmax (always available); with
        'hinge' it needs ``probability=True``, an online Platt calibration of them. Every
        example has a nonzero logistic gradient, so each adds an SV and the budget is
        maintained at every step after the first B (more maintenance steps than the hinge
        loss, which adds only margin errors).
    {{probability}}
        With ``loss='log'`` the probabilities are the model's own (native), whatever
        this is.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
    n_features_in_ : int
    support_vectors_ : ndarray of shape (n_SV, n_features)
    dual_coef_ : ndarray of shape (n_SV, n_outputs)
        Coefficients of the kernel expansion (one column for two classes).
    n_support_ : int
    gamma_ : float
    online_error_ : float
        Prequential mistake rate (each example predicted before it was learned).
    prequential_curve_ : list of (examples, cumulative mistakes)
        One point per learned chunk; ``learn_one`` adds points on a geometric grid (see
        ``learn_one``), so that the curve stays small on an endless stream.

    Examples
    --------
    >>> from budgetkernel import BudgetedSGDClassifier, datasets
    >>> X, y = datasets.checkerboard(5000, random_state=0)
    >>> X_test, y_test = datasets.checkerboard(1000, random_state=1)
    >>> clf = BudgetedSGDClassifier(budget=100, gamma=2.0, lam=1e-4, random_state=0).fit(X, y)
    >>> clf.n_support_
    100
    >>> round(clf.score(X_test, y_test), 2)
    0.96
    >>> clf.predict([[0.5, 0.5], [1.5, 0.5]])  # centres of a +1 and a -1 square
    array([ 1, -1])

    The model keeps learning from a stream, chunk by chunk, within the same budget:

    >>> for X_chunk, y_chunk in datasets.stream("checkerboard", 5000, chunk_size=1000, random_state=2):
    ...     _ = clf.partial_fit(X_chunk, y_chunk)
    >>> clf.n_seen_, clf.n_support_
    (10000, 100)

    Kernel logistic regression on the same budget gives probabilities of its own, the
    sigmoid of the decision values:

    >>> klr = BudgetedSGDClassifier(loss="log", budget=100, gamma=2.0, lam=1e-4, random_state=0).fit(X, y)
    >>> P = klr.predict_proba([[0.5, 0.5], [1.5, 0.5]])
    >>> bool(np.allclose(P[:, 1], 1 / (1 + np.exp(-klr.decision_function([[0.5, 0.5], [1.5, 0.5]])))))
    True
    >>> klr.predict_proba([[0.5, 0.5]]).round(1)  # the centre of a +1 square: columns -1, +1
    array([[0., 1.]])
    """

    def __init__(
        self,
        budget=100,
        maintenance="auto",
        lam=1e-3,
        kernel="rbf",
        gamma="scale",
        degree=3,
        coef0=0.0,
        average="auto",
        average_decay=10.0,
        n_epochs=1,
        shuffle=False,
        random_state=None,
        loss="hinge",
        probability=False,
    ):
        _store_params(self, locals())

    def _validate_params(self):
        # Python's: types, None for no budget, the option names, `average` as True / False / a
        # start; every range (lam, average_decay, merging's rbf kernel, the kernel's bounds) is
        # the core's.
        _check_positive("budget", self.budget, integer=True, allow_none=True)
        self._check_maintenance(_MAINTENANCE)
        _check_choice("loss", self.loss, _LOSSES)
        if not isinstance(self.average, (bool, np.bool_)) and not (
            isinstance(self.average, str) and self.average == "auto"
        ):
            try:
                _check_positive("average", self.average, integer=True)
            except ValueError:
                raise ValueError(
                    "average must be True, False, 'auto' or a positive integer (the example from which to average); "
                    f"got {self.average!r}"
                ) from None
        self._check_shared_and_forward()

    def _memory_plan(self, budget, n_features, n_classes):
        plan = super()._memory_plan(budget, n_features, n_classes)
        plan.append(self._maintenance_memory(budget))
        if self._averages():
            n_out = 1 if n_classes == 2 else n_classes
            plan.append(((budget + 1) * n_out * 8, "averaged coefficients", "(budget + 1) x n_outputs float64 values"))
        return plan

    def _average_start(self):
        """``average`` as the core's average_start: 0 off, t0 >= 1, -1 'auto' (the core
        resolves it by the maintenance)."""
        if isinstance(self.average, str):
            return -1
        if isinstance(self.average, (bool, np.bool_)):
            return 1 if self.average else 0
        return int(self.average)

    def _averages(self):
        """Whether the model averages (valid parameters): 'auto' as the core resolves it."""
        if isinstance(self.average, str):
            return self.budget is None or not self._maintenance().startswith("remove")
        return bool(self.average)

    def _core_fields(self, gamma):
        """These parameters as the fields of the core's BSGDParams (the seed aside: it is drawn
        once, in _make_core), for _validate_params and _make_core alike."""
        return dict(
            **self._kernel_fields(gamma),
            lam=_real(self.lam),
            budget=0 if self.budget is None else int(self.budget),
            maintenance=self._maintenance(),
            average_start=self._average_start(),
            average_decay=_real(self.average_decay),
            loss=self.loss,
        )

    _core_name, _params_name = "KernelPegasos", "BSGDParams"
    _SAVED_ONLY_OFF_DEFAULT = {"probability": False, "loss": "hinge"}

    # budgetkernel.load of a model file without Python metadata (written by C++).
    _learner_kind = "bsgd"

    @classmethod
    def _params_from_core(cls, model):
        """As the base's, with the core's average_start (0 = off, t0 >= 1) as ``average``:
        True for t0 = 1, and 'auto' where that is what 'auto' resolves to."""
        params, fitted = super()._params_from_core(model)
        start = model.params.average_start
        params["average"] = start if start > 1 else bool(start)
        probe = cls(budget=params["budget"], maintenance=params["maintenance"], kernel=params["kernel"])
        if start == int(probe._averages()):
            params["average"] = "auto"  # what 'auto' gives with this maintenance: the default's name
        return params, fitted

    @property
    def predictor_coef_(self):
        """Coefficients predictions use (averaged ones with ``average``), one row per SV."""
        check_is_fitted(self, "_model")
        return self._model.predictor_coefficients


@register
@shared_docs
class LinearPegasosClassifier(OnlineClassifierMixin):
    """Linear Pegasos (Shalev-Shwartz, Singer & Srebro 2007) with mini-batches.

    Binary or Crammer-Singer multi-class (section 2.1 of the BSGD paper); the mini-batch
    is ``batch_size`` consecutive stream examples, step size 1/(lam t), and projection onto
    the ball of radius 1/sqrt(lam).

    Parameters
    ----------
    lam : float, default=1e-4
    batch_size : int, default=1
        Examples per step. ``fit`` ends each pass with one step on its last
        ``n_samples % batch_size`` examples (averaged over their number), so every example
        is learned; ``partial_fit`` and ``learn_one`` carry a partial batch over to the next
        call instead, so that a stream gives the same model however it is chunked.
    n_epochs : int, default=1
    shuffle : bool, default=False
    random_state : int, numpy Generator or None, default=None
        Seeds shuffling only.
    {{probability}}

    Attributes
    ----------
    coef_ : ndarray of shape (n_outputs, n_features)
    classes_, n_features_in_, online_error_, prequential_curve_

    Examples
    --------
    Learning Breiman's waveform (three classes, nearly linear) from a stream of chunks; the
    first chunk names every class:

    >>> from budgetkernel import LinearPegasosClassifier, datasets
    >>> clf = LinearPegasosClassifier(lam=1e-2, batch_size=10)
    >>> for X_chunk, y_chunk in datasets.stream("waveform", 5000, chunk_size=1000, random_state=0):
    ...     _ = clf.partial_fit(X_chunk, y_chunk, classes=[0, 1, 2])
    >>> clf.coef_.shape
    (3, 21)
    >>> X_test, y_test = datasets.waveform(1000, random_state=1)
    >>> round(clf.score(X_test, y_test), 2)
    0.79
    """

    def __init__(self, lam=1e-4, batch_size=1, n_epochs=1, shuffle=False, random_state=None, probability=False):
        _store_params(self, locals())

    def _validate_params(self):
        # lam's range is the core's: LinearPegasos has no Params struct, so the constructor
        # that checks it is called on the smallest model (1 feature); batch_size, a 64-bit
        # count, keeps Python's check of its type and size.
        _check_positive("batch_size", self.batch_size, integer=True)
        self._check_fit_params()
        try:
            _core.LinearPegasos(1, 2, _real(self.lam), 1)
        except ValueError as e:
            raise ValueError(f"{e}; got {self.lam!r}") from None

    def _make_core(self, n_features, n_classes, X):
        return _core.LinearPegasos(n_features, n_classes, float(self.lam), int(self.batch_size))

    _core_name = "LinearPegasos"

    def _end_of_pass(self):
        # A finite data set ends here: its partial last batch is a step of its own (it used
        # to wait for examples that never came, so fit on 15 rows with batch_size=10 learned
        # from the first 10 only, and batch_size > n_samples learned nothing).
        self._model.flush()

    _learner_kind = "linear_pegasos"

    @classmethod
    def _params_from_core(cls, model):
        """(constructor parameters, fitted attributes) of a core LinearPegasos."""
        return dict(lam=float(model.lam), batch_size=int(model.batch_size)), {}

    @property
    def coef_(self):
        check_is_fitted(self, "_model")
        return np.ascontiguousarray(self._model.weights.T)
