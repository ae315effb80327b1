"""Sparse Passive-Aggressive learning with kernels (SPA)."""

from __future__ import annotations

import math

from sklearn.utils.validation import _num_samples, check_is_fitted

from ._docs import shared_docs
from ._base import OnlineClassifierMixin
from ._kernel_params import _AveragedMixin, _KernelExpansionMixin, _KernelParamsMixin
from ._persistence import register
from ._validation import _check_bool, _check_positive, _real, _seed, _store_params
from ._native import core as _core

__all__ = ["SparsePAClassifier"]


@register
@shared_docs
class SparsePAClassifier(_KernelParamsMixin, _KernelExpansionMixin, _AveragedMixin, OnlineClassifierMixin):
    """Sparse Passive-Aggressive learning with kernels (SPA).

    Implements Lu, Zhao & Hoi, "Online Sparse Passive Aggressive Learning with Kernels"
    (SDM 2016), Algorithm 1: an example with hinge loss L becomes a support vector with
    probability rho = min(alpha, L) / beta (a Bernoulli draw from the learner's own seeded
    generator) and then gets the PA step tau = min(eta / rho, L / k(x, x)) (Proposition 1).
    SVs are never removed, so the average of all the classifiers, which SPA predicts with
    when ``averaged=True`` (SPA-avg; SPA-last otherwise), has exactly the SVs of the last one.

    Parameters
    ----------
    alpha : float, default=1.0
        Loss cap of the sampling probability (> 0).
    beta : float, default=20.0
        Divisor of the sampling probability (>= alpha). Larger = fewer SVs: at most
        alpha T / beta in expectation after T examples (Theorem 3.2).
    eta : float, default=1.0
        Aggressiveness (> 0).
    averaged : bool, default=True
        Predict (online and batch) with the mean of every classifier held, f_bar.
    target_svs : int or None, default=None
        Expected-budget mode: choose beta = max(alpha, alpha * T / target_svs) so that the
        expected number of SVs after T examples is at most ``target_svs`` (the remark after
        Theorem 3.2). T is ``stream_length``, or in :meth:`fit` ``n_samples * n_epochs``.
        ``beta`` is then ignored; the value used is ``beta_``.
    stream_length : int or None, default=None
        T for ``target_svs`` when learning with ``partial_fit`` / ``learn_one``.
    {{kernel}}
    n_epochs : int, default=1
    shuffle : bool, default=False
    random_state : int, numpy Generator or None, default=None
        Seeds the sampling (and shuffling).
    {{probability}}

    Attributes
    ----------
    classes_, n_features_in_, support_vectors_, dual_coef_, n_support_, gamma_,
    online_error_, prequential_curve_, counters_
    beta_ : float
        The beta in use.
    expected_n_support_ : float
        sum_t rho_t so far: the expected number of SVs (E[#SV] = E[sum rho_t]), to compare
        with the actual ``n_support_``.
    average_dual_coef_ : ndarray
        Coefficients of the averaged classifier (on ``support_vectors_``).

    Notes
    -----
    More than two classes: the max-loss multi-class PA form (as :class:`BudgetedPAClassifier`):
    u = e_y - e_r for the highest-scoring wrong class r, tau = min(eta / rho, L / (2 k(x, x))).
    The averaged classifier costs O(1) extra work per step (lazy sums: each SV's averaged
    coefficient follows from when it entered).

    Examples
    --------
    Aiming at 100 support vectors in expectation over a 5000-example stream sets
    beta = alpha * 5000 / 100:

    >>> from budgetkernel import SparsePAClassifier, datasets
    >>> X, y = datasets.checkerboard(5000, random_state=0)
    >>> X_test, y_test = datasets.checkerboard(1000, random_state=1)
    >>> clf = SparsePAClassifier(target_svs=100, gamma=2.0, random_state=0).fit(X, y)
    >>> clf.beta_
    50.0
    >>> clf.n_support_ <= 100
    True
    >>> round(clf.score(X_test, y_test), 2)
    0.79
    """

    def __init__(
        self,
        alpha=1.0,
        beta=20.0,
        eta=1.0,
        averaged=True,
        target_svs=None,
        stream_length=None,
        kernel="rbf",
        gamma="scale",
        degree=3,
        coef0=0.0,
        n_epochs=1,
        shuffle=False,
        random_state=None,
        probability=False,
    ):
        _store_params(self, locals())

    def _validate_params(self):
        # Python's: types, target_svs and stream_length (beta from the stream's length); the
        # ranges of alpha, beta >= alpha and eta are the core's.
        _check_bool("averaged", self.averaged)
        _check_positive("target_svs", self.target_svs, integer=True, allow_none=True)
        _check_positive("stream_length", self.stream_length, integer=True, allow_none=True)
        beta = _real(self.beta)
        if self.target_svs is not None and beta < _real(self.alpha):
            # beta is computed from target_svs (>= alpha) and the given one is unused: it need
            # only be a finite number (NaN and inf stay, for the core to refuse)
            beta = _real(self.alpha)
        self._check_shared_and_forward(self._core_fields(self._checked_gamma(), beta))

    def _core_fields(self, gamma, beta):
        """These parameters as the fields of the core's SPAParams, for the resolved gamma and
        beta (the seed aside: it is drawn once, in _make_core)."""
        return dict(
            **self._kernel_fields(gamma), alpha=_real(self.alpha), beta=beta, eta=_real(self.eta),
            averaged=bool(self.averaged),
        )

    def _resolve_beta(self):
        if self.target_svs is None:
            return float(self.beta)
        T = self.stream_length if self.stream_length is not None else getattr(self, "_fit_length", None)
        if T is None:
            raise ValueError("target_svs needs stream_length when learning with partial_fit / learn_one")
        beta = max(float(self.alpha), float(self.alpha) * T / self.target_svs)
        if not math.isfinite(beta):
            raise ValueError(
                f"target_svs={self.target_svs} with alpha={self.alpha} and a stream of {T} examples gives "
                f"beta = alpha * T / target_svs = {beta}, not a finite number"
            )
        return beta

    def fit(self, X, y):
        try:
            self._fit_length = _num_samples(X) * self.n_epochs
        except TypeError:
            self._fit_length = None  # validate_data raises the clear error
        try:
            return super().fit(X, y)
        finally:
            del self._fit_length

    fit.__doc__ = OnlineClassifierMixin.fit.__doc__

    def _make_core(self, n_features, n_classes, X):
        self.beta_ = self._resolve_beta()
        fields = self._core_fields(self._resolve_gamma(X), self.beta_)
        return _core.SparsePA(n_features, n_classes, **fields, seed=_seed(self.random_state))

    _core_name, _params_name = "SparsePA", "SPAParams"

    # budgetkernel.load of a model file without Python metadata (written by C++).
    _learner_kind = "spa"

    @classmethod
    def _params_from_core(cls, model):
        """(constructor parameters, fitted attributes) of a core SparsePA: the file's beta is
        ``beta`` and ``beta_`` (target_svs / stream_length, known to Python only, take their
        defaults)."""
        params, fitted = super()._params_from_core(model)
        return params, {**fitted, "beta_": model.params.beta}

    def _extra_fitted(self):
        return {**super()._extra_fitted(), "beta_": self.beta_}

    @property
    def expected_n_support_(self):
        check_is_fitted(self, "_model")
        return self._model.expected_support
