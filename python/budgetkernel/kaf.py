"""Kernel adaptive filters as scikit-learn regressors: KLMS / QKLMS, KRLS with the
approximate-linear-dependence test, and the sliding-window KRLS (C++ learners/kaf.hpp).

Each drives its core filter exactly as :class:`BudgetedSGDRegressor` drives its learner
(_regressor.py): chunks run in C++ with the GIL released and stop at Ctrl-C, and save, load and
pickling carry the core's bytes. The filters predict f(x) = sum_j alpha_j k(c_j, x), without
an intercept, as the kernel adaptive filtering literature (Liu, Principe & Haykin, *Kernel
Adaptive Filtering*, Wiley 2010) defines them.
"""

from __future__ import annotations

import warnings

from ._kernel_params import _KernelExpansionMixin, _KernelParamsMixin
from ._native import core as _core
from ._persistence import register
from ._regressor import OnlineRegressorMixin
from ._validation import _check_positive, _real, _store_params

__all__ = ["KLMSRegressor", "KRLSRegressor", "SlidingWindowKRLSRegressor"]


class _KAFRegressor(_KernelParamsMixin, _KernelExpansionMixin, OnlineRegressorMixin):
    """What the three filters share: the kernel's parameters, n_epochs / shuffle /
    random_state (random_state only seeds fit's shuffling: the filters are deterministic), and
    a core built from ``_core_fields``."""

    def _validate_params(self):
        # Python's: types; every range (eta, epsilon, nu, lam, the kernel's bounds) is the core's.
        self._check_shared_and_forward()

    def _make_core(self, n_features, X):
        return self._core_class()(n_features, **self._core_fields(self._resolve_gamma(X)))


class _KLMSCores:
    """KLMSRegressor's two core filters behind one ``from_bytes``: KLMS for epsilon = 0 (no
    quantisation), QKLMS otherwise; a file says which by its learner name."""

    @staticmethod
    def from_bytes(data):
        learner = _core.load_model_info(data)["learner"]
        return (_core.KLMS if learner == "klms" else _core.QKLMS).from_bytes(data)


