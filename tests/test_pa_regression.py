"""BudgetedPARegressor (learners/pa_regressor.hpp): the closed forms of PA, PA-I and PA-II
regression against a NumPy re-implementation, the unbudgeted reduction, every budgeted step
(BPA-S, BPA-NN, BPA-P) against SciPy's solution of the same constrained problem, SPA's sampling
with probability 1, the averaged regressor, persistence and resuming, Ctrl-C, bad input and
scikit-learn's estimator checks."""

import pickle

import numpy as np
import pytest
from scipy.optimize import minimize

import budgetkernel
from budgetkernel import BudgetedPARegressor
from budgetkernel._native import core

VARIANTS = ["simple", "nn", "project"]


def sine(n, d=2, seed=0, offset=1.0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-2, 2, size=(n, d))
    return X, offset + np.sin(2 * X[:, 0]) + 0.1 * rng.standard_normal(n)


def rbf(gamma):
    return lambda P, Q: np.exp(-gamma * ((P[:, None, :] - Q[None, :, :]) ** 2).sum(-1))


def pa_oracle(X, y, *, pa_type, C, epsilon, gamma, fit_intercept):
    """Unbudgeted kernel PA regression written out plainly (Crammer et al. 2006, section 5)."""
    kern = rbf(gamma)
    S, a, b, preds = np.zeros((0, X.shape[1])), np.zeros(0), 0.0, []
    for t, (x, yt) in enumerate(zip(X, y), 1):
        f = float(a @ kern(S, x[None])[:, 0]) if len(a) else 0.0
        preds.append(b + f)
        r = yt - b - f
        loss = abs(r) - epsilon
        if loss > 0:
            q = 1.0  # k(x, x) of the RBF kernel
            tau = [loss / q, min(C, loss / q), loss / (q + 1 / (2 * C))][pa_type]
            S, a = np.vstack([S, x]), np.append(a, np.sign(r) * tau)
        if fit_intercept:
            b += (yt - b) / t
    return np.array(preds), S, a


@pytest.mark.parametrize("pa_type", [0, 1, 2])
@pytest.mark.parametrize("fit_intercept", [False, True])
def test_unbudgeted_steps_are_the_papers_closed_forms(pa_type, fit_intercept):
    X, y = sine(300, seed=1)
    kw = dict(pa_type=pa_type, C=0.3, epsilon=0.1, fit_intercept=fit_intercept)
    model = core.PARegressor(2, budget=0, gamma=0.8, **kw)
    preds = model.partial_fit(X, y, record=True)
    want, S, a = pa_oracle(X, y, gamma=0.8, **kw)
    np.testing.assert_allclose(preds, want, rtol=0, atol=1e-10)
    np.testing.assert_array_equal(model.support_vectors, S)
    np.testing.assert_allclose(model.coefficients[:, 0], a, rtol=0, atol=1e-10)
    est = BudgetedPARegressor(budget=None, gamma=0.8, **kw).fit(X, y)
    np.testing.assert_array_equal(est.predict(X), model.predict(X))


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("averaged", [False, True])
def test_budget_at_least_the_stream_is_unbudgeted_bit_for_bit(variant, averaged):
    X, y = sine(200, d=3, seed=2)
    kw = dict(variant=variant, averaged=averaged, pa_type=2, C=0.5, gamma=0.7)
    a = BudgetedPARegressor(budget=None, **kw).fit(X, y)
    b = BudgetedPARegressor(budget=200, **kw).fit(X, y)
    np.testing.assert_array_equal(a.predict(X), b.predict(X))
    np.testing.assert_array_equal(a.dual_coef_, b.dual_coef_)
    assert a.online_mse_ == b.online_mse_
    assert b._model.counters["maintenance_steps"] == 0


