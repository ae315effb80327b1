"""The kernel adaptive filters as estimators (kaf.py, learners/kaf.hpp): KRLS and the
sliding window against scikit-learn's KernelRidge, QKLMS with epsilon 0 against KLMS,
persistence and resuming, Ctrl-C, bad input and scikit-learn's estimator checks."""

import pickle

import numpy as np
import pytest
from sklearn.kernel_ridge import KernelRidge

import budgetkernel
from budgetkernel import KLMSRegressor, KRLSRegressor, SlidingWindowKRLSRegressor
from budgetkernel._native import core
from budgetkernel.datasets import embed_series, mackey_glass


def sine(n, d=2, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-2, 2, size=(n, d))
    return X, np.sin(2 * X[:, 0]) + 0.1 * rng.standard_normal(n)


def test_krls_without_the_ald_test_is_kernel_ridge_on_the_seen_examples():
    X, y = sine(300, d=3, seed=1)
    X_test, _ = sine(200, d=3, seed=2)
    for lam in (1e-1, 1e-3):
        krls = KRLSRegressor(nu=0.0, lam=lam, gamma=0.7).fit(X, y)
        assert krls.n_support_ == 300
        ridge = KernelRidge(alpha=lam, kernel="rbf", gamma=0.7).fit(X, y)
        np.testing.assert_allclose(krls.predict(X_test), ridge.predict(X_test), rtol=0, atol=1e-8)
        # after every prefix too: the prequential predictions are the ridge's on the examples before
        for t in (1, 17, 150):
            part = KRLSRegressor(nu=0.0, lam=lam, gamma=0.7).fit(X[:t], y[:t])
            ridge_t = KernelRidge(alpha=lam, kernel="rbf", gamma=0.7).fit(X[:t], y[:t])
            np.testing.assert_allclose(part.predict(X_test), ridge_t.predict(X_test), rtol=0, atol=1e-8)


@pytest.mark.parametrize("budget", [1, 25, 80])
def test_sliding_window_is_kernel_ridge_on_the_last_budget_examples(budget):
    X, y = sine(400, d=2, seed=3)
    X_test, _ = sine(100, d=2, seed=4)
    sw = SlidingWindowKRLSRegressor(budget=budget, lam=1e-2, gamma=1.5).fit(X, y)
    assert sw.n_support_ == budget
    np.testing.assert_array_equal(sw.support_vectors_, X[-budget:])  # the window, oldest first
    ridge = KernelRidge(alpha=1e-2, kernel="rbf", gamma=1.5).fit(X[-budget:], y[-budget:])
    np.testing.assert_allclose(sw.predict(X_test), ridge.predict(X_test), rtol=0, atol=1e-8)
    assert sw.counters_["maintenance_steps"] == 400 - budget


def test_qklms_with_epsilon_zero_is_klms_bit_for_bit():
    X, y = sine(500, d=3, seed=5)
    X[100:120] = X[:20]  # exact duplicates of centres still become centres
    klms, qklms = core.KLMS(3, eta=0.3, gamma=0.9), core.QKLMS(3, eta=0.3, gamma=0.9, epsilon=0.0)
    np.testing.assert_array_equal(klms.partial_fit(X, y, record=True), qklms.partial_fit(X, y, record=True))
    np.testing.assert_array_equal(klms.predict(X), qklms.predict(X))
    np.testing.assert_array_equal(klms.coefficients, qklms.coefficients)
    est = KLMSRegressor(eta=0.3, gamma=0.9).fit(X, y)
    assert type(est._model).__name__ == "KLMS"
    np.testing.assert_array_equal(est.predict(X), klms.predict(X))
    assert est.counters_["squared_error"] == klms.counters["squared_error"]


def test_qklms_quantises_and_klms_learns_mackey_glass():
    X, y = embed_series(mackey_glass(1507, random_state=0), order=7)
    klms = KLMSRegressor(eta=0.5, gamma=1.0).fit(X[:1000], y[:1000])
    qklms = KLMSRegressor(eta=0.5, epsilon=0.3, gamma=1.0).fit(X[:1000], y[:1000])
    assert type(qklms._model).__name__ == "QKLMS"
    assert klms.n_support_ == 1000 and qklms.n_support_ < 100
    assert qklms.counters_["updates"] == qklms.n_support_
    for est in (klms, qklms):
        assert est.score(X[1000:], y[1000:]) > 0.8
    # the model file predicts through the generic C++ Model as the estimator does
    info = core.load_model_info(qklms._model.to_bytes())
    assert (info["learner"], info["n_outputs"], info["n_support"]) == ("qklms", 1, qklms.n_support_)


