"""Passive-Aggressive regression: kernel PA / PA-I / PA-II, on a budget (BPA) or sampled (SPA)."""

from __future__ import annotations

from sklearn.utils.validation import check_is_fitted

from ._docs import shared_docs
from ._kernel_params import _AveragedMixin, _KernelExpansionMixin, _KernelParamsMixin
from ._memory import _projection_memory
from ._native import core as _core
from ._persistence import register
from ._regressor import OnlineRegressorMixin
from ._validation import _check_bool, _check_choice, _check_positive, _integer, _real, _store_params

__all__ = ["BudgetedPARegressor"]

# The names, as the core defines them (learners/pa_regressor.hpp).
_VARIANTS = _core.PARegressorParams.choices["variant"]


@register
@shared_docs
class BudgetedPARegressor(_KernelParamsMixin, _KernelExpansionMixin, _AveragedMixin, OnlineRegressorMixin):
    """Kernel Passive-Aggressive regression, unbudgeted, on a budget, or sampled.

    Each example is predicted (the prequential prediction), then learned by the
    epsilon-insensitive PA step of Crammer et al., "Online Passive-Aggressive Algorithms"
    (JMLR 2006, section 5): with residual ``r = y - b - f(x)`` and loss
    ``l = max(0, |r| - epsilon)``, x joins the model with coefficient ``sign(r) tau``,
    ``tau = l / k(x, x)`` (PA), ``min(C, l / k(x, x))`` (PA-I) or
    ``l / (k(x, x) + 1 / (2 C))`` (PA-II). With a budget B, a full model makes room as the
    Budgeted PA of Wang & Vucetic (AISTATS 2010) does for classification, with the label
    replaced by ``sign(r)``: one SV is removed and its part re-fitted on the new example
    ('simple'), on it and the removed SV's nearest neighbour ('nn') or on all remaining SVs
    ('project'), the SV whose removal costs least in the PA objective (or the new example
    itself) being the one that goes. With ``sampling=True`` an example with positive loss
    becomes an SV only with probability ``rho = min(alpha, l) / beta`` and its loss then
    weighs ``1 / rho`` (Lu, Zhao & Hoi, SDM 2016, SPA), so the model grows with the
    loss, not the stream.

    Parameters
    ----------
    budget : int or None, default=100
        Maximum number of support vectors B; None for unbudgeted PA.
    variant : {'simple', 'nn', 'project'}, default='nn'
        Which SVs absorb the removed one: BPA-S (the new example, O(B)), BPA-NN (the new
        example and the removed SV's nearest neighbour, expected O(B)), BPA-P (every
        remaining SV, O(B^2) with a maintained inverse).
    pa_type : {0, 1, 2}, default=1
        0 = PA, 1 = PA-I, 2 = PA-II.
    C : float, default=1.0
        Aggressiveness (ignored by ``pa_type=0``).
    epsilon : float, default=0.1
        The insensitive zone: residuals within it are not learned from.
    sampling : bool, default=False
        SPA's sampling: add an SV with probability ``min(alpha, loss) / beta``.
    alpha : float, default=1.0
        SPA's loss cap (> 0); only with ``sampling``.
    beta : float, default=20.0
        SPA's divisor (>= alpha); only with ``sampling``.
    averaged : bool, default=False
        Predict (online and batch) with the mean of every regressor held, intercepts
        included. With a budget the average keeps every removed SV: see
        ``n_support_average_``.
        {{average_growth}}
    {{fit_intercept}}
    kernel : {'rbf', 'linear', 'poly'}, default='rbf'
    gamma : float or 'scale', default='scale'
    degree : int, default=3
    coef0 : float, default=0.0
    {{fit_passes}}
    random_state : int, numpy Generator or None, default=None
        Seeds SPA's draws and shuffling.

    Attributes
    ----------
    n_features_in_ : int
    support_vectors_ : ndarray of shape (n_SV, n_features)
    dual_coef_ : ndarray of shape (n_SV, 1)
    n_support_ : int
    intercept_ : float
        The intercept predictions use (the mean of the intercepts held when ``averaged``).
    gamma_ : float
    online_mse_ : float
        Prequential mean squared error; ``online_mae_`` the same for the absolute error.

    Examples
    --------
    >>> import numpy as np
    >>> from budgetkernel import BudgetedPARegressor
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(-3, 3, size=(4000, 1))
    >>> y = np.sin(X[:, 0]) + 0.1 * rng.standard_normal(4000)
    >>> reg = BudgetedPARegressor(budget=50, C=0.1, gamma=1.0).fit(X, y)
    >>> reg.n_support_
    50
    >>> X_test = np.linspace(-3, 3, 7).reshape(-1, 1)
    >>> bool(np.max(np.abs(reg.predict(X_test) - np.sin(X_test[:, 0]))) < 0.2)
    True

    It keeps learning from a stream, chunk by chunk or one example at a time:

    >>> _ = reg.partial_fit(X[:100], y[:100]).learn_one(X[0], y[0])
    >>> reg.n_seen_
    4101
    """

    def __init__(
        self,
        budget=100,
        variant="nn",
        pa_type=1,
        C=1.0,
        epsilon=0.1,
        sampling=False,
        alpha=1.0,
        beta=20.0,
        averaged=False,
        fit_intercept=True,
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
        # Python's: types, None for no budget, the option names; every range (C, pa_type,
        # epsilon, alpha, beta >= alpha, the kernel's bounds) is the core's.
        _check_positive("budget", self.budget, integer=True, allow_none=True)
        _check_choice("variant", self.variant, _VARIANTS)
        _check_bool("sampling", self.sampling)
        _check_bool("averaged", self.averaged)
        _check_bool("fit_intercept", self.fit_intercept)
        self._check_shared_and_forward()

    def _core_fields(self, gamma):
        """These parameters as the fields of the core's PARegressorParams (the seed aside)."""
        return dict(
            **self._kernel_fields(gamma),
            C=_real(self.C),
            pa_type=_integer(self.pa_type, bad=-1),
            epsilon=_real(self.epsilon),
            budget=0 if self.budget is None else int(self.budget),
            variant=self.variant,
            sampling=bool(self.sampling),
            alpha=_real(self.alpha),
            beta=_real(self.beta),
            averaged=bool(self.averaged),
            fit_intercept=bool(self.fit_intercept),
        )

    def _memory_plan(self, budget, n_features, n_classes):
        plan = super()._memory_plan(budget, n_features, n_classes)
        if self.variant == "project":  # BPA-P's maintained inverse, as BudgetedPAClassifier's
            plan.append(_projection_memory(2 * budget, "(2 budget)^2"))
        return plan

    _core_name, _params_name = "PARegressor", "PARegressorParams"

    # budgetkernel.load of a model file without Python metadata (written by C++).
    _learner_kind = "pa_regressor"

    @property
    def intercept_(self):
        """The intercept predictions use (the mean of the intercepts held when averaged)."""
        check_is_fitted(self, "_model")
        return self._model.intercept

    @property
    def expected_n_support_(self):
        """With ``sampling``: the sum of the sampling probabilities, the expected SV count."""
        check_is_fitted(self, "_model")
        return self._model.expected_support
