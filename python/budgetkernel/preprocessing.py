"""Preprocessing for streams."""

from __future__ import annotations

import numbers

import numpy as np

__all__ = ["StreamingStandardizer"]


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

    Examples
    --------
    >>> from budgetkernel import datasets
    >>> from budgetkernel.preprocessing import StreamingStandardizer
    >>> X, y = datasets.checkerboard(2000, random_state=0)
    >>> scaler = StreamingStandardizer(n_warmup=500).partial_fit(X)
    >>> scaler.n_seen_, scaler.frozen_
    (500, True)
    >>> Z = scaler.transform(X[:500])
    >>> Z.mean(axis=0).round(6) + 0.0, Z.std(axis=0).round(6)
    (array([0., 0.]), array([1., 1.]))

    On a stream, the chunks come out standardised and in order:

    >>> chunks = datasets.stream("checkerboard", 2000, chunk_size=400, random_state=0)
    >>> [len(y) for X, y in StreamingStandardizer(n_warmup=500).fit_transform_stream(chunks)]
    [400, 400, 400, 400, 400]
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
        n_warmup_rows = min(X.shape[0], self.n_warmup - self.n_seen_)
        if n_warmup_rows <= 0:
            return self
        B = X[:n_warmup_rows]
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
        nb = n_warmup_rows
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
