"""budgetkernel.combine for the Passive-Aggressive family (every BPA variant), SparsePA and BOGD,
with and without their averaged classifiers: exact within the budget (binary, multi-class and
different class sets), a byte-for-byte copy of one model, validated weights, the learner's own
maintenance over the budget (with a brute-force check of one step's degradation), further
learning, persistence, and the counters of parameter mixing (base)."""

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


ESTIMATORS = (
    [pytest.param(lambda v=v, a=a: _pa(variant=v, averaged=a), id=f"pa-{v}-avg{int(a)}")
     for v in PA_VARIANTS for a in (False, True)]
    + [pytest.param(lambda: _pa(variant="project", loss="ramp"), id="pa-project-ramp"),
       pytest.param(lambda: _pa(budget=None), id="pa-unbudgeted")]
    + [pytest.param(lambda a=a: _spa(a), id=f"spa-avg{int(a)}") for a in (False, True)]
    + [pytest.param(lambda s=s, a=a: _bogd(sampling=s, averaged=a), id=f"bogd-{s}-avg{int(a)}")
       for s in ("uniform", "nonuniform") for a in (False, True)]
)


def _has_budget(est):
    return "budget" in est.get_params() and est.budget is not None


def _fit_parts(make, n_classes, n=600, parts=2, seed=0):
    X, y = _data(n, n_classes, seed)
    models = [make().partial_fit(X[i::parts], y[i::parts], classes=np.arange(n_classes)) for i in range(parts)]
    return models, X, y


def _relerr(got, want):
    return np.max(np.abs(got - want)) / max(np.max(np.abs(want)), 1e-300)


def _whole(est):
    """A budget that holds any union of these tests (None: a learner without a budget)."""
    return 10_000 if _has_budget(est) else None


@pytest.mark.parametrize("make", ESTIMATORS)
@pytest.mark.parametrize("n_classes", [2, 3])
def test_within_budget_is_the_weighted_average(make, n_classes):
    models, _, _ = _fit_parts(make, n_classes, parts=3)
    w = np.array([0.2, 0.5, 0.3])
    out = bk.combine(models, weights=[2.0, 5.0, 3.0], budget=_whole(models[0]))
    Z = _probes()
    want = sum(wk * m.decision_function(Z) for wk, m in zip(w, models))
    assert _relerr(out.decision_function(Z), want) < 1e-12
    rep = out.combine_report_
    assert rep["reductions"] == 0 and rep["degradation"] == 0.0
    assert rep["union_size"] == sum(m._model.n_support for m in models)
    assert out.n_seen_ == sum(m.n_seen_ for m in models)
    # default weights: the examples each model saw
    out = bk.combine(models, budget=_whole(models[0]))
    n = np.array([m.n_seen_ for m in models], dtype=float)
    want = sum(nk / n.sum() * m.decision_function(Z) for nk, m in zip(n, models))
    assert _relerr(out.decision_function(Z), want) < 1e-12


def _expected_union(models, weights, classes, Z):
    """sum_k w_k f_k in the columns of `classes` by CombinePlan::add_row's rule: a binary model's
    f goes +f/2 to its class 1 and -f/2 to its class 0."""
    out = np.zeros((len(Z), len(classes)))
    for wk, m in zip(weights, models):
        f = m.decision_function(Z)
        cols = np.searchsorted(classes, m.classes_)
        if f.ndim == 1:
            out[:, cols[1]] += 0.5 * wk * f
            out[:, cols[0]] -= 0.5 * wk * f
        else:
            out[:, cols] += wk * f
    return out


