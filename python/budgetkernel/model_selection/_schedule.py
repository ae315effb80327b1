"""Successive halving on a stream: where the rungs are, and who survives one.

A rung is a point of the stream (examples seen). At each rung the surviving candidates are
ranked by their prequential error, and the best ceil(n / eta) go on (scikit-learn's halving
keeps as many), but at most n - 1: with eta < 2, ceil(n / eta) is n for a few candidates
(2 for any eta < 2), and a rung that drops none would never reach the last survivor.
Rungs are eta times apart, and at least one example. The last survivor simply continues
learning.

Why rungs grow from a large first rung and are judged on their latest window (measured in
bench/tuning.py, and the reason plain successive halving ended 1-7 points below the best
configuration in hindsight): early prequential error favours strong regularisation and wide
kernels, which learn fast and then plateau. The error over the whole history keeps rewarding
that early lead; the error over the latest rung's window (the examples since the previous
rung) measures each candidate as it is now. And the later the last decision, the more the
ranking looks like the final one; with ``n_expected`` known the last halving comes at a
quarter of the stream, which keeps the whole search at about 2.5 times one fit for 27
candidates and eta = 3 (cost = n + r_last * halvings * (eta - 1)), unless that puts the first
rung below 1,000 examples or 100 per class (streams shorter than ~36,000 examples: the search
then costs more than 2.5 fits, of a stream that is quick to learn anyway).
"""

from __future__ import annotations

import math

__all__ = ["halvings", "keep", "rung_schedule"]

# The least first rung, and the least per class: ranking on fewer examples measures who learns
# fastest, not who ends best. A candidate's error over its first r examples reflects about
# r / n_classes examples of each class (digits, 10 classes, 1,257 examples, BSGD B = 100, three
# orders: a first rung of 100 ended 3.2-5.7 points below the best configuration in hindsight,
# one of 1,000 0.5-2.1); and over 96 stream x learner x budget cells (bench/tuning.py) a first
# rung of at least 1,000 left a mean gap of 1.39 points against 1.73 for n/36 alone, 54 cells
# within a point against 43.
MIN_FIRST_RUNG = 1000
MIN_RUNG_PER_CLASS = 100


def _survivors(n, eta):
    """How many of n candidates a rung keeps: ceil(n / eta), at least 1 and at most n - 1."""
    return max(1, min(math.ceil(n / eta), n - 1))


def halvings(n_candidates, eta):
    """How many rungs it takes to get from n_candidates down to one."""
    n, h = n_candidates, 0
    while n > 1:
        n = _survivors(n, eta)
        h += 1
    return h


def rung_schedule(n_candidates, eta, first_rung=None, n_expected=None, n_classes=2):
    """The rungs (examples seen at each), ascending, geometric with ratio eta: from
    ``first_rung`` if given; else placing the last at n_expected / 4, with the first at least
    MIN_FIRST_RUNG and MIN_RUNG_PER_CLASS examples per class."""
    h = halvings(n_candidates, eta)
    if h == 0:
        return []
    if first_rung is None:
        first_rung = int(n_expected / 4 / eta ** (h - 1)) if n_expected else 0
        first_rung = max(first_rung, MIN_FIRST_RUNG, MIN_RUNG_PER_CLASS * n_classes)
    rungs = []
    for i in range(h):  # eta close to 1 rounds neighbours to one example: keep them apart
        rungs.append(max(int(round(first_rung * eta**i)), rungs[-1] + 1 if rungs else 1))
    return rungs


def keep(errors, eta):
    """Positions (into ``errors``) of the best ceil(n / eta) (at most n - 1, at least one),
    best first; ties go to the earlier position, so a halving is deterministic. A NaN error
    ranks last."""
    nan_last = [(math.isnan(e), 0.0 if math.isnan(e) else e) for e in errors]
    order = sorted(range(len(errors)), key=lambda i: (nan_last[i], i))
    return order[: _survivors(len(errors), eta)]
