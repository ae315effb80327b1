"""budgetkernel.combine for the regressors: BudgetedSGDRegressor (union, then its own
maintenance over the budget), BudgetedPARegressor (union, then its BPA variant's rule without
a new example; averaged too), KLMSRegressor (the exact union; with epsilon > 0 quantised by
QKLMS's rule), and the KRLS filters, which are refused.

Oracles: the predictions sum_k w_k f_k computed from the models themselves; the RKHS distance
between the exact union and a reduced one, from Gram matrices; QKLMS's quantisation of the
union replayed in numpy; counters added up by hand. The properties every combinable learner
shares (a copy of one model, validated weights, persistence, ...) are in tests/test_combine.py.
"""

import pickle

import numpy as np
import pytest

import budgetkernel as bk
from budgetkernel import combine
from budgetkernel._combine import combine as combine_with_base

MAINTENANCE = ["merge", "project", "project-exact", "remove-random", "remove-oldest", "remove-smallest"]
GAMMA = 1.5


def _data(n, seed, d=2):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, size=(n, d))
    y = np.sin(3 * X[:, 0]) + X[:, 1] ** 2 + 0.1 * rng.normal(size=n) + 2.0  # an offset for the intercept
    return X, y


def _parts(est, X, y, k=3):
    return [est.__class__(**est.get_params()).fit(X[i::k], y[i::k]) for i in range(k)]


def _mixed(models, w, X):
    return sum(wk * m.predict(X) for wk, m in zip(w, models))


def _rel_err(a, b, models=()):
    """max |a - b| relative to the magnitude of b's terms: the values, and sum_j |alpha_j|
    (k <= 1) of each model's expansion, which bounds the rounding of the sums that cancel."""
    terms = max([np.abs(m.dual_coef_).sum() for m in models], default=0.0)
    return np.abs(a - b).max() / max(1.0, np.abs(b).max(), terms)


def _gram(P, Q, gamma=GAMMA):
    return np.exp(-gamma * ((P[:, None, :] - Q[None, :, :]) ** 2).sum(-1))


def _rkhs_distance2(X1, a1, X2, a2, gamma=GAMMA):
    a1, a2 = np.ravel(a1), np.ravel(a2)
    return float(a1 @ _gram(X1, X1, gamma) @ a1 - 2 * a1 @ _gram(X1, X2, gamma) @ a2 + a2 @ _gram(X2, X2, gamma) @ a2)


# ------------------------------------------------------------ exact averages


def test_bsgd_unbudgeted_models_combine_exactly_weighted_by_their_examples():
    X, y = _data(700, seed=1)
    models = [bk.BudgetedSGDRegressor(budget=None, gamma=GAMMA).fit(X[:n], y[:n]) for n in (100, 250, 700)]
    out = combine(models)
    w = np.array([m.n_seen_ for m in models], dtype=float)
    w /= w.sum()
    assert _rel_err(out.predict(X), _mixed(models, w, X), models) < 1e-12
    # every model saw X[:100] in the same order, yet their SVs differ in coefficient only: a
    # point several models hold is kept once (its coefficients added)
    assert out.combine_report_["duplicates"] > 0
    assert out.n_support_ == out.combine_report_["union_size"]


@pytest.mark.parametrize("epsilon", [0.0, 1e-9])
def test_klms_union_is_the_weighted_average(epsilon):
    # epsilon > 0 (QKLMS) so small that no two models' centres fall within it: still exact
    X, y = _data(600, seed=2)
    models = _parts(bk.KLMSRegressor(eta=0.3, epsilon=epsilon, gamma=GAMMA), X, y)
    w = np.array([0.6, 0.1, 0.3])
    out = combine(models, weights=w)
    Xt, _ = _data(200, seed=8)
    assert _rel_err(out.predict(Xt), _mixed(models, w, Xt), models) < 1e-12
    rep = out.combine_report_
    assert rep["reductions"] == 0 and out.n_support_ == sum(m.n_support_ for m in models)
    assert out.n_seen_ == len(X) and out._model.steps == len(X)
    np.testing.assert_array_equal(out._model.support_ids, np.arange(out.n_support_))  # renumbered


