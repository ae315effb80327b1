"""Synthetic data streams, LIBSVM/svmlight I/O and streaming standardisation.

This module reproduces the synthetic benchmarks used in the budgeted online
kernel learning literature and provides the small amount of plumbing needed to
feed real data sets to the learners chunk by chunk:

* :func:`checkerboard`, :func:`noisy_checkerboard`, :func:`two_gaussians` and
  :func:`waveform` draw finite samples;
* :func:`stream` yields the same distributions as a (possibly infinite) stream
  of ``(X, y)`` chunks and :func:`make_stream_and_test` pairs a training stream
  with an independent test set;
* :func:`two_gaussians_bayes_accuracy` and :func:`waveform_bayes_accuracy`
  give the reference accuracy of the Bayes-optimal classifier;
* :func:`iter_svmlight`, :func:`load_svmlight` and :func:`dump_svmlight` read
  and write the LIBSVM text format (optionally gzip compressed);
* :class:`StreamingStandardizer` standardises a stream with statistics frozen
  after a warm-up prefix.

Reproducibility
---------------
Every random function takes ``random_state`` (``None``, an ``int``, a
:class:`numpy.random.SeedSequence` or a :class:`numpy.random.Generator`); the
global NumPy random state is never used.  Samples are generated in fixed
internal blocks of 4096 examples (``_BLOCK_SIZE``); block ``k`` uses its own
generator seeded from the child ``k`` of the root :class:`~numpy.random.SeedSequence`.
Consequently

* a stream is a deterministic function of the seed (and of the generator's
  parameters) only: ``chunk_size`` merely regroups the same examples;
* a sized draw is a prefix of a longer draw with the same seed, e.g.
  ``checkerboard(100, random_state=0)`` is the first 100 examples of
  ``stream('checkerboard', random_state=0)``.

An integer seed or a ``SeedSequence`` therefore always reproduces the same
data.  A ``Generator`` is consumed (four 64-bit integers are drawn from it to
build the root seed), so repeated calls with the same ``Generator`` object give
different, but still reproducible, data.  ``None`` draws fresh OS entropy.

Only NumPy and the standard library are required (and, for reading LIBSVM
files, the package's compiled core).
"""

from __future__ import annotations

import contextlib
import gzip
import io
import math
import numbers
import os
import re
import stat
import zlib

import numpy as np

__all__ = [
    "checkerboard",
    "noisy_checkerboard",
    "two_gaussians",
    "two_gaussians_bayes_accuracy",
    "waveform",
    "waveform_bayes_accuracy",
    "WAVEFORM_BASE_WAVES",
    "WAVEFORM_CLASS_WAVES",
    "STREAM_NAMES",
    "stream",
    "make_stream_and_test",
    "iter_svmlight",
    "load_svmlight",
    "dump_svmlight",
    "StreamingStandardizer",
]

# Number of examples generated from one sub-seed.  Part of the reproducibility
# contract: changing it changes every generated data set.
_BLOCK_SIZE = 4096


# ---------------------------------------------------------------------------
# Seeding helpers
# ---------------------------------------------------------------------------


def _as_seed_sequence(random_state):
    """Convert ``random_state`` to a root :class:`numpy.random.SeedSequence`."""
    if random_state is None:
        return np.random.SeedSequence()
    if isinstance(random_state, np.random.SeedSequence):
        return random_state
    if isinstance(random_state, np.random.Generator):
        entropy = random_state.integers(0, 2**63, size=4, dtype=np.int64)
        return np.random.SeedSequence([int(e) for e in entropy])
    if isinstance(random_state, (bool, np.bool_)):
        raise TypeError("random_state must be None, an int, a SeedSequence or a "
                        "numpy.random.Generator, got a bool")
    if isinstance(random_state, numbers.Integral):
        seed = int(random_state)
        if seed < 0:
            raise ValueError(f"random_state must be a non-negative integer, got {seed}")
        return np.random.SeedSequence(seed)
    raise TypeError("random_state must be None, an int, a SeedSequence or a "
                    f"numpy.random.Generator, got {type(random_state).__name__}")


def _child(ss, *keys):
    """Deterministic child of ``ss`` (same as ``ss.spawn`` would give for ``keys``)."""
    return np.random.SeedSequence(entropy=ss.entropy,
                                  spawn_key=tuple(ss.spawn_key) + tuple(keys),
                                  pool_size=ss.pool_size)


def _block_rng(ss, k):
    return np.random.default_rng(_child(ss, k))


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


# ---------------------------------------------------------------------------
# Block generators: (rng, n, **params) -> (X, y)
# ---------------------------------------------------------------------------


def _checkerboard_labels(X):
    cells = np.floor(X).astype(np.int64)
    return np.where((cells[:, 0] + cells[:, 1]) % 2 == 0, 1, -1).astype(np.int64)


def _block_checkerboard(rng, n, noise):
    # rng.random() is in [0, 1) and scaling by a power of two is exact, so
    # every coordinate is in [0, 4).
    X = 4.0 * rng.random((n, 2))
    y = _checkerboard_labels(X)
    # The flip uniforms are always drawn so that data sets that differ only in
    # ``noise`` share the same inputs (and the same clean labels).
    flip = rng.random(n) < noise
    y[flip] = -y[flip]
    return X, y


_TWO_GAUSSIANS_PRIOR_POS = 0.4
_TWO_GAUSSIANS_MEAN_NEG = np.array([2.0, 0.0])
_TWO_GAUSSIANS_STD_NEG = 2.0


def _block_two_gaussians(rng, n):
    pos = rng.random(n) < _TWO_GAUSSIANS_PRIOR_POS
    Z = rng.standard_normal((n, 2))
    X = np.where(pos[:, None], Z, _TWO_GAUSSIANS_MEAN_NEG + _TWO_GAUSSIANS_STD_NEG * Z)
    y = np.where(pos, 1, -1).astype(np.int64)
    return X, y


def _make_waveform_base():
    i = np.arange(1, 22, dtype=np.float64)
    h1 = np.maximum(6.0 - np.abs(i - 11.0), 0.0)
    h2 = np.maximum(6.0 - np.abs(i - 15.0), 0.0)  # h1(i - 4)
    h3 = np.maximum(6.0 - np.abs(i - 7.0), 0.0)   # h1(i + 4)
    return np.vstack([h1, h2, h3])


#: The three base waves ``h1, h2, h3`` of Breiman's waveform problem, shape (3, 21).
WAVEFORM_BASE_WAVES = _make_waveform_base()
WAVEFORM_BASE_WAVES.setflags(write=False)

