"""budgetkernel.combine, the weighted average of models: the properties every combinable learner
shares, written once over the registry (tests/conftest.py), and the oracles of Budgeted SGD and
linear Pegasos. The other learners' own oracles are in test_combine_*.py.

Oracles: the decision values (predictions) of sum_k w_k f_k computed from the models themselves;
CombinePlan::add_row's rule for models of different class sets (a binary f enters its class 1 as
+f/2 and its class 0 as -f/2); the identity combine([m]) == m byte for byte; counters added up
by hand; the RKHS distance between the exact union and a reduced one, from Gram matrices.
"""

import copy
import functools
import pickle

import numpy as np
import pytest
from sklearn.base import is_regressor
from sklearn.exceptions import NotFittedError

import budgetkernel as bk
from budgetkernel import combine, datasets, load
from budgetkernel._combine import combine as combine_with_base  # the base= of parameter mixing
from conftest import REGISTRY, Case, combinable_cases

# The combine tests' configurations beyond the registry's: the variants whose combine has a
# code path (or model layout) of its own that the registry does not sweep.
EXTRA = [
    Case("bpa-simple", bk.BudgetedPAClassifier, {"variant": "simple"}),
    Case("bpa-simple-averaged", bk.BudgetedPAClassifier, {"variant": "simple", "averaged": True}),
    Case("bpa-project-averaged", bk.BudgetedPAClassifier, {"variant": "project", "averaged": True}),
    Case("spa-averaged", bk.SparsePAClassifier, {"beta": 2.0, "averaged": True}),
    Case("bogd++", bk.BOGDClassifier, {"sampling": "nonuniform"}),
    Case("perceptron-stop", bk.KernelPerceptron, {"maintenance": "stop"}),
    Case("bpar-simple", bk.BudgetedPARegressor, {"variant": "simple"}),
    Case("bpar-simple-averaged", bk.BudgetedPARegressor, {"variant": "simple", "averaged": True}),
    Case("bpar-nn-averaged", bk.BudgetedPARegressor, {"averaged": True}),
    Case("bpar-project", bk.BudgetedPARegressor, {"variant": "project"}),
    Case("qklms-tiny", bk.KLMSRegressor, {"epsilon": 1e-9}),  # no two models' centres that close: exact
]
CASES = combinable_cases() + EXTRA
MAINTENANCE = ["merge", "project", "project-exact", "remove-random", "remove-oldest", "remove-smallest"]
# The weighted average is checked for more configurations still: every budget maintenance rule
# and loss, whose union is built by code of its own (and an averaged, intercept or sampling state).
SWEEP = (
    [Case(f"bsgd-{m}-average-{a}", bk.BudgetedSGDClassifier, {"maintenance": m, "average": a})
     for m in MAINTENANCE for a in ("auto", False)]
    + [Case(f"bsgdr-{m}-{loss}-intercept-{i}", bk.BudgetedSGDRegressor, {"maintenance": m, "loss": loss, "fit_intercept": i})
       for m in MAINTENANCE for loss in ("epsilon_insensitive", "squared") for i in (True, False)]
    + [Case(f"bpar-{v}-{'-'.join(f'{k}={x}' for k, x in kw.items())}", bk.BudgetedPARegressor, {"variant": v, **kw})
       for v in ("simple", "nn", "project")
       for kw in [{}, {"averaged": True}, {"fit_intercept": False, "pa_type": 2}, {"sampling": True, "beta": 2.0},
                  {"pa_type": 0}]]
)
BY_ID = {case.id: case for case in CASES + SWEEP}
# Not a weighted average: the SVMs, retrained on the pooled twins (test_combine_tvm.py), and
# QKLMS, whose quantisation folds the union's close centres (test_combine_regression.py).
AVERAGES = [case for case in CASES if not case.exact_svm and case.id != "qklms"]
CLASSIFIERS = [case for case in AVERAGES if not case.regressor]
EXPANSIONS = [case for case in AVERAGES if case.cls is not bk.LinearPegasosClassifier]
REFUSED = [case for case in REGISTRY.values() if not case.combinable and case.id != "PrequentialSearch"]