@register
class KLMSRegressor(_KAFRegressor):
    """Kernel least-mean-squares filter (KLMS), and its quantized version QKLMS.

    Each example is predicted (the prequential prediction f(x_t)), then learned by stochastic
    gradient descent on the squared error in the kernel's feature space (Liu, Pokharel &
    Principe, "The Kernel Least-Mean-Square Algorithm", IEEE Trans. Signal Processing 2008):
    ``f <- f + eta e_t k(x_t, .)`` with the prediction error ``e_t = y_t - f(x_t)``, so every
    example becomes a centre. With ``epsilon > 0`` it is QKLMS (Chen, Zhao, Zhu & Principe,
    IEEE Trans. Neural Networks and Learning Systems 2012): an input within Euclidean distance
    ``epsilon`` of its nearest centre adds ``eta e_t`` to that centre's coefficient instead of
    becoming a centre, which bounds the number of centres by the covering number of the data.

    Parameters
    ----------
    eta : float, default=0.5
        Step size (learning rate), > 0. Each step leaves the error at its own example
        multiplied by ``1 - eta k(x, x)``, so KLMS is stable only for ``eta k(x, x) < 2``, and
        Liu, Pokharel & Principe bound ``eta < 1 / mean k(x, x)`` for convergence in the mean
        square: ``eta < 1`` with the RBF kernel (k(x, x) = 1), where ``eta >= 2`` is refused.
        With 'poly' or 'linear', k(x, x) grows with ``|x|``: a filter that diverges raises
        ``RuntimeError`` at the first example whose prediction is no longer finite (the
        examples before it stay learned, the model stays finite and saves and loads).
    epsilon : float, default=0.0
        Quantisation size (KAFBOX's ``epsu``), in input-space distance, >= 0. 0 is KLMS (every
        example a centre; the same predictions as QKLMS with epsilon 0, bit for bit).
    kernel : {'rbf', 'linear', 'poly'}, default='rbf'
    gamma : float or 'scale', default='scale'
        Kernel coefficient; 'scale' as for the other estimators (1 / (n_features * X.var()) of
        the first chunk).
    degree : int, default=3
    coef0 : float, default=0.0
    n_epochs : int, default=1
        Passes over the data in ``fit``.
    shuffle : bool, default=False
        Whether ``fit`` shuffles the data before each pass (a filter usually follows time).
    random_state : int, numpy Generator or None, default=None
        Seeds the shuffling.

    Attributes
    ----------
    n_features_in_ : int
    support_vectors_ : ndarray of shape (n_centres, n_features)
        The centres c_j.
    dual_coef_ : ndarray of shape (n_centres, 1)
        Their coefficients alpha_j.
    n_support_ : int
    gamma_ : float
    online_mse_ : float
        Prequential mean squared error.

    Examples
    --------
    One-step prediction of the Mackey-Glass series (tau = 30) from its last 7 values:

    >>> from budgetkernel import KLMSRegressor
    >>> from budgetkernel.datasets import embed_series, mackey_glass
    >>> X, y = embed_series(mackey_glass(1507, random_state=0), order=7)
    >>> klms = KLMSRegressor(eta=0.5, gamma=1.0).fit(X[:1000], y[:1000])
    >>> klms.n_support_
    1000
    >>> mse = ((klms.predict(X[1000:]) - y[1000:]) ** 2).mean()  # test MSE, to 2 digits
    >>> print(f"{mse:.1e}")
    2.0e-03

    QKLMS reaches nearly the same error with a fraction of the centres:

    >>> qklms = KLMSRegressor(eta=0.5, epsilon=0.3, gamma=1.0).fit(X[:1000], y[:1000])
    >>> bool(qklms.n_support_ < 100)
    True
    >>> print(f"{((qklms.predict(X[1000:]) - y[1000:]) ** 2).mean():.1e}")
    2.5e-03
    """

    def __init__(
        self,
        eta=0.5,
        epsilon=0.0,
        kernel="rbf",
        gamma="scale",
        degree=3,
        coef0=0.0,
        n_epochs=1,
        shuffle=False,
        random_state=None,
    ):
        _store_params(self, locals())

    def _core_fields(self, gamma):
        return dict(**self._kernel_fields(gamma), eta=_real(self.eta), epsilon=_real(self.epsilon))

    def _make_core(self, n_features, X):
        fields = self._core_fields(self._resolve_gamma(X))
        if fields["epsilon"] == 0.0:
            del fields["epsilon"]
            return _core.KLMS(n_features, **fields)
        return _core.QKLMS(n_features, **fields)

    @classmethod
    def _core_class(cls):
        return _KLMSCores

    # QKLMSParams checks both (eta > 0, epsilon >= 0).
    _params_name = "QKLMSParams"
    # budgetkernel.load of a file written by C++: either filter.
    _learner_kind = "klms"
    _learner_kinds = ("klms", "qklms")


