"""A multi-class, optionally high-dimensional Gaussian-mixture stream (issue 29's benchmarks).

See :mod:`budgetkernel.datasets` for the reproducibility contract this generator keeps.
"""

from __future__ import annotations

import numbers

import numpy as np

from ._sampling import _as_seed_sequence, _check_n_samples, _draw

_DEFAULT_INFORMATIVE = 8


class _Layout:
    """The fixed part of a problem: cluster centres in the class subspace and its basis.

    Drawn from ``layout_seed`` alone, so every sample of one problem (a training stream
    and its test set, drawn with different ``random_state``) comes from one distribution.
    """

    def __init__(self, n_features, n_classes, n_clusters, n_informative, separation, noise, layout_seed):
        rng = np.random.default_rng(np.random.SeedSequence(layout_seed))
        # Row c * n_clusters + j is the centre of cluster j of class c.
        self.centres = separation * rng.standard_normal((n_classes * n_clusters, n_informative))
        # Orthonormal basis of a random n_informative-dimensional subspace of R^n_features
        # (the Q of a Gaussian matrix with R's diagonal positive: Haar-distributed and unique).
        self.basis = _orthonormal_columns(rng.standard_normal((n_features, n_informative)))
        self.basis_t = np.ascontiguousarray(self.basis.T)
        self.n_classes, self.n_clusters, self.noise = n_classes, n_clusters, noise


# The generator's arithmetic is + - * / and sqrt, each rounded once by IEEE 754, in sums of a
# fixed order, so that a seed gives the same bits on every CPU (see budgetkernel.datasets).
# Hence no `@` and no numpy.linalg: they go to BLAS and LAPACK, whose kernels (blocking, vector
# width, fused multiply-adds) differ from one CPU to the next.


def _matmul(A, B):
    """``A @ B``, each entry summed over the inner index in order: ``sum_k A[i, k] B[k, j]``.

    Column-major (``A``'s columns contiguous), so every step runs along the long axis ``i``.
    """
    A = np.asfortranarray(A)
    out = np.empty((A.shape[0], B.shape[1]), order="F")
    tmp = np.empty_like(out)
    np.multiply(A[:, :1], B[:1], out=out)
    for k in range(1, A.shape[1]):
        np.multiply(A[:, k : k + 1], B[k : k + 1], out=tmp)
        out += tmp
    return out


def _orthonormal_columns(G):
    """The ``Q`` of ``G = Q R`` with ``diag(R) > 0``: Gram-Schmidt, every column orthogonalised
    twice against the previous ones ("twice is enough": Giraud, Langou & Rozloznik, 2005), so
    ``Q`` is orthonormal to rounding; every sum is a sequential ``add.accumulate``."""
    d, r = G.shape
    Q = np.empty((d, r))
    for j in range(r):
        v = G[:, j].copy()
        for _ in range(2 if j else 0):
            coef = np.add.accumulate(Q[:, :j] * v[:, None], axis=0)[-1]  # Q[:, :j]^T v
            v -= np.add.accumulate(Q[:, :j] * coef, axis=1)[:, -1]  # Q[:, :j] coef
        Q[:, j] = v / np.sqrt(np.add.accumulate(v * v)[-1])
    return Q


def _block_gaussian_classes(rng, n, layout):
    lay = layout
    y = rng.integers(0, lay.n_classes, size=n, dtype=np.int64)
    cluster = rng.integers(0, lay.n_clusters, size=n)
    z = lay.centres[y * lay.n_clusters + cluster] + rng.standard_normal((n, lay.centres.shape[1]))
    X = _matmul(z, lay.basis_t)
    d, r = lay.basis.shape
    if d > r:
        # Isotropic noise in the directions orthogonal to the class subspace: it carries no
        # class information (the Bayes rule is the latent one), but it enters every distance,
        # as the pixels outside a digit's few principal directions do.
        eps = rng.standard_normal((n, d))
        eps -= _matmul(_matmul(eps, lay.basis), lay.basis_t)
        X += np.sqrt(lay.noise * r / (d - r)) * eps
    return np.ascontiguousarray(X), y


def _check_int(value, name, minimum):
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an int, got {value!r}")
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")
    return int(value)


def _check_float(value, name, *, positive):
    try:
        value = float(value)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be a float, got {value!r}") from None
    if not np.isfinite(value) or value < 0 or (positive and value == 0):
        kind = "positive" if positive else "non-negative"
        raise ValueError(f"{name} must be a finite {kind} number, got {value}")
    return value


def _classes_layout(n_features=16, n_classes=10, n_clusters=3, n_informative=None,
                    separation=2.0, noise=2.0, layout_seed=0):
    """Validate the parameters of :func:`gaussian_classes` and build their ``_Layout``."""
    n_features = _check_int(n_features, "n_features", 1)
    n_classes = _check_int(n_classes, "n_classes", 2)
    n_clusters = _check_int(n_clusters, "n_clusters", 1)
    if n_informative is None:
        n_informative = min(n_features, _DEFAULT_INFORMATIVE)
    n_informative = _check_int(n_informative, "n_informative", 1)
    if n_informative > n_features:
        raise ValueError(f"n_informative ({n_informative}) must be <= n_features ({n_features})")
    separation = _check_float(separation, "separation", positive=True)
    noise = _check_float(noise, "noise", positive=False)
    layout_seed = _check_int(layout_seed, "layout_seed", 0)
    return _Layout(n_features, n_classes, n_clusters, n_informative, separation, noise, layout_seed)