def slsqp_objective(K, xs, kS_r, k_rr, kS_t, k_rt, a_r, resid, eps, pa_type, C):
    """min over beta (on S) and xi of 1/2 ||Delta||^2 + penalty(xi), Delta = -a_r phi(x_r) +
    sum_S beta_i phi(x_i), s.t. |resid - Delta(x_t)| <= eps + xi, xi >= 0 (PA: xi = 0)."""
    m = len(kS_t)
    if m == 0:  # nothing to move: Delta = -a_r phi(x_r)
        xi = max(0.0, abs(resid + a_r * k_rt) - eps)
        if pa_type == 0 and xi > 1e-12:
            return np.inf
        return 0.5 * a_r * a_r * k_rr + [0.0, C * xi, C * xi * xi][pa_type]

    def delta_t(z):
        return -a_r * k_rt + z[:m] @ kS_t

    def obj(z):
        beta, xi = z[:m], z[m]
        norm2 = a_r * a_r * k_rr - 2 * a_r * beta @ kS_r + beta @ K @ beta
        return 0.5 * norm2 + [0.0, C * xi, C * xi * xi][pa_type]

    cons = [
        {"type": "ineq", "fun": lambda z: eps + z[m] - (resid - delta_t(z))},
        {"type": "ineq", "fun": lambda z: eps + z[m] + (resid - delta_t(z))},
        {"type": "ineq", "fun": lambda z: z[m]},
    ]
    if pa_type == 0:
        cons.append({"type": "eq", "fun": lambda z: z[m]})
    z0 = np.zeros(m + 1)
    z0[m] = abs(resid) + 1.0
    res = minimize(obj, z0, constraints=cons, method="SLSQP", options={"ftol": 1e-14, "maxiter": 500})
    return res.fun


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("pa_type", [0, 1, 2])
def test_every_budgeted_step_against_scipys_constrained_solution(variant, pa_type):
    # 30 examples past a budget of 6: 18-24 maintenance steps of 7 candidates each, with both
    # outcomes (an SV removed, the new example not stored) in every configuration but PA-S 0
    X, y = sine(30, seed=3)
    gamma, eps, C, B = 0.7, 0.1, 0.5, 6
    kern = rbf(gamma)
    model = core.PARegressor(2, budget=B, variant=variant, pa_type=pa_type, C=C, epsilon=eps, gamma=gamma)
    checked = 0
    for x, yt in zip(X, y):
        S, a = model.support_vectors, model.coefficients[:, 0]
        b, f = model.intercept, model.predict(x[None])[0] - model.intercept
        steps = model.counters["maintenance_steps"]
        model.learn_one(x, yt)
        if model.counters["maintenance_steps"] == steps:
            continue
        got = np.array(model.last_objectives)
        n = len(a)
        assert len(got) == n + 1
        d2 = ((S[:, None, :] - S[None, :, :]) ** 2).sum(-1) + np.diag(np.full(n, np.inf))
        for c in range(n + 1):  # SV c removed, or (c = n) the new example not stored
            if variant == "project":
                idx = [j for j in range(n) if j != c]
            elif variant == "nn":
                idx = [int(np.argmin(d2[c]))] if c < n else [int(np.argmin(((S - x) ** 2).sum(1)))]
            else:
                idx = []
            Z = np.vstack([S[idx], x[None]]) if c < n else S[idx]
            xr = S[c] if c < n else x
            a_r = a[c] if c < n else 0.0
            want = slsqp_objective(
                kern(Z, Z), Z, kern(Z, xr[None])[:, 0], 1.0, kern(Z, x[None])[:, 0],
                float(kern(xr[None], x[None])[0, 0]), a_r, yt - b - f, eps, pa_type, C,
            )
            if np.isinf(want) or np.isinf(got[c]):
                assert np.isinf(want) == np.isinf(got[c]), (c, want, got[c])
            else:
                assert got[c] == pytest.approx(want, rel=1e-5, abs=1e-8), (c, n)
        assert model.last_removed == int(np.argmin(got)) or np.isclose(got[model.last_removed], got.min())
        checked += 1
    assert checked >= 10
    assert model.n_support <= B


@pytest.mark.parametrize("pa_type", [0, 1, 2])
def test_sampling_with_probability_one_is_the_unsampled_learner(pa_type):
    X, y = sine(300, seed=4)
    kw = dict(budget=20, variant="nn", pa_type=pa_type, gamma=0.7)
    plain = BudgetedPARegressor(**kw).fit(X, y)
    # rho = min(alpha, loss) / beta = 1 for every loss >= alpha
    sampled = BudgetedPARegressor(sampling=True, alpha=1e-300, beta=1e-300, random_state=3, **kw).fit(X, y)
    np.testing.assert_array_equal(plain.predict(X), sampled.predict(X))
    assert plain.online_mse_ == sampled.online_mse_
    sparse = BudgetedPARegressor(budget=None, sampling=True, beta=5.0, random_state=0, gamma=0.7).fit(X, y)
    dense = BudgetedPARegressor(budget=None, gamma=0.7).fit(X, y)
    assert sparse.n_support_ < dense.n_support_ / 2
    assert 0 < sparse.expected_n_support_ < dense.n_support_