def _quantise(Xs, As, epsilon, gamma=GAMMA):
    """QKLMS's rule replayed on a union: (centres, coefficients, sum of the folds' ||Delta f||^2)."""
    C, a, deg = [], [], 0.0
    for x, alpha in zip(Xs, As):
        if C and epsilon > 0:
            d2 = ((np.array(C) - x) ** 2).sum(1)
            j = int(np.argmin(d2))
            if d2[j] <= epsilon**2:
                deg += alpha**2 * (2 - 2 * np.exp(-gamma * d2[j]))
                a[j] += alpha
                continue
        C.append(x)
        a.append(alpha)
    return np.array(C), np.array(a), deg


def test_qklms_quantises_the_union_by_its_own_rule():
    X, y = _data(800, seed=3)
    eps = 0.3
    models = _parts(bk.KLMSRegressor(eta=0.4, epsilon=eps, gamma=GAMMA), X, y, k=2)
    w = np.array([0.3, 0.7])
    out = combine(models, weights=w)
    Xs = np.vstack([m.support_vectors_ for m in models])
    As = np.concatenate([wk * m.dual_coef_.ravel() for wk, m in zip(w, models)])
    C, a, deg = _quantise(Xs, As, eps)
    np.testing.assert_array_equal(out.support_vectors_, C)
    np.testing.assert_allclose(out.dual_coef_.ravel(), a, rtol=1e-12, atol=1e-15)
    rep = out.combine_report_
    assert rep["union_size"] == len(Xs) and rep["reductions"] == len(Xs) - len(C) > 0
    assert rep["degradation"] == pytest.approx(deg, rel=1e-9)
    # the combined centres stay epsilon apart, as a stream's do
    d2 = ((C[:, None, :] - C[None, :, :]) ** 2).sum(-1) + np.diag(np.full(len(C), np.inf))
    assert d2.min() > eps**2


def test_one_qklms_fold_reports_its_rkhs_degradation():
    X, y = _data(400, seed=14)
    a = bk.KLMSRegressor(eta=0.4, epsilon=0.3, gamma=GAMMA).fit(X, y)
    b = bk.KLMSRegressor(eta=0.4, epsilon=0.3, gamma=GAMMA).fit(X[:1] + 0.05, y[:1])  # one centre, near X[0]
    exact = combine([a, b], weights=[0.5, 0.5], budget=None)
    rep = exact.combine_report_
    assert rep["union_size"] == a.n_support_ + 1 and rep["reductions"] == 1 and exact.n_support_ == a.n_support_
    Xs = np.vstack([a.support_vectors_, b.support_vectors_])
    As = 0.5 * np.concatenate([a.dual_coef_.ravel(), b.dual_coef_.ravel()])
    brute = _rkhs_distance2(Xs, As, exact.support_vectors_, exact.dual_coef_)
    assert rep["degradation"] == pytest.approx(brute, rel=1e-8, abs=1e-14)


# ------------------------------------------------------------ over the budget


@pytest.mark.parametrize("maintenance", MAINTENANCE)
def test_over_the_budget_the_union_is_reduced_by_the_learners_maintenance(maintenance):
    X, y = _data(3000, seed=5)
    models = _parts(bk.BudgetedSGDRegressor(budget=40, maintenance=maintenance, gamma=GAMMA), X, y, k=4)
    out = combine(models)
    assert out.budget == 40
    rep = out.combine_report_
    assert rep["union_size"] == 160 and rep["degradation"] > 0
    if maintenance.startswith("project"):
        # the projection's first step folds every numerically dependent SV of the union at
        # once (budget/projection.hpp, activate): fewer steps, possibly fewer SVs
        assert out.n_support_ <= 40 and rep["reductions"] <= 120
        assert rep["reductions"] + out.n_support_ <= 160
    else:
        assert out.n_support_ == 40 and rep["reductions"] == 120
    Xt, yt = _data(1000, seed=6)
    if not maintenance.startswith("remove"):  # merging and projection keep what they fold in
        assert out.score(Xt, yt) > min(m.score(Xt, yt) for m in models) - 0.05


def test_a_regressor_without_a_budget_refuses_a_smaller_one():
    X, y = _data(300, seed=7)
    models = _parts(bk.KLMSRegressor(gamma=GAMMA), X, y, k=2)
    with pytest.raises(ValueError, match="keeps no budget"):
        combine(models, budget=10)


# --------------------------------------------------------- copies and counters


