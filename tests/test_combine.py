"""budgetkernel.combine: the weighted average of models, for Budgeted SGD and linear Pegasos, and
the checks every learner shares. (The other learners' combine tests are in test_combine_*.py.)

Oracles: the decision values of sum_k w_k f_k computed from the models themselves; the RKHS
distance between the exact union and a reduced one, from Gram matrices; the identity
combine([m]) == m byte for byte; counters added up by hand.
"""

import pickle

import numpy as np
import pytest

from budgetkernel import BudgetedSGDClassifier, LinearPegasosClassifier, combine, datasets, load
from budgetkernel._combine import combine as combine_with_base

MAINTENANCE = ["merge", "project", "project-exact", "remove-random", "remove-oldest", "remove-smallest"]


def _blobs(n, n_classes, seed, d=3):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, n_classes, n)
    X = rng.normal(size=(n, d)) + 1.5 * np.eye(max(n_classes, d))[y % d][:, :d]
    return X, y


def _parts(est, X, y, k=3):
    return [est.__class__(**est.get_params()).fit(X[i::k], y[i::k]) for i in range(k)]


def _mixed(models, w, X):
    return sum(wk * m.decision_function(X) for wk, m in zip(w, models))


def _rel_err(a, b):
    return np.abs(a - b).max() / max(1.0, np.abs(b).max())


@pytest.mark.parametrize("maintenance", MAINTENANCE)
@pytest.mark.parametrize("n_classes", [2, 4])
@pytest.mark.parametrize("average", ["auto", False])
def test_bsgd_union_within_budget_is_the_weighted_average(maintenance, n_classes, average):
    X, y = _blobs(900, n_classes, seed=n_classes)
    est = BudgetedSGDClassifier(budget=40, maintenance=maintenance, gamma=0.5, lam=1e-3, average=average)
    models = _parts(est, X, y)
    w = np.array([0.2, 0.5, 0.3])
    out = combine(models, weights=w, budget=200)
    assert out.n_support_ == sum(m.n_support_ for m in models)
    assert out.combine_report_["reductions"] == 0 and out.combine_report_["degradation"] == 0.0
    Xt, _ = _blobs(300, n_classes, seed=99)
    assert _rel_err(out.decision_function(Xt), _mixed(models, w, Xt)) < 1e-12
    np.testing.assert_array_equal(out.classes_, models[0].classes_)


def test_bsgd_unbudgeted_models_combine_exactly():
    X, y = _blobs(600, 3, seed=1)
    models = _parts(BudgetedSGDClassifier(budget=None, gamma=0.5), X, y)
    out = combine(models)
    w = np.array([m.n_seen_ for m in models], dtype=float)
    w /= w.sum()
    assert _rel_err(out.decision_function(X), _mixed(models, w, X)) < 1e-12


@pytest.mark.parametrize("est", [BudgetedSGDClassifier(budget=30, gamma=1.0), LinearPegasosClassifier(batch_size=4)])
def test_combining_one_model_is_a_copy(est, tmp_path):
    X, y = _blobs(500, 3, seed=2)
    m = est.fit(X, y)
    out = combine([m])
    assert out._model.to_bytes() == m._model.to_bytes()
    assert out.prequential_curve_ == m.prequential_curve_
    m.save(tmp_path / "a.bk")
    out.save(tmp_path / "b.bk")
    assert (tmp_path / "a.bk").read_bytes() == (tmp_path / "b.bk").read_bytes()


def test_different_class_sets_combine_on_their_union():
    X, y = _blobs(900, 3, seed=3)
    est = BudgetedSGDClassifier(budget=None, gamma=0.5, average=False)
    a = est.__class__(**est.get_params()).fit(X[y != 2], y[y != 2])  # classes {0, 1}: binary
    b = est.__class__(**est.get_params()).fit(X[y != 0], y[y != 0])  # classes {1, 2}
    c = est.__class__(**est.get_params()).fit(X, y)  # {0, 1, 2}
    out = combine([a, b, c], weights=[1, 1, 2])
    np.testing.assert_array_equal(out.classes_, [0, 1, 2])
    fa, fb, fc = a.decision_function(X), b.decision_function(X), c.decision_function(X)
    # a binary model's f enters its two classes as +f/2 (class 1) and -f/2 (class 0)
    want = 0.5 * fc
    want[:, 1] += 0.25 * 0.5 * fa
    want[:, 0] -= 0.25 * 0.5 * fa
    want[:, 2] += 0.25 * 0.5 * fb
    want[:, 1] -= 0.25 * 0.5 * fb
    assert _rel_err(out.decision_function(X), want) < 1e-12


def _rkhs_distance2(X1, A1, X2, A2, gamma):
    def K(P, Q):
        return np.exp(-gamma * ((P[:, None, :] - Q[None, :, :]) ** 2).sum(-1))

    return float(np.sum(A1 * (K(X1, X1) @ A1)) - 2 * np.sum(A1 * (K(X1, X2) @ A2)) + np.sum(A2 * (K(X2, X2) @ A2)))


@pytest.mark.parametrize("maintenance", ["merge", "project", "remove-smallest"])
def test_one_reduction_reports_its_rkhs_degradation(maintenance):
    X, y = _blobs(400, 2, seed=4)
    gamma = 0.5
    models = _parts(BudgetedSGDClassifier(budget=10, maintenance=maintenance, gamma=gamma, average=False), X, y, k=2)
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
    models = _parts(BudgetedSGDClassifier(budget=40, maintenance=maintenance, gamma=2.0), X, y, k=4)
    out = combine(models)
    assert out.n_support_ == 40 and out.budget == 40
    rep = out.combine_report_
    assert rep["union_size"] == 160 and rep["reductions"] == 120 and rep["degradation"] > 0
    Xt, yt = datasets.checkerboard(2000, random_state=1)
    if not maintenance.startswith("remove"):
        # merging and projection keep what they fold in: the mixture predicts as well as its
        # parts (a removal keeps B of the 4B SVs, the oldest-rule ones by age alone: 0.59 vs 0.69)
        assert out.score(Xt, yt) > min(m.score(Xt, yt) for m in models) - 0.02


