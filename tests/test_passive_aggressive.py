"""Passive-Aggressive estimators against plain numpy references of the papers' updates."""

import pickle

import numpy as np
import pytest

import budgetkernel
from budgetkernel import BudgetedPAClassifier, cli, datasets
from budgetkernel import io as bk_io

VARIANTS = ["simple", "nn", "project", "random"]


def rbf(A, B, gamma):
    d = (A * A).sum(1)[:, None] + (B * B).sum(1)[None, :] - 2 * A @ B.T
    return np.exp(-gamma * np.maximum(d, 0))


def reference_pa(X, y, classes, gamma, C, pa_type, ramp=False):
    """Kernel PA with f recomputed densely (Crammer et al. 2006; BPA paper eq. 3 and 15).

    Binary: one column, u = +-1. Multi-class: max-loss form, u = e_y - e_r for the
    highest-scoring wrong class r. Returns the SV indices, coefficients and labels needed.
    """
    c = len(classes)
    cols = 1 if c == 2 else c
    sv, coef, needed = [], [], 0
    for t in range(len(X)):
        x = X[t : t + 1]
        f = rbf(X[sv], x, gamma)[:, 0] @ np.array(coef).reshape(-1, cols) if sv else np.zeros(cols)
        yi = int(np.searchsorted(classes, y[t]))
        if cols == 1:
            u = np.array([1.0 if yi == 1 else -1.0])
            margin = u[0] * f[0]
            label_needed = abs(f[0]) <= 1
        else:
            wrong = [r for r in range(c) if r != yi]
            r = wrong[int(np.argmax(f[wrong]))]
            u = np.zeros(c)
            u[yi], u[r] = 1.0, -1.0
            margin = f[yi] - f[r]
            top2 = np.sort(f)[-2:]
            label_needed = top2[1] - top2[0] <= 1
        if not ramp or label_needed:
            needed += 1
        loss = 1.0 - margin
        if loss <= 0 or (ramp and not (-1 <= margin <= 1)):
            continue
        q = (u @ u) * 1.0  # k(x, x) = 1 for the RBF kernel
        tau = {0: loss / q, 1: min(C, loss / q), 2: loss / (q + 1 / (2 * C))}[pa_type]
        sv.append(t)
        coef.append(tau * u)
    return np.array(sv), np.array(coef).reshape(-1, cols), needed


@pytest.mark.parametrize("pa_type", [0, 1, 2])
@pytest.mark.parametrize("loss", ["hinge", "ramp"])
@pytest.mark.parametrize("multiclass", [False, True])
def test_unbudgeted_pa_equals_reference(pa_type, loss, multiclass):
    if multiclass:
        X, y = datasets.waveform(300, random_state=1)
    else:
        X, y = datasets.noisy_checkerboard(300, random_state=1)
    classes = np.unique(y)
    clf = BudgetedPAClassifier(budget=None, pa_type=pa_type, loss=loss, C=0.7, gamma=0.8).fit(X, y)
    sv, coef, needed = reference_pa(X, y, classes, 0.8, 0.7, pa_type, ramp=loss == "ramp")
    np.testing.assert_array_equal(clf.support_vectors_, X[sv])
    np.testing.assert_allclose(clf.dual_coef_, coef, rtol=0, atol=1e-10)
    assert clf.labels_used_ == needed
    assert clf.counters_["labels"] == (needed if loss == "ramp" else len(X))


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("loss", ["hinge", "ramp"])
def test_budget_larger_than_stream_equals_unbudgeted(variant, loss):
    X, y = datasets.noisy_checkerboard(500, random_state=2)
    kw = dict(loss=loss, C=1.0, gamma=2.0, random_state=0)
    ref = BudgetedPAClassifier(budget=None, **kw).fit(X, y)
    clf = BudgetedPAClassifier(budget=600, variant=variant, **kw).fit(X, y)
    np.testing.assert_array_equal(clf.dual_coef_, ref.dual_coef_)
    np.testing.assert_array_equal(clf.support_vectors_, ref.support_vectors_)


@pytest.mark.parametrize("variant", VARIANTS)
def test_budget_is_kept_and_learns(variant):
    X, y = datasets.noisy_checkerboard(10_000, random_state=3)
    Xt, yt = datasets.checkerboard(4000, random_state=4)
    clf = BudgetedPAClassifier(budget=50, variant=variant, C=1.0, gamma=2.0, random_state=0).fit(X, y)
    assert clf.n_support_ == 50
    assert clf.counters_["maintenance_steps"] > 0
    # a trained budgeted model is far better than chance on the 4x4 board (PA+Rand is the weakest)
    assert clf.score(Xt, yt) > (0.6 if variant == "random" else 0.75)


def test_multiclass_budgeted_learns():
    X, y = datasets.waveform(6000, random_state=0)
    Xt, yt = datasets.waveform(3000, random_state=1)
    for variant in ["simple", "nn", "project"]:
        clf = BudgetedPAClassifier(budget=60, variant=variant, C=0.1, gamma=0.02).fit(X, y)
        assert clf.dual_coef_.shape == (60, 3)
        assert clf.score(Xt, yt) > 0.7, variant


