"""Adversarial cases of the regressors (issue 41, items 6, 7, 10 and 11): each finding's
reproducer, table-driven, on small data. Divergent KLMS, KRLS's dictionary, the KRLS messages
and the tiny targets of BudgetedSGDRegressor; the averaged PA/BOGD's documented growth."""

from __future__ import annotations

import math
import pickle
import warnings

import numpy as np
import pytest
from sklearn.datasets import make_friedman1
from sklearn.preprocessing import StandardScaler

import budgetkernel as bk
from budgetkernel import (
    BOGDClassifier,
    BudgetedPAClassifier,
    BudgetedPARegressor,
    BudgetedSGDRegressor,
    KLMSRegressor,
    KRLSRegressor,
    SlidingWindowKRLSRegressor,
)
from budgetkernel.model_selection import _schedule


def _uniform(n, d=2, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1.0, 1.0, size=(n, d))
    return X, np.sin(3 * X[:, 0]) + X[:, 1] ** 2


def _friedman(n, seed=0):
    X, y = make_friedman1(n_samples=n, noise=1.0, random_state=seed)
    return StandardScaler().fit_transform(X), (y - y.mean()) / y.std()


def _round_trip(est, tmp_path):
    path = tmp_path / "model.bkm"
    est.save(path)
    return bk.load(path)


# ---------------------------------------------------------------- item 6: KLMS divergence
@pytest.mark.parametrize("eta", [2.0, 5.0, 10.0, 100.0])
def test_klms_rbf_step_above_the_stability_limit_is_refused(eta):
    X, y = _uniform(50)
    for est in (KLMSRegressor(gamma=2.0, eta=eta), KLMSRegressor(gamma=2.0, eta=eta, epsilon=0.05)):
        with pytest.raises(ValueError, match="eta must be < 2"):
            est.fit(X, y)


@pytest.mark.parametrize(
    "params",
    [
        dict(kernel="poly", degree=3, coef0=1.0, gamma=2.0),  # the issue's: NaN after ~700 rows
        dict(kernel="poly", degree=3, coef0=1.0, gamma=2.0, epsilon=0.05),
        dict(kernel="linear", eta=1.5),
    ],
)
def test_klms_divergence_raises_and_the_model_stays_usable(params, tmp_path):
    X, y = _uniform(3000, seed=1)
    if params.get("kernel") == "linear":
        X = 3.0 * X  # eta |x|^2 up to 27 > 2
    est = KLMSRegressor(**params)
    est.partial_fit(X[:10], y[:10])  # before the divergence
    with pytest.raises(RuntimeError, match=r"diverged at example \d+.*eta k\(x, x\)"):
        for i in range(10, len(y), 10):
            est.partial_fit(X[i : i + 10], y[i : i + 10])
    assert np.isfinite(est.dual_coef_).all()
    assert np.isfinite(est.online_mse_) or est.online_mse_ == math.inf
    # save accepts only what load accepts: the diverged model's file loads and predicts the same
    again = _round_trip(est, tmp_path)
    np.testing.assert_array_equal(again.dual_coef_, est.dual_coef_)
    with np.errstate(over="ignore", invalid="ignore"):
        np.testing.assert_array_equal(again.predict(X[:20]), est.predict(X[:20]))


def test_klms_within_the_limit_still_learns():
    X, y = _uniform(800, seed=2)
    est = KLMSRegressor(gamma=2.0, eta=0.5).fit(X, y)
    assert np.isfinite(est.predict(X)).all() and est.online_mse_ < np.var(y)


def test_a_search_over_a_diverging_eta_is_refused_not_ranked_best():
    # The issue's: the NaN candidate (eta = 50) ranked best when it came first in the grid.
    from budgetkernel.model_selection import PrequentialSearch

    X, y = _uniform(400, seed=6)
    search = PrequentialSearch(KLMSRegressor(gamma=2.0, epsilon=0.05), {"eta": [50.0, 0.5]})
    with pytest.raises(ValueError, match="eta must be < 2"):
        search.fit(X, y)