def test_klms_from_a_base_keeps_the_shared_centres_once():
    """(the counters of a base, for every learner: tests/test_combine.py)"""
    X, y = _data(900, seed=10)
    base = bk.KLMSRegressor(gamma=GAMMA).fit(X[:300], y[:300])
    copies = [pickle.loads(pickle.dumps(base)).partial_fit(X[300 + 200 * i:500 + 200 * i], y[300 + 200 * i:500 + 200 * i])
              for i in range(3)]
    out = combine_with_base(copies, weights=[200, 200, 200], base=base)
    # base's centres are shared by every copy: kept once, so one centre per example, exact
    assert out.n_support_ == 900 and out.combine_report_["duplicates"] == 2 * 300
    assert _rel_err(out.predict(X), _mixed(copies, [1 / 3] * 3, X), copies) < 1e-12


# ------------------------------------------------------------------- refusals
def test_models_must_share_class_loss_and_budget():
    # (the shared refusals, parameters, features and classes: tests/test_combine.py)
    X, y = _data(300, seed=12)
    a = bk.BudgetedSGDRegressor(budget=20, gamma=GAMMA).fit(X, y)
    with pytest.raises(ValueError, match="loss"):
        combine([a, bk.BudgetedSGDRegressor(budget=20, gamma=GAMMA, loss="huber").fit(X, y)])
    with pytest.raises(TypeError, match="one class"):
        combine([a, bk.KLMSRegressor(gamma=GAMMA).fit(X, y)])
    with pytest.raises(TypeError, match="one class"):
        combine([a, bk.BudgetedSGDClassifier(budget=20, gamma=GAMMA).fit(X, y > 2)])
    with pytest.raises(ValueError, match="keeps no budget"):
        combine([bk.KLMSRegressor(gamma=GAMMA).fit(X, y)], budget=50)
    # the Python-only parameters may differ
    b = bk.BudgetedSGDRegressor(budget=20, gamma=GAMMA, random_state=3, n_epochs=2).fit(X, y)
    assert combine([a, b]).n_support_ <= 20


@pytest.mark.parametrize("cls", [bk.KRLSRegressor, bk.SlidingWindowKRLSRegressor])
def test_krls_filters_are_refused_with_the_reason(cls):
    X, y = _data(200, seed=13)
    models = [cls(gamma=GAMMA).fit(X[i::2], y[i::2]) for i in range(2)]
    with pytest.raises(TypeError, match="cannot be combined: .*(least-squares|window)"):
        combine(models)


# ------------------------------------------------------------- the PA regressor
PA_VARIANTS = ["simple", "nn", "project"]


def _pa(**kw):
    return bk.BudgetedPARegressor(**{"budget": 15, "gamma": GAMMA, "C": 0.5, "epsilon": 0.05, **kw})


def _pa_terms(models):
    """_rel_err's magnitude for (possibly averaged) PA models: their current and averaged terms."""
    t = [np.abs(m.dual_coef_).sum() for m in models]
    t += [np.abs(m.average_dual_coef_).sum() for m in models if m.averaged]
    return max(t)


@pytest.mark.parametrize(
    "est",
    [bk.BudgetedSGDRegressor(budget=10, maintenance=m, gamma=GAMMA) for m in ("merge", "project", "remove-smallest")]
    + [_pa(budget=10, variant=v) for v in PA_VARIANTS],
    ids=lambda est: f"{type(est).__name__}-{est.get_params().get('maintenance', est.get_params().get('variant'))}",
)
def test_one_reduction_reports_its_rkhs_degradation(est):
    X, y = _data(400, seed=4 if isinstance(est, bk.BudgetedSGDRegressor) else 22)
    models = _parts(est, X, y, k=2)
    exact = combine(models, budget=100)
    n = exact.n_support_
    out = combine(models, budget=n - 1)
    assert out.n_support_ == n - 1 and out.budget == n - 1
    rep = out.combine_report_
    assert rep["reductions"] == 1 and rep["union_size"] == n
    brute = _rkhs_distance2(exact._model.support_vectors, exact._model.coefficients,
                            out._model.support_vectors, out._model.coefficients)
    assert rep["degradation"] > 0
    assert rep["degradation"] == pytest.approx(brute, rel=1e-8, abs=1e-12)
    assert out.counters_["degradation"] == pytest.approx(sum(m.counters_["degradation"] for m in models) + brute)
    assert out.counters_["maintenance_steps"] == sum(m.counters_["maintenance_steps"] for m in models) + 1
    assert out.intercept_ == exact.intercept_


