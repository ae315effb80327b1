"""Sparse PA, kernel OGD / BOGD and the averaged classifiers, against numpy references."""

import pickle

import numpy as np
import pytest

import budgetkernel
from budgetkernel import BOGDClassifier, BudgetedPAClassifier, SparsePAClassifier, datasets
from budgetkernel import io as bk_io
from budgetkernel._native import core

from test_passive_aggressive import rbf


def scores(sv_x, coef, Z, gamma):
    if len(sv_x) == 0:
        return np.zeros((len(Z), coef.shape[1] if coef.ndim == 2 else 1))
    return rbf(Z, sv_x, gamma) @ coef


def spa_core(d, c, gamma, alpha, beta, eta, averaged=False, seed=0):
    return core.SparsePA(d, c, kernel="rbf", gamma=gamma, alpha=alpha, beta=beta, eta=eta, averaged=averaged, seed=seed)


# SPA with forced sampling (Z_t = 1 whenever rho_t > 0) against Proposition 1's closed form and
# against PA-I (alpha = beta = eta large) is tested in C++ (cpp/tests/test_sparse_pa.cpp): forced
# sampling is a sampling policy injected there, not a parameter of the binding or the file.


def test_spa_with_zero_probability_changes_nothing():
    X, y = datasets.checkerboard(400, random_state=3)
    # Examples with margin >= 1 under the SPA model have rho = 0: no draw, no change.
    spa = SparsePAClassifier(beta=1.0, alpha=1.0, eta=10.0, gamma=2.0, random_state=0).fit(X, y)
    d = scores(spa.support_vectors_, spa.dual_coef_, X, 2.0)[:, 0] * np.where(y == 1, 1, -1)  # f_t, not f_bar
    safe = d >= 1.0 + 1e-9
    assert safe.sum() > 5
    before = spa._model.to_bytes()
    coef = spa.dual_coef_.copy()
    spa.partial_fit(X[safe], y[safe])
    np.testing.assert_array_equal(spa.dual_coef_, coef)
    assert spa.expected_n_support_ == pickle.loads(pickle.dumps(spa)).expected_n_support_
    # Only the counters (and the averaged predictor's divisor) moved; the generator did not.
    restored = core.SparsePA.from_bytes(before)
    restored.partial_fit(X[safe], (y[safe] == 1).astype(np.int32))
    np.testing.assert_array_equal(restored.coefficients, spa.dual_coef_)


def test_theorem_3_2_expected_number_of_svs():
    """E[#SV] = E[sum_t rho_t] (Theorem 3.2): 200 seeded runs on one fixed stream."""
    X, y = datasets.noisy_checkerboard(1500, random_state=4)
    y01 = (y == 1).astype(np.int32)
    diff = []
    for seed in range(200):
        m = spa_core(2, 2, 2.0, 1.0, 4.0, 0.5, seed=seed)
        m.partial_fit(X, y01)
        diff.append(m.n_support - m.expected_support)
    diff = np.array(diff)
    se = diff.std(ddof=1) / np.sqrt(len(diff))
    assert abs(diff.mean()) < 3 * se
    assert 1.0 < diff.std() < 30  # the SV count is genuinely random


def explicit_mean_check(make, X, y, probes, gamma, tol=1e-10):
    """Learn one example at a time, keep every intermediate classifier, compare the averaged
    decision values with the explicit mean of f_1 = 0, f_2, ..., f_{t+1}."""
    est = make()
    classes = np.unique(y)
    total = None
    count = 1  # f_1 = 0
    for t in range(len(X)):
        est.learn_one(X[t], y[t], classes=classes)
        cur = scores(est.support_vectors_, est.dual_coef_, probes, gamma)
        total = cur if total is None else total + cur
        count += 1
        if t % 37 == 0 or t == len(X) - 1:
            avg = est.decision_function(probes)
            np.testing.assert_allclose(avg.reshape(len(probes), -1), total / count, rtol=0, atol=tol)
    return est


