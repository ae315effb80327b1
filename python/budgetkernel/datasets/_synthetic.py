"""Synthetic streams of the budgeted-kernel literature: the generators and their seeding.

See :mod:`budgetkernel.datasets` for the reproducibility contract these functions keep.
"""

from __future__ import annotations


import numpy as np

from ._classes import _resolve_classes
from ._sampling import _as_seed_sequence, _check_n_samples, _child, _draw, _iter_blocks

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
    if name == "gaussian_classes":
        return _resolve_classes(kwargs)
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
STREAM_NAMES = ("checkerboard", "noisy_checkerboard", "two_gaussians", "waveform", "gaussian_classes")


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

    Examples
    --------
    >>> from budgetkernel.datasets import checkerboard
    >>> X, y = checkerboard(1000, random_state=0)
    >>> X.shape, sorted(set(y.tolist()))
    ((1000, 2), [-1, 1])
    >>> bool(X.min() >= 0.0 and X.max() < 4.0)
    True

    The same seed with label noise gives the same inputs:

    >>> X_noisy, y_noisy = checkerboard(1000, noise=0.1, random_state=0)
    >>> bool((X_noisy == X).all())
    True
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

    Examples
    --------
    A noisy training sample and the clean labels of the same inputs:

    >>> from budgetkernel.datasets import noisy_checkerboard
    >>> X, y = noisy_checkerboard(1000, random_state=0)
    >>> X_clean, y_clean = noisy_checkerboard(1000, random_state=0, clean=True)
    >>> bool((X == X_clean).all())
    True
    >>> round(float((y != y_clean).mean()), 2)
    0.16
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

    Examples
    --------
    >>> from budgetkernel.datasets import two_gaussians
    >>> X, y = two_gaussians(1000, random_state=0)
    >>> X.shape, round(float((y == 1).mean()), 2)
    ((1000, 2), 0.41)
    """
    n_samples = _check_n_samples(n_samples)
    return _draw(_block_two_gaussians, {}, _as_seed_sequence(random_state), n_samples)


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

    Examples
    --------
    >>> from budgetkernel.datasets import waveform
    >>> X, y = waveform(1000, random_state=0)
    >>> X.shape, sorted(set(y.tolist()))
    ((1000, 21), [0, 1, 2])
    """
    n_samples = _check_n_samples(n_samples)
    return _draw(_block_waveform, {}, _as_seed_sequence(random_state), n_samples)


# ---------------------------------------------------------------------------
# Streams
# ---------------------------------------------------------------------------


def stream(name, n_samples=None, *, chunk_size=10_000, random_state=None, **kwargs):
    """Stream a synthetic data set as ``(X, y)`` chunks.

    Parameters
    ----------
    name : {'checkerboard', 'noisy_checkerboard', 'two_gaussians', 'waveform', 'gaussian_classes'}
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
        ``'noisy_checkerboard'``, the keywords of :func:`gaussian_classes` for
        ``'gaussian_classes'``.

    Returns
    -------
    iterator of (X, y)
        ``X`` has shape ``(m, n_features)`` (float64) and ``y`` shape ``(m,)``
        (int64).  Arguments are validated, and a ``Generator`` seed consumed,
        when ``stream`` is called, not when iteration starts.

    Examples
    --------
    >>> from budgetkernel.datasets import checkerboard, stream
    >>> [len(y) for X, y in stream("checkerboard", 2500, chunk_size=1000, random_state=0)]
    [1000, 1000, 500]

    Without ``n_samples`` the stream never ends; its start is the sized draw with the same
    seed:

    >>> X, y = next(stream("checkerboard", chunk_size=100, random_state=0))
    >>> bool((X == checkerboard(100, random_state=0)[0]).all())
    True
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
    name : {'checkerboard', 'noisy_checkerboard', 'two_gaussians', 'waveform', 'gaussian_classes'}
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

    Examples
    --------
    >>> from budgetkernel.datasets import make_stream_and_test
    >>> train, (X_test, y_test) = make_stream_and_test(
    ...     "noisy_checkerboard", 3000, 500, random_state=0, chunk_size=1000)
    >>> [len(y) for X, y in train], X_test.shape
    ([1000, 1000, 1000], (500, 2))
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