@pytest.mark.parametrize("variant", PA_VARIANTS)
def test_pa_over_the_budget_reduces_by_its_variant_and_keeps_the_average(variant):
    X, y = _data(2400, seed=23)
    models = _parts(_pa(budget=30, variant=variant), X, y, k=4)
    out = combine(models)
    rep = out.combine_report_
    m = sum(m.n_support_ for m in models)
    assert out.budget == 30 and rep["union_size"] == m > 100 and rep["degradation"] > 0
    if variant == "project":  # the activation may fold several dependent SVs in one step
        assert out.n_support_ <= 30 and rep["reductions"] + out.n_support_ <= m
    else:
        assert out.n_support_ == 30 and rep["reductions"] == m - 30
    Xt, yt = _data(1000, seed=24)
    if variant != "simple":  # NN and projection keep part of what they fold in
        assert out.score(Xt, yt) > min(m.score(Xt, yt) for m in models) - 0.05
    # averaged: the reduction retires what it removes with its sums, so the average stays exact
    avg = _parts(_pa(budget=30, variant=variant, averaged=True), X, y, k=4)
    w = [0.1, 0.2, 0.3, 0.4]
    mixed = combine(avg, weights=w)
    assert mixed.n_support_ <= 30 and mixed.combine_report_["reductions"] > 0
    want = _mixed(avg, w, Xt)
    assert np.abs(mixed.predict(Xt) - want).max() / max(1.0, np.abs(want).max(), _pa_terms(avg)) < 1e-12


@pytest.mark.parametrize("kw", [{"variant": "nn"}, {"variant": "project", "averaged": True},
                                {"variant": "simple", "sampling": True, "beta": 2.0, "random_state": 1}])
def test_pa_mixing_from_a_base_counts_its_examples_once(kw):
    X, y = _data(900, seed=26)
    base = _pa(**kw).fit(X[:300], y[:300])
    copies = [pickle.loads(pickle.dumps(base)).partial_fit(X[300 + 200 * i:500 + 200 * i], y[300 + 200 * i:500 + 200 * i])
              for i in range(3)]
    out = combine_with_base(copies, weights=[200, 200, 200], base=base)
    c, cb = out.counters_, base.counters_
    assert c["examples"] == 900 == out.n_seen_
    for key in ("updates", "squared_error", "absolute_error"):
        want = cb[key] + sum(m.counters_[key] - cb[key] for m in copies)
        assert c[key] == pytest.approx(want, rel=1e-12, abs=1e-12)
    want = base.expected_n_support_ + sum(m.expected_n_support_ - base.expected_n_support_ for m in copies)
    assert out.expected_n_support_ == pytest.approx(want, rel=1e-12, abs=1e-12)
    # base's SVs are shared by every copy: kept once
    assert out.combine_report_["duplicates"] > 0


@pytest.mark.parametrize("variant", PA_VARIANTS)
@pytest.mark.parametrize("averaged", [False, True])
def test_a_combined_pa_regressor_over_its_budget_learns_on(variant, averaged):
    """(persistence and further learning, for every learner: tests/test_combine.py)"""
    X, y = _data(1400, seed=27)
    models = _parts(_pa(budget=25, variant=variant, averaged=averaged), X[:900], y[:900])
    out = combine(models)  # over the budget: the variant's bookkeeping is rebuilt by the reduction
    assert out.combine_report_["reductions"] > 0
    out.partial_fit(X[900:], y[900:])
    assert out.n_seen_ == 1400 and out.n_support_ <= 25 and np.isfinite(out.predict(X)).all()
    Xt, yt = _data(1000, seed=28)
    assert out.score(Xt, yt) > 0.5


def test_pa_models_must_share_their_parameters():
    X, y = _data(300, seed=29)
    a = _pa().fit(X, y)
    for kw, what in [({"variant": "simple"}, "variant"), ({"C": 2.0}, "C"), ({"epsilon": 0.2}, "epsilon"),
                     ({"averaged": True}, "averaged"), ({"fit_intercept": False}, "fit_intercept")]:
        with pytest.raises(ValueError, match=what):
            combine([a, _pa(**kw).fit(X, y)])
    b = _pa(random_state=5).fit(X[::-1], y[::-1])
    assert combine([a, b]).n_support_ <= 15
