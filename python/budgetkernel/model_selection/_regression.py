"""What the search does differently for a regressor than for a classifier.

A classifier's candidates learn a chunk's labels encoded once as int32 class indices, all of
them in one call of the core (``partial_fit_many``), and are ranked by their prequential
mistakes. A regressor's candidates learn the float64 targets, and are ranked by a sum the
core's counters keep of each example's error, predicted before it was learned: the squared
error (prequential MSE, the default) or the absolute error (``scoring='mae'``).
``partial_fit_many`` takes labels only, so a regressor's candidates learn a piece each by
its own ``partial_fit`` (which releases the GIL), on a pool of Python threads: the same bytes
as one after another, whatever ``n_jobs`` is.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor, wait

import numpy as np
from sklearn.base import RegressorMixin


__all__ = ["counter_name", "fit_piece", "is_regression", "scorings"]

# scoring -> the core counter its prequential sum is kept in
_CLASSIFIER_SCORING = {"error": "mistakes"}
_REGRESSOR_SCORING = {"mse": "squared_error", "mae": "absolute_error"}


def is_regression(estimator):
    """Whether the search's estimator is a regressor (of this package: OnlineRegressorMixin)."""
    return isinstance(estimator, RegressorMixin)


def scorings(estimator):
    """The scorings the search takes for ``estimator``, its default first."""
    return tuple(_REGRESSOR_SCORING if is_regression(estimator) else _CLASSIFIER_SCORING)


def counter_name(estimator, scoring):
    """The core counter behind ``scoring`` (None: the estimator's default)."""
    table = _REGRESSOR_SCORING if is_regression(estimator) else _CLASSIFIER_SCORING
    return table[scoring or next(iter(table))]


def fit_piece(cands, X, y, n_threads):
    """Each regressor candidate learns the piece (X, y), on up to n_threads threads.

    In the calling thread for one thread (Ctrl-C then stops the candidate learning, between
    two examples). On a pool, the calling thread waits for every candidate to end before
    anything is read of them, also after Ctrl-C (which only the calling thread sees: the
    candidates' loops run the piece to its end, then the interrupt is raised here).
    """
    X = np.ascontiguousarray(X, dtype=np.float64)
    y = np.ascontiguousarray(y, dtype=np.float64)
    if n_threads <= 1 or len(cands) <= 1:
        for c in cands:
            c._model.partial_fit(X, y)
        return
    pool = ThreadPoolExecutor(max_workers=min(n_threads, len(cands)))
    futures = [pool.submit(c._model.partial_fit, X, y) for c in cands]
    try:
        for f in futures:
            f.result()  # the first failure, in candidate order
    finally:
        wait(futures)
        pool.shutdown(wait=True)