#: For class ``c``, ``x = u * h[a] + (1 - u) * h[b] + noise`` with
#: ``(a, b) = WAVEFORM_CLASS_WAVES[c]`` (indices into WAVEFORM_BASE_WAVES).
WAVEFORM_CLASS_WAVES = ((0, 1), (0, 2), (1, 2))


def _block_waveform(rng, n):
    y = rng.integers(0, 3, size=n, dtype=np.int64)
    u = rng.random(n)
    noise = rng.standard_normal((n, 21))
    pairs = np.asarray(WAVEFORM_CLASS_WAVES)
    a = WAVEFORM_BASE_WAVES[pairs[y, 0]]
    b = WAVEFORM_BASE_WAVES[pairs[y, 1]]
    X = u[:, None] * a + (1.0 - u)[:, None] * b + noise
    return X, y


def _resolve(name, kwargs):
    """Map a stream name and its keyword arguments to ``(block_fn, params)``."""
    kwargs = dict(kwargs)
    if name == "checkerboard":
        noise = kwargs.pop("noise", 0.0)
        _reject_kwargs(name, kwargs)
        return _block_checkerboard, {"noise": _check_noise(noise)}
    if name == "noisy_checkerboard":
        clean = kwargs.pop("clean", False)
        _reject_kwargs(name, kwargs)
        return _block_checkerboard, {"noise": 0.0 if clean else 0.15}
    if name == "two_gaussians":
        _reject_kwargs(name, kwargs)
        return _block_two_gaussians, {}
    if name == "waveform":
        _reject_kwargs(name, kwargs)
        return _block_waveform, {}
    raise ValueError(f"unknown data set {name!r}; expected one of {STREAM_NAMES}")


def _reject_kwargs(name, kwargs):
    if kwargs:
        raise TypeError(f"unexpected keyword argument(s) for {name!r}: "
                        + ", ".join(sorted(kwargs)))


def _check_noise(noise):
    try:
        noise = float(noise)
    except (TypeError, ValueError):
        raise TypeError(f"noise must be a float in [0, 1], got {noise!r}") from None
    if not (0.0 <= noise <= 1.0):
        raise ValueError(f"noise must be in [0, 1], got {noise}")
    return noise


#: Names accepted by :func:`stream` and :func:`make_stream_and_test`.
STREAM_NAMES = ("checkerboard", "noisy_checkerboard", "two_gaussians", "waveform")


def _iter_blocks(block_fn, params, ss, n_samples):
    """Yield the blocks of a stream, the last one truncated to ``n_samples``."""
    produced = 0
    k = 0
    while n_samples is None or produced < n_samples:
        X, y = block_fn(_block_rng(ss, k), _BLOCK_SIZE, **params)
        k += 1
        if n_samples is not None and produced + _BLOCK_SIZE > n_samples:
            m = n_samples - produced
            X, y = X[:m], y[:m]
        produced += X.shape[0]
        yield X, y


def _draw(block_fn, params, ss, n_samples):
    blocks = list(_iter_blocks(block_fn, params, ss, n_samples))
    if not blocks:
        X, y = block_fn(_block_rng(ss, 0), 0, **params)
        return X, y
    if len(blocks) == 1:
        return np.ascontiguousarray(blocks[0][0]), blocks[0][1].copy()
    return (np.concatenate([b[0] for b in blocks]),
            np.concatenate([b[1] for b in blocks]))


def _rechunk(blocks, chunk_size):
    """Regroup an iterator of ``(X, y)`` blocks into chunks of ``chunk_size``."""
    pend_X, pend_y, pend_n = [], [], 0
    for X, y in blocks:
        pend_X.append(X)
        pend_y.append(y)
        pend_n += X.shape[0]
        if pend_n < chunk_size:
            continue
        Xc = np.concatenate(pend_X) if len(pend_X) > 1 else pend_X[0]
        yc = np.concatenate(pend_y) if len(pend_y) > 1 else pend_y[0]
        start = 0
        while pend_n - start >= chunk_size:
            yield Xc[start:start + chunk_size], yc[start:start + chunk_size]
            start += chunk_size
        if start < pend_n:
            pend_X, pend_y = [Xc[start:]], [yc[start:]]
        else:
            pend_X, pend_y = [], []
        pend_n -= start
    if pend_n:
        Xc = np.concatenate(pend_X) if len(pend_X) > 1 else pend_X[0]
        yc = np.concatenate(pend_y) if len(pend_y) > 1 else pend_y[0]
        yield Xc, yc


# ---------------------------------------------------------------------------
# Public generators
# ---------------------------------------------------------------------------


def checkerboard(n_samples, *, noise=0.0, random_state=None):
    """Draw from the 4 x 4 checkerboard problem.

    Inputs are uniform on ``[0, 4)^2``; the clean label is ``+1`` when
    ``floor(x1) + floor(x2)`` is even and ``-1`` otherwise.  Each label is then
    flipped independently with probability ``noise``.

    Parameters
    ----------
    n_samples : int
        Number of examples.
    noise : float, default=0.0
        Probability, in ``[0, 1]``, of flipping each label.
    random_state : None, int, numpy.random.SeedSequence or numpy.random.Generator
        Seed; see the module documentation.  Draws with the same seed and
        different ``noise`` share the same inputs ``X``.

    Returns
    -------
    X : ndarray of shape (n_samples, 2), float64
    y : ndarray of shape (n_samples,), int64
        Labels in ``{-1, +1}``.
    """
    n_samples = _check_n_samples(n_samples)
    return _draw(_block_checkerboard, {"noise": _check_noise(noise)},
                 _as_seed_sequence(random_state), n_samples)


def noisy_checkerboard(n_samples, *, random_state=None, clean=False):
    """Draw from the checkerboard problem with 15% label noise.

    Equivalent to ``checkerboard(n_samples, noise=0.15, ...)``.  With
    ``clean=True`` no label is flipped, which gives the clean test set used to
    measure how close a learner gets to the Bayes rule (whose accuracy on the
    noisy distribution is 0.85).

    Parameters
    ----------
    n_samples : int
        Number of examples.
    random_state : None, int, numpy.random.SeedSequence or numpy.random.Generator
        Seed; see the module documentation.  ``clean=True`` and
        ``clean=False`` with the same seed give the same ``X``.
    clean : bool, default=False
        If True, return the noise-free labels.

    Returns
    -------
    X : ndarray of shape (n_samples, 2), float64
    y : ndarray of shape (n_samples,), int64
        Labels in ``{-1, +1}``.
    """
    return checkerboard(n_samples, noise=0.0 if clean else 0.15,
                        random_state=random_state)


