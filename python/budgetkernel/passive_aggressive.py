"""Passive-Aggressive estimators: kernel PA / PA-I / PA-II, ramp-loss PA and Budgeted PA."""

from __future__ import annotations

import numpy as np
from sklearn.utils.validation import check_is_fitted

from ._docs import shared_docs
from ._base import OnlineClassifierMixin, _curve_point
from ._kernel_params import _AveragedMixin, _KernelExpansionMixin, _KernelParamsMixin
from ._memory import _projection_memory
from ._persistence import register
from ._validation import _check_bool, _check_choice, _check_positive, _integer, _real, _store_params
from ._native import core as _core

__all__ = ["BudgetedPAClassifier"]

# The names, as the core defines them (learners/passive_aggressive.hpp).
_VARIANTS = _core.PAParams.choices["variant"]
_LOSSES = _core.PAParams.choices["loss"]


@register
@shared_docs
class BudgetedPAClassifier(_KernelParamsMixin, _KernelExpansionMixin, _AveragedMixin, OnlineClassifierMixin):
    """Kernel Passive-Aggressive learning, unbudgeted or on a budget of support vectors.

    Implements Wang & Vucetic, "Online Passive-Aggressive Algorithms on a Budget"
    (AISTATS 2010): with ``budget=None`` the kernel PA of Crammer et al. (2006) (hard
    margin, PA-I or PA-II); with a budget B, Budgeted PA (Algorithm 1): when the model holds
    B SVs and an example has positive loss, one SV r is removed and the rest updated by the
    closed form of Proposition 1, choosing r to minimise the PA objective (eq. 7).

    Parameters
    ----------
    budget : int or None, default=100
        Maximum number of support vectors B; None for unbudgeted PA.
    variant : {'simple', 'nn', 'project', 'random'}, default='nn'
        Which SVs absorb the removed one: 'simple' = BPA-S (only the new example, O(B)),
        'nn' = BPA-NN (the new example and the removed SV's nearest neighbour, expected
        O(B)), 'project' = BPA-P (all remaining SVs, O(B^2) with a maintained inverse),
        'random' = PA+Rand (PA-I, then remove a random SV; the paper's baseline).
    loss : {'hinge', 'ramp'}, default='hinge'
        'ramp' = PA^R / BPA^R: update only inside the margin, ``|f(x)| <= 1``. Such a learner
        needs the labels of those examples only (see :meth:`partial_fit_active`).
    pa_type : {0, 1, 2}, default=1
        0 = hard-margin PA, 1 = PA-I, 2 = PA-II.
    C : float, default=1.0
        Aggressiveness (ignored by ``pa_type=0``).
    averaged : bool, default=False
        Predict (online and batch) with the mean of every classifier held. With a budget
        the average keeps every removed SV, so it is not sparse: see ``n_support_average_``.
        {{average_growth}}
    {{kernel}}
    n_epochs : int, default=1
    shuffle : bool, default=False
    random_state : int, numpy Generator or None, default=None
        Seeds PA+Rand's removals and shuffling.
    {{probability}}

    Attributes
    ----------
    classes_, n_features_in_, support_vectors_, dual_coef_, n_support_, gamma_,
    online_error_, prequential_curve_, counters_
    labels_used_ : int
        Labels the learner needed so far (all examples for hinge loss).

    Notes
    -----
    More than two classes: the multi-class PA of Crammer et al. (2006) in its max-loss form
    (the highest-scoring wrong class r; the update adds +tau to class y and -tau to class r),
    budgeted by solving Proposition 1 with one coefficient column per class.

    Examples
    --------
    >>> from budgetkernel import BudgetedPAClassifier, datasets
    >>> X, y = datasets.checkerboard(5000, random_state=0)
    >>> X_test, y_test = datasets.checkerboard(1000, random_state=1)
    >>> clf = BudgetedPAClassifier(budget=100, variant="nn", gamma=2.0, random_state=0).fit(X, y)
    >>> clf.n_support_
    100
    >>> round(clf.score(X_test, y_test), 2)
    0.94

    With the ramp loss only the examples inside the margin need a label, so an oracle (here
    the known labels) is asked for those alone:

    >>> active = BudgetedPAClassifier(budget=100, loss="ramp", gamma=2.0, random_state=0)
    >>> asked = active.partial_fit_active(X, lambda i, x: y[i], classes=[-1, 1])
    >>> n_asked = int(asked.sum())
    >>> n_asked == active.labels_used_, n_asked < len(X)
    (True, True)
    """

    def __init__(
        self,
        budget=100,
        variant="nn",
        loss="hinge",
        pa_type=1,
        C=1.0,
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
        # Python's: types, None for no budget, the option names; the ranges of pa_type and C
        # are the core's.
        _check_positive("budget", self.budget, integer=True, allow_none=True)
        _check_choice("variant", self.variant, _VARIANTS)
        _check_choice("loss", self.loss, _LOSSES)
        _check_bool("averaged", self.averaged)
        self._check_shared_and_forward()

    def _core_fields(self, gamma):
        """These parameters as the fields of the core's PAParams (the seed aside: it is drawn
        once, in _make_core), for _validate_params and _make_core alike."""
        return dict(
            **self._kernel_fields(gamma),
            C=_real(self.C),
            pa_type=_integer(self.pa_type, bad=-1),
            loss=self.loss,
            budget=0 if self.budget is None else int(self.budget),
            variant=self.variant,
            averaged=bool(self.averaged),
        )

    def _memory_plan(self, budget, n_features, n_classes):
        plan = super()._memory_plan(budget, n_features, n_classes)
        if self.variant == "project":
            # BPA-P's maintained inverse: activated with the store at budget, then doubled by the
            # next SV (capacity 2 budget, measured from the model file's proj.capacity)
            plan.append(_projection_memory(2 * budget, "(2 budget)^2"))
        return plan

    _core_name, _params_name = "PassiveAggressive", "PAParams"

    # budgetkernel.load of a model file without Python metadata (written by C++).
    _learner_kind = "pa"

    @property
    def labels_used_(self):
        check_is_fitted(self, "_model")
        return self._model.counters["labels"]

    def partial_fit_active(self, X, oracle, classes=None):
        """Learns a chunk asking ``oracle`` only for the labels the learner needs.

        The active-learning reading of ramp-loss PA (BPA paper, section 4.3): an example with
        ``|f(x)| > 1`` cannot change the model whatever its label, so its label is never asked
        for. Runs in C++ up to the next example that needs a label, calls ``oracle(i, x)``
        for it (``i`` is the row index in ``X``), learns it, and goes on. With hinge loss
        every label is needed.

        The model is exactly the one ``partial_fit`` would learn from the same labels. The
        mistake counts are not: an example whose label is never asked for is counted as seen
        (``counters_["examples"]``) but never as a mistake, since its label stays unknown.
        ``counters_["mistakes"]`` counts the mistakes among the ``counters_["labels"]``
        labelled examples, and ``online_error_`` (mistakes / examples) is a lower bound of
        the prequential error the same stream would show with every label.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        oracle : callable (index, x) -> label
        classes : array-like, default=None
            Every label; required on the first call.

        Returns
        -------
        queried : ndarray of bool, shape (n_samples,)
            Which rows' labels were asked for.
        """
        if not callable(oracle):
            raise TypeError("oracle must be a callable (index, x) -> label")
        # A first call whose oracle fails (raises, or returns a label outside classes) before
        # anything was learned leaves the estimator unfitted, as a failed first partial_fit does;
        # examples run before the failure stay learned (each was handled as the stream says).
        # A first call builds the model in place, under the estimator's lock (the oracle may
        # predict with it); a later one uses one state throughout (see _publish), so that a
        # fit in another thread cannot give it the label map of one model and the other model.
        with self._undo_if_first():
            d = self.__dict__
            X, _ = self._chunk_data(X, None, classes, "partial_fit_active")
            model, label_index = d["_model"], d["_label_index"]
            n = X.shape[0]
            pred = np.zeros(n, dtype=np.int32)
            queried = np.zeros(n, dtype=bool)
            i = 0
            try:
                while True:
                    i = model.active_run(X, i, pred)
                    if i >= n:
                        break
                    y = oracle(i, X[i])
                    try:
                        yi = label_index[y]
                    except (KeyError, TypeError):
                        raise ValueError(
                            f"oracle returned label {y!r}, not in classes_={d['classes_'].tolist()}"
                        ) from None
                    pred[i] = model.learn_one(X[i], yi)
                    queried[i] = True
                    i += 1
            finally:
                # the curve's point also when the oracle failed mid-chunk: it ends at the
                # examples the model has seen (n_seen_), not at the previous chunk
                _curve_point(model, d["prequential_curve_"])
        return queried