SIZES = {"budget": 15, "gamma": 1.0, "random_state": 0}
# A parameter of each class that combine needs equal in every model, and another value for it.
DISAGREE = {
    bk.BudgetedSGDClassifier: ("gamma", 0.5), bk.LinearPegasosClassifier: ("lam", 1e-2), bk.BudgetedPAClassifier: ("C", 2.0),
    bk.KernelPerceptron: ("beta", 0.5), bk.SparsePAClassifier: ("alpha", 0.5), bk.BOGDClassifier: ("eta", 0.1),
    bk.TwinVectorMachine: ("C", 2.0), bk.ReservoirSVC: ("C", 2.0), bk.BudgetedSGDRegressor: ("lam", 1e-2),
    bk.BudgetedPARegressor: ("C", 2.0), bk.KLMSRegressor: ("eta", 0.1),
}


def _data(case, n, seed, n_classes=3):
    """A noisy 4x4 checkerboard on [-2, 2)^2 with n_classes classes, or for a regressor (which
    ignores n_classes) a smooth function with an offset (for the intercept)."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(-2.0, 2.0, size=(n, 2))
    if case.regressor:
        return X, np.sin(1.5 * X[:, 0]) + X[:, 1] ** 2 / 4 + 0.1 * rng.normal(size=n) + 2.0
    y = (np.floor(X[:, 0] + 2).astype(int) + np.floor(X[:, 1] + 2).astype(int)) % n_classes
    flip = rng.random(n) < 0.1
    y[flip] = (y[flip] + 1) % n_classes
    return X, y


def _make(case, **kw):
    return case.make(**{**SIZES, **kw})


def _fit(est, X, y, n_classes=3):
    return est.partial_fit(X, y) if is_regressor(est) else est.partial_fit(X, y, classes=np.arange(n_classes))


def _fitted(case, n_classes=3, k=2):
    """k models of the case fitted on interleaved parts of 200 examples each (cached: a test
    that changes them copies them first)."""
    return _fitted_by_id(case.id, n_classes, k)


@functools.lru_cache(maxsize=None)
def _fitted_by_id(case_id, n_classes, k):
    case = BY_ID[case_id]
    X, y = _data(case, 200 * k, seed=1, n_classes=n_classes)
    return tuple(_fit(_make(case), X[i::k], y[i::k], n_classes) for i in range(k))


def _scores(m, X):
    return m.predict(X) if is_regressor(m) else m.decision_function(X)


def _has_budget(est):
    return est.get_params().get("budget") is not None


def _whole(est):
    """A budget that holds any union of these tests (None: a learner without a budget)."""
    return 10_000 if _has_budget(est) else None


def _rel_err(got, want, models):
    """max |got - want| relative to the magnitude of want; for a regressor also to sum_j |alpha_j|
    of each model's expansions (current and averaged), which bounds the rounding of the sums
    that cancel in its predictions."""
    terms = 0.0
    if is_regressor(models[0]):
        terms = max(np.abs(m.dual_coef_).sum() for m in models)
        terms = max([terms] + [np.abs(m.average_dual_coef_).sum() for m in models if getattr(m, "averaged", False)])
    return np.abs(got - want).max() / max(1.0, np.abs(want).max(), terms)


# ---------------------------------------------------------------- every combinable learner
@pytest.mark.parametrize("n_classes", [2, 3])
@pytest.mark.parametrize("case", CASES, ids=repr)
def test_one_model_is_a_copy(case, n_classes, tmp_path):
    m = _fitted(case, n_classes=n_classes)[0]
    out = combine([m])
    assert out is not m and out._model is not m._model
    assert out._model.to_bytes() == m._model.to_bytes()
    assert getattr(out, "prequential_curve_", None) == getattr(m, "prequential_curve_", None)
    if _has_budget(m):  # its own budget, given: the same
        assert combine([m], budget=m.budget)._model.to_bytes() == m._model.to_bytes()
    if hasattr(m, "support_vectors_"):
        assert out.combine_report_["union_size"] == len(m.support_vectors_)
    m, out = copy.deepcopy(m), copy.deepcopy(out)
    m.save(tmp_path / "a.bk")
    out.save(tmp_path / "b.bk")
    assert (tmp_path / "a.bk").read_bytes() == (tmp_path / "b.bk").read_bytes()


@pytest.mark.parametrize(
    "weights, match",
    [([1.0], "one entry per model"), ([1.0, 1.0, 1.0], "one entry per model"), ([[1.0, 1.0]], "one entry per model"),
     ([1.0, -1.0], "non-negative"), ([np.nan, 1.0], "finite"), ([np.inf, 1.0], "finite"), ([0.0, 0.0], "all be zero")],
)
@pytest.mark.parametrize("case", CASES, ids=repr)
def test_weights_are_validated(case, weights, match):
    with pytest.raises(ValueError, match=match):
        combine(_fitted(case), weights=weights)


@pytest.mark.parametrize("case", CASES, ids=repr)
def test_models_must_agree(case):
    a = _fitted(case)[0]
    X, y = _data(case, 100, seed=2)
    name, value = DISAGREE[case.cls]
    with pytest.raises(ValueError, match=name):
        combine([a, _fit(_make(case).set_params(**{name: value}), X, y)])
    with pytest.raises(ValueError, match="features"):
        combine([a, _fit(_make(case), np.hstack([X, X]), y)])
    other = next(c for c in CASES if c.cls is not case.cls and c.regressor == case.regressor)
    with pytest.raises(TypeError, match="one class"):
        combine([a, _fitted(other)[0]])
    with pytest.raises(NotFittedError):
        combine([a, _make(case)])
    with pytest.raises(ValueError, match="budget"):
        combine([a], budget=0)
    # random_state only seeds: models that differ in it combine
    assert combine([a, _fit(_make(case, random_state=3), X, y)]).n_seen_ == a.n_seen_ + 100


def test_no_models_are_refused():
    with pytest.raises(ValueError, match="at least one"):
        combine([])


@pytest.mark.parametrize("case", REFUSED, ids=repr)
def test_the_exact_svm_and_the_krls_filters_are_refused(case):
    X, y = _data(case, 60, seed=12, n_classes=2)
    models = [_make(case).fit(X[i::2], y[i::2]) for i in range(2)]
    with pytest.raises(TypeError, match="cannot be combined"):
        combine(models)


@pytest.mark.parametrize("case", CASES, ids=repr)
def test_base_counts_the_shared_start_once(case):
    """combine(models, base=b): counters = b + sum_k (m_k - b), the reduction's steps added."""
    X, y = _data(case, 700, seed=3)
    base = _fit(_make(case), X[:300], y[:300])
    models = [_fit(copy.deepcopy(base), X[lo:lo + 200], y[lo:lo + 200]) for lo in (300, 500)]
    out = combine_with_base(models, weights=[200, 200], base=base)
    c, cb = out.counters_, base.counters_
    assert out.n_seen_ == c["examples"] == 700
    for key in {"updates", "mistakes", "labels", "squared_error", "absolute_error"} & set(c):
        assert c[key] == pytest.approx(cb[key] + sum(m.counters_[key] - cb[key] for m in models), rel=1e-12, abs=1e-12)
    if not case.exact_svm and case.cls is not bk.KLMSRegressor:  # (QKLMS's folds are not maintenance steps)
        steps = sum(m.counters_["maintenance_steps"] - cb["maintenance_steps"] for m in models)
        assert c["maintenance_steps"] == cb["maintenance_steps"] + steps + out.combine_report_["reductions"]
    assert combine(models).n_seen_ == 2 * 500  # without a base: a plain sum