@pytest.mark.parametrize(
    "make",
    [
        lambda: SparsePAClassifier(beta=3.0, eta=0.5, gamma=2.0, random_state=1),
        lambda: BOGDClassifier(budget=15, eta=0.5, lam=0.05, averaged=True, gamma=2.0, random_state=1),
        lambda: BOGDClassifier(budget=15, sampling="nonuniform", lam=0.05, averaged=True, gamma=2.0, random_state=1),
        lambda: BOGDClassifier(budget=None, eta=0.5, lam=0.01, averaged=True, gamma=2.0),
        lambda: BudgetedPAClassifier(budget=15, variant="simple", averaged=True, gamma=2.0),
        lambda: BudgetedPAClassifier(budget=15, variant="nn", averaged=True, gamma=2.0),
        lambda: BudgetedPAClassifier(budget=15, variant="project", averaged=True, gamma=2.0),
        lambda: BudgetedPAClassifier(budget=15, variant="random", averaged=True, gamma=2.0, random_state=2),
    ],
    ids=["spa", "bogd", "bogd++", "ogd", "bpa-s", "bpa-nn", "bpa-p", "pa+rand"],
)
def test_averaged_classifier_equals_explicit_mean(make):
    X, y = datasets.noisy_checkerboard(300, random_state=5)
    probes = datasets.checkerboard(25, random_state=6)[0]
    est = explicit_mean_check(make, X, y, probes, 2.0)
    assert est.n_support_average_ >= est.n_support_
    # The averaged predictor as one expansion (what the model file holds) predicts the same.
    avg = scores(est.average_support_vectors_, est.average_dual_coef_, probes, 2.0)[:, 0]
    np.testing.assert_allclose(avg, est.decision_function(probes), rtol=0, atol=1e-12)


def test_averaged_multiclass_equals_explicit_mean():
    X, y = datasets.waveform(200, random_state=7)
    probes = datasets.waveform(10, random_state=8)[0]
    for make in (
        lambda: SparsePAClassifier(beta=2.0, gamma=0.05, random_state=0),
        lambda: BOGDClassifier(budget=12, lam=0.05, averaged=True, gamma=0.05, random_state=0),
        lambda: BudgetedPAClassifier(budget=12, variant="project", averaged=True, gamma=0.05),
    ):
        explicit_mean_check(make, X, y, probes, 0.05)


def test_spa_averaging_does_not_change_training_and_helps():
    X, y = datasets.two_gaussians(30000, random_state=0)
    Xt, yt = datasets.two_gaussians(5000, random_state=1)
    kw = dict(alpha=0.5, beta=50.0, eta=1.0, gamma=0.4, random_state=3)
    last = SparsePAClassifier(averaged=False, **kw).fit(X, y)
    avg = SparsePAClassifier(averaged=True, **kw).fit(X, y)
    np.testing.assert_array_equal(last.dual_coef_, avg.dual_coef_)
    assert avg.n_support_average_ == avg.n_support_ == last.n_support_
    assert avg.score(Xt, yt) > last.score(Xt, yt)
    assert avg.score(Xt, yt) > 0.78  # Bayes accuracy is 0.804


def test_expected_budget_mode():
    X, y = datasets.two_gaussians(20000, random_state=0)
    spa = SparsePAClassifier(alpha=0.5, target_svs=200, gamma=0.4, random_state=0).fit(X, y)
    assert spa.beta_ == pytest.approx(0.5 * 20000 / 200)
    assert spa.expected_n_support_ <= 200
    assert abs(spa.n_support_ - spa.expected_n_support_) < 4 * np.sqrt(spa.expected_n_support_)
    stream = SparsePAClassifier(alpha=0.5, target_svs=200, stream_length=40000, gamma=0.4)
    stream.partial_fit(X, y, classes=[-1, 1])
    assert stream.beta_ == pytest.approx(100.0)
    with pytest.raises(ValueError, match="stream_length"):
        SparsePAClassifier(target_svs=10).partial_fit(X, y, classes=[-1, 1])


def reference_ogd(X, y01, gamma, eta, lam):
    sv, coef = [], []
    for t in range(len(X)):
        f = scores(X[sv], np.array(coef).reshape(-1, 1), X[t : t + 1], gamma)[0, 0] if sv else 0.0
        u = 1.0 if y01[t] == 1 else -1.0
        coef = [c * (1 - eta * lam) for c in coef]
        if u * f < 1:
            sv.append(t)
            coef.append(eta * u)
    return np.array(sv), np.array(coef).reshape(-1, 1)


