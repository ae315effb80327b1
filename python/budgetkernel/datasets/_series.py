"""Time series for one-step prediction: the Mackey-Glass series and time-delay embedding.

The kernel adaptive filtering literature (Liu, Principe & Haykin, *Kernel Adaptive
Filtering*, 2010) benchmarks its filters on the Mackey-Glass series with delay 30, predicted
one step ahead from the last few values.  :func:`mackey_glass` integrates the series and
:func:`embed_series` turns any 1-D series into the ``(X, y)`` pairs a regressor learns from.
"""

from __future__ import annotations

import numbers

import numpy as np

from ._sampling import _as_seed_sequence, _check_n_samples

# Runge-Kutta step (time units). Part of the reproducibility contract: changing it changes
# every series. tau, delta_t and transient are whole multiples of it.
_H = 0.1
# dx/dt = _A x(t - tau) / (1 + x(t - tau)^10) - _B x(t): the constants of the KAF literature.
_A, _B = 0.2, 0.1


def _check_positive_int(value, name, minimum):
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an int, got {value!r}")
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")
    return int(value)


def _steps(value, name, *, allow_zero=False):
    """The number of Runge-Kutta steps in ``value`` time units (a whole multiple of 0.1)."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a number, got {value!r}")
    value = float(value)
    k = round(value / _H) if np.isfinite(value) else -1
    if k < (0 if allow_zero else 1) or abs(k * _H - value) > 1e-9 * max(1.0, abs(value)):
        kind = "non-negative" if allow_zero else "positive"
        raise ValueError(f"{name} must be a {kind} multiple of the integration step 0.1, got {value}")
    return int(k)


def _pow10(x):
    """x^10 as ((x^2)^2)^2 x^2: four products, each rounded once by IEEE 754.

    Not ``x ** 10``: numpy's power is SIMD-dispatched (a different vector library on an
    AVX-512 CPU) and libm's differs between C libraries, so its last bit depends on the
    machine, and in a chaotic series one last-bit difference grows into a different series.
    """
    x2 = x * x
    x4 = x2 * x2
    return (x4 * x4) * x2


def _forcing(xd):
    """The delayed term of the equation, 0.2 x(t - tau) / (1 + x(t - tau)^10)."""
    return _A * xd / (1.0 + _pow10(xd))


def _integrate(x0, lag, n_steps):
    """x at the Runge-Kutta steps 0 .. n_steps, the history x = x0 on [-tau, 0].

    Returns an array of ``lag + n_steps + 1`` values; index ``i`` holds the step ``i - lag``.
    Classical RK4 with step h; the delayed value at a half step is the mean of its two grid
    neighbours.  The undelayed part of the equation is linear, so one step is the affine map
    ``x_{n+1} = a x_n + b_n`` with ``a`` the RK4 polynomial of ``-0.1 h`` and ``b_n`` from the
    delayed values, which are known a whole delay ahead: each block of ``lag`` steps is one
    vectorised linear recurrence, ``x_{s+j} = a^j (x_s + sum_{k<j} b_k / a^(k+1))``.

    Only + - * / are used, each rounded once by IEEE 754, and every sum and product is
    sequential (``cumsum``, ``multiply.accumulate``), so the result has the same bits on every
    CPU: no power, no transcendental function, no reduction whose order numpy may choose.
    """
    h, c = _H, _B
    z = -c * h
    a = 1.0 + z + z * z / 2.0 + z * z * z / 6.0 + z * z * z * z / 24.0
    x = np.empty(lag + n_steps + 1)
    x[: lag + 1] = x0
    powers = np.multiply.accumulate(np.full(lag, a))  # a^j, j = 1 .. lag, one product at a time
    for start in range(0, n_steps, lag):
        m = min(lag, n_steps - start)
        d0 = x[start : start + m]  # x(t_n - tau) for n = start .. start + m - 1
        d1 = x[start + 1 : start + m + 1]  # x(t_n + h - tau)
        g0, g1, gm = _forcing(d0), _forcing(d1), _forcing(0.5 * (d0 + d1))
        # RK4 of dx/dt = g(t) - c x from x_n = 0: the part b_n of x_{n+1} that does not scale with x_n.
        k1 = g0
        k2 = gm - c * (h / 2.0) * k1
        k3 = gm - c * (h / 2.0) * k2
        k4 = g1 - c * h * k3
        b = (h / 6.0) * (k1 + 2.0 * k2 + 2.0 * k3 + k4)
        p = powers[:m]
        x[lag + start + 1 : lag + start + m + 1] = p * (x[lag + start] + np.cumsum(b / p))
    return x


def mackey_glass(n_samples, *, tau=30, delta_t=6.0, transient=1000.0, x0=1.2, noise=0.0, random_state=None):
    """Sample the Mackey-Glass chaotic time series.

    The series solves the delay differential equation

        dx/dt = 0.2 x(t - tau) / (1 + x(t - tau)^10) - 0.1 x(t)

    from the constant history ``x(t) = x0`` for ``t <= 0``.  It is integrated by the classical
    fourth-order Runge-Kutta method with step 0.1 (the delayed value at a half step is the
    mean of its two grid neighbours), and sampled every ``delta_t`` time units from
    ``t = transient`` on: ``x(transient), x(transient + delta_t), ...``.  With ``tau = 30``
    (MG30) and ``delta_t = 6`` this is the series of the kernel adaptive filtering literature
    (Liu, Pokharel & Principe, 2008; Liu, Principe & Haykin, 2010), whose attractor stays
    within about [0.2, 1.4]; ``tau = 17`` gives the milder chaos of MG17.

    Parameters
    ----------
    n_samples : int
        Number of values.
    tau : float, default=30
        The delay, a positive multiple of 0.1.
    delta_t : float, default=6.0
        The sampling period, a positive multiple of 0.1.
    transient : float, default=1000.0
        Time integrated and dropped before the first sample (the start-up from the constant
        history), a non-negative multiple of 0.1.
    x0 : float or None, default=1.2
        The constant initial history, > 0.  ``None`` draws it uniformly from [0.5, 1.5) with
        ``random_state``: different seeds then give different stretches of the attractor.
    noise : float, default=0.0
        Standard deviation of independent Gaussian noise added to every sample (observation
        noise; the dynamics stay noise-free).
    random_state : None, int, numpy.random.SeedSequence or numpy.random.Generator
        Seed of ``x0 = None`` and of the noise (see :mod:`budgetkernel.datasets`); unused,
        and the series fully determined by the other parameters, when ``x0`` is a number and
        ``noise = 0``.

    Returns
    -------
    series : ndarray of shape (n_samples,), float64

    See Also
    --------
    embed_series : the ``(X, y)`` pairs of one-step prediction from a series.

    Examples
    --------
    >>> from budgetkernel.datasets import mackey_glass
    >>> x = mackey_glass(2000)
    >>> x.shape, x.dtype
    ((2000,), dtype('float64'))
    >>> bool(0.2 < x.min() and x.max() < 1.4)
    True
    >>> noisy = mackey_glass(2000, noise=0.04, random_state=0)
    >>> bool(abs(float((noisy - x).std()) - 0.04) < 0.005)
    True
    """
    n_samples = _check_n_samples(n_samples)
    lag = _steps(tau, "tau")
    stride = _steps(delta_t, "delta_t")
    skip = _steps(transient, "transient", allow_zero=True)
    if x0 is not None:
        if isinstance(x0, (bool, np.bool_)) or not isinstance(x0, numbers.Real):
            raise TypeError(f"x0 must be a positive number or None, got {x0!r}")
        if not (np.isfinite(x0) and x0 > 0):
            raise ValueError(f"x0 must be a positive finite number or None, got {x0}")
    if isinstance(noise, (bool, np.bool_)) or not isinstance(noise, numbers.Real):
        raise TypeError(f"noise must be a non-negative number, got {noise!r}")
    if not (np.isfinite(noise) and noise >= 0):
        raise ValueError(f"noise must be a non-negative finite number, got {noise}")
    rng = None
    if x0 is None or noise > 0:
        rng = np.random.default_rng(_as_seed_sequence(random_state))
    # 0.5 + U[0, 1): the bits of rng.uniform(0.5, 1.5), without its `low + range * u`, which a
    # compiler may contract into one fused multiply-add on some platforms.
    start = 0.5 + float(rng.random()) if x0 is None else float(x0)
    if n_samples == 0:
        return np.empty(0)
    x = _integrate(start, lag, skip + (n_samples - 1) * stride)
    series = x[lag + skip + stride * np.arange(n_samples)]
    if noise > 0:
        series = series + noise * rng.standard_normal(n_samples)
    return series


def embed_series(series, order, horizon=1):
    """Turn a 1-D series into the pairs of a ``horizon``-step-ahead prediction.

    Row ``i`` of ``X`` holds the ``order`` consecutive values ending at time
    ``t = i + order - 1``, oldest first: ``(x[t - order + 1], ..., x[t])``, and ``y[i]`` is
    ``x[t + horizon]`` (a time-delay embedding).  A series of ``n`` values gives
    ``n - order - horizon + 1`` rows, built without a loop over them.

    Parameters
    ----------
    series : array-like of shape (n,)
        The series.
    order : int
        The embedding dimension ``p`` (the number of past values per row), >= 1.
    horizon : int, default=1
        How many steps ahead the target lies, >= 1.

    Returns
    -------
    X : ndarray of shape (n - order - horizon + 1, order), float64, C-contiguous
    y : ndarray of shape (n - order - horizon + 1,), float64

    Raises
    ------
    ValueError
        If ``series`` is not one-dimensional or has fewer than ``order + horizon`` values.

    Examples
    --------
    >>> import numpy as np
    >>> from budgetkernel.datasets import embed_series
    >>> X, y = embed_series(np.arange(6.0), order=3)
    >>> X
    array([[0., 1., 2.],
           [1., 2., 3.],
           [2., 3., 4.]])
    >>> y
    array([3., 4., 5.])
    >>> X, y = embed_series(np.arange(6.0), order=2, horizon=3)
    >>> X.tolist(), y.tolist()
    ([[0.0, 1.0], [1.0, 2.0]], [4.0, 5.0])
    """
    x = np.asarray(series, dtype=np.float64)
    if x.ndim != 1:
        raise ValueError(f"series must be one-dimensional, got an array of shape {x.shape}")
    order = _check_positive_int(order, "order", 1)
    horizon = _check_positive_int(horizon, "horizon", 1)
    rows = x.shape[0] - order - horizon + 1
    if rows < 1:
        raise ValueError(f"a series of {x.shape[0]} values is too short for order={order} and horizon={horizon} "
                         f"(it needs at least order + horizon = {order + horizon} values)")
    X = np.lib.stride_tricks.sliding_window_view(x[: rows + order - 1], order)
    y = x[order - 1 + horizon : order - 1 + horizon + rows]
    return np.ascontiguousarray(X), y.copy()
