"""What every regressor of the registry (tests/conftest.py) shares: bad input is a clear
ValueError that learns nothing, and Ctrl-C stops a chunk at a row, keeping exactly the rows
learned. (Each regressor's own oracles and parameters: test_regression.py, test_pa_regression.py,
test_kaf.py.)"""

import threading

import numpy as np
import pytest

from conftest import REGRESSORS, cases, interrupted


def sine(n, d=2, seed=0, offset=3.0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-2, 2, size=(n, d))
    return X, offset + np.sin(2 * X[:, 0]) + 0.1 * rng.standard_normal(n)


@pytest.mark.parametrize("case", REGRESSORS, ids=repr)
def test_bad_input_raises_a_clear_value_error(case):
    X, y = sine(50, seed=9)
    reg = case.make(budget=10)
    bad_y = y.copy()
    bad_y[3] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        reg.fit(X, bad_y)
    bad_X = X.copy()
    bad_X[4, 1] = np.inf
    with pytest.raises(ValueError, match="infinity"):
        reg.fit(bad_X, y)
    with pytest.raises(ValueError, match="real numbers"):
        reg.fit(X, np.array(["a"] * 50, dtype=object))
    with pytest.raises(ValueError):
        reg.fit(X, y[:-1])
    reg.fit(X, y)
    with pytest.raises(ValueError, match="1e150"):
        reg.partial_fit(X[:2], np.array([0.0, 1e200]))
    with pytest.raises(ValueError, match="NaN"):
        reg.partial_fit(X[:2], np.array([0.0, np.nan]))
    with pytest.raises(ValueError, match="features"):
        reg.predict(X[:, :1])
    with pytest.raises(ValueError, match="real number"):
        reg.learn_one(X[0], "3")
    assert reg.n_seen_ == 50  # nothing learned from a rejected call


# The online regressors without a budget, on a kernel narrow enough that each row adds an SV: a
# chunk of 200,000 rows takes long enough to be interrupted part-way.
SLOW = dict(budget=None, gamma=4.0, lam=1e-4, epsilon=0.0, eta=0.3, random_state=0)


@pytest.mark.skipif(threading.current_thread() is not threading.main_thread(), reason="signals: main thread only")
@pytest.mark.parametrize("case", cases("BudgetedSGDRegressor", "BudgetedPARegressor", "KLMSRegressor"), ids=repr)
def test_ctrl_c_stops_partial_fit_and_keeps_the_rows_learned(case):
    X, y = sine(200_000, seed=10)
    est = case.make(**SLOW).partial_fit(X[:10], y[:10])
    interrupted(lambda: est.partial_fit(X[10:], y[10:]))
    learned = est.n_seen_
    assert 10 < learned < 200_000
    prefix = case.make(**SLOW).partial_fit(X[:10], y[:10]).partial_fit(X[10:learned], y[10:learned])
    np.testing.assert_array_equal(est.predict(X[:500]), prefix.predict(X[:500]))