@register
class KRLSRegressor(_KAFRegressor):
    """Kernel recursive least squares with the approximate-linear-dependence test (KRLS-ALD).

    Engel, Mannor & Meir, "The Kernel Recursive Least-Squares Algorithm", IEEE Trans. Signal
    Processing 52(8), 2004, with ridge regularisation: the filter keeps a dictionary of
    centres and the exact minimiser of ``||y - A K alpha||^2 + lam alpha^T K alpha`` over the
    examples seen, updated in O(m^2) per example for m centres. An example joins the
    dictionary when its squared feature-space distance to the span of the dictionary exceeds
    ``nu`` (the ALD test); with ``nu=0`` every example joins, and the predictions are kernel
    ridge regression's on all the examples seen (scikit-learn's ``KernelRidge(alpha=lam)``).

    The dictionary grows as long as examples pass the ALD test, and each step costs O(m^2)
    time for m centres, whose state is four m x m matrices; on inputs of many dimensions or far
    apart in the kernel's scale (unscaled features, a large gamma) nearly every example
    passes. Without a ``budget`` a :class:`RuntimeWarning` is issued once the dictionary
    passes ``KRLSRegressor.WARN_DICTIONARY`` (1,000) centres. With ``budget=B`` the
    dictionary holds at most B centres: when a new example passes the test at B, the centre
    with the least ALD distance to the span of the others leaves, replaced in the
    approximation of every example by its projection on the others (Csato & Opper's deletion
    of a basis vector, "Sparse on-line Gaussian processes", Neural Computation 2002), so the
    model is again the regularised least-squares fit over the approximated examples.

    Parameters
    ----------
    nu : float, default=0.2
        ALD threshold, >= 0 (< 1 with the RBF kernel, whose ALD distance is at most
        k(x, x) = 1): larger gives fewer centres. 0 switches the test off (then lam > 0).
        Keep a positive nu well above 1e-12 (the dictionary's kernel matrix is inverted).
        The default suits standardised inputs with ``gamma='scale'``: on Friedman #1 (10
        features, 3,000 examples) it kept 614 centres at a test MSE of 0.074 (the targets
        standardised), where 0.1 kept 1,109 at 0.074, 0.3 kept 399 at 0.093 and 0.01 kept
        2,717 at 0.107; a smaller nu pays where the inputs have few dimensions.
    lam : float, default=1e-3
        Ridge regularisation, >= 0; 0 is Engel's unregularised KRLS (then nu > 0).
    kernel : {'rbf', 'linear', 'poly'}, default='rbf'
    gamma : float or 'scale', default='scale'
    degree : int, default=3
    coef0 : float, default=0.0
    n_epochs : int, default=1
    shuffle : bool, default=False
    random_state : int, numpy Generator or None, default=None
        Seeds fit's shuffling.
    budget : int or None, default=None
        Maximum number of centres B (needs nu > 0); None for none.

    Attributes
    ----------
    n_features_in_ : int
    support_vectors_ : ndarray of shape (n_centres, n_features)
        The dictionary.
    dual_coef_ : ndarray of shape (n_centres, 1)
    n_support_ : int
    gamma_ : float
    online_mse_ : float

    Examples
    --------
    >>> from budgetkernel import KRLSRegressor
    >>> from budgetkernel.datasets import embed_series, mackey_glass
    >>> X, y = embed_series(mackey_glass(1507, random_state=0), order=7)
    >>> krls = KRLSRegressor(nu=1e-3, lam=1e-3, gamma=1.0).fit(X[:1000], y[:1000])
    >>> bool(krls.n_support_ < 200)  # the ALD dictionary: a fraction of the 1000 examples
    True
    >>> mse = ((krls.predict(X[1000:]) - y[1000:]) ** 2).mean()  # test MSE, to 2 digits
    >>> print(f"{mse:.1e}")
    5.8e-05
    """

    def __init__(
        self,
        nu=0.2,
        lam=1e-3,
        kernel="rbf",
        gamma="scale",
        degree=3,
        coef0=0.0,
        n_epochs=1,
        shuffle=False,
        random_state=None,
        budget=None,
    ):
        _store_params(self, locals())

    #: Without a budget, a RuntimeWarning when a chunk takes the dictionary past this size.
    WARN_DICTIONARY = 1000

    def _validate_params(self):
        _check_positive("budget", self.budget, integer=True, allow_none=True)
        super()._validate_params()

    def _core_fields(self, gamma):
        budget = 0 if self.budget is None else int(self.budget)
        return dict(**self._kernel_fields(gamma), nu=_real(self.nu), lam=_real(self.lam), budget=budget)

    def _learn_chunk(self, X, y, model=None):
        model = self._model if model is None else model
        before = model.n_support
        super()._learn_chunk(X, y, model)
        self._warn_growth(before, model.n_support)

    def _learn_one(self, v, y):
        before = self.__dict__["_model"].n_support
        super()._learn_one(v, y)
        self._warn_growth(before, self.__dict__["_model"].n_support)

    def _warn_growth(self, before, after):
        limit = self.WARN_DICTIONARY
        if self.budget is None and before <= limit < after:
            warnings.warn(
                f"KRLSRegressor: the dictionary holds {after} centres and keeps growing (each step costs "
                f"O(m^2) time, the state is four m x m matrices: {4 * 8 * after**2 / 1e6:.0f} MB at m = {after}); "
                "set budget= to cap it, raise nu, or standardise the inputs (scaled features give far fewer centres)",
                RuntimeWarning,
                stacklevel=4,
            )

    _core_name, _params_name = "KRLS", "KRLSParams"
    _learner_kind = "krls"