@pytest.mark.parametrize("variant", ["simple", "nn", "project"])
def test_active_learning_asks_only_needed_labels(variant):
    X, y = datasets.noisy_checkerboard(3000, random_state=5)
    kw = dict(budget=40, variant=variant, loss="ramp", C=1.0, gamma=2.0)
    full = BudgetedPAClassifier(**kw).fit(X, y)
    active = BudgetedPAClassifier(**kw)
    asked = []

    def oracle(i, x):
        np.testing.assert_array_equal(x, X[i])
        asked.append(i)
        return y[i]

    queried = active.partial_fit_active(X, oracle, classes=[-1, 1])
    assert queried.sum() == len(asked) == full.labels_used_ == active.labels_used_ < len(X)
    np.testing.assert_array_equal(np.flatnonzero(queried), asked)
    np.testing.assert_array_equal(active.dual_coef_, full.dual_coef_)
    np.testing.assert_array_equal(active.support_vectors_, full.support_vectors_)
    # mistakes are counted on the labelled examples only (the docstring's lower bound)
    assert active.counters_["examples"] == full.counters_["examples"] == len(X)
    assert active.counters_["mistakes"] <= full.counters_["mistakes"]
    assert active.online_error_ <= full.online_error_


def test_active_learning_with_hinge_loss_asks_every_label():
    X, y = datasets.noisy_checkerboard(500, random_state=5)
    clf = BudgetedPAClassifier(budget=30, gamma=2.0)
    assert clf.partial_fit_active(X, lambda i, x: y[i], classes=[-1, 1]).all()
    with pytest.raises(ValueError, match="oracle returned label"):
        clf.partial_fit_active(X, lambda i, x: 7)
    with pytest.raises(TypeError):
        clf.partial_fit_active(X, "not callable")


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("loss", ["hinge", "ramp"])
def test_pickle_and_save_resume_identically(tmp_path, variant, loss):
    X, y = datasets.waveform(2000, random_state=0)
    kw = dict(budget=30, variant=variant, loss=loss, C=0.5, gamma=0.05, random_state=3)
    full = BudgetedPAClassifier(**kw).fit(X, y)
    half = BudgetedPAClassifier(**kw).partial_fit(X[:1000], y[:1000], classes=[0, 1, 2])
    half.save(tmp_path / "m.bkm")
    for restored in (pickle.loads(pickle.dumps(half)), budgetkernel.load(tmp_path / "m.bkm")):
        np.testing.assert_array_equal(restored.decision_function(X), half.decision_function(X))
        restored.partial_fit(X[1000:], y[1000:])
        np.testing.assert_array_equal(restored.dual_coef_, full.dual_coef_)
        np.testing.assert_array_equal(restored.support_vectors_, full.support_vectors_)
        assert restored.counters_ == full.counters_


def test_same_seed_same_model():
    X, y = datasets.noisy_checkerboard(3000, random_state=0)
    a = BudgetedPAClassifier(budget=20, variant="random", gamma=2.0, random_state=7).fit(X, y)
    b = BudgetedPAClassifier(budget=20, variant="random", gamma=2.0, random_state=7).fit(X, y)
    np.testing.assert_array_equal(a.dual_coef_, b.dual_coef_)


@pytest.mark.parametrize(
    "params",
    [
        dict(budget=0),
        dict(variant="projection"),
        dict(loss="squared"),
        dict(pa_type=3),
        dict(pa_type=True),
        dict(pa_type=1.0),
        dict(C=0.0),
        dict(C=float("nan")),
        dict(gamma=-1.0),
    ],
)
def test_invalid_parameters_raise(params):
    X, y = datasets.checkerboard(50, random_state=0)
    with pytest.raises(ValueError):
        BudgetedPAClassifier(**params).fit(X, y)


def test_bad_input_raises():
    X, y = datasets.checkerboard(100, random_state=0)
    clf = BudgetedPAClassifier(budget=10, gamma=1.0).fit(X, y)
    with pytest.raises(ValueError):
        clf.partial_fit(np.full((2, 2), np.nan), [1, -1])
    with pytest.raises(ValueError):
        clf.predict(np.ones((2, 3)))
    with pytest.raises(ValueError, match="not in classes_"):
        clf.partial_fit(X[:2], [5, 5])


def test_cli_trains_pa_and_perceptron(tmp_path, capsys):
    X, y = datasets.noisy_checkerboard(2000, random_state=0)
    bk_io.dump_svmlight(X, y, tmp_path / "train.libsvm")
    argv = ["train", str(tmp_path / "train.libsvm"), "--budget", "30", "--gamma", "2", "-q"]
    assert cli.main(argv + ["-o", str(tmp_path / "pa.bkm"), "--learner", "pa", "--variant", "nn", "--C", "0.5"]) == 0
    ref = BudgetedPAClassifier(budget=30, variant="nn", C=0.5, gamma=2.0, random_state=0).fit(X, y)
    np.testing.assert_array_equal(budgetkernel.load(tmp_path / "pa.bkm").dual_coef_, ref.dual_coef_)
    argv_p = argv + ["-o", str(tmp_path / "p.bkm"), "--learner", "perceptron", "--maintenance", "forgetron"]
    assert cli.main(argv_p) == 0
    assert budgetkernel.load(tmp_path / "p.bkm").maintenance == "forgetron"
    assert cli.main(argv + ["-o", str(tmp_path / "x.bkm"), "--learner", "pa", "--maintenance", "merge"]) == 2