def make(kind):
    return {
        "klms": KLMSRegressor(eta=0.4, gamma=1.0),
        "qklms": KLMSRegressor(eta=0.4, epsilon=0.3, gamma=1.0),
        "krls": KRLSRegressor(nu=1e-3, lam=1e-3, gamma=1.0),
        "krls0": KRLSRegressor(nu=0.0, lam=1e-2, gamma=1.0),
        "sliding": SlidingWindowKRLSRegressor(budget=40, lam=1e-2, gamma=1.0),
    }[kind]


@pytest.mark.parametrize("kind", ["klms", "qklms", "krls", "krls0", "sliding"])
def test_save_load_and_pickle_resume_bit_identically(kind, tmp_path):
    X, y = sine(600, d=3, seed=6)
    full = make(kind).partial_fit(X[:300], y[:300]).partial_fit(X[300:], y[300:])
    half = make(kind).partial_fit(X[:300], y[:300])
    half.save(tmp_path / "m.bkm")
    for restored in (pickle.loads(pickle.dumps(half)), budgetkernel.load(tmp_path / "m.bkm")):
        assert type(restored) is type(half) and restored.get_params() == half.get_params()
        np.testing.assert_array_equal(restored.predict(X), half.predict(X))
        restored.partial_fit(X[300:], y[300:])
        np.testing.assert_array_equal(restored.predict(X), full.predict(X))
        restored._model.metadata = full._model.metadata = b""  # the Python state aside (save wrote it)
        assert restored._model.to_bytes() == full._model.to_bytes()


@pytest.mark.parametrize(
    "model,cls,params",
    [
        (lambda: core.KLMS(2, eta=0.2, gamma=0.5), KLMSRegressor, dict(eta=0.2, epsilon=0.0)),
        (lambda: core.QKLMS(2, eta=0.2, epsilon=0.1, gamma=0.5), KLMSRegressor, dict(eta=0.2, epsilon=0.1)),
        (lambda: core.KRLS(2, nu=1e-3, lam=1e-2, gamma=0.5), KRLSRegressor, dict(nu=1e-3, lam=1e-2)),
        (
            lambda: core.SlidingWindowKRLS(2, budget=30, lam=1e-2, gamma=0.5),
            SlidingWindowKRLSRegressor,
            dict(budget=30, lam=1e-2),
        ),
    ],
)
def test_a_file_written_without_metadata_loads_as_the_estimator(model, cls, params, tmp_path):
    X, y = sine(200, seed=7)
    m = model()
    m.partial_fit(X, y)
    (tmp_path / "c.bkm").write_bytes(m.to_bytes())
    est = budgetkernel.load(tmp_path / "c.bkm")
    assert type(est) is cls and est.gamma_ == 0.5
    assert {k: est.get_params()[k] for k in params} == params
    np.testing.assert_array_equal(est.predict(X), m.predict(X))


def test_streams_one_example_at_a_time():
    X, y = sine(300, seed=8)
    one = KRLSRegressor(nu=1e-3, gamma=1.0)
    assert one.predict_one({"a": 0.0, "b": 1.0}) == 0.0
    for x, t in zip(X, y):
        one.learn_one({"a": x[0], "b": x[1]}, t)
    chunked = KRLSRegressor(nu=1e-3, gamma=1.0).partial_fit(X, y)
    assert one.predict_one({"b": X[5, 1], "a": X[5, 0]}) == chunked.predict(X[5:6])[0]
    assert one.online_mse_ == chunked.online_mse_
    assert KLMSRegressor().learn_one(X[0], y[0]).gamma_ == 0.5  # 'scale' of one example: 1 / n_features


@pytest.mark.parametrize(
    "cls,params,word",
    [
        (KLMSRegressor, dict(eta=0.0), "eta"),
        (KLMSRegressor, dict(epsilon=-1.0), "epsilon"),
        (KLMSRegressor, dict(kernel="poly", coef0=-1.0), "coef0"),
        (KRLSRegressor, dict(nu=-1.0), "nu"),
        (KRLSRegressor, dict(lam=-1.0), "lam"),
        (KRLSRegressor, dict(nu=0.0, lam=0.0), "lam"),
        (SlidingWindowKRLSRegressor, dict(budget=0), "budget"),
        (SlidingWindowKRLSRegressor, dict(lam=0.0), "lam"),
        (SlidingWindowKRLSRegressor, dict(n_epochs=0), "n_epochs"),
    ],
)
def test_invalid_parameters_name_themselves(cls, params, word):
    X, y = sine(20, seed=11)
    with pytest.raises(ValueError, match=word):
        cls(**params).fit(X, y)


def test_a_singular_kernel_matrix_is_reported_and_stops_the_chunk():
    X = np.zeros((5, 2))
    y = np.arange(5.0)
    with pytest.raises(RuntimeError, match="lam = 1e-300 is too small.*use lam >= "):
        KRLSRegressor(nu=0.0, lam=1e-300, gamma=1.0).fit(X, y)

