"""budgetkernel.combine for the kernel perceptron family, every budget rule.

Within the budget the result is exactly sum_k w_k f_k; over it each rule reduces the union by
its own maintenance (learners/perceptron.hpp, KernelPerceptron::combine_from), and the
reported degradation is checked against ||f_before - f_after||^2 computed in the RKHS.
"""

import copy
import pickle

import numpy as np
import pytest

import budgetkernel
from budgetkernel import KernelPerceptron, datasets
from budgetkernel._combine import combine as combine_with_base

RULES = ["stop", "random", "forgetron", "max-margin", "projectron", "projectron++"]
GAMMA = 0.05  # waveform has 21 features of variance ~1-4: no SV numerically in the others' span


def rbf(A, B, gamma=GAMMA):
    d = (A * A).sum(1)[:, None] + (B * B).sum(1)[None, :] - 2 * A @ B.T
    return np.exp(-gamma * np.maximum(d, 0))


def rkhs_dist2(X1, A1, X2, A2):
    """||sum_i A1_i phi(X1_i) - sum_j A2_j phi(X2_j)||^2, summed over the outputs."""
    X = np.vstack([X1, X2])
    A = np.vstack([A1, -A2])
    return float(np.trace(A.T @ rbf(X, X) @ A))


def data(n, multiclass, seed):
    X, y = datasets.waveform(n, random_state=seed)
    return (X, y) if multiclass else (X, (y == 0).astype(int))


def parts(rule, multiclass, k=3, n=150, budget=15, seed=0, **kw):
    models = []
    for i in range(k):
        X, y = data(n, multiclass, seed + i)
        clf = KernelPerceptron(budget=budget, maintenance=rule, gamma=GAMMA, beta=0.3, random_state=i, **kw)
        models.append(clf.fit(X, y))
    return models


def mixture(models, w, X):
    w = np.asarray(w, float) / np.sum(w)
    return sum(wk * m.decision_function(X) for wk, m in zip(w, models))


@pytest.mark.parametrize("rule", RULES)
@pytest.mark.parametrize("multiclass", [False, True])
def test_within_budget_is_the_weighted_average(rule, multiclass):
    models = parts(rule, multiclass)
    Xt, _ = data(100, multiclass, 99)
    w = [1.0, 2.0, 0.5]
    union = sum(len(m.support_vectors_) for m in models)
    mixed = budgetkernel.combine(models, weights=w, budget=int(union))
    f = mixture(models, w, Xt)
    g = mixed.decision_function(Xt)
    assert g.shape == f.shape
    np.testing.assert_allclose(g, f, rtol=0, atol=1e-12 * max(1.0, np.abs(f).max()))
    rep = mixed.combine_report_
    assert rep["reductions"] == 0 and rep["degradation"] == 0.0
    assert len(mixed.support_vectors_) == rep["union_size"]
    assert mixed.budget == union
    # default weights: the examples each model saw (equal here)
    np.testing.assert_allclose(
        budgetkernel.combine(models, budget=int(union)).decision_function(Xt),
        mixture(models, [1, 1, 1], Xt),
        rtol=0,
        atol=1e-12 * max(1.0, np.abs(f).max()),
    )


@pytest.mark.parametrize("rule", RULES)
def test_unbudgeted_keeps_the_whole_union(rule):
    models = parts(rule, True, budget=None)
    Xt, _ = data(60, True, 98)
    mixed = budgetkernel.combine(models)
    f = mixture(models, [m.n_seen_ for m in models], Xt)
    np.testing.assert_allclose(mixed.decision_function(Xt), f, rtol=0, atol=1e-12 * max(1.0, np.abs(f).max()))
    assert mixed.budget is None
    assert len(mixed.support_vectors_) == sum(len(m.support_vectors_) for m in models)


