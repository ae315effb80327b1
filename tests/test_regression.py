"""BudgetedSGDRegressor and the regressor base (_regressor.py, regressor_base.hpp): the update
against a NumPy re-implementation of the paper's step, the unbudgeted reduction, persistence
and resuming, Ctrl-C, bad input and scikit-learn's estimator checks."""

import pickle

import numpy as np
import pytest

import budgetkernel
from budgetkernel import BudgetedSGDRegressor
from budgetkernel._native import core


def sine(n, d=2, seed=0, offset=3.0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-2, 2, size=(n, d))
    return X, offset + np.sin(2 * X[:, 0]) + 0.1 * rng.standard_normal(n)


def loss_and_slope(loss, eps, r):
    """l(r) and its slope dl/dr (= -dl/df), as the paper's losses define them."""
    a = abs(r)
    if loss == "epsilon_insensitive":
        return max(0.0, a - eps), (np.sign(r) if a > eps else 0.0)
    if loss == "squared":
        return 0.5 * r * r, r
    return (0.5 * r * r, r) if a <= eps else (eps * (a - 0.5 * eps), eps * np.sign(r))


def oracle(X, y, *, loss, epsilon, lam, gamma, fit_intercept, budget=None, t0=0.0):
    """Kernel Pegasos for regression written out plainly (no scale trick, no incremental norm):
    predict b + f(x_t); w <- (1 - 1/t) w + slope / (lam t) phi(x_t), t + t0 in place of t;
    with a budget, drop the oldest SV (remove-oldest); project onto ||w||^2 <= 2 L0 / lam;
    b <- running mean of y."""
    S, ids, a = np.zeros((0, X.shape[1])), [], np.zeros(0)
    b, L0, preds = 0.0, 0.0, []
    kern = lambda P, Q: np.exp(-gamma * ((P[:, None, :] - Q[None, :, :]) ** 2).sum(-1))
    for t, (x, yt) in enumerate(zip(X, y), 1):
        f = float(a @ kern(S, x[None])[:, 0]) if len(a) else 0.0
        pred = b + f
        preds.append(pred)
        _, slope = loss_and_slope(loss, epsilon, yt - pred)
        L0 = max(L0, loss_and_slope(loss, epsilon, yt - b)[0])
        a = a * (1.0 - 1.0 / (t + t0))
        if t + t0 == 1:
            S, ids, a = S[:0], [], a[:0]
        if slope != 0.0:
            S, ids, a = np.vstack([S, x]), ids + [t], np.append(a, slope / (lam * (t + t0)))
        if budget is not None and len(a) > budget:
            S, ids, a = S[1:], ids[1:], a[1:]  # the oldest: the first added
        norm2 = float(a @ kern(S, S) @ a) if len(a) else 0.0
        r2 = 2.0 * L0 / lam
        if norm2 > r2:
            a = a * np.sqrt(r2 / norm2) if r2 > 0 else a * 0.0
        if fit_intercept:
            b += (yt - b) / t
    return np.array(preds), S, np.array(ids), a, b


@pytest.mark.parametrize("loss", ["epsilon_insensitive", "squared", "huber"])
@pytest.mark.parametrize("budget", [None, 7])
@pytest.mark.parametrize("fit_intercept", [True, False])
def test_update_equals_the_numpy_oracle(loss, budget, fit_intercept):
    X, y = sine(80, seed=1)
    kw = dict(loss=loss, epsilon=0.2, lam=0.05, gamma=0.8, fit_intercept=fit_intercept)
    est = BudgetedSGDRegressor(budget=budget, maintenance="remove-oldest", random_state=0, **kw)
    model = core.BSGDRegressor(2, budget=budget or 0, maintenance="remove-oldest", **kw)
    pred = model.partial_fit(X, y, record=True)
    est.fit(X, y)
    preds, S, ids, a, b = oracle(X, y, budget=budget, **kw)
    np.testing.assert_allclose(pred, preds, rtol=1e-9, atol=1e-9)
    order = np.argsort(est._model.support_ids)
    np.testing.assert_array_equal(np.asarray(est._model.support_ids)[order], ids)
    np.testing.assert_array_equal(est.support_vectors_[order], S)
    np.testing.assert_allclose(est.dual_coef_[order, 0], a, rtol=1e-9, atol=1e-12)
    assert est.intercept_ == pytest.approx(b, rel=1e-12)
    np.testing.assert_allclose(est.online_mse_, np.mean((y - preds) ** 2), rtol=1e-9)
    if budget:
        assert est.n_support_ == budget and est.counters_["maintenance_steps"] > 0


