"""Kernel Pegasos, Budgeted SGD and linear Pegasos against their oracles."""

import pickle

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import budgetkernel
from budgetkernel import BudgetedSGDClassifier, LinearPegasosClassifier, datasets

MAINTENANCE = ["merge", "project", "project-exact", "remove-random", "remove-oldest", "remove-smallest"]


def kernel_matrix(A, B, kernel, gamma=1.0, degree=3, coef0=0.0):
    if kernel == "linear":
        return A @ B.T
    if kernel == "poly":
        return (gamma * (A @ B.T) + coef0) ** degree
    d2 = (A**2).sum(1)[:, None] + (B**2).sum(1)[None, :] - 2 * A @ B.T
    return np.exp(-gamma * np.maximum(d2, 0))


def reference_kernel_pegasos(X, yi, n_classes, lam, kfun):
    """Kernel Pegasos written from eq. (1)-(4) of the BSGD paper with explicit coefficients:
    shrink every alpha, add beta_t, project onto the ball with ||w||^2 = sum_i a_i^T K a_i
    recomputed from scratch."""
    n_out = 1 if n_classes == 2 else n_classes
    svs, alphas = [], np.zeros((0, n_out))
    projections = 0
    for t, (x, y) in enumerate(zip(X, yi), start=1):
        if svs:
            f = alphas.T @ kfun(np.array(svs), x[None, :])[:, 0]
        else:
            f = np.zeros(n_out)
        eta = 1.0 / (lam * t)
        beta = np.zeros(n_out)
        if n_out == 1:
            sy = 1.0 if y == 1 else -1.0
            loss = 1 - sy * f[0]
            beta[0] = eta * sy
        else:
            r = max((i for i in range(n_out) if i != y), key=lambda i: f[i])
            loss = 1 + f[r] - f[y]
            beta[y], beta[r] = eta, -eta
        alphas = alphas * (1 - 1.0 / t)
        if loss > 0:
            svs.append(x)
            alphas = np.vstack([alphas, beta])
        if svs:
            K = kfun(np.array(svs), np.array(svs))
            norm2 = float(np.einsum("ic,ij,jc->", alphas, K, alphas))
            if norm2 > 1 / lam:
                alphas = alphas / np.sqrt(lam * norm2)
                projections += 1
    return np.array(svs), alphas, projections


def multiclass_blobs(n, c, seed):
    rng = np.random.default_rng(seed)
    centers = rng.normal(scale=2.0, size=(c, 3))
    y = rng.integers(0, c, n)
    return centers[y] + rng.normal(size=(n, 3)), y


@pytest.mark.parametrize("kernel", ["rbf", "linear", "poly"])
@pytest.mark.parametrize("n_classes", [2, 4])
def test_unbudgeted_matches_reference_implementation(kernel, n_classes):
    X, y = multiclass_blobs(300, n_classes, 1)
    X = X / 3.0
    lam = 0.05
    kp = dict(gamma=0.7, degree=2, coef0=1.0)
    clf = BudgetedSGDClassifier(budget=None, lam=lam, kernel=kernel, random_state=0, **kp).fit(X, y)
    svs, alphas, projections = reference_kernel_pegasos(
        X, y, n_classes, lam, lambda A, B: kernel_matrix(A, B, kernel, **kp)
    )
    assert projections > 0  # the ball projection was exercised
    assert clf.n_support_ == len(svs)
    np.testing.assert_array_equal(clf.support_vectors_, svs)
    np.testing.assert_allclose(clf.dual_coef_, alphas, rtol=1e-10, atol=1e-13)
    # ||w||^2 kept incrementally equals its recomputation.
    K = kernel_matrix(svs, svs, kernel, **kp)
    norm2 = float(np.einsum("ic,ij,jc->", alphas, K, alphas))
    assert clf._model.norm2 == pytest.approx(norm2, rel=1e-9)