def two_gaussians(n_samples, *, random_state=None):
    """Draw from the two-Gaussian mixture.

    With probability 0.4 the label is ``+1`` and ``x ~ N((0, 0), I)``; with
    probability 0.6 the label is ``-1`` and ``x ~ N((2, 0), 4 I)`` (standard
    deviation 2 in each coordinate).  The classes overlap, so the Bayes
    accuracy is only about 0.804 (see :func:`two_gaussians_bayes_accuracy`).

    Parameters
    ----------
    n_samples : int
        Number of examples.
    random_state : None, int, numpy.random.SeedSequence or numpy.random.Generator
        Seed; see the module documentation.

    Returns
    -------
    X : ndarray of shape (n_samples, 2), float64
    y : ndarray of shape (n_samples,), int64
        Labels in ``{-1, +1}``.
    """
    n_samples = _check_n_samples(n_samples)
    return _draw(_block_two_gaussians, {}, _as_seed_sequence(random_state), n_samples)


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


def waveform(n_samples, *, random_state=None):
    """Draw from Breiman's waveform problem (21 attributes, 3 classes).

    Following Breiman, Friedman, Olshen & Stone (1984), *Classification and
    Regression Trees*, section 2.6.2, the base waves are
    ``h1(i) = max(6 - |i - 11|, 0)``, ``h2(i) = h1(i - 4)`` and
    ``h3(i) = h1(i + 4)`` for ``i = 1, ..., 21`` (peaks at 11, 15 and 7).  The
    class is uniform on ``{0, 1, 2}``, ``u ~ U(0, 1)`` and, with
    ``eps ~ N(0, I_21)``,

    * class 0: ``x = u h1 + (1 - u) h2 + eps``
    * class 1: ``x = u h1 + (1 - u) h3 + eps``
    * class 2: ``x = u h2 + (1 - u) h3 + eps``

    The Bayes accuracy is about 0.86 (see :func:`waveform_bayes_accuracy`).

    Notes
    -----
    The UCI "waveform" C generator (David Aha, 1988) and its ports (MOA,
    scikit-multiflow) use the same three waves and the same three pairs, but
    number the classes differently: UCI class ``k`` is class ``2 - k`` here.
    The distributions are otherwise identical (``u`` and ``1 - u`` have the
    same law), so all accuracies agree.

    Parameters
    ----------
    n_samples : int
        Number of examples.
    random_state : None, int, numpy.random.SeedSequence or numpy.random.Generator
        Seed; see the module documentation.

    Returns
    -------
    X : ndarray of shape (n_samples, 21), float64
    y : ndarray of shape (n_samples,), int64
        Labels in ``{0, 1, 2}``.
    """
    n_samples = _check_n_samples(n_samples)
    return _draw(_block_waveform, {}, _as_seed_sequence(random_state), n_samples)


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


# ---------------------------------------------------------------------------
# Streams
# ---------------------------------------------------------------------------


def stream(name, n_samples=None, *, chunk_size=10_000, random_state=None, **kwargs):
    """Stream a synthetic data set as ``(X, y)`` chunks.

    Parameters
    ----------
    name : {'checkerboard', 'noisy_checkerboard', 'two_gaussians', 'waveform'}
        Which generator to use.
    n_samples : int or None, default=None
        Total number of examples; ``None`` gives an infinite stream.
    chunk_size : int, default=10_000
        Number of examples per yielded chunk; the last chunk of a sized stream
        may be smaller.  It does not change the data: the concatenated stream
        is the same for every ``chunk_size``.
    random_state : None, int, numpy.random.SeedSequence or numpy.random.Generator
        Seed; see the module documentation.  The first ``n`` examples of the
        stream equal ``<name>(n, random_state=seed, **kwargs)``.
    **kwargs
        Generator parameters: ``noise`` for ``'checkerboard'``, ``clean`` for
        ``'noisy_checkerboard'``.

    Returns
    -------
    iterator of (X, y)
        ``X`` has shape ``(m, n_features)`` (float64) and ``y`` shape ``(m,)``
        (int64).  Arguments are validated, and a ``Generator`` seed consumed,
        when ``stream`` is called, not when iteration starts.
    """
    block_fn, params = _resolve(name, kwargs)
    n_samples = _check_n_samples(n_samples, allow_none=True)
    chunk_size = _check_n_samples(chunk_size, "chunk_size")
    if chunk_size == 0:
        raise ValueError("chunk_size must be positive")
    ss = _as_seed_sequence(random_state)
    return _rechunk(_iter_blocks(block_fn, params, ss, n_samples), chunk_size)


def make_stream_and_test(name, n_train, n_test, random_state=None, *,
                         chunk_size=10_000, clean_test=True, **kwargs):
    """Build a training stream and an independent test set.

    The training stream and the test set are drawn from two independent
    children of the root seed, so they share no examples and each is
    reproducible on its own.

    Parameters
    ----------
    name : {'checkerboard', 'noisy_checkerboard', 'two_gaussians', 'waveform'}
        Which generator to use.
    n_train : int or None
        Length of the training stream (``None`` = infinite).
    n_test : int
        Size of the test set.
    random_state : None, int, numpy.random.SeedSequence or numpy.random.Generator
        Root seed.
    chunk_size : int, default=10_000
        Chunk size of the training stream.
    clean_test : bool, default=True
        For ``'noisy_checkerboard'`` and ``'checkerboard'`` with ``noise > 0``,
        draw the test labels without label noise (the usual protocol, which
        measures the distance to the Bayes rule).  Ignored by the other
        generators.
    **kwargs
        Generator parameters, as in :func:`stream`; they apply to the training
        stream (and to the test set, except for the label noise when
        ``clean_test`` is true).

    Returns
    -------
    train : iterator of (X, y)
        The training stream.
    test : tuple (X_test, y_test)
        The test set.
    """
    n_test = _check_n_samples(n_test, "n_test")
    _resolve(name, kwargs)  # validate before consuming the seed
    ss = _as_seed_sequence(random_state)
    train = stream(name, n_train, chunk_size=chunk_size,
                   random_state=_child(ss, 0), **kwargs)
    test_kwargs = dict(kwargs)
    if clean_test:
        if name == "noisy_checkerboard":
            test_kwargs["clean"] = True
        elif name == "checkerboard":
            test_kwargs["noise"] = 0.0
    block_fn, params = _resolve(name, test_kwargs)
    test = _draw(block_fn, params, _child(ss, 1), n_test)
    return train, test