@pytest.mark.parametrize(
    "errors, best_first",
    [
        ([math.nan, 0.5, 0.2], [2, 1, 0]),
        ([0.3, math.nan, math.nan, 0.1], [3, 0, 1, 2]),
        ([math.inf, math.nan, 1.0], [2, 0, 1]),
    ],
)
def test_a_search_ranks_nan_errors_last(errors, best_first):
    # eta = 1 keeps all but the worst (a rung always drops one): the NaN goes first
    assert _schedule.keep(errors, 1) == best_first[:-1]


# ------------------------------------------------ item 7: averaged models grow, as documented
@pytest.mark.parametrize(
    "make",
    [
        lambda: BudgetedPARegressor(budget=20, variant="simple", averaged=True, gamma=2.0, random_state=0),
        lambda: BudgetedPAClassifier(budget=20, variant="simple", averaged=True, gamma=2.0, random_state=0),
        lambda: BOGDClassifier(budget=20, averaged=True, gamma=2.0, random_state=0),
    ],
)
def test_averaged_budgeted_models_keep_every_removed_sv(make):
    # What the docs state: the average holds the B current SVs and every SV the budget removed
    # (n_support_average_), and its pickle grows by (2 d + 2 c + 1) float64 values per removed
    # SV (x and the summed coefficients twice, the lazy state and the predictor, and an id).
    X, y = _uniform(1500, seed=3)
    y = y + 0.5 * np.random.default_rng(3).standard_normal(len(y))  # every example a step
    est = make()
    classes = {}
    if not isinstance(est, BudgetedPARegressor):
        y = np.where(y > np.median(y), 1, -1)
        classes = {"classes": [-1, 1]}
    est.partial_fit(X[:500], y[:500], **classes)
    r1, p1 = est.n_support_average_, len(pickle.dumps(est))
    est.partial_fit(X[500:], y[500:])
    r2, p2 = est.n_support_average_, len(pickle.dumps(est))
    assert np.sum(est.n_support_) <= 20 < r1 < r2
    d, c = X.shape[1], 1
    assert (p2 - p1) / (r2 - r1) == pytest.approx(8 * (2 * d + 2 * c + 1), rel=0.02)


# ---------------------------------------------------------------- item 11: KRLS
@pytest.mark.parametrize("nu", [1.0, 1.5, 5.0])
def test_krls_rbf_nu_at_least_one_is_refused(nu):
    X, y = _uniform(30)
    with pytest.raises(ValueError, match="nu must be < 1"):
        KRLSRegressor(nu=nu).fit(X, y)


@pytest.mark.parametrize(
    "params, message",
    [
        (dict(budget=0), "budget"),
        (dict(budget=-3), "budget"),
        (dict(budget=2.5), "budget"),
        (dict(budget=10, nu=0.0), "a budget needs nu > 0"),
    ],
)
def test_krls_bad_budget_is_refused(params, message):
    X, y = _uniform(30)
    with pytest.raises(ValueError, match=message):
        KRLSRegressor(**params).fit(X, y)


def test_krls_default_keeps_a_small_dictionary_on_standardised_friedman1():
    X, y = _friedman(1500)
    est = KRLSRegressor().fit(X[:1000], y[:1000])
    old = KRLSRegressor(nu=1e-2).fit(X[:1000], y[:1000])  # the former default
    assert old.n_support_ == 1000 and est.n_support_ < 500  # 428 measured
    mse = np.mean((est.predict(X[1000:]) - y[1000:]) ** 2)
    assert mse <= np.mean((old.predict(X[1000:]) - y[1000:]) ** 2)  # 0.098 and 0.108 measured


