"""Kernel online gradient descent, unbudgeted (OGD) or bounded (BOGD)."""

from __future__ import annotations

import math

from ._docs import shared_docs
from ._base import OnlineClassifierMixin
from ._kernel_params import _AveragedMixin, _KernelExpansionMixin, _KernelParamsMixin
from ._persistence import register
from ._validation import _check_bool, _check_choice, _check_positive, _real, _store_params
from ._native import core as _core

__all__ = ["BOGDClassifier"]

# The discard rules' names, as the core defines them (learners/bogd.hpp).
_SAMPLING = _core.BOGDParams.choices["sampling"]


@register
@shared_docs
class BOGDClassifier(_KernelParamsMixin, _KernelExpansionMixin, _AveragedMixin, OnlineClassifierMixin):
    """Kernel online gradient descent on the hinge loss, unbudgeted (OGD) or bounded (BOGD).

    OGD (Kivinen, Smola & Williamson, "Online Learning with Kernels", 2004): every step
    shrinks the model by (1 - eta lam) and, when the margin is below 1, adds the example with
    coefficient eta y. BOGD (Zhao, Wang, Wu, Jin & Hoi, ICML 2012): once ``budget`` SVs are
    stored, adding one discards an old SV at random and rescales the survivors so that the
    expected model equals the OGD step.

    Parameters
    ----------
    budget : int or None, default=100
        Maximum number of support vectors; None for unbudgeted kernel OGD.
    sampling : {'uniform', 'nonuniform'}, default='uniform'
        'uniform' = BOGD (discard probability 1/B, survivors times B/(B-1)); 'nonuniform' =
        BOGD++ (keep probability q_i proportional to w_i = ``|alpha_i|`` sqrt(k(x_i, x_i)) with
        sum q_i = B - 1, i.e. discard probability 1 - (B - 1) w_i / sum w, capped so that no
        q_i exceeds 1; survivors divided by q_i): the variance-optimal unbiased discard, which
        removes small SVs more often and leaves every uncapped survivor with the same
        ``|alpha_i|`` sqrt(k(x_i, x_i)).
    eta : float, default=0.5
        Step size.
    lam : float, default=0.01
        Regularisation (eta * lam < 1). With a budget it also keeps the rescaled
        coefficients from growing (each discard multiplies them by about B/(B-1)).
    max_coef : float or None, default=None
        BOGD's bounded domain: after a discard every coefficient is clipped to
        eta * max_coef in absolute value. None = no bound (exactly unbiased steps).
    averaged : bool, default=False
        Predict with the mean of every classifier held. With a budget the average keeps
        every discarded SV, so it is not sparse: see ``n_support_average_``.
        {{average_growth}}
    {{kernel}}
    n_epochs : int, default=1
    shuffle : bool, default=False
    random_state : int, numpy Generator or None, default=None
        Seeds the discards (and shuffling).
    {{probability}}

    Notes
    -----
    More than two classes: the max-loss multi-class hinge (the highest-scoring wrong class r
    gets -eta, the true class +eta), one coefficient column per class.

    Examples
    --------
    >>> from budgetkernel import BOGDClassifier, datasets
    >>> X, y = datasets.checkerboard(5000, random_state=0)
    >>> X_test, y_test = datasets.checkerboard(1000, random_state=1)
    >>> clf = BOGDClassifier(budget=100, sampling="nonuniform", gamma=2.0, random_state=0).fit(X, y)
    >>> clf.n_support_
    100
    >>> round(clf.score(X_test, y_test), 2)
    0.78
    """

    def __init__(
        self,
        budget=100,
        sampling="uniform",
        eta=0.5,
        lam=0.01,
        max_coef=None,
        averaged=False,
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
        # Python's: types, None for no budget / no bound, the option names; the ranges of eta,
        # lam, eta * lam < 1 and max_coef are the core's.
        _check_positive("budget", self.budget, integer=True, allow_none=True)
        _check_choice("sampling", self.sampling, _SAMPLING)
        _check_bool("averaged", self.averaged)
        self._check_shared_and_forward()

    def _core_fields(self, gamma):
        """These parameters as the fields of the core's BOGDParams (the seed aside: it is drawn
        once, in _make_core), for _validate_params and _make_core alike."""
        return dict(
            **self._kernel_fields(gamma),
            eta=_real(self.eta),
            lam=_real(self.lam),
            budget=0 if self.budget is None else int(self.budget),
            sampling=self.sampling,
            max_coef=math.inf if self.max_coef is None else _real(self.max_coef),
            averaged=bool(self.averaged),
        )

    _core_name, _params_name = "BOGD", "BOGDParams"

    # budgetkernel.load of a model file without Python metadata (written by C++).
    _learner_kind = "bogd"

    @classmethod
    def _params_from_core(cls, model):
        """As the base's, with an infinite max_coef as None (no bound)."""
        params, fitted = super()._params_from_core(model)
        if math.isinf(params["max_coef"]):
            params["max_coef"] = None
        return params, fitted