def _resolve_classes(kwargs):
    """``(block_fn, params)`` for ``stream('gaussian_classes', **kwargs)``."""
    kwargs = dict(kwargs)
    names = ("n_features", "n_classes", "n_clusters", "n_informative", "separation", "noise", "layout_seed")
    params = {k: kwargs.pop(k) for k in names if k in kwargs}
    if kwargs:
        raise TypeError("unexpected keyword argument(s) for 'gaussian_classes': " + ", ".join(sorted(kwargs)))
    return _block_gaussian_classes, {"layout": _classes_layout(**params)}


def gaussian_classes(n_samples, *, n_features=16, n_classes=10, n_clusters=3, n_informative=None,
                     separation=2.0, noise=2.0, layout_seed=0, random_state=None):
    """Draw from a multi-class mixture of Gaussian clusters in a low-dimensional subspace.

    Each class is a mixture of ``n_clusters`` unit-variance Gaussian clusters in an
    ``n_informative``-dimensional subspace of ``R^n_features``, and the other
    ``n_features - n_informative`` directions carry isotropic noise that does not depend on
    the class.  Like image data, the classes live in a few directions while every distance
    also sees the noise of all the others.  Sampling, with ``r = n_informative`` and
    ``d = n_features``:

    * the class ``y`` is uniform on ``{0, ..., n_classes - 1}``, the cluster ``j`` uniform
      on ``{0, ..., n_clusters - 1}``;
    * ``z = mu[y, j] + N(0, I_r)``, the centres ``mu ~ N(0, separation^2 I_r)``;
    * ``x = Q z + sqrt(noise * r / (d - r)) (I - Q Q^T) eps``, ``eps ~ N(0, I_d)``, with
      ``Q`` (``d x r``) an orthonormal basis of a random subspace.

    So the noise's total variance is ``noise`` times the clusters' (``r``), whatever ``d``.
    The centres and ``Q`` (the *layout*) are drawn from ``layout_seed`` alone, not from
    ``random_state``: draws with different ``random_state`` (a training stream and its test
    set) come from one distribution.  The classes overlap, so no learner is error-free and
    a budgeted one keeps updating: with the defaults (``d = 16``, 10 classes, 3 clusters,
    ``r = 8``) the Bayes rule is about 96% accurate and an RBF SVM trained on 5,000
    standardised examples about 92%.  With ``r = d = 2`` the 30 clusters crowd the plane
    (Bayes accuracy about 35% for 10 classes).

    Parameters
    ----------
    n_samples : int
        Number of examples.
    n_features : int, default=16
        Dimension ``d`` of the inputs.
    n_classes : int, default=10
        Number of classes (>= 2).
    n_clusters : int, default=3
        Gaussian clusters per class.
    n_informative : int or None, default=None
        Dimension ``r <= n_features`` of the class subspace; ``None`` means
        ``min(n_features, 8)``.
    separation : float, default=2.0
        Standard deviation of the cluster centres, in units of the clusters' own standard
        deviation: larger means less overlap.
    noise : float, default=2.0
        Total variance of the noise outside the class subspace, as a multiple of the
        clusters' total variance ``r`` (no effect when ``r = d``).
    layout_seed : int, default=0
        Seed of the layout (centres and subspace): a different problem per value.
    random_state : None, int, numpy.random.SeedSequence or numpy.random.Generator
        Seed of the examples; see the module documentation.

    Returns
    -------
    X : ndarray of shape (n_samples, n_features), float64
    y : ndarray of shape (n_samples,), int64
        Labels in ``{0, ..., n_classes - 1}``.

    Examples
    --------
    >>> from budgetkernel.datasets import gaussian_classes
    >>> X, y = gaussian_classes(1000, n_features=784, n_classes=10, random_state=0)
    >>> X.shape, X.dtype, y.dtype
    ((1000, 784), dtype('float64'), dtype('int64'))
    >>> sorted(set(y.tolist())) == list(range(10))
    True
    """
    n_samples = _check_n_samples(n_samples)
    layout = _classes_layout(n_features, n_classes, n_clusters, n_informative, separation, noise, layout_seed)
    return _draw(_block_gaussian_classes, {"layout": layout}, _as_seed_sequence(random_state), n_samples)


def _bayes_predict(X, layout):
    """The Bayes-optimal class of each row of ``X`` (bench and tests: the reference accuracy).

    The noise is orthogonal to the class subspace and independent of the class, so the
    posterior depends on the projection ``z = X B`` alone: a mixture of unit-variance
    Gaussians with equal weights.
    """
    z = X @ layout.basis
    d2 = ((z[:, None, :] - layout.centres[None, :, :]) ** 2).sum(axis=2)
    logp = -0.5 * d2
    m = logp.max(axis=1, keepdims=True)
    per_class = np.exp(logp - m).reshape(len(X), layout.n_classes, layout.n_clusters).sum(axis=2)
    return np.argmax(per_class, axis=1).astype(np.int64)
