"""Accuracy of the Bayes-optimal classifier on the synthetic problems (reference numbers
for the benchmarks)."""

from __future__ import annotations

import math

import numpy as np

from ._sampling import _check_n_samples
from ._synthetic import (
    _TWO_GAUSSIANS_MEAN_NEG,
    _TWO_GAUSSIANS_PRIOR_POS,
    _TWO_GAUSSIANS_STD_NEG,
    WAVEFORM_BASE_WAVES,
    WAVEFORM_CLASS_WAVES,
    waveform,
)


def _prob_in_disc(offset, radius, n_intervals=20000):
    """``P(|Z + v| < radius)`` for ``Z ~ N(0, I_2)`` and ``|v| = offset``.

    Integrates the Rice density ``r exp(-(r^2 + a^2)/2) I0(a r)`` with the
    composite Simpson rule.
    """
    r = np.linspace(0.0, radius, n_intervals + 1)
    f = r * np.exp(-0.5 * (r * r + offset * offset)) * np.i0(offset * r)
    h = radius / n_intervals
    return float(h / 3.0 * (f[0] + f[-1] + 4.0 * f[1:-1:2].sum() + 2.0 * f[2:-1:2].sum()))


def two_gaussians_bayes_accuracy():
    """Accuracy of the Bayes-optimal classifier on :func:`two_gaussians`.

    The Bayes rule predicts ``+1`` iff ``0.4 N(x; 0, I) > 0.6 N(x; m, 4I)``
    with ``m = (2, 0)``.  Taking logarithms, this region is the disc
    ``|x + m/3|^2 < R^2`` with ``R^2 = (8 log(8/3) + 4|m|^2/3) / 3``.  The
    accuracy ``0.4 P_+(disc) + 0.6 (1 - P_-(disc))`` is obtained by integrating
    the (Rice) distribution of the distance to the disc centre with Simpson's
    rule, which is deterministic and accurate to about 1e-12.

    Returns
    -------
    float
        The Bayes accuracy, approximately 0.80443.

    Examples
    --------
    >>> from budgetkernel.datasets import two_gaussians_bayes_accuracy
    >>> round(two_gaussians_bayes_accuracy(), 4)
    0.8044
    """
    p, m, s = _TWO_GAUSSIANS_PRIOR_POS, _TWO_GAUSSIANS_MEAN_NEG, _TWO_GAUSSIANS_STD_NEG
    s2 = s * s
    # p N(x;0,I) > (1-p) N(x;m,s2 I)
    #   <=> (1 - 1/s2)|x|^2 + 2 x.m/s2 - |m|^2/s2 < 2 log(p s2 / (1-p))
    a = 1.0 - 1.0 / s2
    centre = -m / (s2 * a)
    radius2 = (2.0 * math.log(p * s2 / (1.0 - p)) + (m @ m) / s2) / a + centre @ centre
    radius = math.sqrt(radius2)
    # Class +1: x = Z;       |x - centre| = |Z - centre|
    p_pos = _prob_in_disc(float(np.linalg.norm(centre)), radius)
    # Class -1: x = m + s Z; |x - centre| < R  <=>  |Z + (m - centre)/s| < R/s
    p_neg = _prob_in_disc(float(np.linalg.norm(m - centre)) / s, radius / s)
    return p * p_pos + (1.0 - p) * (1.0 - p_neg)


_SQRT1_2 = 1.0 / math.sqrt(2.0)
_erfc = np.frompyfunc(math.erfc, 1, 1)


def _log_erfc(z):
    """``log(erfc(z))`` for an array, stable for large positive ``z``."""
    z = np.asarray(z, dtype=np.float64)
    out = np.empty_like(z)
    big = z > 25.0
    out[~big] = np.log(_erfc(z[~big]).astype(np.float64))
    zb = z[big]
    # Asymptotic expansion: erfc(z) ~ exp(-z^2) / (z sqrt(pi)) (1 - 1/(2z^2) + 3/(4z^4)).
    out[big] = (-zb * zb - np.log(zb * math.sqrt(math.pi))
                + np.log1p(-0.5 / zb**2 + 0.75 / zb**4))
    return out