@pytest.mark.parametrize("case", CASES, ids=repr)
def test_the_combined_model_saves_loads_pickles_and_keeps_learning(case, tmp_path):
    """Over the models' own budget (the reduction rebuilt the learner's bookkeeping): pickle, a
    deep copy and save/load are the same bytes, and each copy learns on as the original."""
    out = combine(_fitted(case), weights=[1, 2])
    out.save(tmp_path / "m.bk")  # (writes the estimator's metadata into the model)
    copies = [load(tmp_path / "m.bk"), pickle.loads(pickle.dumps(out)), copy.deepcopy(out)]
    X, y = _data(case, 150, seed=4)
    for m in copies:
        assert m._model.to_bytes() == out._model.to_bytes()
        np.testing.assert_array_equal(_scores(m, X), _scores(out, X))
    for m in [out, *copies]:
        m.partial_fit(X, y)
    for m in copies:
        assert m._model.to_bytes() == out._model.to_bytes()
        np.testing.assert_array_equal(_scores(m, X), _scores(out, X))
    assert out.n_seen_ == 550 and np.isfinite(_scores(out, X)).all()
    if _has_budget(out) and hasattr(out, "support_vectors_") and not case.exact_svm:
        assert len(out.support_vectors_) <= out.budget


# ---------------------------------------------------------------- the weighted averages
@pytest.mark.parametrize(
    "case, n_classes",
    [pytest.param(case, n, id=f"{case.id}-{n}") for case in AVERAGES + SWEEP for n in ([0] if case.regressor else [2, 3])],
)
def test_within_the_budget_it_is_the_weighted_average(case, n_classes):
    models = _fitted(case, n_classes=n_classes, k=3)
    X, _ = _data(case, 300, seed=99)
    out = combine(models, weights=[2.0, 5.0, 3.0], budget=_whole(models[0]))
    w = [0.2, 0.5, 0.3]
    want = sum(wk * _scores(m, X) for wk, m in zip(w, models))
    assert _rel_err(_scores(out, X), want, models) < 1e-12
    rep = out.combine_report_
    assert rep["reductions"] == 0 and rep["degradation"] == 0.0
    assert out.get_params().get("budget") == _whole(models[0])  # the budget asked for
    if hasattr(out, "support_vectors_"):
        assert rep["union_size"] == len(out.support_vectors_) == sum(len(m.support_vectors_) for m in models)
    assert out.n_seen_ == out.counters_["examples"] == sum(m.n_seen_ for m in models)
    if case.regressor:
        assert not hasattr(out, "classes_")
        if getattr(out, "fit_intercept", False):
            assert out.intercept_ == pytest.approx(sum(wk * m.intercept_ for wk, m in zip(w, models)), rel=1e-15)
        if getattr(out, "sampling", False):
            assert out.expected_n_support_ == pytest.approx(sum(m.expected_n_support_ for m in models), rel=1e-14)
    else:
        np.testing.assert_array_equal(out.classes_, models[0].classes_)
    # default weights: the examples each model saw
    out = combine(models, budget=_whole(models[0]))
    n = np.array([m.n_seen_ for m in models], dtype=float)
    want = sum(nk / n.sum() * _scores(m, X) for nk, m in zip(n, models))
    assert _rel_err(_scores(out, X), want, models) < 1e-12


