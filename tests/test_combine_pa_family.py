"""budgetkernel.combine for the Passive-Aggressive family (every BPA variant), SparsePA and BOGD,
with and without their averaged classifiers: the learner's own maintenance over the budget
(with a brute-force check of one step's degradation) and what the averaged classifiers keep of a
base. The properties every combinable learner shares are in tests/test_combine.py."""

import copy
import pickle

import numpy as np
import pytest

import budgetkernel as bk
from budgetkernel import BOGDClassifier, BudgetedPAClassifier, SparsePAClassifier
from budgetkernel._combine import combine as combine_with_base


def _data(n, n_classes, seed):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-2.0, 2.0, size=(n, 2))
    y = (np.floor(X[:, 0] + 2).astype(int) + np.floor(X[:, 1] + 2).astype(int)) % n_classes
    flip = rng.random(n) < 0.1
    y[flip] = (y[flip] + 1) % n_classes
    return X, y


def _probes(seed=5):
    return np.random.default_rng(seed).normal(scale=1.5, size=(40, 2))


PA_VARIANTS = ["simple", "nn", "project", "random"]


def _pa(budget=15, variant="nn", averaged=False, **kw):
    return BudgetedPAClassifier(budget=budget, variant=variant, averaged=averaged, gamma=1.0, C=0.8, random_state=0, **kw)


def _spa(averaged=False):
    return SparsePAClassifier(beta=2.0, averaged=averaged, gamma=1.0, random_state=0)


def _bogd(budget=15, sampling="uniform", averaged=False):
    return BOGDClassifier(budget=budget, sampling=sampling, eta=0.3, lam=0.01, averaged=averaged, gamma=1.0,
                          random_state=0)


def _has_budget(est):
    return "budget" in est.get_params() and est.budget is not None


def _fit_parts(make, n_classes, n=600, parts=2, seed=0):
    X, y = _data(n, n_classes, seed)
    models = [make().partial_fit(X[i::parts], y[i::parts], classes=np.arange(n_classes)) for i in range(parts)]
    return models, X, y


def _relerr(got, want):
    return np.max(np.abs(got - want)) / max(np.max(np.abs(want)), 1e-300)


def _rkhs_dist2(gamma, X1, A1, X2, A2):
    P = np.vstack([X1, X2])
    C = np.vstack([A1, -A2])
    d2 = ((P[:, None, :] - P[None, :, :]) ** 2).sum(-1)
    return float(np.einsum("ij,ic,jc->", np.exp(-gamma * d2), C, C))


@pytest.mark.parametrize("variant", PA_VARIANTS)
@pytest.mark.parametrize("averaged", [False, True])
@pytest.mark.parametrize("n_classes", [2, 3])
def test_pa_over_budget(variant, averaged, n_classes):
    make = lambda: _pa(budget=12, variant=variant, averaged=averaged)
    models, X, y = _fit_parts(make, n_classes, n=500)
    Z = _probes()
    union = sum(m._model.n_support for m in models)
    ref = bk.combine(models, weights=[1, 1], budget=10_000)
    for budget in (12, union - 1):
        out = bk.combine(models, weights=[1, 1], budget=budget)
        rep = out.combine_report_
        n_sv = out._model.n_support
        assert n_sv == budget if variant != "project" else n_sv <= budget
        assert out.budget == budget
        assert rep["reductions"] >= union - budget and rep["degradation"] > 0.0
        assert out.counters_["maintenance_steps"] == sum(m.counters_["maintenance_steps"] for m in models) + rep["reductions"]
        if averaged:  # the average keeps what the maintenance removed: still exact
            want = 0.5 * (models[0].decision_function(Z) + models[1].decision_function(Z))
            assert _relerr(out.decision_function(Z), want) < 1e-12
        if rep["reductions"] == 1:  # one step: its degradation is ||f_before - f_after||^2
            d2 = _rkhs_dist2(1.0, ref._model.support_vectors, ref._model.coefficients, out._model.support_vectors,
                             out._model.coefficients)
            assert rep["degradation"] == pytest.approx(d2, rel=1e-9, abs=1e-12)
        _check_keeps_learning(out, X, y)