def test_shared_support_vectors_are_kept_once_with_their_coefficients_added():
    X, y = _blobs(300, 2, seed=5)
    m = BudgetedSGDClassifier(budget=None, gamma=0.5, average=False).fit(X, y)
    out = combine([m, m], weights=[0.25, 0.75])
    assert out.combine_report_["duplicates"] == m.n_support_
    np.testing.assert_array_equal(out._model.support_vectors, m._model.support_vectors)
    np.testing.assert_allclose(out._model.coefficients, m._model.coefficients, rtol=1e-15, atol=0)


def test_the_combined_model_keeps_learning_and_persists(tmp_path):
    X, y = _blobs(1200, 3, seed=6)
    models = _parts(BudgetedSGDClassifier(budget=30, gamma=0.5, random_state=0), X[:900], y[:900])
    out = combine(models)
    back = pickle.loads(pickle.dumps(out))
    out.save(tmp_path / "m.bk")
    loaded = load(tmp_path / "m.bk")
    for m in (out, back, loaded):
        m.partial_fit(X[900:], y[900:])
    for m in (out, back, loaded):
        m._model.metadata = b""  # save() wrote out's; the learned state must be the same bytes
    assert back._model.to_bytes() == out._model.to_bytes() == loaded._model.to_bytes()
    np.testing.assert_array_equal(loaded.decision_function(X), out.decision_function(X))
    assert out.n_seen_ == 1200 and out.n_support_ <= 30


def test_base_counts_the_shared_start_once():
    X, y = _blobs(1200, 2, seed=7)
    base = BudgetedSGDClassifier(budget=30, gamma=0.5).fit(X[:400], y[:400])
    models = []
    for i in range(3):
        m = pickle.loads(pickle.dumps(base))
        m.partial_fit(X[400 + 200 * i: 600 + 200 * i], y[400 + 200 * i: 600 + 200 * i])
        models.append(m)
    out = combine_with_base(models, weights=[1, 1, 1], base=base)
    assert out.n_seen_ == 400 + 3 * 200
    for key in ("updates", "mistakes"):
        assert out.counters_[key] == base.counters_[key] + sum(m.counters_[key] - base.counters_[key] for m in models)
    assert combine(models).n_seen_ == 3 * 600  # without a base: a plain sum


def test_linear_pegasos_combines_its_weights_exactly():
    X, y = _blobs(800, 3, seed=8)
    models = _parts(LinearPegasosClassifier(lam=1e-3, batch_size=1), X, y)
    w = [3.0, 1.0, 1.0]
    out = combine(models, weights=w)
    wn = np.array(w) / 5.0
    assert _rel_err(out.decision_function(X), _mixed(models, wn, X)) < 1e-12
    out.partial_fit(X[:50], y[:50])


def test_linear_pegasos_mixes_pending_partial_batches():
    X, y = _blobs(300, 2, seed=9)
    models = [LinearPegasosClassifier(batch_size=8).partial_fit(X[i::2][:101], y[i::2][:101], classes=[0, 1])
              for i in range(2)]
    out = combine(models)
    assert out._model.pending == 5  # 101 mod 8 pending in each model, mixed by equal weights
    with pytest.raises(ValueError, match="no budget"):
        combine(models, budget=10)


@pytest.mark.parametrize(
    "weights, match",
    [([1.0], "one entry per model"), ([1.0, -1.0], "non-negative"), ([np.nan, 1.0], "finite"),
     ([0.0, 0.0], "all be zero"), ([[1.0, 1.0]], "one entry per model")],
)
def test_invalid_weights_are_rejected(weights, match):
    X, y = _blobs(200, 2, seed=10)
    models = _parts(BudgetedSGDClassifier(budget=10, gamma=0.5), X, y, k=2)
    with pytest.raises(ValueError, match=match):
        combine(models, weights=weights)


def test_incompatible_models_are_rejected():
    X, y = _blobs(200, 2, seed=11)
    a = BudgetedSGDClassifier(budget=10, gamma=0.5).fit(X, y)
    with pytest.raises(ValueError, match="gamma"):
        combine([a, BudgetedSGDClassifier(budget=10, gamma=1.0).fit(X, y)])
    with pytest.raises(ValueError, match="features"):
        combine([a, BudgetedSGDClassifier(budget=10, gamma=0.5).fit(X[:, :2], y)])
    with pytest.raises(TypeError, match="one class"):
        combine([a, LinearPegasosClassifier().fit(X, y)])
    with pytest.raises(ValueError, match="at least one"):
        combine([])
    with pytest.raises(ValueError, match="budget"):
        combine([a], budget=0)
    from sklearn.exceptions import NotFittedError

    with pytest.raises(NotFittedError):
        combine([a, BudgetedSGDClassifier(budget=10, gamma=0.5)])
    # random_state only seeds: models that differ in it combine
    b = BudgetedSGDClassifier(budget=10, gamma=0.5, random_state=3).fit(X, y)
    assert combine([a, b]).n_support_ <= 10


def test_the_exact_svm_is_not_combined_but_cascaded():
    from budgetkernel import IncrementalSVC

    X, y = _blobs(60, 2, seed=12)
    m = IncrementalSVC(gamma=0.5).fit(X, y)
    with pytest.raises(TypeError, match="cannot be combined"):
        combine([m, m])