# ---------------------------------------------------------------------------
# LIBSVM / svmlight text format
# ---------------------------------------------------------------------------

# The C++ core parses (budgetkernel/libsvm.hpp, through _core.LibsvmPass): Python opens the
# file (gzip read transparently, a pipe read once), feeds it in blocks of _SVM_BLOCK bytes
# and allocates each chunk's arrays, which the core fills with the GIL released.  A line the
# core rejects is looked at again by the line-by-line rules below (_parse_line and the row
# checks of each pass, in _plan_svmlight_rows and _iter_svmlight_chunks):
# they word the error exactly as this reader always has, and they decide the rare lines with
# non-ASCII text outside a comment, where Python's float() and str.split() accept Unicode
# digits and spaces that the core leaves to them.

_INT_RE = re.compile(r"[+-]?[0-9]+\Z")
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
# What the ``surrogateescape`` error handler turns an undecodable byte into.
_ESCAPED_BYTE_RE = re.compile("[\udc80-\udcff]")
# Bytes read per block: large enough that the per-block Python work vanishes, small enough
# to keep memory bounded (a pipe may deliver less per read).
_SVM_BLOCK = 1 << 20


def _fail(path, lineno, msg):
    raise ValueError(f"malformed svmlight file {os.fspath(path)!r}, line {lineno}: {msg}")


def _can_reread(path):
    """False for a pipe, socket or character device (e.g. ``/dev/stdin`` fed by a
    pipe): such an input yields its bytes once, so it cannot be scanned first and
    read again."""
    mode = os.stat(path).st_mode
    return not (stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or stat.S_ISCHR(mode))


@contextlib.contextmanager
def _open_binary(path):
    """Open ``path`` for reading bytes, transparently decompressing gzip.

    The file is opened once and the gzip magic is *peeked* at, not read, so a pipe
    loses no bytes.  A leading UTF-8 byte order mark is skipped by the core.
    """
    with open(path, "rb") as raw:
        # peek() does one read of the raw stream: a regular file fills the
        # buffer, a pipe may give a single byte.  No text LIBSVM file starts
        # with the control byte 0x1f, so a lone 0x1f is taken as the start of
        # the gzip magic (gzip itself then rejects a wrong second byte).
        head = raw.peek(2)[:2]
        if head == b"\x1f\x8b" or head == b"\x1f":
            with gzip.GzipFile(fileobj=raw, mode="rb") as gz:
                yield gz
        else:
            yield raw


def _read_block(fh, path):
    """The next block of bytes (``b''`` at the end), failing with the file on gzip data
    that is corrupt or truncated."""
    try:
        # read1: at most one read of the underlying stream, so a pipe's rows are parsed
        # (and its chunks yielded) as they arrive instead of after a whole block.
        return fh.read1(_SVM_BLOCK)
    except (EOFError, zlib.error, gzip.BadGzipFile) as e:
        # gzip reports these without the file name, and EOFError and zlib.error
        # are not ValueErrors: a truncated download would otherwise escape the
        # reader's (and the CLI's) error handling as a traceback.
        raise ValueError(f"svmlight file {os.fspath(path)!r}: corrupt or truncated "
                         f"gzip data ({e})") from None


def _parse_float(tok):
    if "_" in tok:  # float() accepts digit separators, LIBSVM does not
        raise ValueError
    return float(tok)


def _int_token(tok):
    """``int(tok)`` for a token matching ``_INT_RE``, leading zeros ignored: int() counts
    them against ``sys.get_int_max_str_digits()`` and would refuse ``+000...0003``."""
    digits = tok.lstrip("+-").lstrip("0")
    value = int(digits) if digits else 0
    return -value if tok.startswith("-") else value


def _parse_line(line, path, lineno):
    """Parse one line; return ``None`` for blank/comment lines, else
    ``(label_value, label_is_int, raw_indices, values)``."""
    hash_pos = line.find("#")
    if hash_pos >= 0:
        line = line[:hash_pos]
    toks = line.split()
    if not toks:
        return None
    lab = toks[0]
    if ":" in lab:
        _fail(path, lineno, f"missing label (line starts with feature {lab!r})")
    label_is_int = False
    if _INT_RE.match(lab):
        try:
            label = _int_token(lab)
            label_is_int = _INT64_MIN <= label <= _INT64_MAX
            if not label_is_int:
                label = float(label)
        except (ValueError, OverflowError):
            # beyond float64 (OverflowError), or more digits than int() converts
            # (ValueError; then it is beyond float64 too): the integer counterpart of '1e400'
            _fail(path, lineno, f"non-finite label {lab[:40]!r}{'...' if len(lab) > 40 else ''}")
    else:
        try:
            label = _parse_float(lab)
        except ValueError:
            _fail(path, lineno, f"non-numeric label {lab!r}")
        if not math.isfinite(label):
            _fail(path, lineno, f"non-finite label {lab!r}")
    indices = []
    values = []
    for tok in toks[1:]:
        key, sep, val = tok.partition(":")
        if not sep:
            _fail(path, lineno, f"missing ':' in feature {tok!r}")
        if key == "qid":
            if not _INT_RE.match(val):
                _fail(path, lineno, f"non-integer qid in {tok!r}")
            continue
        if not _INT_RE.match(key):
            _fail(path, lineno, f"non-integer feature index in {tok!r}")
        if len(key.lstrip("+-").lstrip("0")) > 19:
            # beyond int64 either way (int() would also refuse more than 4300 digits)
            idx = -1 if key.startswith("-") else _INT64_MAX + 1
        else:
            idx = _int_token(key)
        if idx < 0:
            _fail(path, lineno, f"negative feature index in {tok!r}")
        if idx > _INT64_MAX:  # no array has such a column
            _fail(path, lineno, f"feature index {key[:40]}{'...' if len(key) > 40 else ''} is too large")
        try:
            v = _parse_float(val)
        except ValueError:
            _fail(path, lineno, f"non-numeric feature value in {tok!r}")
        if not math.isfinite(v):
            _fail(path, lineno, f"non-finite feature value in {tok!r}")
        indices.append(idx)
        values.append(v)
    if len(set(indices)) != len(indices):
        _fail(path, lineno, "duplicate feature index")
    return label, label_is_int, indices, values


def _resolve_label_dtype(label_dtype):
    if label_dtype is None:
        return None
    dt = np.dtype(label_dtype)
    if dt.kind not in "iuf":
        raise ValueError(f"label_dtype must be an integer or floating dtype, got {dt}")
    return dt


