"""The kernel perceptron and its budgeted versions."""

from __future__ import annotations

from ._docs import shared_docs
from ._base import OnlineClassifierMixin
from ._kernel_params import _KernelExpansionMixin, _KernelParamsMixin
from ._memory import _projection_memory
from ._persistence import register
from ._validation import _check_choice, _check_positive, _real, _store_params
from ._native import core as _core

__all__ = ["KernelPerceptron"]

# The rules' names, as the core defines them (learners/perceptron.hpp).
_MAINTENANCE = _core.PerceptronParams.choices["maintenance"]


@register
@shared_docs
class KernelPerceptron(_KernelParamsMixin, _KernelExpansionMixin, OnlineClassifierMixin):
    """Kernel perceptron (Rosenblatt 1958), unbudgeted or on a budget of support vectors.

    Every mistake adds the example as a support vector. With a budget B, ``maintenance``
    decides what happens once B SVs are stored:

    - 'stop': Stoptron (Orabona et al. 2008), no further updates;
    - 'random': remove a uniformly random SV (Cesa-Bianchi & Gentile 2007);
    - 'forgetron': the self-tuned Forgetron (Dekel, Shalev-Shwartz & Singer 2008), which
      shrinks all coefficients and removes the oldest SV;
    - 'max-margin': remove the SV with the largest margin after its removal (Crammer,
      Kandola & Singer 2004), updating when the margin is at most ``beta``;
    - 'projectron' / 'projectron++': Orabona, Keshet & Caputo (2009): a mistake whose
      feature vector lies within ``eta`` of the span of the SVs (or any mistake once B SVs
      are stored: the budget is a cap) is projected onto them instead of adding an SV;
      Projectron++ also updates on margin errors by projection. O(B^2) per update.

    Parameters
    ----------
    budget : int or None, default=100
        Maximum number of support vectors B; None for the unbudgeted kernel perceptron
        (or an uncapped Projectron).
    maintenance : {'stop', 'random', 'forgetron', 'max-margin', 'projectron', \
'projectron++'}, default='random'
    eta : float, default=0.1
        Projectron threshold on the distance ||delta|| of phi(x) to the span of the SVs.
    beta : float, default=0.0
        Margin threshold of 'max-margin' (0 = mistakes only).
    kernel, gamma, degree, coef0, n_epochs, shuffle, random_state
        As in :class:`budgetkernel.BudgetedSGDClassifier`.
    {{probability}}

    Notes
    -----
    More than two classes: the multi-class perceptron of Crammer & Singer (2003), max form
    (a mistake adds +1 to the true class and -1 to the highest-scoring wrong class).

    Examples
    --------
    One example at a time with ``learn_one``: the first call names every class.

    >>> from budgetkernel import KernelPerceptron, datasets
    >>> X, y = datasets.checkerboard(5000, random_state=0)
    >>> clf = KernelPerceptron(budget=100, maintenance="projectron++", gamma=2.0, random_state=0)
    >>> for x_i, y_i in zip(X, y):
    ...     _ = clf.learn_one(x_i, y_i, classes=[-1, 1])
    >>> clf.n_seen_, clf.n_support_ <= 100
    (5000, True)
    >>> X_test, y_test = datasets.checkerboard(1000, random_state=1)
    >>> round(clf.score(X_test, y_test), 2)
    0.93
    >>> bool(clf.predict_one(X_test[0]) == y_test[0])
    True
    """

    def __init__(
        self,
        budget=100,
        maintenance="random",
        eta=0.1,
        beta=0.0,
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
        # Python's: types, None for no budget, the rule's name; the ranges of eta and beta are
        # the core's.
        _check_positive("budget", self.budget, integer=True, allow_none=True)
        _check_choice("maintenance", self.maintenance, _MAINTENANCE)
        self._check_shared_and_forward()

    def _core_fields(self, gamma):
        """These parameters as the fields of the core's PerceptronParams (the seed aside: it is
        drawn once, in _make_core), for _validate_params and _make_core alike."""
        return dict(
            **self._kernel_fields(gamma),
            budget=0 if self.budget is None else int(self.budget),
            maintenance=self.maintenance,
            eta=_real(self.eta),
            beta=_real(self.beta),
        )

    def _memory_plan(self, budget, n_features, n_classes):
        plan = super()._memory_plan(budget, n_features, n_classes)
        if self.maintenance in ("projectron", "projectron++"):
            # K^{-1} of the store, tracked from the first SV and grown by doubling: the power of
            # two that holds budget + 1 (a full store's candidate)
            side = 1 << budget.bit_length()  # smallest power of two > budget
            plan.append(_projection_memory(side, "p^2 (p: the smallest power of two > budget)"))
        return plan

    _core_name, _params_name = "KernelPerceptron", "PerceptronParams"

    # budgetkernel.load of a model file without Python metadata (written by C++).
    _learner_kind = "perceptron"