def test_ogd_equals_reference_and_big_budget_bogd_equals_ogd():
    X, y = datasets.noisy_checkerboard(500, random_state=9)
    ogd = BOGDClassifier(budget=None, eta=0.3, lam=0.02, gamma=2.0).fit(X, y)
    sv, coef = reference_ogd(X, (y == 1).astype(int), 2.0, 0.3, 0.02)
    np.testing.assert_array_equal(ogd.support_vectors_, X[sv])
    np.testing.assert_allclose(ogd.dual_coef_, coef, rtol=0, atol=1e-12)
    for sampling in ("uniform", "nonuniform"):
        big = BOGDClassifier(budget=500, sampling=sampling, eta=0.3, lam=0.02, gamma=2.0).fit(X, y)
        np.testing.assert_array_equal(big.dual_coef_, ogd.dual_coef_)
        assert big.counters_["maintenance_steps"] == 0


@pytest.mark.parametrize("sampling", ["uniform", "nonuniform"])
def test_bogd_removal_is_unbiased(sampling):
    """E[f_{t+1} | f_t] = (1 - eta lam) f_t + eta y k(x_t, .): Monte Carlo over the removal."""
    X, y = datasets.noisy_checkerboard(200, random_state=10)
    y01 = (y == 1).astype(np.int32)
    m = core.BOGD(2, 2, kernel="rbf", gamma=2.0, eta=0.5, lam=0.05, budget=8, sampling=sampling, max_coef=np.inf, seed=0)
    m.partial_fit(X, y01)
    state = m.to_bytes()
    probes = datasets.checkerboard(6, random_state=11)[0]
    x_new = np.array([1.3, 2.2])
    f_old = m.decision_function(probes)[:, 0]
    # A label with margin < 1: the step adds x_new, so the full store discards an SV.
    y_new = 1 if m.decision_one(x_new)[0] < 1 else 0
    u = 1.0 if y_new == 1 else -1.0
    expected = (1 - 0.5 * 0.05) * f_old + 0.5 * u * rbf(probes, x_new[None, :], 2.0)[:, 0]
    R = 6000
    vals = np.empty((R, len(probes)))
    removed = set()
    for r in range(R):
        c = core.BOGD.from_bytes(state)
        c.reseed(r)
        c.learn_one(x_new, y_new)
        vals[r] = c.decision_function(probes)[:, 0]
        removed.add(tuple(sorted(c.support_ids)))
    se = vals.std(axis=0, ddof=1) / np.sqrt(R)
    assert np.all(np.abs(vals.mean(axis=0) - expected) < 4 * se + 1e-12)
    assert len(removed) == 8  # every old SV can be the one discarded


@pytest.mark.parametrize(
    "make",
    [
        lambda: SparsePAClassifier(beta=3.0, gamma=0.05, random_state=4),
        lambda: SparsePAClassifier(beta=3.0, averaged=False, gamma=0.05, random_state=4),
        lambda: BOGDClassifier(budget=25, averaged=True, gamma=0.05, random_state=4),
        lambda: BOGDClassifier(budget=25, sampling="nonuniform", max_coef=2.0, gamma=0.05, random_state=4),
        lambda: BudgetedPAClassifier(budget=25, variant="project", averaged=True, gamma=0.05),
    ],
)
def test_pickle_and_save_resume_identically(tmp_path, make):
    X, y = datasets.waveform(1600, random_state=0)
    full = make().fit(X, y)
    half = make().partial_fit(X[:800], y[:800], classes=[0, 1, 2])
    half.save(tmp_path / "m.bkm")
    info = core.load_model_info((tmp_path / "m.bkm").read_bytes())
    assert info["n_support"] == (half.n_support_average_ if half.averaged else half.n_support_)
    for restored in (pickle.loads(pickle.dumps(half)), budgetkernel.load(tmp_path / "m.bkm")):
        np.testing.assert_array_equal(restored.decision_function(X), half.decision_function(X))
        restored.partial_fit(X[800:], y[800:])
        np.testing.assert_array_equal(restored.dual_coef_, full.dual_coef_)
        np.testing.assert_array_equal(restored.decision_function(X[:50]), full.decision_function(X[:50]))
        assert restored.counters_ == full.counters_


