"""The check of a count argument (``n_samples``, ``chunk_size``, ``n_features``) shared by
``budgetkernel.datasets`` and ``budgetkernel.io``; NumPy only, so that importing them stays light."""

from __future__ import annotations

import numbers

import numpy as np


def _check_n_samples(n_samples, name="n_samples", allow_none=False):
    if n_samples is None and allow_none:
        return None
    if isinstance(n_samples, (bool, np.bool_)) or not isinstance(n_samples, numbers.Integral):
        raise TypeError(f"{name} must be a non-negative integer"
                        + (" or None" if allow_none else "")
                        + f", got {n_samples!r}")
    n_samples = int(n_samples)
    if n_samples < 0:
        raise ValueError(f"{name} must be non-negative, got {n_samples}")
    return n_samples