def _check_float_dtype(dtype):
    dt = np.dtype(dtype)
    if dt.kind != "f":
        raise ValueError(f"dtype must be a floating dtype, got {dt}")
    return dt


def _recheck_rejected(reader, path, check_row):
    """Judge the line the core just rejected by the line-by-line rules: raise its error
    (worded as always), or return its parsed row (``None`` for a blank line) when those
    rules accept it, which happens only for non-ASCII text outside a comment (Unicode
    digits or spaces).  ``check_row(parsed, lineno)`` adds the checks of the pass."""
    lineno = reader.line_number
    line = reader.line_text.decode("utf-8", "surrogateescape")
    bad = _ESCAPED_BYTE_RE.search(line)
    if bad:
        _fail(path, lineno, f"byte 0x{ord(bad.group()) - 0xDC00:02x} is not valid UTF-8 text")
    parsed = _parse_line(line, path, lineno)
    if parsed is not None:
        check_row(parsed, lineno)
    if reader.status != "non_ascii":
        # The core and these rules disagree (a bug): refuse the line rather than guess.
        _fail(path, lineno, f"rejected by the parser ({reader.status})")
    return parsed


def _accept(reader, parsed):
    label, is_int, idx, vals = parsed
    reader.accept_row(float(label), label if is_int else 0, is_int, idx, vals)


def _run_pass(reader, path, step):
    """Run ``step`` (the pass's scan or read) over the file, feeding it blocks; yield
    whenever it returns something else (a full chunk or a rejected line)."""
    core = _native_core()
    with _open_binary(path) as fh:
        while True:
            status = step()
            if status == core.LIBSVM_NEED_INPUT:
                block = _read_block(fh, path)
                if block:
                    reader.feed(block)
                else:
                    reader.finish()
            elif status == core.LIBSVM_END:
                return
            else:
                yield status


def _native_core():
    from ._native import core  # here: datasets itself needs only NumPy to import
    return core


def _plan_svmlight(path, n_features, zero_based, label_dtype):
    """Resolve ``(n_features, offset, label_dtype)``; scan the file if needed."""
    return _plan_svmlight_rows(path, n_features, zero_based, label_dtype)[:3]


def _plan_svmlight_rows(path, n_features, zero_based, label_dtype):
    """:func:`_plan_svmlight` and the number of rows, when a scan counted them (else None)."""
    if zero_based not in (True, False, "auto"):
        raise ValueError(f"zero_based must be True, False or 'auto', got {zero_based!r}")
    if n_features is not None:
        n_features = _check_n_samples(n_features, "n_features")
    label_dtype = _resolve_label_dtype(label_dtype)
    if n_features is not None and zero_based != "auto" and label_dtype is not None:
        return n_features, (0 if zero_based else 1), label_dtype, None
    if not _can_reread(path):
        # The first pass would consume the pipe and leave nothing to read.
        missing = [name for name, given in (("n_features", n_features is not None),
                                            ("zero_based", zero_based != "auto"),
                                            ("label_dtype", label_dtype is not None))
                   if not given]
        raise ValueError(f"svmlight input {os.fspath(path)!r} is a pipe or another stream "
                         "that can be read only once, so it must be read in a single "
                         "pass: give n_features, zero_based (True or False) and "
                         f"label_dtype (missing: {', '.join(missing)})")
    # First pass: validate every line and collect what the caller did not give.
    reader = _native_core().LibsvmPass(False, one_based=zero_based is False)

    def check_row(parsed, lineno):
        idx = parsed[2]
        if zero_based is False and idx and min(idx) == 0:
            _fail(path, lineno, "feature index 0 in a one-based file "
                                "(pass zero_based=True or 'auto')")

    for _ in _run_pass(reader, path, reader.scan):  # only rejected lines stop the scan
        parsed = _recheck_rejected(reader, path, check_row)
        if parsed is not None:
            _accept(reader, parsed)
    summary = reader.summary
    min_idx = None if summary["min_index"] < 0 else summary["min_index"]
    max_idx = None if summary["max_index"] < 0 else summary["max_index"]
    all_int = summary["all_integer_labels"]
    if zero_based == "auto":
        zero_based = min_idx == 0
    offset = 0 if zero_based else 1
    inferred = 0 if max_idx is None else max_idx - offset + 1
    if n_features is None:
        n_features = inferred
    elif inferred > n_features:
        raise ValueError(f"svmlight file {os.fspath(path)!r} has feature index {max_idx} "
                         f"but n_features={n_features}")
    if label_dtype is None:
        label_dtype = np.dtype(np.int64) if all_int else np.dtype(np.float64)
    return n_features, offset, label_dtype, summary["rows"]


