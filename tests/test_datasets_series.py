"""Tests for budgetkernel.datasets.mackey_glass and embed_series (time series for one-step prediction)."""

import numpy as np
import pytest

from budgetkernel import datasets
from budgetkernel.datasets import embed_series, mackey_glass


def _rk4_loop(x0, tau, h, n_steps):
    """Plain step-by-step RK4 of the Mackey-Glass equation, written independently of the module:
    the delayed value at a half step is the mean of its grid neighbours; x = x0 on [-tau, 0]."""
    lag = round(tau / h)
    x = [x0] * (lag + 1)  # index i <-> step i - lag

    def f(xd, xn):
        return 0.2 * xd / (1.0 + xd ** 10) - 0.1 * xn

    for n in range(n_steps):
        xn = x[n + lag]
        d0, d1 = x[n], x[n + 1]
        dm = 0.5 * (d0 + d1)
        k1 = f(d0, xn)
        k2 = f(dm, xn + 0.5 * h * k1)
        k3 = f(dm, xn + 0.5 * h * k2)
        k4 = f(d1, xn + h * k3)
        x.append(xn + h / 6.0 * (k1 + 2 * k2 + 2 * k3 + k4))
    return np.array(x[lag:])  # steps 0 .. n_steps


def test_exports():
    assert "mackey_glass" in datasets.__all__ and "embed_series" in datasets.__all__


def test_mackey_glass_matches_an_independent_step_by_step_integration():
    x = mackey_glass(300, tau=30, delta_t=1.0, transient=50.0)
    ref = _rk4_loop(1.2, 30.0, 0.1, 500 + 299 * 10)
    np.testing.assert_allclose(x, ref[500::10], rtol=0, atol=1e-11)
    y = mackey_glass(50, tau=17, delta_t=0.5, transient=0.0, x0=0.9)
    np.testing.assert_allclose(y, _rk4_loop(0.9, 17.0, 0.1, 49 * 5)[::5], rtol=0, atol=1e-12)


def test_mackey_glass_solves_the_delay_equation():
    # Sampled at the integration step: central differences against the right-hand side.
    x = mackey_glass(3000, tau=30, delta_t=0.1, transient=500.0)
    lag, h = 300, 0.1
    t = np.arange(lag, x.size - 1)
    dxdt = (x[t + 1] - x[t - 1]) / (2 * h)
    rhs = 0.2 * x[t - lag] / (1 + x[t - lag] ** 10) - 0.1 * x[t]
    assert np.max(np.abs(dxdt - rhs)) < 1e-3
    assert np.max(np.abs(dxdt)) > 0.05  # not a flat series


def test_mackey_glass_shape_range_and_chaos():
    x = mackey_glass(20000)
    assert x.shape == (20000,) and x.dtype == np.float64
    # MG30's attractor (the KAF literature's series) stays in about [0.2, 1.4].
    assert 0.15 < x.min() < 0.3 and 1.3 < x.max() < 1.45
    assert np.all(np.isfinite(x))
    # Chaotic, not periodic: no lag up to 500 samples repeats the series.
    for lag in range(1, 500):
        assert np.max(np.abs(x[lag:] - x[:-lag])) > 0.1
    assert mackey_glass(0).shape == (0,)


def test_mackey_glass_is_deterministic_given_random_state():
    a = mackey_glass(500, noise=0.04, random_state=3)
    b = mackey_glass(500, noise=0.04, random_state=3)
    c = mackey_glass(500, noise=0.04, random_state=4)
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)
    clean = mackey_glass(500)
    np.testing.assert_array_equal(mackey_glass(500, random_state=9), clean)  # nothing random then
    assert abs(np.std(a - clean) - 0.04) < 0.006
    r1 = mackey_glass(200, x0=None, random_state=1)
    np.testing.assert_array_equal(r1, mackey_glass(200, x0=None, random_state=1))
    assert not np.array_equal(r1, mackey_glass(200, x0=None, random_state=2))
    # A prefix of a longer series.
    np.testing.assert_array_equal(mackey_glass(100), clean[:100])


@pytest.mark.parametrize("kwargs, exc", [
    ({"tau": 0}, ValueError),
    ({"tau": 30.05}, ValueError),
    ({"delta_t": -1.0}, ValueError),
    ({"delta_t": float("nan")}, ValueError),
    ({"transient": -0.1}, ValueError),
    ({"x0": 0.0}, ValueError),
    ({"x0": "1"}, TypeError),
    ({"noise": -0.1}, ValueError),
    ({"tau": True}, TypeError),
])
def test_mackey_glass_rejects_bad_parameters(kwargs, exc):
    with pytest.raises(exc):
        mackey_glass(10, **kwargs)
    with pytest.raises(ValueError):
        mackey_glass(-1)


def test_embed_series_rows_and_targets_follow_the_indices():
    x = np.random.default_rng(0).standard_normal(50)
    for order in (1, 3, 7):
        for horizon in (1, 2, 5):
            X, y = embed_series(x, order, horizon)
            n = 50 - order - horizon + 1
            assert X.shape == (n, order) and y.shape == (n,)
            assert X.flags.c_contiguous and X.dtype == np.float64
            for i in range(n):
                t = i + order - 1
                np.testing.assert_array_equal(X[i], x[t - order + 1 : t + 1])
                assert y[i] == x[t + horizon]
    X, y = embed_series(x, 3)
    X[0, 0] = 99.0
    y[0] = 99.0
    assert x[0] != 99.0 and x[3] != 99.0  # copies, not views of the series


def test_embed_series_accepts_lists_and_checks_its_input():
    X, y = embed_series([1, 2, 3], 2)
    assert X.tolist() == [[1.0, 2.0]] and y.tolist() == [3.0]
    with pytest.raises(ValueError, match="too short"):
        embed_series([1.0, 2.0], 2)
    with pytest.raises(ValueError, match="one-dimensional"):
        embed_series(np.zeros((4, 2)), 1)
    with pytest.raises(ValueError):
        embed_series(np.arange(10.0), 0)
    with pytest.raises(ValueError):
        embed_series(np.arange(10.0), 2, horizon=0)
    with pytest.raises(TypeError):
        embed_series(np.arange(10.0), 2.0)


def test_one_step_prediction_of_mackey_glass_is_learnable():
    # The embedded series is a smooth function of its past: a linear fit already explains most of it.
    X, y = embed_series(mackey_glass(3000), order=7)
    w, *_ = np.linalg.lstsq(np.c_[X, np.ones(len(X))], y, rcond=None)
    resid = y - np.c_[X, np.ones(len(X))] @ w
    assert resid.var() < 0.2 * y.var()