@pytest.mark.parametrize("make", ESTIMATORS)
def test_different_class_sets(make):
    X, y = _data(900, 4, 3)
    Z = _probes()
    # binary models on {0, 1} and {1, 2}: three classes, the binary f split over its pair
    a = make().partial_fit(X[:300][y[:300] < 2], y[:300][y[:300] < 2], classes=[0, 1])
    sel = (y[300:600] == 1) | (y[300:600] == 2)
    b = make().partial_fit(X[300:600][sel], y[300:600][sel], classes=[1, 2])
    out = bk.combine([a, b], weights=[0.4, 0.6], budget=_whole(a))
    assert list(out.classes_) == [0, 1, 2]
    assert _relerr(out.decision_function(Z), _expected_union([a, b], [0.4, 0.6], out.classes_, Z)) < 1e-12
    # multi-class models on {0, 1, 2} and {1, 2, 3}: their columns mapped into four
    s1, s2 = y[:450] < 3, y[450:] > 0
    c = make().partial_fit(X[:450][s1], y[:450][s1], classes=[0, 1, 2])
    d = make().partial_fit(X[450:][s2], y[450:][s2], classes=[1, 2, 3])
    out = bk.combine([c, d], weights=[0.7, 0.3], budget=_whole(c))
    assert list(out.classes_) == [0, 1, 2, 3]
    assert _relerr(out.decision_function(Z), _expected_union([c, d], [0.7, 0.3], out.classes_, Z)) < 1e-12
    out.partial_fit(X[:50], y[:50])  # and it learns all four classes
    assert out.n_seen_ == c.n_seen_ + d.n_seen_ + 50


@pytest.mark.parametrize("make", ESTIMATORS)
def test_one_model_is_a_copy(make):
    (m,), _, _ = _fit_parts(make, 3, parts=1)
    out = bk.combine([m])
    assert out._model.to_bytes() == m._model.to_bytes()
    assert out.combine_report_["union_size"] == m._model.n_support


@pytest.mark.parametrize("make", [ESTIMATORS[1], ESTIMATORS[10], ESTIMATORS[12]])
@pytest.mark.parametrize("weights", [[-1.0, 2.0], [np.nan, 1.0], [0.0, 0.0], [1.0], [1.0, 1.0, 1.0], [np.inf, 1.0]])
def test_weights_are_validated(make, weights):
    models, _, _ = _fit_parts(make, 2)
    with pytest.raises(ValueError):
        bk.combine(models, weights=weights)


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


def test_parameters_must_agree():
    X, y = _data(200, 2, 1)
    a = _pa(variant="nn").fit(X, y)
    b = _pa(variant="simple").fit(X, y)
    with pytest.raises(ValueError, match="variant"):
        bk.combine([a, b])
    with pytest.raises(ValueError, match="variants"):  # the core names it too
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


@pytest.mark.parametrize("make", ESTIMATORS)
def test_combined_model_saves_loads_and_learns(make, tmp_path):
    models, X, y = _fit_parts(make, 3)
    out = bk.combine(models, weights=[1, 2])
    path = tmp_path / "m.bkm"
    out.save(path)
    back = bk.load(path)
    Z = _probes()
    np.testing.assert_array_equal(back.decision_function(Z), out.decision_function(Z))
    assert back._model.to_bytes() == out._model.to_bytes()
    back.partial_fit(X[:150], y[:150])
    out.partial_fit(X[:150], y[:150])
    assert back._model.to_bytes() == out._model.to_bytes()
    _check_keeps_learning(out, X, y)


@pytest.mark.parametrize("make", ESTIMATORS)
def test_base_counters(make):
    X, y = _data(900, 3, 2)
    base = make().partial_fit(X[:300], y[:300], classes=[0, 1, 2])
    a, b = copy.deepcopy(base), copy.deepcopy(base)
    a.partial_fit(X[300:600], y[300:600])
    b.partial_fit(X[600:], y[600:])
    out = combine_with_base([a, b], weights=[a.n_seen_ - base.n_seen_, b.n_seen_ - base.n_seen_], base=base)
    cb, ca, cc = base.counters_, a.counters_, b.counters_
    rep = out.combine_report_
    for key in ("examples", "updates", "mistakes", "labels"):
        assert out.counters_[key] == ca[key] + cc[key] - cb[key], key
    assert out.counters_["maintenance_steps"] == ca["maintenance_steps"] + cc["maintenance_steps"] - cb["maintenance_steps"] + rep["reductions"]
    assert out.n_seen_ == 900
    if out.averaged:  # base's retired SVs, which both models hold, are kept once
        def retired(m):
            return m._model.n_support_average - m._model.n_support

        if retired(base) > 0:
            assert retired(out) < retired(a) + retired(b)
        if not (isinstance(out, BudgetedPAClassifier) and out.variant == "project"):  # (activation may fold more)
            assert retired(out) <= retired(a) + retired(b) - retired(base) + rep["reductions"]