@pytest.mark.parametrize("rule", RULES)
def test_different_class_sets(rule):
    """One model on classes {0, 1}, one on {1, 2}: the result has {0, 1, 2}; a binary model's
    column a enters as +a/2 on its second class and -a/2 on its first (CombinePlan::add_row)."""
    X, y = datasets.waveform(300, random_state=5)
    a = KernelPerceptron(budget=20, maintenance=rule, gamma=GAMMA).fit(X[y != 2], y[y != 2])
    b = KernelPerceptron(budget=20, maintenance=rule, gamma=GAMMA).fit(X[y != 0], y[y != 0])
    mixed = budgetkernel.combine([a, b], weights=[0.3, 0.7], budget=40)
    np.testing.assert_array_equal(mixed.classes_, [0, 1, 2])
    fa, fb = a.decision_function(X), b.decision_function(X)
    f = np.zeros((len(X), 3))
    f[:, 1] += 0.3 * fa / 2
    f[:, 0] -= 0.3 * fa / 2
    f[:, 2] += 0.7 * fb / 2
    f[:, 1] -= 0.7 * fb / 2
    np.testing.assert_allclose(mixed.decision_function(X), f, rtol=0, atol=1e-12 * max(1.0, np.abs(f).max()))
    # the classes of the SVs' examples are mapped as well: it keeps learning correctly
    mixed.partial_fit(X, y)
    assert mixed.n_seen_ == a.n_seen_ + b.n_seen_ + len(X)


@pytest.mark.parametrize("rule", RULES)
@pytest.mark.parametrize("multiclass", [False, True])
def test_single_model_is_a_copy(rule, multiclass):
    (m,) = parts(rule, multiclass, k=1)
    c = budgetkernel.combine([m])
    assert c is not m and c._model is not m._model
    assert c._model.to_bytes() == m._model.to_bytes()
    assert c.prequential_curve_ == m.prequential_curve_
    assert c.combine_report_["union_size"] == len(m.support_vectors_)


@pytest.mark.parametrize("rule", RULES)
def test_shared_support_vectors_are_kept_once(rule):
    """A model combined with itself: every SV is a duplicate, kept once with its coefficients
    added, so the result is the model's decision function within the same budget."""
    (m,) = parts(rule, True, k=1)
    mixed = budgetkernel.combine([m, copy.deepcopy(m)], weights=[0.25, 0.75])
    rep = mixed.combine_report_
    assert rep["union_size"] == rep["duplicates"] == len(m.support_vectors_)
    assert rep["reductions"] == 0
    Xt, _ = data(80, True, 97)
    f = m.decision_function(Xt)
    np.testing.assert_allclose(mixed.decision_function(Xt), f, rtol=0, atol=1e-12 * max(1.0, np.abs(f).max()))
    np.testing.assert_array_equal(mixed.support_vectors_, m.support_vectors_)


@pytest.mark.parametrize("weights", [[1.0, -1.0], [1.0, np.nan], [0.0, 0.0], [1.0], [1.0, 1.0, 1.0], [1.0, np.inf]])
def test_weights_are_validated(weights):
    models = parts("random", False, k=2)
    with pytest.raises(ValueError):
        budgetkernel.combine(models, weights=weights)


def test_parameters_must_agree():
    a = parts("max-margin", False, k=1)[0]
    X, y = data(100, False, 7)
    b = KernelPerceptron(budget=15, maintenance="max-margin", gamma=GAMMA, beta=0.5).fit(X, y)
    with pytest.raises(ValueError, match="beta"):
        budgetkernel.combine([a, b])
    b = KernelPerceptron(budget=15, maintenance="max-margin", gamma=GAMMA, beta=0.3, random_state=123).fit(X, y)
    assert budgetkernel.combine([a, b]).n_seen_ == a.n_seen_ + b.n_seen_  # random_state may differ


@pytest.mark.parametrize("rule", RULES)
@pytest.mark.parametrize("multiclass", [False, True])
def test_one_overflow_degradation_is_the_rkhs_distance(rule, multiclass):
    models = parts(rule, multiclass, k=2, n=100)
    exact = budgetkernel.combine(models, budget=1000)
    n = len(exact.support_vectors_)
    reduced = budgetkernel.combine(models, budget=n - 1)
    rep = reduced.combine_report_
    assert len(reduced.support_vectors_) == n - 1 == reduced.budget
    assert rep["reductions"] == 1 and rep["degradation"] > 0
    bf = rkhs_dist2(exact.support_vectors_, exact.dual_coef_, reduced.support_vectors_, reduced.dual_coef_)
    assert rep["degradation"] == pytest.approx(bf, rel=1e-9, abs=1e-12)
    c = reduced.counters_
    assert c["maintenance_steps"] == sum(m.counters_["maintenance_steps"] for m in models) + 1
    assert c["degradation"] == pytest.approx(sum(m.counters_["degradation"] for m in models) + bf, rel=1e-9)