@pytest.mark.parametrize("sampling", ["uniform", "nonuniform"])
@pytest.mark.parametrize("averaged", [False, True])
def test_bogd_over_budget(sampling, averaged):
    models, X, y = _fit_parts(lambda: _bogd(budget=15, sampling=sampling, averaged=averaged), 3, n=500)
    out = bk.combine(models, weights=[1, 3])
    rep = out.combine_report_
    assert out._model.n_support == 15
    assert rep["reductions"] == rep["union_size"] - 15 and rep["degradation"] > 0.0
    if averaged:
        Z = _probes()
        want = 0.25 * models[0].decision_function(Z) + 0.75 * models[1].decision_function(Z)
        assert _relerr(out.decision_function(Z), want) < 1e-12
    _check_keeps_learning(out, X, y)


def test_sparse_pa_keeps_no_budget():
    models, _, _ = _fit_parts(_spa, 2)
    with pytest.raises(ValueError, match="keeps no budget"):
        bk.combine(models, budget=5)
    cores = [m._model for m in models]
    union = sum(c.n_support for c in cores)
    with pytest.raises(ValueError, match="SparsePA keeps no budget"):
        type(cores[0]).combine(cores, [], union - 1, [], 0, None)
    model, rep = type(cores[0]).combine(cores, [], union, [], 0, None)  # a budget the union fits
    assert model.n_support == union and rep["reductions"] == 0


def test_the_core_names_the_variants_that_differ():
    X, y = _data(200, 2, 1)
    a = _pa(variant="nn").fit(X, y)
    b = _pa(variant="simple").fit(X, y)
    with pytest.raises(ValueError, match="variants"):  # (tests/test_combine.py: the estimators' message)
        type(a._model).combine([a._model, b._model])


def _check_keeps_learning(out, X, y):
    """Pickle, save/load round-trip exactly, and the copies keep learning like the original."""
    Z = _probes(9)
    twin = pickle.loads(pickle.dumps(out))
    assert twin._model.to_bytes() == out._model.to_bytes()
    np.testing.assert_array_equal(twin.decision_function(Z), out.decision_function(Z))
    other = copy.deepcopy(out)
    out.partial_fit(X[:200], y[:200])
    twin.partial_fit(X[:200], y[:200])
    other.partial_fit(X[:200], y[:200])
    assert twin._model.to_bytes() == out._model.to_bytes() == other._model.to_bytes()
    if _has_budget(out):
        assert out._model.n_support <= out.budget


AVERAGED = (
    [pytest.param(lambda v=v: _pa(variant=v, averaged=True), id=f"pa-{v}") for v in PA_VARIANTS]
    + [pytest.param(lambda: _spa(True), id="spa"), pytest.param(lambda: _bogd(averaged=True), id="bogd"),
       pytest.param(lambda: _bogd(sampling="nonuniform", averaged=True), id="bogd++")]
)


@pytest.mark.parametrize("make", AVERAGED)
def test_a_base_s_retired_support_vectors_are_kept_once(make):
    """The averaged classifiers with a base (the counters: tests/test_combine.py): base's retired
    SVs, which both models hold, are kept once in the average."""
    X, y = _data(900, 3, 2)
    base = make().partial_fit(X[:300], y[:300], classes=[0, 1, 2])
    a, b = copy.deepcopy(base), copy.deepcopy(base)
    a.partial_fit(X[300:600], y[300:600])
    b.partial_fit(X[600:], y[600:])
    out = combine_with_base([a, b], weights=[a.n_seen_ - base.n_seen_, b.n_seen_ - base.n_seen_], base=base)

    def retired(m):
        return m._model.n_support_average - m._model.n_support

    if retired(base) > 0:
        assert retired(out) < retired(a) + retired(b)
    if not (isinstance(out, BudgetedPAClassifier) and out.variant == "project"):  # (activation may fold more)
        assert retired(out) <= retired(a) + retired(b) - retired(base) + out.combine_report_["reductions"]
