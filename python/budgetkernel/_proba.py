"""predict_proba / predict_log_proba of the classifiers, and the ``probability`` switch.

Kernel logistic regression (``BudgetedSGDClassifier(loss="log")``) has probabilities of its
own. Every other classifier gets them by an online calibration of its decision values
(learners/calibration.hpp), which is opt-in as scikit-learn's ``SVC(probability=True)``:
it costs time per example and adds the calibration's window to the model file, so with the
default ``probability=False`` the core does no calibration work, the model file is the one
written before calibration existed, and the two methods are not there (``available_if``).
"""

from __future__ import annotations

from sklearn.exceptions import NotFittedError
from sklearn.utils._available_if import available_if

from ._validation import _check_bool

__all__ = ["_ProbabilityMixin"]

# PlattCalibration::kWindow: the prequential pairs the calibration keeps.
_WINDOW = 1024


def _has_native_proba(est):
    """Whether est has probabilities of its own: BudgetedSGDClassifier(loss="log")."""
    return getattr(est, "loss", None) == "log"


def _calibrates(est):
    """Whether est's model calibrates (probability=True, and no probabilities of its own)."""
    return bool(getattr(est, "probability", False)) and not _has_native_proba(est)


def _check_proba(est):
    """available_if's test: SVC's rule, the methods exist with probability=True (or natively)."""
    if _has_native_proba(est) or getattr(est, "probability", False):
        return True
    raise AttributeError(
        f"predict_proba is not available when probability=False: pass probability=True to "
        f"{type(est).__name__} (the decision values are then calibrated online while the model learns)"
    )


class _ProbabilityMixin:
    """predict_proba / predict_log_proba of an OnlineClassifierMixin, and what ``probability``
    changes elsewhere: the core's switch, the memory plan and the saved parameters."""

    # Parameters a model file holds only when they differ from these defaults (format version
    # 1 makes them optional, so a model with the defaults has one file whichever version of
    # the estimators wrote it); load() takes their absence as the default.
    _SAVED_ONLY_OFF_DEFAULT = {"probability": False}

    @available_if(_check_proba)
    def predict_proba(self, X):
        """Class probabilities, shape (n_samples, n_classes), columns in the order of ``classes_``.

        Available with ``probability=True`` (as scikit-learn's ``SVC``), and always for
        ``BudgetedSGDClassifier(loss="log")`` (kernel logistic regression), whose
        probabilities are its own: the sigmoid (two classes) or softmax of
        ``decision_function``. With ``probability=True`` every other classifier *calibrates*
        its decision values online, in the manner of Platt scaling: a logistic map fitted on
        the prequential decision values of the last 1024 examples learned (each scored before
        it was learned), refitted as the model learns and saved with it. Two classes:
        ``P(classes_[1]) = 1 / (1 + exp(a f))`` with one fitted slope ``a <= 0`` for
        ``f >= 0`` and another for ``f < 0`` (Platt's smoothed targets); more classes:
        ``softmax(a f)`` with one fitted inverse temperature ``a >= 0``. Both keep the class
        of highest probability equal to ``predict`` (which Platt's offset B would not). See
        the user guide's "Probabilities and calibration".

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples, n_classes)
            Each row sums to 1.

        Raises
        ------
        AttributeError
            With ``probability=False`` (except for ``loss="log"``): the method is not there.
        sklearn.exceptions.NotFittedError
            Before any learning; for a model built with ``probability=False`` (the parameter
            set to True afterwards); and for a model whose calibration has not seen an example
            yet (one made by ``combine``, until it learns).

        Examples
        --------
        >>> from budgetkernel import BudgetedPAClassifier, datasets
        >>> X, y = datasets.checkerboard(2000, random_state=0)
        >>> clf = BudgetedPAClassifier(budget=50, gamma=2.0, probability=True, random_state=0).fit(X, y)
        >>> P = clf.predict_proba(X[:3])
        >>> P.shape, bool(np.allclose(P.sum(axis=1), 1.0))
        ((3, 2), True)
        >>> hasattr(BudgetedPAClassifier(), "predict_proba")  # probability=False
        False
        """
        return self._probabilities(X, log=False)

    @available_if(_check_proba)
    def predict_log_proba(self, X):
        """Logarithms of :meth:`predict_proba`, computed directly (softplus, log-sum-exp) so
        that they stay finite where a probability rounds to 0. Available as predict_proba is.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples, n_classes)

        Examples
        --------
        >>> from budgetkernel import BudgetedSGDClassifier, datasets
        >>> X, y = datasets.checkerboard(2000, random_state=0)
        >>> clf = BudgetedSGDClassifier(loss="log", budget=50, gamma=2.0, random_state=0).fit(X, y)
        >>> bool(np.allclose(np.exp(clf.predict_log_proba(X[:5])), clf.predict_proba(X[:5])))
        True
        """
        return self._probabilities(X, log=True)

    def _probabilities(self, X, log):
        model = self._state()["_model"]
        X = self._check_X(X)
        if not model.has_probabilities:
            name = type(self).__name__
            if not model.probability:
                raise NotFittedError(
                    f"{name}'s model was built with probability=False, so it has no calibration: "
                    "fit() again with probability=True"
                )
            raise NotFittedError(
                f"{name}'s probability calibration has not seen an example yet: it is learned prequentially "
                "while the model learns (partial_fit, fit or learn_one); a model made by combine starts without one"
            )
        return model.predict_proba(X, log)

    def _switch_calibration(self):
        """Turns the new core model's calibration on for probability=True (_init_model)."""
        _check_bool("probability", getattr(self, "probability", False))
        if _calibrates(self):
            self._model.probability = True

    def _calibration_plan(self, n_classes):
        """The memory plan entry of the calibration's window (none when it is off)."""
        if not _calibrates(self):
            return []
        n_out = 1 if n_classes == 2 else n_classes
        return [
            (
                _WINDOW * (n_out * 8 + 4),
                "probability calibration's window",
                f"{_WINDOW} x (n_outputs float64 + 1 int32) values",
            )
        ]

    def _saved_params(self):
        params = super()._saved_params()
        for name, default in self._SAVED_ONLY_OFF_DEFAULT.items():
            if name in params and params[name] == default and type(params[name]) is type(default):
                del params[name]
        return params

    def _restore_from_model(self, model):
        """A file without metadata: ``probability`` is the core's switch (a file written with
        calibration restores it)."""
        super()._restore_from_model(model)
        if "probability" in self.get_params(deep=False) and not _has_native_proba(self):
            self.probability = bool(model.probability)
            self._built_params = self.get_params(deep=False)
