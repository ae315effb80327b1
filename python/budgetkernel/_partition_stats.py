"""What the driver of a distributed fit needs of each partition without its data, and the
gamma='scale' of all the data pooled from it: shared by :mod:`budgetkernel.dask` (parameter
mixing) and ``_cascade`` (the cascade SVM)."""

from __future__ import annotations

import numpy as np

from ._kernel_params import _scale_gamma

__all__ = ["_block_stats", "_gamma_of_all"]


def _block_stats(block, labels, moments):
    """What the driver needs of a partition without its data: its length and width, its labels
    when the classes are to be found, and the moments of its values for gamma='scale'."""
    X, y = block
    n = X.shape[0]
    stats = {"n": n, "d": X.shape[1]}
    if labels:
        stats["labels"] = np.unique(y) if n else y[:0]
    if moments and n:
        stats.update(mean=float(X.mean()), var=float(X.var()), scale_gamma=_scale_gamma(X))
    return stats


def _gamma_of_all(stats):
    """gamma='scale' as fit resolves it on all the data: 1 / (n_features * X.var()), the
    variance pooled from the partitions' means and variances (Chan, Golub & LeVeque's parallel
    formula); one partition gives fit's own value."""
    live = [s for s in stats if s["n"]]
    if len(live) == 1:
        return live[0]["scale_gamma"]
    d = live[0]["d"]
    sizes = np.array([s["n"] * d for s in live], dtype=np.float64)
    means = np.array([s["mean"] for s in live])
    var_s = np.array([s["var"] for s in live])
    mean = float(sizes @ means) / sizes.sum()
    with np.errstate(over="ignore", invalid="ignore"):
        var = (float(sizes @ var_s) + float(sizes @ (means - mean) ** 2)) / sizes.sum()
    if not np.isfinite(var):  # values near overflow: the core rejects their rows anyway
        return 1.0 / d
    gamma = 1.0 / d / var if var > 0.0 else 1.0
    return gamma if np.isfinite(gamma) else 1.0