@pytest.mark.parametrize(
    "X_scale, gamma",
    [(1.0, "scale"), (1e149, "scale"), (1.0, 1e30)],  # the issue's: every row a centre without a cap
)
def test_krls_budget_caps_the_dictionary(X_scale, gamma, tmp_path):
    X, y = _friedman(400)
    est = KRLSRegressor(budget=40, gamma=gamma)
    est.fit(X * X_scale, y)
    assert est.n_support_ == 40 and est.counters_["maintenance_steps"] > 0
    assert np.isfinite(est.predict(X[:50] * X_scale)).all()
    again = _round_trip(est, tmp_path)
    np.testing.assert_array_equal(again.predict(X[:50] * X_scale), est.predict(X[:50] * X_scale))
    np.testing.assert_array_equal(pickle.loads(pickle.dumps(est)).dual_coef_, est.dual_coef_)


def test_krls_budget_resumes_bit_for_bit(tmp_path):
    X, y = _friedman(300)
    a = KRLSRegressor(budget=25, gamma=0.1).fit(X, y)
    b = KRLSRegressor(budget=25, gamma=0.1).fit(X[:120], y[:120])
    b = _round_trip(b, tmp_path)
    b.partial_fit(X[120:], y[120:])
    np.testing.assert_array_equal(a.dual_coef_, b.dual_coef_)


def test_krls_warns_once_when_the_dictionary_keeps_growing(monkeypatch):
    monkeypatch.setattr(KRLSRegressor, "WARN_DICTIONARY", 30)
    X, y = _friedman(200)
    est = KRLSRegressor(nu=0.01)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        for i in range(0, 200, 20):
            est.partial_fit(X[i : i + 20], y[i : i + 20])
        for i in range(5):
            est.learn_one(X[i], y[i])
    growth = [w for w in seen if issubclass(w.category, RuntimeWarning) and "keeps growing" in str(w.message)]
    assert est.n_support_ > 30 and len(growth) == 1
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        KRLSRegressor(nu=0.01, budget=20).fit(X, y)  # a capped dictionary does not warn


# ---------------------------------------------------------------- item 10: messages
def test_sliding_krls_singular_message_prints_lam_and_the_remedy():
    X = np.array([[0.3, -0.2], [0.3, -0.2]])
    # a duplicate's Schur complement is ~2 lam, below the 1e-12 threshold for lam = 1e-13
    with pytest.raises(RuntimeError, match=r"lam = 1e-13 is too small.*use lam >= "):
        SlidingWindowKRLSRegressor(lam=1e-13).partial_fit(X, [1.0, 2.0])


@pytest.mark.parametrize("loss", ["squared", "huber"])
@pytest.mark.parametrize("scale", [1e-300, 1e-200, 1e-160])
def test_bsgd_targets_whose_squares_underflow_are_refused(loss, scale):
    X, y = _uniform(200, seed=4)
    with pytest.raises(ValueError, match="targets are too small"):
        BudgetedSGDRegressor(loss=loss, random_state=0).fit(X, y * scale)


@pytest.mark.parametrize("loss", ["squared", "huber"])
def test_bsgd_predictions_scale_with_the_targets(loss):
    # The squared and Huber (epsilon scaled too) steps are equivariant in the targets, and a
    # power-of-two scale is exact in floating point: the model learned on y 2^-480 (~3e-145,
    # squares still normal) predicts 2^-480 times the one learned on y. (The
    # epsilon-insensitive step, +-1 / (lam t), is not equivariant.)
    X, y = _uniform(300, seed=5)
    s = 2.0**-480
    kw = dict(loss=loss, random_state=0)
    if loss != "squared":
        kw["epsilon"] = 0.01
    ref = BudgetedSGDRegressor(**kw).fit(X, y).predict(X[:40])
    kw2 = dict(kw, epsilon=kw["epsilon"] * s) if "epsilon" in kw else kw
    small = BudgetedSGDRegressor(**kw2).fit(X, y * s).predict(X[:40])
    np.testing.assert_allclose(small / s, ref, rtol=1e-12)
