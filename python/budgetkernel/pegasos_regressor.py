"""Budgeted SGD regression: kernel Pegasos' step on a regression loss, on a budget."""

from __future__ import annotations

from sklearn.utils.validation import check_is_fitted

from ._docs import shared_docs
from ._kernel_params import _KernelExpansionMixin, _KernelParamsMixin
from ._native import core as _core
from ._persistence import register
from .pegasos import _AutoMaintenanceMixin
from ._regressor import OnlineRegressorMixin
from ._validation import _check_bool, _check_choice, _check_positive, _real, _store_params

__all__ = ["BudgetedSGDRegressor"]

# The names, as the core defines them (budget/maintainer.hpp, learners/pegasos_regressor.hpp).
_MAINTENANCE = _core.BSGDRegressorParams.choices["maintenance"]
_LOSSES = _core.BSGDRegressorParams.choices["loss"]


@register
@shared_docs
class BudgetedSGDRegressor(_AutoMaintenanceMixin, _KernelParamsMixin, _KernelExpansionMixin, OnlineRegressorMixin):
    """Budgeted SGD regression: kernel Pegasos on a regression loss, with at most ``budget``
    support vectors.

    Each example is predicted (the prequential prediction), then learned by the stochastic
    sub-gradient step of Algorithm 1 of Wang, Crammer & Vucetic, "Multi-class Pegasos on a
    Budget" (ICML 2010) on the objective ``lam/2 ||w||^2 + mean loss(y - b - f(x))``: step
    size 1/(lam t), one new support vector with coefficient ``-loss'(residual) / (lam t)``,
    projection onto the ball that holds the minimiser (radius ``sqrt(2 L0 / lam)``, with L0
    the largest loss of the zero function seen), and, when the model holds more than
    ``budget`` SVs, one budget-maintenance step, the same as the classifier's (merging and
    projection work unchanged on one coefficient per SV). With ``budget=None`` it is
    unbudgeted kernel Pegasos for regression.

    Parameters
    ----------
    budget : int or None, default=100
        Maximum number of support vectors B; None for no budget.
    maintenance : {'auto', 'merge', 'project', 'project-exact', 'remove-random', \
'remove-oldest', 'remove-smallest'}, default='auto'
        Budget maintenance, as :class:`BudgetedSGDClassifier`'s (merging needs the RBF kernel;
        'auto' merges under it and projects under the linear and polynomial kernels).
    loss : {'epsilon_insensitive', 'squared', 'huber'}, default='epsilon_insensitive'
        ``max(0, |r| - epsilon)`` (support vector regression), ``r^2 / 2``, or Huber's loss
        with threshold ``epsilon``, of the residual r = y - prediction. Targets whose
        residuals ``|y - mean(y)|`` all lie below ~1.5e-154 leave the squares of 'squared'
        and 'huber' (the loss and Pegasos' projection radius) below the double range: a
        ``ValueError`` asks to rescale them.
    epsilon : float, default=0.1
        The insensitive zone of 'epsilon_insensitive', the threshold of 'huber' (> 0 there);
        'squared' ignores it (scikit-learn's SGDRegressor uses one epsilon the same way).
    lam : float, default=1e-3
        Regularisation parameter lambda. With the squared loss, steps 1/(lam t) larger than 2
        overshoot until t passes 1/(2 lam): prefer a larger lam there, or a step offset t0.
    t0 : float, default=0.0
        Step offset, >= 0: the step size is ``1 / (lam (t + t0))`` (Bottou's schedule for SGD),
        the same objective and limit. 0 is Pegasos' ``1 / (lam t)``, whose first steps
        (about ``1 / lam``) overshoot the targets when lam is small; ``t0`` around
        ``1 / lam`` starts near 1, as KLMS's step. Saved in model files (files from before it
        existed load with 0).
    {{fit_intercept}}
    kernel : {'rbf', 'linear', 'poly'}, default='rbf'
    gamma : float or 'scale', default='scale'
        Kernel coefficient; 'scale' as for the classifiers (1 / (n_features * X.var()) of the
        first chunk, 1 / n_features for a single first example).
    degree : int, default=3
    coef0 : float, default=0.0
    {{fit_passes}}
    random_state : int, numpy Generator or None, default=None
        Seeds random removal and shuffling.

    Attributes
    ----------
    n_features_in_ : int
    support_vectors_ : ndarray of shape (n_SV, n_features)
    dual_coef_ : ndarray of shape (n_SV, 1)
    n_support_ : int
    intercept_ : float
    gamma_ : float
    online_mse_ : float
        Prequential mean squared error (each example predicted before it was learned);
        ``online_mae_`` the same for the absolute error.

    Examples
    --------
    >>> import numpy as np
    >>> from budgetkernel import BudgetedSGDRegressor
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(-3, 3, size=(4000, 1))
    >>> y = np.sin(X[:, 0]) + 0.1 * rng.standard_normal(4000)
    >>> reg = BudgetedSGDRegressor(budget=50, loss="huber", epsilon=0.05, gamma=1.0, random_state=0).fit(X, y)
    >>> reg.n_support_
    50
    >>> X_test = np.linspace(-3, 3, 7).reshape(-1, 1)
    >>> bool(np.max(np.abs(reg.predict(X_test) - np.sin(X_test[:, 0]))) < 0.1)
    True
    >>> round(reg.online_mse_, 2)  # prequential: each example predicted before it was learned
    0.09

    It keeps learning from a stream, chunk by chunk or one example at a time:

    >>> _ = reg.partial_fit(X[:100], y[:100]).learn_one(X[0], y[0])
    >>> reg.n_seen_
    4101
    """

    def __init__(
        self,
        budget=100,
        maintenance="auto",
        loss="epsilon_insensitive",
        epsilon=0.1,
        lam=1e-3,
        t0=0.0,
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
        # Python's: types, None for no budget, the option names; every range (lam, epsilon,
        # merging's rbf kernel, the kernel's bounds) is the core's.
        _check_positive("budget", self.budget, integer=True, allow_none=True)
        self._check_maintenance(_MAINTENANCE)
        _check_choice("loss", self.loss, _LOSSES)
        _check_bool("fit_intercept", self.fit_intercept)
        self._check_shared_and_forward()

    def _core_fields(self, gamma):
        """These parameters as the fields of the core's BSGDRegressorParams (the seed aside)."""
        return dict(
            **self._kernel_fields(gamma),
            lam=_real(self.lam),
            t0=_real(self.t0),
            budget=0 if self.budget is None else int(self.budget),
            maintenance=self._maintenance(),
            loss=self.loss,
            epsilon=_real(self.epsilon),
            fit_intercept=bool(self.fit_intercept),
        )

    def _memory_plan(self, budget, n_features, n_classes):
        plan = super()._memory_plan(budget, n_features, n_classes)
        plan.append(self._maintenance_memory(budget))
        return plan

    def _saved_params(self):
        # t0 = 0 is left out, so that a model saved with the default is byte for byte the file
        # written before t0 existed (which loads with t0 = 0).
        params = super()._saved_params()
        if params.get("t0") == 0.0:
            del params["t0"]
        return params

    _core_name, _params_name = "BSGDRegressor", "BSGDRegressorParams"

    # budgetkernel.load of a model file without Python metadata (written by C++).
    _learner_kind = "bsgd_regressor"

    @property
    def intercept_(self):
        """The intercept b (the running mean of the targets with ``fit_intercept``, else 0)."""
        check_is_fitted(self, "_model")
        return self._model.intercept