@pytest.mark.parametrize("n_classes", [2, 3])
def test_merging_norm_is_exact_and_inside_the_ball(n_classes):
    # Merging bounds ||w|| instead of tracking it while w is well inside the ball (no kernel
    # matrix then); the reported ||w||^2 must still be exact, and every projection exact.
    X, y = multiclass_blobs(4000, n_classes, 5)
    lam, gamma = 1e-2, 0.5
    clf = BudgetedSGDClassifier(budget=30, lam=lam, gamma=gamma, random_state=0)
    for lo in range(0, len(X), 500):
        clf.partial_fit(X[lo : lo + 500], y[lo : lo + 500], classes=np.unique(y))
        alphas = clf.dual_coef_
        K = kernel_matrix(clf.support_vectors_, clf.support_vectors_, "rbf", gamma=gamma)
        norm2 = float(np.einsum("ic,ij,jc->", alphas, K, alphas))
        assert clf._model.norm2 == pytest.approx(norm2, rel=1e-9)
        assert lam * norm2 <= 1 + 1e-9
    assert clf.counters_["maintenance_steps"] > 1000


@pytest.mark.parametrize("maintenance", MAINTENANCE)
@pytest.mark.parametrize("n_classes", [2, 3])
def test_large_budget_equals_unbudgeted_exactly(maintenance, n_classes):
    X, y = multiclass_blobs(400, n_classes, 2)
    kw = dict(lam=1e-3, gamma=0.5, random_state=3)
    a = BudgetedSGDClassifier(budget=None, **kw).fit(X, y)
    b = BudgetedSGDClassifier(budget=len(X), maintenance=maintenance, **kw).fit(X, y)
    assert b.counters_["maintenance_steps"] == 0
    np.testing.assert_array_equal(a.support_vectors_, b.support_vectors_)
    np.testing.assert_allclose(b.dual_coef_, a.dual_coef_, rtol=0, atol=1e-12)


@pytest.mark.parametrize("n_classes", [2, 3])
def test_linear_kernel_equals_linear_pegasos(n_classes):
    X, y = multiclass_blobs(500, n_classes, 4)
    lam = 1e-2
    k = BudgetedSGDClassifier(budget=None, kernel="linear", lam=lam, average=False).fit(X, y)
    lin = LinearPegasosClassifier(lam=lam, batch_size=1).fit(X, y)
    w_kernel = k.support_vectors_.T @ k.dual_coef_  # w = sum_j alpha_j x_j
    np.testing.assert_allclose(w_kernel, lin.coef_.T, rtol=1e-10, atol=1e-10)
    np.testing.assert_array_equal(k.predict(X), lin.predict(X))


def reference_linear_pegasos(X, yi, n_classes, lam, k, flush=True):
    """Mini-batch Pegasos over consecutive batches of k rows; with flush, the last
    n % k rows are a final batch of their own (its gradient averaged over its size), as
    fit learns a finite data set; without, they stay pending, as in a stream."""
    n_out = 1 if n_classes == 2 else n_classes
    w = np.zeros((X.shape[1], n_out))
    grad = np.zeros_like(w)
    t = 0
    n = len(yi)
    for i, (x, y) in enumerate(zip(X, yi), start=1):
        f = w.T @ x
        if n_out == 1:
            sy = 1.0 if y == 1 else -1.0
            if 1 - sy * f[0] > 0:
                grad[:, 0] += sy * x
        else:
            r = max((j for j in range(n_out) if j != y), key=lambda j: f[j])
            if 1 + f[r] - f[y] > 0:
                grad[:, y] += x
                grad[:, r] -= x
        if i % k == 0 or (flush and i == n):
            t += 1
            w = (1 - 1 / t) * w + grad / (lam * t * (k if i % k == 0 else i % k))
            grad[:] = 0
            nw = np.linalg.norm(w)
            if nw > 1 / np.sqrt(lam):
                w /= np.sqrt(lam) * nw
    return w


@pytest.mark.parametrize("k", [1, 7, 32])
@pytest.mark.parametrize("n_classes", [2, 5])
def test_linear_pegasos_minibatch_matches_reference(k, n_classes):
    X, y = multiclass_blobs(700, n_classes, 5)
    lam = 1e-3
    clf = LinearPegasosClassifier(lam=lam, batch_size=k).fit(X, y)
    np.testing.assert_allclose(clf.coef_.T, reference_linear_pegasos(X, y, n_classes, lam, k), rtol=1e-10, atol=1e-12)