def _log_phi_diff(lo, hi):
    """``log(Phi(hi) - Phi(lo))`` for arrays with ``hi > lo``."""
    lo = np.asarray(lo, dtype=np.float64)
    hi = np.asarray(hi, dtype=np.float64)
    out = np.empty_like(lo)
    # Upper tail: Phi(hi) - Phi(lo) = (erfc(lo/s2) - erfc(hi/s2)) / 2
    up = lo > 0
    # Lower tail: Phi(hi) - Phi(lo) = (erfc(-hi/s2) - erfc(-lo/s2)) / 2
    down = hi < 0
    mid = ~(up | down)
    for mask, a, b in ((up, lo, hi), (down, -hi, -lo)):
        if mask.any():
            la = _log_erfc(a[mask] * _SQRT1_2)
            lb = _log_erfc(b[mask] * _SQRT1_2)
            out[mask] = math.log(0.5) + la + np.log1p(-np.exp(lb - la))
    if mid.any():
        ea = _erfc(-lo[mid] * _SQRT1_2).astype(np.float64)
        eb = _erfc(hi[mid] * _SQRT1_2).astype(np.float64)
        out[mid] = np.log1p(-0.5 * (ea + eb))
    return out


def _waveform_log_likelihood(X):
    """Exact class-conditional log densities of :func:`waveform`, shape (n, 3).

    ``p(x | c) = int_0^1 N(x; b + u (a - b), I) du`` has a closed form: the
    squared distance is quadratic in ``u``, so the integral is a Gaussian
    integral over ``[0, 1]``.
    """
    X = np.asarray(X, dtype=np.float64)
    n, dim = X.shape
    out = np.empty((n, 3))
    for c, (ia, ib) in enumerate(WAVEFORM_CLASS_WAVES):
        a, b = WAVEFORM_BASE_WAVES[ia], WAVEFORM_BASE_WAVES[ib]
        d = a - b
        L = math.sqrt(d @ d)
        r = X - b
        s = r @ d
        u0 = s / (L * L)
        perp2 = np.einsum("ij,ij->i", r, r) - s * s / (L * L)
        out[:, c] = (-0.5 * dim * math.log(2.0 * math.pi) - 0.5 * perp2
                     + 0.5 * math.log(2.0 * math.pi) - math.log(L)
                     + _log_phi_diff(-L * u0, L * (1.0 - u0)))
    return out


def waveform_bayes_accuracy(n_samples=200_000, *, random_state=0):
    """Monte Carlo estimate of the Bayes accuracy on :func:`waveform`.

    The class-conditional densities are computed exactly (see
    :func:`_waveform_log_likelihood`); the accuracy of the Bayes rule equals
    ``E[max_c P(c | x)]``, which is averaged over ``n_samples`` draws (this has
    a much smaller variance than counting correct decisions).

    Parameters
    ----------
    n_samples : int, default=200_000
        Number of Monte Carlo draws.
    random_state : None, int, numpy.random.SeedSequence or numpy.random.Generator, default=0
        Seed of the Monte Carlo draws.

    Returns
    -------
    float
        Approximately 0.86 (0.868 for the default arguments).

    Examples
    --------
    A quick estimate from fewer draws:

    >>> from budgetkernel.datasets import waveform_bayes_accuracy
    >>> round(waveform_bayes_accuracy(20_000, random_state=0), 2)
    0.87
    """
    n_samples = _check_n_samples(n_samples)
    if n_samples == 0:
        raise ValueError("n_samples must be positive")
    X, _ = waveform(n_samples, random_state=random_state)
    ll = _waveform_log_likelihood(X)
    ll -= ll.max(axis=1, keepdims=True)
    post = np.exp(ll)
    post /= post.sum(axis=1, keepdims=True)
    return float(post.max(axis=1).mean())