def _expected_union(models, weights, classes, Z):
    """sum_k w_k f_k in the columns of `classes` by CombinePlan::add_row's rule."""
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


@pytest.mark.parametrize("case", CLASSIFIERS, ids=repr)
def test_different_class_sets_combine_on_their_union(case):
    X, y = _data(case, 900, seed=5, n_classes=4)
    Z, _ = _data(case, 40, seed=6)
    # binary models on {0, 1} and {1, 2}: three classes, the binary f split over its pair
    s1, s2 = y[:300] < 2, (y[300:600] == 1) | (y[300:600] == 2)
    a = _make(case).partial_fit(X[:300][s1], y[:300][s1], classes=[0, 1])
    b = _make(case).partial_fit(X[300:600][s2], y[300:600][s2], classes=[1, 2])
    out = combine([a, b], weights=[0.4, 0.6], budget=_whole(a))
    np.testing.assert_array_equal(out.classes_, [0, 1, 2])
    assert _rel_err(out.decision_function(Z), _expected_union([a, b], [0.4, 0.6], out.classes_, Z), [a]) < 1e-12
    # multi-class models on {0, 1, 2} and {1, 2, 3}: their columns mapped into four
    s1, s2 = y[:450] < 3, y[450:] > 0
    c = _make(case).partial_fit(X[:450][s1], y[:450][s1], classes=[0, 1, 2])
    d = _make(case).partial_fit(X[450:][s2], y[450:][s2], classes=[1, 2, 3])
    out = combine([c, d], weights=[0.7, 0.3], budget=_whole(c))
    np.testing.assert_array_equal(out.classes_, [0, 1, 2, 3])
    assert _rel_err(out.decision_function(Z), _expected_union([c, d], [0.7, 0.3], out.classes_, Z), [c]) < 1e-12
    out.partial_fit(X[:50], y[:50])  # the classes of the SVs' examples are mapped too: it learns all four
    assert out.n_seen_ == c.n_seen_ + d.n_seen_ + 50


@pytest.mark.parametrize("case", EXPANSIONS, ids=repr)
def test_shared_support_vectors_are_kept_once_with_their_coefficients_added(case):
    """A model combined with itself: every SV is a duplicate, kept once, so the result is the
    model's own function within the same budget."""
    m = _fitted(case)[0]
    out = combine([m, copy.deepcopy(m)], weights=[0.25, 0.75])
    rep = out.combine_report_
    assert rep["union_size"] == rep["duplicates"] == len(m.support_vectors_) and rep["reductions"] == 0
    np.testing.assert_array_equal(out.support_vectors_, m.support_vectors_)
    np.testing.assert_allclose(out.dual_coef_, m.dual_coef_, rtol=1e-15, atol=0)
    X, _ = _data(case, 80, seed=7)
    assert _rel_err(_scores(out, X), _scores(m, X), [m]) < 1e-12