@register
class SlidingWindowKRLSRegressor(_KAFRegressor):
    """Sliding-window kernel recursive least squares: kernel ridge regression on the last
    ``budget`` examples, updated in O(budget^2) per example.

    Van Vaerenbergh, Via & Santamaria, "A Sliding-Window Kernel RLS Algorithm and Its
    Application to Nonlinear Channel Identification", ICASSP 2006: the inverse of the
    window's regularised kernel matrix ``(K_w + lam I)^{-1}`` is grown by one example and
    shrunk by the oldest, so the predictions are those of ``KernelRidge(alpha=lam)`` fitted to
    the window, at a fixed memory, and the filter tracks a changing target.

    Parameters
    ----------
    budget : int, default=100
        The window length (KAFBOX's ``M``), >= 1.
    lam : float, default=1e-2
        Ridge regularisation (KAFBOX's ``c``), > 0.
    kernel : {'rbf', 'linear', 'poly'}, default='rbf'
    gamma : float or 'scale', default='scale'
    degree : int, default=3
    coef0 : float, default=0.0
    n_epochs : int, default=1
    shuffle : bool, default=False
    random_state : int, numpy Generator or None, default=None
        Seeds fit's shuffling.

    Attributes
    ----------
    n_features_in_ : int
    support_vectors_ : ndarray of shape (min(n_seen, budget), n_features)
        The window, oldest first.
    dual_coef_ : ndarray of shape (min(n_seen, budget), 1)
    n_support_ : int
    gamma_ : float
    online_mse_ : float

    Examples
    --------
    >>> from budgetkernel import SlidingWindowKRLSRegressor
    >>> from budgetkernel.datasets import embed_series, mackey_glass
    >>> X, y = embed_series(mackey_glass(1507, random_state=0), order=7)
    >>> sw = SlidingWindowKRLSRegressor(budget=100, lam=1e-3, gamma=1.0).fit(X[:1000], y[:1000])
    >>> sw.n_support_
    100
    >>> mse = ((sw.predict(X[1000:]) - y[1000:]) ** 2).mean()  # test MSE, to 2 digits
    >>> print(f"{mse:.1e}")
    2.6e-04
    """

    def __init__(
        self,
        budget=100,
        lam=1e-2,
        kernel="rbf",
        gamma="scale",
        degree=3,
        coef0=0.0,
        n_epochs=1,
        shuffle=False,
        random_state=None,
    ):
        _store_params(self, locals())

    def _validate_params(self):
        _check_positive("budget", self.budget, integer=True)
        super()._validate_params()

    def _core_fields(self, gamma):
        return dict(**self._kernel_fields(gamma), budget=int(self.budget), lam=_real(self.lam))

    def _memory_plan(self, budget, n_features, n_classes):
        plan = super()._memory_plan(budget, n_features, n_classes)
        plan.append((2 * (budget + 1) ** 2 * 8, "window inverse and kernel matrix", "2 (budget + 1)^2 float64 values"))
        return plan

    _core_name, _params_name = "SlidingWindowKRLS", "SlidingKRLSParams"
    _learner_kind = "sliding_krls"