@pytest.mark.parametrize(
    "cls, params, match",
    [
        (SparsePAClassifier, dict(beta=0.5, alpha=1.0), "beta"),
        (SparsePAClassifier, dict(eta=0.0), "eta"),
        (SparsePAClassifier, dict(alpha=float("nan")), "alpha"),
        (SparsePAClassifier, dict(averaged="yes"), "averaged"),
        (SparsePAClassifier, dict(target_svs=0), "target_svs"),
        (BOGDClassifier, dict(budget=0), "budget"),
        (BOGDClassifier, dict(sampling="random"), "sampling"),
        (BOGDClassifier, dict(lam=-1.0), "lam"),
        (BOGDClassifier, dict(eta=10.0, lam=0.2), "eta \\* lam"),
        (BOGDClassifier, dict(max_coef=0.0), "max_coef"),
        (BudgetedPAClassifier, dict(averaged=1), "averaged"),
    ],
)
def test_invalid_parameters_raise(cls, params, match):
    X, y = datasets.checkerboard(50, random_state=0)
    with pytest.raises(ValueError, match=match):
        cls(**params).fit(X, y)


def test_bad_input_raises():
    X, y = datasets.checkerboard(100, random_state=0)
    for clf in (SparsePAClassifier(gamma=1.0).fit(X, y), BOGDClassifier(budget=10, gamma=1.0).fit(X, y)):
        with pytest.raises(ValueError, match="NaN"):
            clf.partial_fit(np.full((2, 2), np.nan), [1, -1])
        with pytest.raises(ValueError, match="features"):
            clf.predict(np.ones((2, 3)))
        with pytest.raises(ValueError, match="not in classes_"):
            clf.partial_fit(X[:2], [5, 5])
        data = clf._model.to_bytes()
        with pytest.raises(RuntimeError):
            type(clf._model).from_bytes(data[: len(data) // 2])


@pytest.mark.parametrize("learner", ["spa", "bogd"])
def test_cli_trains_spa_and_bogd(tmp_path, capsys, learner):
    X, y = datasets.noisy_checkerboard(2000, random_state=0)
    bk_io.dump_svmlight(X, y, tmp_path / "train.libsvm")
    model = tmp_path / "m.bkm"
    argv = ["train", str(tmp_path / "train.libsvm"), "-o", str(model), "--learner", learner, "--gamma", "2", "-q"]
    assert budgetkernel.cli.main(argv) == 0
    est = budgetkernel.load(model)
    assert type(est) is {"spa": SparsePAClassifier, "bogd": BOGDClassifier}[learner]
    assert est.gamma_ == 2.0 and est.n_seen_ == 2000 and 0 < est.n_support_ <= 2000
    assert est.online_error_ < 0.5
    assert budgetkernel.cli.main(argv + ["--maintenance", "merge"]) == 2


def test_average_views_exist_only_when_averaged_and_the_averaged_size_is_reported():
    from sklearn.base import clone

    from budgetkernel.stream import evaluate_prequential

    X, y = datasets.noisy_checkerboard(2000, random_state=0)
    last = BOGDClassifier(budget=20, gamma=2.0, random_state=0).fit(X, y)
    for name in ("n_support_average_", "average_support_vectors_", "average_dual_coef_"):
        with pytest.raises(AttributeError, match="averaged=True"):
            getattr(last, name)
        assert not hasattr(last, name)
    avg = BOGDClassifier(budget=20, averaged=True, gamma=2.0, random_state=0)
    r = evaluate_prequential(avg, iter([(X, y)]), classes=[-1, 1])
    # the budgeted average keeps every SV it ever removed: far more than the budget
    assert r["n_support"] == 20 and r["n_support_average"] == avg.n_support_average_ > 200
    assert "n_support_average" not in evaluate_prequential(clone(last), iter([(X, y)]), classes=[-1, 1])


def test_expected_budget_mode_names_an_overflowing_beta():
    X, y = datasets.noisy_checkerboard(100, random_state=0)
    with pytest.raises(ValueError, match="target_svs=1 .* not a finite number"):
        SparsePAClassifier(alpha=1e300, target_svs=1, stream_length=2**62).fit(X, y)