def _iter_svmlight_chunks(path, n_features, offset, label_dtype, dtype, chunk_size, return_lines=False,
                          into=None):
    """The chunks of a planned read.  ``into``: a zeroed (rows, n_features) array of dtype
    float32/float64 whose consecutive row blocks the chunks' X are (views), while they fit."""
    core = _native_core()
    if n_features > _INT64_MAX:  # from a scan that met index 2^63 - 1 in a zero-based file
        raise ValueError(f"svmlight file {os.fspath(path)!r}: n_features={n_features} is more columns "
                         "than an array can have")
    label_int = label_dtype.kind in "iu"
    # Labels are checked against label_dtype as values are against dtype: numpy would
    # raise OverflowError (no line number) for an integer, and give inf for a float.
    if label_int:
        label_lo, label_hi = int(np.iinfo(label_dtype).min), int(np.iinfo(label_dtype).max)
        int_lo, int_hi = max(label_lo, _INT64_MIN), min(label_hi, _INT64_MAX)
    else:
        label_hi = float(np.finfo(label_dtype).max)
        label_lo = -label_hi
        # An integer label compares exactly with the bound (as Python compares int and float).
        int_hi = _INT64_MAX if label_hi >= 2.0**63 else math.floor(label_hi)
        int_lo = -int_hi - (int_hi == _INT64_MAX)
    vmax = float(np.finfo(dtype).max)
    check_range = vmax < float(np.finfo(np.float64).max)
    reader = core.LibsvmPass(True, n_features=n_features, offset=offset,
                             integer_labels=label_int, label_int_min=int_lo, label_int_max=int_hi,
                             label_max=label_hi if not label_int else math.inf, value_max=vmax)

    def check_row(parsed, lineno):
        label, is_int, idx, vals = parsed
        if label_int and not is_int:
            _fail(path, lineno, f"non-integer label {label!r} with integer label_dtype")
        if not label_lo <= label <= label_hi:
            _fail(path, lineno, f"label {label!r} does not fit label_dtype {label_dtype}")
        for i in idx:
            j = i - offset
            if j < 0:
                _fail(path, lineno, "feature index 0 in a one-based file "
                                    "(pass zero_based=True or 'auto')")
            if j >= n_features:
                _fail(path, lineno, f"feature index {i} exceeds n_features={n_features}")
        if check_range:
            for v in vals:
                if abs(v) > vmax:
                    _fail(path, lineno, f"feature value {v!r} overflows {dtype}")

    # The core writes float32 and float64 directly; other dtypes are cast from float64,
    # which rounds exactly as assigning the values into such an array did.
    x_dtype = dtype if dtype in (np.float32, np.float64) else np.dtype(np.float64)
    # A label type wider than double (longdouble) takes integer labels as integers.
    wide_labels = not label_int and np.finfo(label_dtype).nmant > 52

    filled = 0

    def build():
        nonlocal filled
        m = reader.rows
        if into is not None and filled + m <= into.shape[0]:
            X = into[filled:filled + m]
            filled += m
        else:
            X = np.zeros((m, n_features), dtype=x_dtype)
        y_int = np.empty(m, dtype=np.int64) if label_int or wide_labels else None
        y_float = None if label_int else np.empty(m, dtype=np.float64)
        is_int = np.empty(m, dtype=np.uint8) if wide_labels else None
        lines = np.empty(m, dtype=np.int64) if return_lines else None
        reader.take(X, y_float, y_int, is_int, lines)
        if X.dtype != dtype:
            X = X.astype(dtype)
        if label_int:
            y = y_int if label_dtype == np.int64 else y_int.astype(label_dtype)
        else:
            # numpy converts a Python int label to float32 or float16 through a double,
            # as this does
            y = y_float if label_dtype == np.float64 else y_float.astype(label_dtype)
            if wide_labels:
                mask = is_int.view(bool)
                y[mask] = y_int[mask].astype(label_dtype)
        return (X, y, lines) if return_lines else (X, y)

    for status in _run_pass(reader, path, lambda: reader.read(chunk_size)):
        if status == core.LIBSVM_FULL:
            yield build()
            continue
        parsed = _recheck_rejected(reader, path, check_row)
        if parsed is not None:
            _accept(reader, parsed)
    if reader.rows:
        yield build()


def iter_svmlight(path, *, n_features=None, chunk_size=10_000, dtype=np.float64,
                  zero_based="auto", label_dtype=None, return_lines=False):
    """Read a LIBSVM/svmlight text file as dense ``(X, y)`` chunks.

    Lines have the form ``label [qid:q] index:value index:value ... [# comment]``.
    The file is read in blocks of 1 MiB, parsed by the C++ core (the same
    reader C++ programs get from ``budgetkernel/libsvm.hpp``), so memory use
    is bounded by one chunk plus one block (and the longest line).  Lines end
    with LF, CRLF or a lone CR.  Files starting with the gzip magic bytes (e.g. ``*.gz``) are decompressed
    on the fly.  The text must be UTF-8 (a leading byte order mark is
    skipped).  Blank lines and ``#`` comments are skipped, ``qid`` tokens are
    ignored and features may appear in any order.

    To yield consistent chunks the reader must know three facts about the
    whole file: the number of features, whether indices are zero- or
    one-based, and whether all labels are integers.  **Whatever is not given
    (``n_features=None``, ``zero_based='auto'`` or ``label_dtype=None``) is
    determined by a first streaming pass over the file**, which also validates
    every line, so a malformed file raises before any chunk is yielded.  With
    all three given, the file is read in a single pass and errors are raised
    when the offending chunk is reached.  A pipe (e.g. ``/dev/stdin`` fed by
    ``cat``) can be read only once, so it needs all three; without them a
    ValueError says so.

    Parameters
    ----------
    path : str or os.PathLike
        File to read (plain text or gzip).
    n_features : int or None, default=None
        Number of columns of ``X``.  ``None`` uses the largest index in the
        file.  A larger value pads with zero columns; a smaller one is an error.
    chunk_size : int, default=10_000
        Number of examples per chunk (the last chunk may be smaller).
    dtype : floating numpy dtype, default=numpy.float64
        dtype of ``X``.  A value that overflows it (e.g. ``1e300`` with
        float32) is an error rather than an infinity.
    zero_based : bool or 'auto', default='auto'
        Whether index 0 is the first feature.  ``'auto'`` means zero-based iff
        index 0 occurs somewhere in the file (a zero-based file that never uses
        feature 0 is therefore read as one-based; pass ``zero_based=True``
        explicitly to avoid this).  With one-based indexing, index 0 is an error.
    label_dtype : numpy dtype or None, default=None
        dtype of ``y``.  ``None`` gives int64 if every label is written as an
        integer (``1``, ``-1``, ``+3``) and float64 otherwise (``1.0``,
        ``0.5``, ``1e3`` count as non-integer).
    return_lines : bool, default=False
        Also yield each example's line number in the file, so that an error
        found later in a chunk (a value the estimator rejects) can name its line.

    Yields
    ------
    X : ndarray of shape (m, n_features)
    y : ndarray of shape (m,)
    lines : ndarray of int64, shape (m,)
        Only with ``return_lines=True``: the one-based line number of each row.

    Raises
    ------
    ValueError
        On malformed lines (missing ``':'``, non-numeric or non-integer
        index, non-numeric label or value, NaN or infinite label or value,
        negative index, index beyond int64, index 0 in a one-based file,
        duplicate index, index beyond ``n_features``, value overflowing
        ``dtype``, label outside ``label_dtype``, bytes that are not UTF-8).
        The message names the file and line number.  Also raised, naming the
        file, for corrupt or truncated gzip data, and for a pipe when not all
        of ``n_features``, ``zero_based`` and ``label_dtype`` are given.
    """
    chunk_size = _check_n_samples(chunk_size, "chunk_size")
    if chunk_size == 0:
        raise ValueError("chunk_size must be positive")
    dtype = _check_float_dtype(dtype)
    if not isinstance(return_lines, (bool, np.bool_)):
        raise ValueError(f"return_lines must be True or False; got {return_lines!r}")
    n_features, offset, label_dtype = _plan_svmlight(path, n_features, zero_based, label_dtype)
    return _iter_svmlight_chunks(path, n_features, offset, label_dtype, dtype, chunk_size, return_lines)