def test_linear_pegasos_fit_learns_the_last_partial_batch():
    # fit on 15 rows with batch_size=10 learned only rows 0-9 (the pending 5 never made a
    # step), and batch_size=100 learned nothing (coef_ == 0).
    X, y = multiclass_blobs(15, 2, 8)
    lam = 1e-2
    clf = LinearPegasosClassifier(lam=lam, batch_size=10).fit(X, y)
    ref = reference_linear_pegasos(X, y, 2, lam, 10)  # batches of rows 0-9 and 10-14
    np.testing.assert_allclose(clf.coef_.T, ref, rtol=1e-12, atol=1e-14)
    first_ten = LinearPegasosClassifier(lam=lam, batch_size=10).fit(X[:10], y[:10])
    assert not np.allclose(clf.coef_, first_ten.coef_)
    assert clf._model.iterations == 2 and clf._model.pending == 0
    one = LinearPegasosClassifier(lam=lam, batch_size=100).fit(X, y)  # one batch of all 15
    assert np.any(one.coef_ != 0)
    np.testing.assert_allclose(one.coef_.T, reference_linear_pegasos(X, y, 2, lam, 100), rtol=1e-12, atol=1e-14)
    # Every pass of fit ends with its own partial batch: 2 epochs of 15 rows are 4 steps.
    assert LinearPegasosClassifier(lam=lam, batch_size=10, n_epochs=2).fit(X, y)._model.iterations == 4
    # partial_fit keeps carrying the partial batch, so a chunked stream is the unflushed reference.
    stream = LinearPegasosClassifier(lam=lam, batch_size=10)
    for s in range(0, 15, 4):
        stream.partial_fit(X[s : s + 4], y[s : s + 4], classes=[0, 1])
    assert stream._model.pending == 5
    np.testing.assert_allclose(
        stream.coef_.T, reference_linear_pegasos(X, y, 2, lam, 10, flush=False), rtol=1e-12, atol=1e-14
    )


@settings(max_examples=25, deadline=None)
@given(
    budget=st.integers(1, 12),
    maintenance=st.sampled_from(MAINTENANCE),
    n_classes=st.integers(2, 4),
    seed=st.integers(0, 2**16),
    n=st.integers(1, 150),
    chunk=st.integers(1, 40),
)
def test_budget_never_exceeded(budget, maintenance, n_classes, seed, n, chunk):
    X, y = multiclass_blobs(n, n_classes, seed)
    clf = BudgetedSGDClassifier(budget=budget, maintenance=maintenance, lam=1e-3, gamma=0.5, random_state=seed)
    for s in range(0, n, chunk):
        clf.partial_fit(X[s : s + chunk], y[s : s + chunk], classes=np.arange(n_classes))
        assert clf.n_support_ <= budget
    c = clf.counters_
    assert c["examples"] == n
    assert c["maintenance_steps"] == max(0, c["updates"] - budget) or maintenance.startswith("project")
    assert np.all(np.isfinite(clf.dual_coef_))
    assert c["degradation"] >= 0


def test_same_seed_same_model_and_chunking_does_not_matter():
    X, y = datasets.noisy_checkerboard(3000, random_state=1)
    kw = dict(budget=30, maintenance="remove-random", gamma=2.0, lam=1e-4, random_state=7)
    a = BudgetedSGDClassifier(**kw).fit(X, y)
    b = BudgetedSGDClassifier(**kw)
    for s in range(0, 3000, 333):
        b.partial_fit(X[s : s + 333], y[s : s + 333], classes=[-1, 1])
    np.testing.assert_array_equal(a.support_vectors_, b.support_vectors_)
    np.testing.assert_array_equal(a.dual_coef_, b.dual_coef_)
    c = BudgetedSGDClassifier(**{**kw, "random_state": 8}).fit(X, y)
    assert not np.array_equal(a.support_vectors_, c.support_vectors_)