# ---------------------------------------------------------------- Budgeted SGD and linear Pegasos


def _blobs(n, n_classes, seed, d=3):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, n_classes, n)
    X = rng.normal(size=(n, d)) + 1.5 * np.eye(max(n_classes, d))[y % d][:, :d]
    return X, y


def _parts(est, X, y, k=3):
    return [est.__class__(**est.get_params()).fit(X[i::k], y[i::k]) for i in range(k)]


def _mixed(models, w, X):
    return sum(wk * m.decision_function(X) for wk, m in zip(w, models))


def _max_rel_err(a, b):
    return np.abs(a - b).max() / max(1.0, np.abs(b).max())


def _rkhs_distance2(X1, A1, X2, A2, gamma):
    def K(P, Q):
        return np.exp(-gamma * ((P[:, None, :] - Q[None, :, :]) ** 2).sum(-1))

    return float(np.sum(A1 * (K(X1, X1) @ A1)) - 2 * np.sum(A1 * (K(X1, X2) @ A2)) + np.sum(A2 * (K(X2, X2) @ A2)))


@pytest.mark.parametrize("maintenance", ["merge", "project", "remove-smallest"])
def test_one_reduction_reports_its_rkhs_degradation(maintenance):
    X, y = _blobs(400, 2, seed=4)
    gamma = 0.5
    models = _parts(bk.BudgetedSGDClassifier(budget=10, maintenance=maintenance, gamma=gamma, average=False), X, y, k=2)
    exact = combine(models, budget=100)
    n = exact.n_support_
    out = combine(models, budget=n - 1)
    assert out.n_support_ == n - 1
    rep = out.combine_report_
    assert rep["reductions"] == 1 and rep["union_size"] == n
    brute = _rkhs_distance2(
        exact._model.support_vectors, exact._model.coefficients, out._model.support_vectors,
        out._model.coefficients, gamma,
    )
    assert rep["degradation"] == pytest.approx(brute, rel=1e-8, abs=1e-12)
    assert out.counters_["degradation"] == pytest.approx(sum(m.counters_["degradation"] for m in models) + brute)


@pytest.mark.parametrize("maintenance", MAINTENANCE)
def test_over_the_budget_the_union_is_reduced_by_the_learners_maintenance(maintenance):
    X, y = datasets.checkerboard(3000, random_state=0)
    models = _parts(bk.BudgetedSGDClassifier(budget=40, maintenance=maintenance, gamma=2.0), X, y, k=4)
    out = combine(models)
    assert out.n_support_ == 40 and out.budget == 40
    rep = out.combine_report_
    assert rep["union_size"] == 160 and rep["reductions"] == 120 and rep["degradation"] > 0
    Xt, yt = datasets.checkerboard(2000, random_state=1)
    if not maintenance.startswith("remove"):
        # merging and projection keep what they fold in: the mixture predicts as well as its
        # parts (a removal keeps B of the 4B SVs, the oldest-rule ones by age alone: 0.59 vs 0.69)
        assert out.score(Xt, yt) > min(m.score(Xt, yt) for m in models) - 0.02


def test_linear_pegasos_combines_its_weights_exactly():
    X, y = _blobs(800, 3, seed=8)
    models = _parts(bk.LinearPegasosClassifier(lam=1e-3, batch_size=1), X, y)
    w = [3.0, 1.0, 1.0]
    out = combine(models, weights=w)
    wn = np.array(w) / 5.0
    assert _max_rel_err(out.decision_function(X), _mixed(models, wn, X)) < 1e-12
    out.partial_fit(X[:50], y[:50])


def test_linear_pegasos_mixes_pending_partial_batches():
    X, y = _blobs(300, 2, seed=9)
    models = [bk.LinearPegasosClassifier(batch_size=8).partial_fit(X[i::2][:101], y[i::2][:101], classes=[0, 1])
              for i in range(2)]
    out = combine(models)
    assert out._model.pending == 5  # 101 mod 8 pending in each model, mixed by equal weights
    with pytest.raises(ValueError, match="no budget"):
        combine(models, budget=10)
