"""Reading a file to predict on with a trained model: its width and index base, the model's
--standardize transform, predictions chunk by chunk, and the accuracy on the file's labels.
"""

from __future__ import annotations

import numpy as np

from ..io import _can_reread, _plan_svmlight, iter_svmlight
from ._training import _check_standardized, _locate_row_error


def _standardized(stats, X, path, lines):
    """X as the model saw it in training: --standardize's transform of the recorded (mean,
    scale) ``stats`` (None: X as it is), the same expression (hence the same bits) as
    StreamingStandardizer.transform."""
    if stats is None:
        return X
    mean, scale = stats
    with np.errstate(over="ignore", invalid="ignore"):  # overflow: reported with its line
        Xs = (X - mean) / scale
    _check_standardized(Xs, path, lines)
    return Xs


def _reading_args(path, n_features, zero_based, regression=False):
    """iter_svmlight arguments to read a file to predict on with a model of n_features.

    A file that can be re-read is checked in a first pass (width, index base, labels), so
    that a bad file fails before any output or training.  A pipe is streamed in one pass:
    its labels are read as floats, and 'auto' means one-based as for training. A regressor's
    targets are always floats.
    """
    if _can_reread(path):
        # label_dtype None: the scan runs (and checks the file) even when the rest is known
        n_features, offset, label_dtype = _plan_svmlight(path, n_features, zero_based, None)
        if regression:
            label_dtype = np.dtype(np.float64)
        return {"n_features": n_features, "zero_based": offset == 0, "label_dtype": label_dtype}
    return {"n_features": n_features, "zero_based": zero_based is True, "label_dtype": np.float64}


def _predict_chunks(clf, path, chunk_size, reading, proba=False, stats=None):
    """(predictions, labels) of each chunk of a LIBSVM file, standardised by ``stats`` (see
    _standardized), an estimator's row error named by its file line; with proba,
    (predictions, labels, class probabilities)."""
    for X, y, lines in iter_svmlight(path, chunk_size=chunk_size, return_lines=True, **reading):
        X = _standardized(stats, X, path, lines)
        try:
            pred = clf.predict(X)
        except ValueError as e:
            raise _locate_row_error(e, path, lines, stats is not None) from None
        yield (pred, y, clf.predict_proba(X)) if proba else (pred, y)


class _Accuracy:
    """Counts the correct predictions of the examples whose file label is a class of the
    model. LIBSVM files always have a label, and a file without real ones usually repeats
    a placeholder (often 0): one that is no class says the file is unlabelled."""

    def __init__(self, classes):
        self.classes = classes
        self.correct = self.labelled = self.total = 0

    def add(self, pred, y):
        known = np.isin(y, self.classes)
        if known.any():  # not compared at all for a model with str classes (trained in Python)
            self.correct += int(np.sum((pred == y) & known))
        self.labelled += int(np.sum(known))
        self.total += len(y)

    def report(self, path):
        if self.labelled == 0:
            return None
        text = f"accuracy {self.correct / self.labelled:.4f} on the {self.labelled:,} labelled examples of {path}"
        if self.labelled < self.total:
            text += f" ({self.total - self.labelled:,} others have labels the model does not know)"
        return text