def test_prequential_predictions_are_made_before_learning():
    X, y = datasets.noisy_checkerboard(500, random_state=2)
    kw = dict(budget=20, gamma=2.0, lam=1e-3, random_state=0)
    a = BudgetedSGDClassifier(**kw)
    mistakes = 0
    for x, t in zip(X, y):
        p = a.predict_one(x)  # None before the first example: no classes known yet
        mistakes += (-1 if p is None else p) != t  # the empty model predicts classes_[0]
        a.learn_one(x, t, classes=[-1, 1])
    b = BudgetedSGDClassifier(**kw).fit(X, y)
    assert b.counters_["mistakes"] == mistakes == a.counters_["mistakes"]
    assert b.online_error_ == pytest.approx(mistakes / 500)
    np.testing.assert_array_equal(a.dual_coef_, b.dual_coef_)


def test_learn_one_accepts_dicts_and_sequences():
    X, y = datasets.checkerboard(200, random_state=3)
    a = BudgetedSGDClassifier(budget=10, gamma=2.0, random_state=0)
    b = BudgetedSGDClassifier(budget=10, gamma=2.0, random_state=0)
    assert a.predict_one({"u": 0.1, "v": 0.2}) is None
    for x, t in zip(X, y):
        a.learn_one({"u": x[0], "v": x[1]}, t, classes=[-1, 1])
        b.learn_one(list(x), t, classes=[-1, 1])
    np.testing.assert_array_equal(a.dual_coef_, b.dual_coef_)
    assert a.predict_one({"v": 1.5, "u": 0.5}) == b.predict_one([0.5, 1.5])
    with pytest.raises(ValueError, match="unknown feature"):
        a.predict_one({"w": 1.0})
    # bool labels need no classes
    c = BudgetedSGDClassifier(budget=5, gamma=1.0)
    c.learn_one([0.0, 1.0], True)
    assert c.predict_one([0.0, 1.0]) in (True, False)




def test_dict_feature_order_is_fixed_only_by_learning(tmp_path):
    # predict_one never fixes the key order: neither before learning nor with a rejected dict.
    a = BudgetedSGDClassifier(budget=10, gamma=1.0, random_state=0)
    assert a.predict_one({"x": 1.0}) is None
    with pytest.raises(ValueError, match="classes"):
        a.learn_one({"p": 1.0, "q": 2.0}, 1)  # a failed first call records nothing either
    a.learn_one({"q": 2.0, "p": 1.0}, 1, classes=[0, 1])
    assert list(a.feature_names_in_) == ["q", "p"] and a.n_features_in_ == 2
    with pytest.raises(ValueError, match="unknown feature"):
        a.predict_one({"r": 1.0})
    assert a.predict_one({"p": 1.0, "q": 2.0}) == a.predict_one([2.0, 1.0])
    a.save(tmp_path / "m.bkm")
    assert budgetkernel.load(tmp_path / "m.bkm").predict_one({"p": 1.0, "q": 2.0}) == a.predict_one([2.0, 1.0])
    # An array-fitted model has no key order: a dict is an error, not a guessed column order.
    b = BudgetedSGDClassifier(budget=10, gamma=1.0).fit([[0.0, 1.0], [1.0, 0.0]], [0, 1])
    for bad in ({}, {"a": 0.0, "b": 1.0}):
        with pytest.raises(ValueError, match="without feature names"):
            b.predict_one(bad)
    assert b.predict_one([0.0, 1.0]) in (0, 1)
    # fit() forgets a dict order learned before; a DataFrame fit lends its column names.
    a.fit(np.ones((4, 3)) * np.arange(4)[:, None], [0, 1, 0, 1])
    assert not hasattr(a, "feature_names_in_")
    with pytest.raises(ValueError, match="without feature names"):
        a.learn_one({"q": 1.0}, 0)
    pd = pytest.importorskip("pandas")
    a.fit(pd.DataFrame({"u": [0.0, 1.0, 2.0, 3.0], "v": [1.0, 0.0, 1.0, 0.0]}), [0, 1, 0, 1])
    assert a.predict_one({"v": 1.0, "u": 2.0}) == a.predict_one([2.0, 1.0])