def load_svmlight(path, *, n_features=None, dtype=np.float64, zero_based="auto",
                  label_dtype=None):
    """Read a whole LIBSVM/svmlight file into dense arrays.

    Same parameters and validation as :func:`iter_svmlight` (without
    ``chunk_size``).

    Returns
    -------
    X : ndarray of shape (n_samples, n_features)
    y : ndarray of shape (n_samples,)
        int64 if every label is written as an integer, else float64 (unless
        ``label_dtype`` is given).
    """
    dtype = _check_float_dtype(dtype)
    n_features, offset, label_dtype, n_rows = _plan_svmlight_rows(path, n_features, zero_based, label_dtype)
    # After a scan the size is known: the chunks are read into one array (no concatenation,
    # which needed twice the memory), unless the file changed in between.  An array numpy
    # cannot make is left to the chunks, so that errors keep their order (a bad line first).
    into = None
    if n_rows and dtype in (np.float32, np.float64):
        try:
            into = np.zeros((n_rows, n_features), dtype=dtype)
        except (MemoryError, ValueError):
            pass
    chunks = list(_iter_svmlight_chunks(path, n_features, offset, label_dtype, dtype,
                                        chunk_size=65536, into=into))
    if not chunks:
        return np.zeros((0, n_features), dtype=dtype), np.zeros(0, dtype=label_dtype)
    y = chunks[0][1] if len(chunks) == 1 else np.concatenate([c[1] for c in chunks])
    if into is not None and y.shape[0] == n_rows and all(c[0].base is into for c in chunks):
        return into, y
    if len(chunks) == 1:
        return chunks[0]
    return np.concatenate([c[0] for c in chunks]), y


def _format_label(v, is_int):
    if is_int:
        return "%d" % v
    s = "%.17g" % v
    if _INT_RE.match(s):  # keep float labels recognisable as floats
        s += ".0"
    return s


def dump_svmlight(X, y, path_or_file, *, zero_based=False):
    """Write ``(X, y)`` in LIBSVM/svmlight text format.

    Zeros are not written.  Values are printed with ``'%.17g'``, which
    round-trips every float64 exactly; ``-0.0`` is a zero and reads back as
    ``0.0``.  Integer labels are written as integers and float labels always
    with a decimal point or exponent, so :func:`load_svmlight` restores the
    label dtype (int64 or float64).

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features), or a SciPy sparse matrix
        Finite feature values.
    y : array-like of shape (n_samples,)
        Finite labels; an integer (or bool) dtype is written as integers.
    path_or_file : str, os.PathLike or file object
        Destination.  A path ending in ``'.gz'`` is gzip compressed.  A file
        object may be opened in text or binary mode.
    zero_based : bool, default=False
        Write index 0 for the first feature (default: one-based, as LIBSVM).

    Raises
    ------
    ValueError
        On shape mismatch or NaN/infinite values.
    """
    if hasattr(X, "tocsr") and not isinstance(X, np.ndarray):  # SciPy sparse
        # A copy: sorting in place would reorder the caller's matrix.  scipy allows
        # duplicate entries (their sum is the value), which LIBSVM does not.
        X = X.tocsr(copy=True)
        X.sum_duplicates()  # also sorts the indices
        n_rows = X.shape[0]
        indptr, indices, data = X.indptr, X.indices, np.asarray(X.data, dtype=np.float64)

        def row_nz(r):
            sl = slice(indptr[r], indptr[r + 1])
            vals = data[sl]
            keep = vals != 0
            return indices[sl][keep], vals[keep]
        all_values = data
    else:
        Xd = np.asarray(X)
        if Xd.ndim != 2:
            raise ValueError(f"X must be 2-dimensional, got shape {Xd.shape}")
        Xd = Xd.astype(np.float64, copy=False)
        n_rows = Xd.shape[0]

        def row_nz(r):
            cols = np.flatnonzero(Xd[r])
            return cols, Xd[r, cols]
        all_values = Xd
    if not np.all(np.isfinite(all_values)):
        raise ValueError("X contains NaN or infinite values")
    y = np.asarray(y)
    if y.ndim != 1 or y.shape[0] != n_rows:
        raise ValueError(f"y must have shape ({n_rows},), got {y.shape}")
    y_is_int = y.dtype.kind in "biu"
    if y.dtype.kind == "c":  # astype(float64) would drop the imaginary part
        raise ValueError(f"y must be real; got dtype {y.dtype}")
    if not y_is_int:
        y = y.astype(np.float64)
        if not np.all(np.isfinite(y)):
            raise ValueError("y contains NaN or infinite values")
    else:
        # Python ints: int64 would wrap uint64 labels of 2^63 and above.
        y = y.tolist()
    off = 0 if zero_based else 1

    def lines():
        for r in range(n_rows):
            cols, vals = row_nz(r)
            parts = [_format_label(y[r], y_is_int)]
            parts.extend("%d:%.17g" % (c + off, v) for c, v in zip(cols.tolist(), vals.tolist()))
            yield " ".join(parts) + "\n"

    if isinstance(path_or_file, (str, bytes, os.PathLike)):
        name = os.fspath(path_or_file)
        is_gz = name.endswith(b".gz" if isinstance(name, bytes) else ".gz")
        opener = gzip.open if is_gz else open
        with opener(path_or_file, "wt", encoding="utf-8", newline="\n") as fh:
            fh.writelines(lines())
        return
    fh = path_or_file
    if isinstance(fh, io.TextIOBase):
        fh.writelines(lines())
    else:
        for line in lines():
            fh.write(line.encode("utf-8"))


# ---------------------------------------------------------------------------
# Streaming standardisation
# ---------------------------------------------------------------------------