@pytest.mark.parametrize("budget", [None, 8])
def test_averaging_is_the_mean_of_the_iterates_predictions(budget):
    X, y = sine(120, seed=5)
    X_test, _ = sine(40, seed=6)
    kw = dict(budget=budget, variant="project", gamma=0.7, C=0.5)
    plain, avg = BudgetedPARegressor(**kw), BudgetedPARegressor(averaged=True, **kw)
    iterates = [np.zeros(len(X_test))]  # f_1 = 0, b_1 = 0
    for x, t in zip(X, y):
        plain.learn_one(x, t)
        avg.learn_one(x, t)
        iterates.append(plain.predict(X_test))
    np.testing.assert_allclose(avg.predict(X_test), np.mean(iterates, axis=0), rtol=0, atol=1e-10)
    np.testing.assert_array_equal(avg.dual_coef_, plain.dual_coef_)  # averaging changes predictions only


@pytest.mark.parametrize("variant,sampling,averaged", [("simple", False, False), ("nn", True, True), ("project", False, True)])
def test_save_load_and_pickle_resume_bit_identically(variant, sampling, averaged, tmp_path):
    X, y = sine(1200, d=3, seed=7)
    kw = dict(budget=30, variant=variant, sampling=sampling, averaged=averaged, beta=2.0, gamma=1.0, random_state=5)
    full = BudgetedPARegressor(**kw).partial_fit(X[:600], y[:600]).partial_fit(X[600:], y[600:])
    half = BudgetedPARegressor(**kw).partial_fit(X[:600], y[:600])
    half.save(tmp_path / "m.bkm")
    for restored in (pickle.loads(pickle.dumps(half)), budgetkernel.load(tmp_path / "m.bkm")):
        assert type(restored) is BudgetedPARegressor and restored.get_params() == half.get_params()
        np.testing.assert_array_equal(restored.predict(X), half.predict(X))
        restored.partial_fit(X[600:], y[600:])
        np.testing.assert_array_equal(restored.predict(X), full.predict(X))
        restored._model.metadata = full._model.metadata = b""
        assert restored._model.to_bytes() == full._model.to_bytes()


def test_a_file_written_without_metadata_loads_as_the_estimator(tmp_path):
    X, y = sine(300, seed=8)
    model = core.PARegressor(2, budget=20, variant="project", pa_type=2, C=0.3, epsilon=0.2, gamma=0.5, seed=9)
    model.partial_fit(X, y)
    (tmp_path / "c.bkm").write_bytes(model.to_bytes())
    est = budgetkernel.load(tmp_path / "c.bkm")
    assert isinstance(est, BudgetedPARegressor)
    assert (est.budget, est.variant, est.pa_type, est.C, est.epsilon, est.gamma_) == (20, "project", 2, 0.3, 0.2, 0.5)
    np.testing.assert_array_equal(est.predict(X), model.predict(X))
    info = core.load_model_info(model.to_bytes())
    assert (info["learner"], info["n_outputs"], info["n_support"]) == ("pa_regressor", 1, 20)


def test_bad_parameters_raise_a_clear_error():
    # (bad input, as for every regressor: tests/test_regressors.py)
    X, y = sine(50, seed=9)
    for params, word in [
        (dict(variant="random"), "variant"),
        (dict(pa_type=3), "pa_type"),
        (dict(C=0.0), "C"),
        (dict(epsilon=-1.0), "epsilon"),
        (dict(budget=0), "budget"),
        (dict(sampling=True, alpha=2.0, beta=1.0), "beta"),
        (dict(alpha=0.0), "alpha"),
        (dict(sampling="yes"), "sampling"),
        (dict(averaged=1.5), "averaged"),
    ]:
        with pytest.raises(ValueError, match=word):
            BudgetedPARegressor(**params).fit(X, y)