@pytest.mark.parametrize("rule", RULES)
@pytest.mark.parametrize("multiclass", [False, True])
def test_over_budget_holds_the_budget(rule, multiclass):
    models = parts(rule, multiclass, k=4, budget=15)
    mixed = budgetkernel.combine(models)
    rep = mixed.combine_report_
    assert rep["union_size"] > 15
    assert len(mixed.support_vectors_) == 15
    assert rep["reductions"] == rep["union_size"] - 15
    assert rep["degradation"] > 0
    if rule == "stop":  # the 15 most important SVs, the rest dropped: degradation = their norms
        exact = budgetkernel.combine(models, budget=1000)
        imp = np.sort((exact.dual_coef_**2).sum(1))[::-1]
        assert rep["degradation"] == pytest.approx(imp[15:].sum(), rel=1e-12)
        kept = np.sort((mixed.dual_coef_**2).sum(1))[::-1]
        np.testing.assert_allclose(kept, imp[:15], rtol=0, atol=0)
    if rule.startswith("projectron"):  # f = the projection of the union onto the kept SVs' span
        exact = budgetkernel.combine(models, budget=1000)
        S = mixed.support_vectors_
        resid = rbf(S, exact.support_vectors_) @ exact.dual_coef_ - rbf(S, S) @ mixed.dual_coef_
        assert np.abs(resid).max() < 1e-8


@pytest.mark.parametrize("rule", RULES)
@pytest.mark.parametrize("budget", [None, 12])
def test_keeps_learning_and_round_trips(rule, budget, tmp_path):
    models = parts(rule, True, k=2, budget=budget)
    mixed = budgetkernel.combine(models)
    X, y = data(150, True, 50)
    path = tmp_path / "m.bk"
    mixed.save(path)
    loaded = budgetkernel.load(path)
    pickled = pickle.loads(pickle.dumps(mixed))
    for other in (loaded, pickled):
        assert other._model.to_bytes() == mixed._model.to_bytes()
    for m in (mixed, loaded, pickled):
        m.partial_fit(X, y)
    Xt, _ = data(50, True, 51)
    for other in (loaded, pickled):
        np.testing.assert_array_equal(other.decision_function(Xt), mixed.decision_function(Xt))
        assert other._model.to_bytes() == mixed._model.to_bytes()
    assert mixed.n_seen_ == 450
    if budget:
        assert len(mixed.support_vectors_) <= budget


@pytest.mark.parametrize("rule", RULES)
def test_base_counters(rule):
    """combine(models, base=b): counters = b + sum_k (m_k - b), the reduction's steps added."""
    X, y = data(400, True, 60)
    base = KernelPerceptron(budget=15, maintenance=rule, gamma=GAMMA).fit(X[:100], y[:100])
    models = []
    for lo, hi in [(100, 220), (220, 400)]:
        m = copy.deepcopy(base)
        m.partial_fit(X[lo:hi], y[lo:hi])
        models.append(m)
    mixed = combine_with_base(models, base=base)
    c, b = mixed.counters_, base.counters_
    assert c["examples"] == 400
    for key in ("updates", "mistakes"):
        assert c[key] == b[key] + sum(m.counters_[key] - b[key] for m in models)
    reductions = mixed.combine_report_["reductions"]
    assert (
        c["maintenance_steps"]
        == b["maintenance_steps"]
        + sum(m.counters_["maintenance_steps"] - b["maintenance_steps"] for m in models)
        + reductions
    )
    plain = budgetkernel.combine(models)
    assert plain.counters_["examples"] == sum(m.n_seen_ for m in models)