class StreamingStandardizer:
    """Standardise a stream with statistics frozen after a warm-up prefix.

    The per-feature mean and (population, ``ddof=0``) standard deviation are
    accumulated with Chan et al.'s pairwise merge of batch moments over the
    first ``n_warmup`` examples only; afterwards they are frozen, so the
    transformation no longer drifts and examples after the warm-up are never
    used for fitting.  Features whose variance is zero (up to floating-point
    rounding) get ``scale_ = 1``.

    Parameters
    ----------
    n_warmup : int, default=1000
        Number of leading examples used to estimate the statistics.

    Attributes
    ----------
    mean_ : ndarray of shape (n_features,)
        Mean of the examples seen so far (at most ``n_warmup``).
    scale_ : ndarray of shape (n_features,)
        Standard deviation of the same examples, with zeros replaced by 1.
    var_ : ndarray of shape (n_features,)
        Population variance of the same examples (``inf`` where it exceeds
        the float64 range; ``scale_`` is computed without overflow).
    n_seen_ : int
        Number of examples that contributed to the statistics
        (``<= n_warmup``).
    n_features_in_ : int
        Number of features.
    frozen_ : bool
        True once ``n_seen_ == n_warmup``; further :meth:`partial_fit` calls
        only validate their input.
    """

    def __init__(self, n_warmup=1000):
        if isinstance(n_warmup, (bool, np.bool_)) or not isinstance(n_warmup, numbers.Integral):
            raise TypeError(f"n_warmup must be a positive integer, got {n_warmup!r}")
        if n_warmup < 1:
            raise ValueError(f"n_warmup must be positive, got {n_warmup}")
        self.n_warmup = int(n_warmup)
        self._reset()

    def _reset(self):
        self.n_seen_ = 0
        self.n_features_in_ = None
        self._mean = None
        self._m2 = None
        self._unit = None
        self.mean_ = None
        self.var_ = None
        self.scale_ = None

    @property
    def frozen_(self):
        return self.n_seen_ >= self.n_warmup

    def _validate(self, X, what):
        X = np.asarray(X, dtype=np.float64)
        if X.ndim != 2:
            raise ValueError(f"{what}: X must be 2-dimensional, got shape {X.shape}")
        if self.n_features_in_ is not None and X.shape[1] != self.n_features_in_:
            raise ValueError(f"{what}: X has {X.shape[1]} features, "
                             f"expected {self.n_features_in_}")
        if not np.all(np.isfinite(X)):
            raise ValueError(f"{what}: X contains NaN or infinite values")
        return X

    def partial_fit(self, X):
        """Update the statistics with the part of ``X`` inside the warm-up.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Finite values.  Once :attr:`frozen_`, ``X`` is only validated.

        Returns
        -------
        self
        """
        X = self._validate(X, "partial_fit")
        if self.n_features_in_ is None:
            self.n_features_in_ = X.shape[1]
            self._mean = np.zeros(X.shape[1])
            self._m2 = np.zeros(X.shape[1])
            self._unit = np.ones(X.shape[1])
        take = min(X.shape[0], self.n_warmup - self.n_seen_)
        if take <= 0:
            return self
        B = X[:take]
        # The moments are kept in units of a per-feature power of two close to
        # the largest |value| seen, so neither the sums nor the squared
        # deviations overflow (they would for |values| beyond ~1e154, giving an
        # infinite variance).  Scaling by a power of two is exact, so ordinary
        # data get the same bits as unscaled arithmetic.
        _, exponent = np.frexp(np.abs(B).max(axis=0))
        unit = np.maximum(self._unit, np.ldexp(1.0, exponent - 1))  # |B / unit| < 2
        ratio = self._unit / unit  # <= 1; earlier moments move to the new unit
        self._mean = self._mean * ratio
        self._m2 = self._m2 * (ratio * ratio)  # may underflow: then it is negligible
        self._unit = unit
        B = B / unit
        nb = take
        mb = B.mean(axis=0)
        m2b = ((B - mb) ** 2).sum(axis=0)
        na = self.n_seen_
        n = na + nb
        delta = mb - self._mean
        self._mean = self._mean + delta * (nb / n)
        self._m2 = self._m2 + m2b + delta * delta * (na * nb / n)
        self.n_seen_ = n
        self._finalize()
        return self

    def _finalize(self):
        n = self.n_seen_
        var = self._m2 / n  # in units of self._unit ** 2
        eps = np.finfo(np.float64).eps
        # Bound on the rounding error of the variance of a constant feature
        # (same criterion as scikit-learn's StandardScaler; scale-invariant).
        bound = n * eps * var + (n * self._mean * eps) ** 2
        constant = var <= bound
        # The standard deviation is at most the largest |value|, so it is
        # finite; the variance itself overflows to inf when it exceeds the
        # float64 range (standard deviations beyond ~1e154).
        scale = np.sqrt(var) * self._unit
        scale[constant] = 1.0
        self.mean_ = self._mean * self._unit
        with np.errstate(over="ignore"):
            self.var_ = var * self._unit * self._unit
        self.scale_ = scale

    def transform(self, X):
        """Return ``(X - mean_) / scale_``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples, n_features), float64

        Raises
        ------
        ValueError
            Before any example has been fitted, on a wrong number of features
            or on NaN/infinite input.
        """
        if self.n_seen_ == 0:
            raise ValueError("StreamingStandardizer is not fitted yet; "
                             "call partial_fit with at least one example first")
        X = self._validate(X, "transform")
        return (X - self.mean_) / self.scale_

    def fit_transform_stream(self, chunks):
        """Fit on the warm-up prefix of a stream and yield standardised chunks.

        The statistics are reset when iteration starts.  Chunks are buffered
        only until ``n_warmup`` examples have been seen; the buffered chunks
        are then transformed with the frozen statistics and yielded in order,
        followed by every later chunk, so no example is lost or reordered.  If
        the stream ends before the warm-up is complete, the buffered chunks are
        transformed with the statistics of everything seen.

        Parameters
        ----------
        chunks : iterable
            Chunks that are either arrays ``X`` or tuples ``(X, y, ...)``
            (e.g. the output of :func:`stream` or :func:`iter_svmlight`).

        Yields
        ------
        ndarray or tuple
            The chunk with ``X`` replaced by its standardised version (other
            tuple items are passed through unchanged).
        """
        self._reset()
        buffer = []

        def split(chunk):
            if isinstance(chunk, (tuple, list)):
                return chunk[0], tuple(chunk[1:])
            return chunk, None

        def emit(X, rest):
            Xt = self.transform(X)
            return Xt if rest is None else (Xt,) + rest

        for chunk in chunks:
            X, rest = split(chunk)
            if not self.frozen_:
                X = self._validate(X, "fit_transform_stream")
                self.partial_fit(X)
                buffer.append((X, rest))
                if not self.frozen_:
                    continue
                for Xb, rb in buffer:
                    yield emit(Xb, rb)
                buffer = []
            else:
                yield emit(X, rest)
        if buffer:
            if self.n_seen_ == 0:
                # Only empty chunks were seen: nothing to fit, pass them through.
                for Xb, rb in buffer:
                    yield Xb if rb is None else (Xb,) + rb
                return
            for Xb, rb in buffer:
                yield emit(Xb, rb)
