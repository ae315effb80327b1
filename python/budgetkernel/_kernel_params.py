"""Parameters and fitted views shared by the kernel learners: the kernel (kernel, gamma,
degree, coef0, with gamma='scale' resolved from the first data), the support-vector
expansion (support_vectors_, dual_coef_, n_support_) and the averaged classifier's views.
"""

from __future__ import annotations

import numbers

import numpy as np
from sklearn.utils.validation import check_is_fitted

from ._native import core as _core
from ._validation import _check_choice, _check_positive, _forward, _seed

__all__ = ["_AveragedMixin", "_KernelExpansionMixin", "_KernelParamsMixin"]

# The kernels' names, as the core defines them (kernel.hpp).
_KERNELS = _core.BSGDParams.choices["kernel"]

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
        """The kernel's parameters, checked here rather than only by the core's Kernel: as in
        scikit-learn each is checked whichever kernel uses it (the core checks gamma and degree
        only where its kernel reads them), 'scale' and its hint are Python's, and the messages
        name the value. What the core adds (|coef0|^degree <= 1e300) comes with the forwarded
        Params (_validation._forward)."""
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

    def _kernel_fields(self, gamma):
        """The kernel's fields of the core's Params (the same names), for a resolved gamma."""
        return dict(kernel=self.kernel, gamma=gamma, degree=int(self.degree), coef0=float(self.coef0))

    def _checked_gamma(self):
        """gamma for checking the core's Params before any data is seen: 'scale' becomes a
        positive number only on the first chunk (_resolve_gamma); 1.0 stands for it."""
        return 1.0 if isinstance(self.gamma, str) else float(self.gamma)

    def _extra_fitted(self):
        return {"gamma_": self.gamma_}

    def _check_shared_and_forward(self, fields=None):
        """The end of every _validate_params: the kernel's and fit's parameters, then every
        range through the core's Params (``_params_name``) and its validate(), from
        ``fields`` (default: _core_fields with gamma as checked before any data)."""
        self._check_kernel_params()
        self._check_fit_params()
        if fields is None:
            fields = self._core_fields(self._checked_gamma())
        _forward(self, getattr(_core, self._params_name), fields)

    def _make_core(self, *shape_and_X):
        """A fresh core learner from _core_fields, its seed drawn once from random_state; the
        arguments are the bases' (n_features, n_classes, X) of a classifier, (n_features, X) of
        a regressor: the core's constructor takes that shape first."""
        *shape, X = shape_and_X
        fields = self._core_fields(self._resolve_gamma(X))
        return self._core_class()(*shape, **fields, seed=_seed(self.random_state))

    @classmethod
    def _params_from_core(cls, model):
        """(constructor parameters, fitted attributes) of a core learner (budgetkernel.load of
        a file written by C++): every parameter that is a field of the same name of the core's
        Params is read from it (budget 0 is None: no budget), random_state is the core's seed.
        Estimators with parameters that map otherwise extend this."""
        p = model.params
        params = {name: getattr(p, name) for name in cls._get_param_names() if hasattr(p, name)}
        if "budget" in params:
            params["budget"] = p.budget or None
        if hasattr(p, "seed"):
            params["random_state"] = p.seed
        return params, {"gamma_": p.gamma}


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