@pytest.mark.parametrize("maintenance, floor", [("merge", 0.8), ("project", 0.8), ("remove-random", 0.65)])
def test_multiclass_accuracy_on_waveform(maintenance, floor):
    X, y = datasets.waveform(6000, random_state=0)
    Xt, yt = datasets.waveform(2000, random_state=1)
    clf = BudgetedSGDClassifier(budget=50, maintenance=maintenance, gamma=1 / 21, lam=1e-4, random_state=0).fit(X, y)
    assert clf.dual_coef_.shape == (clf.n_support_, 3)
    assert clf.decision_function(Xt).shape == (2000, 3)
    assert clf.score(Xt, yt) > floor  # Bayes accuracy is about 0.86; removal is worst (BSGD Table 1)


def test_checkerboard_merging_learns():
    train, (Xt, yt) = datasets.make_stream_and_test("checkerboard", 20000, 5000, random_state=0)
    clf = BudgetedSGDClassifier(budget=100, gamma=2.0, lam=1e-5, random_state=0)
    for X, y in train:
        clf.partial_fit(X, y, classes=[-1, 1])
    assert clf.n_support_ == 100
    assert clf.score(Xt, yt) > 0.95
    assert clf.counters_["degradation"] > 0


@pytest.mark.parametrize("decay", [0.0, 10.0])
def test_averaged_predictor_is_the_weighted_mean_of_the_iterates(decay):
    # Unbudgeted (no maintenance): w_bar = sum_k weight_k w_k with the polynomial-decay weights
    # rho_k = (decay + 1) / (k + decay); every iterate's decision values come from its own
    # dual coefficients, so the averaged decision values are their weighted mean.
    X, y = datasets.noisy_checkerboard(300, random_state=4)
    Xt, _ = datasets.checkerboard(50, random_state=5)
    clf = BudgetedSGDClassifier(budget=None, gamma=2.0, lam=1e-3, average=20, average_decay=decay)
    clf.partial_fit(X[:1], y[:1], classes=[-1, 1])
    avg = np.zeros(len(Xt))
    k = 0
    for t in range(1, len(X)):
        clf.learn_one(X[t], y[t])
        if t + 1 >= 20:
            k += 1
            rho = (decay + 1.0) / (k + decay)
            sv, a = clf.support_vectors_, clf.dual_coef_[:, 0]
            d = ((Xt[:, None, :] - sv[None, :, :]) ** 2).sum(-1)
            avg += rho * (np.exp(-2.0 * d) @ a - avg)
    np.testing.assert_allclose(clf.decision_function(Xt), avg, rtol=0, atol=1e-10)
    assert not np.allclose(clf.predictor_coef_, clf.dual_coef_)


@pytest.mark.parametrize("maintenance", ["merge", "project", "remove-smallest"])
def test_averaged_predictor_keeps_the_budget_and_resumes_exactly(maintenance, tmp_path):
    X, y = datasets.noisy_checkerboard(6000, random_state=0)
    kw = dict(budget=40, maintenance=maintenance, gamma=2.0, lam=1e-4, average=True, random_state=0)
    full = BudgetedSGDClassifier(**kw).fit(X, y)
    assert full.predictor_coef_.shape == full.dual_coef_.shape == (40, 1)
    half = BudgetedSGDClassifier(**kw).partial_fit(X[:3000], y[:3000], classes=[-1, 1])
    half.save(tmp_path / "m.bkm")
    for restored in (pickle.loads(pickle.dumps(half)), budgetkernel.load(tmp_path / "m.bkm")):
        restored.partial_fit(X[3000:], y[3000:])
        np.testing.assert_array_equal(restored.predictor_coef_, full.predictor_coef_)
        np.testing.assert_array_equal(restored.decision_function(X), full.decision_function(X))


@pytest.mark.parametrize("params", [dict(average=-1), dict(average=1.5), dict(average_decay=-1.0)])
def test_invalid_average_parameters_raise(params):
    X, y = datasets.checkerboard(50, random_state=0)
    with pytest.raises(ValueError, match="average"):
        BudgetedSGDClassifier(**params).fit(X, y)