@pytest.mark.parametrize("loss", ["epsilon_insensitive", "squared", "huber"])
@pytest.mark.parametrize("budget", [None, 7])
def test_step_offset_t0_equals_the_numpy_oracle(loss, budget):
    # eta_t = 1 / (lam (t + t0)): the same oracle with t + t0 in the step and the shrink
    X, y = sine(80, seed=7)
    kw = dict(loss=loss, epsilon=0.2, lam=0.01, gamma=0.8, fit_intercept=True, t0=50.0)
    est = BudgetedSGDRegressor(budget=budget, maintenance="remove-oldest", random_state=0, **kw).fit(X, y)
    model = core.BSGDRegressor(2, budget=budget or 0, maintenance="remove-oldest", **kw)
    preds, S, ids, a, b = oracle(X, y, budget=budget, **kw)
    np.testing.assert_array_equal(est.support_vectors_[np.argsort(est._model.support_ids)], S)
    assert est.intercept_ == pytest.approx(b, rel=1e-12)
    np.testing.assert_allclose(model.partial_fit(X, y, record=True), preds, rtol=1e-9, atol=1e-9)
    order = np.argsort(est._model.support_ids)
    np.testing.assert_array_equal(np.asarray(est._model.support_ids)[order], ids)
    np.testing.assert_allclose(est.dual_coef_[order, 0], a, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(est.online_mse_, np.mean((y - preds) ** 2), rtol=1e-9)
    with pytest.raises(ValueError, match="t0"):
        BudgetedSGDRegressor(t0=-1.0).fit(X, y)


def test_step_offset_tames_the_first_steps_of_a_small_lam():
    # Pegasos' first steps are ~1/lam: with the squared loss and lam = 1e-4 the prequential
    # error explodes; t0 = 1/lam starts at eta ~ 1 and keeps it near the noise
    X, y = sine(3000, seed=8)
    kw = dict(budget=50, loss="squared", lam=1e-4, gamma=1.0, random_state=0)
    plain = BudgetedSGDRegressor(**kw).fit(X, y)
    offset = BudgetedSGDRegressor(t0=1e4, **kw).fit(X, y)
    assert offset.online_mse_ < 0.1 < plain.online_mse_


def test_step_offset_is_saved_and_the_default_file_is_unchanged(tmp_path):
    X, y = sine(500, d=3, seed=9)
    kw = dict(budget=20, loss="squared", lam=1e-3, gamma=1.0, random_state=1)
    default = BudgetedSGDRegressor(**kw).fit(X, y)
    assert b"t0" not in default._model.to_bytes()  # t0 = 0: no field, no metadata entry (the old file)
    default.save(tmp_path / "d.bkm")
    assert b"t0" not in (tmp_path / "d.bkm").read_bytes() and budgetkernel.load(tmp_path / "d.bkm").t0 == 0.0
    est = BudgetedSGDRegressor(t0=123.5, **kw).partial_fit(X[:250], y[:250])
    full = BudgetedSGDRegressor(t0=123.5, **kw).fit(X, y)
    est.save(tmp_path / "m.bkm")
    for restored in (budgetkernel.load(tmp_path / "m.bkm"), pickle.loads(pickle.dumps(est))):
        assert restored.t0 == 123.5
        restored.partial_fit(X[250:], y[250:])
        np.testing.assert_array_equal(restored.predict(X), full.predict(X))
    model = core.BSGDRegressor(3, budget=20, loss="squared", lam=1e-3, t0=7.0, gamma=1.0, seed=1)
    model.partial_fit(X, y)
    (tmp_path / "c.bkm").write_bytes(model.to_bytes())  # a C++-written file (no metadata)
    assert budgetkernel.load(tmp_path / "c.bkm").t0 == 7.0


@pytest.mark.parametrize("maintenance", ["merge", "project", "project-exact", "remove-random", "remove-smallest"])
@pytest.mark.parametrize("loss", ["epsilon_insensitive", "huber"])
def test_budget_at_least_the_stream_is_unbudgeted_bit_for_bit(maintenance, loss):
    X, y = sine(200, seed=2)
    kw = dict(maintenance=maintenance, loss=loss, gamma=1.0, random_state=3)
    a = BudgetedSGDRegressor(budget=None, **kw).fit(X, y)
    b = BudgetedSGDRegressor(budget=200, **kw).fit(X, y)
    np.testing.assert_array_equal(a.predict(X), b.predict(X))
    np.testing.assert_array_equal(a.dual_coef_, b.dual_coef_)
    assert a.counters_ == b.counters_


@pytest.mark.parametrize("maintenance", ["merge", "project", "remove-random"])
def test_save_load_and_pickle_resume_bit_identically(maintenance, tmp_path):
    X, y = sine(1200, d=3, seed=4)
    kw = dict(budget=30, maintenance=maintenance, loss="huber", epsilon=0.3, gamma=1.0, random_state=5)
    full = BudgetedSGDRegressor(**kw).partial_fit(X[:600], y[:600]).partial_fit(X[600:], y[600:])
    half = BudgetedSGDRegressor(**kw).partial_fit(X[:600], y[:600])
    half.save(tmp_path / "m.bkm")
    # a file records the rule the model uses, which loads as 'auto' where 'auto' gives it
    as_saved = BudgetedSGDRegressor._params_from_file(half.get_params())
    for restored, params in ((pickle.loads(pickle.dumps(half)), half.get_params()), (budgetkernel.load(tmp_path / "m.bkm"), as_saved)):
        assert type(restored) is BudgetedSGDRegressor and restored.get_params() == params
        np.testing.assert_array_equal(restored.predict(X), half.predict(X))
        restored.partial_fit(X[600:], y[600:])
        np.testing.assert_array_equal(restored.predict(X), full.predict(X))
        restored._model.metadata = full._model.metadata = b""  # the Python state aside (save wrote it)
        assert restored._model.to_bytes() == full._model.to_bytes()


def test_a_file_written_without_metadata_loads_as_the_estimator(tmp_path):
    X, y = sine(300, seed=6)
    model = core.BSGDRegressor(2, budget=20, loss="squared", lam=0.1, gamma=0.5, seed=9)
    model.partial_fit(X, y)
    (tmp_path / "c.bkm").write_bytes(model.to_bytes())
    est = budgetkernel.load(tmp_path / "c.bkm")
    assert isinstance(est, BudgetedSGDRegressor)
    assert (est.budget, est.loss, est.lam, est.gamma_, est.random_state) == (20, "squared", 0.1, 0.5, 9)
    np.testing.assert_array_equal(est.predict(X), model.predict(X))
    info = core.load_model_info(model.to_bytes())  # the generic Model reads it (C++'s load_model)
    assert (info["learner"], info["n_outputs"], info["n_support"]) == ("bsgd_regressor", 1, 20)


def test_learns_a_function_and_streams_one_example_at_a_time():
    X, y = sine(4000, seed=7)
    X_test, y_test = sine(500, seed=8)
    reg = BudgetedSGDRegressor(budget=50, gamma=1.0, epsilon=0.05, random_state=0).fit(X, y)
    assert reg.score(X_test, y_test) > 0.9
    one = BudgetedSGDRegressor(budget=50, gamma=1.0, epsilon=0.05, random_state=0)
    assert one.predict_one({"a": 0.0, "b": 1.0}) == 0.0
    for x, t in zip(X[:300], y[:300]):
        one.learn_one({"a": x[0], "b": x[1]}, t)
    chunked = BudgetedSGDRegressor(budget=50, gamma=1.0, epsilon=0.05, random_state=0).partial_fit(X[:300], y[:300])
    assert BudgetedSGDRegressor().learn_one(X[0], y[0]).gamma_ == 0.5  # 'scale' of one example: 1 / n_features
    assert one.predict_one({"b": X[5, 1], "a": X[5, 0]}) == chunked.predict(X[5:6])[0]
    assert list(one.feature_names_in_) == ["a", "b"]


def test_bad_parameters_and_sizes_raise_a_clear_error():
    # (bad input, as for every regressor: tests/test_regressors.py)
    X, y = sine(50, seed=9)
    with pytest.raises(MemoryError, match=r"budget=100000000 \(2 features\): the model needs"):
        BudgetedSGDRegressor(budget=10**8).fit(X, y)  # refused before anything is allocated
    for params, word in [
        (dict(loss="hinge"), "loss"),
        (dict(epsilon=-1.0), "epsilon"),
        (dict(loss="huber", epsilon=0.0), "epsilon"),
        (dict(lam=0.0), "lam"),
        (dict(budget=0), "budget"),
        (dict(kernel="linear", maintenance="merge"), "merge"),
        (dict(fit_intercept="yes"), "fit_intercept"),
        (dict(maintenance="drop"), "maintenance"),
    ]:
        with pytest.raises(ValueError, match=word):
            BudgetedSGDRegressor(**params).fit(X, y)

