"""budgetkernel.combine for the kernel perceptron family, every budget rule.

Over the budget each rule reduces the union by its own maintenance (learners/perceptron.hpp,
KernelPerceptron::combine_from), and the reported degradation is checked against
||f_before - f_after||^2 computed in the RKHS. The properties every combinable learner shares
(within the budget the result is exactly sum_k w_k f_k, ...) are in tests/test_combine.py.
"""

import numpy as np
import pytest

import budgetkernel
from budgetkernel import KernelPerceptron, datasets

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

