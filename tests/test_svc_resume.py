"""Exact resume of the learners built on the incremental SVM (IncrementalSVC, TwinVectorMachine,
ReservoirSVC): a model copied by pickle or by save/load and then trained further is bit for bit
the model trained further without the copy (decision values, dual coefficients, the bytes of
``to_bytes()``), also after unlearn / set_C / set_sample_weight.

The case that once drifted (~1e-15 to 1e-13): a machine whose storage had grown beyond the
examples it holds (it once held more than 2,048) against its loaded copy, whose storage holds
exactly its examples, with a margin set of 128 or more vectors: Eigen's matrix-vector product
summed the columns in blocks chosen by the storage stride. ``_grow_storage`` reproduces that in a
second (copies of a reserve example go straight to R and are unlearned again).
"""

import os
import pickle

import numpy as np
import pytest

import budgetkernel
from budgetkernel import IncrementalSVC, ReservoirSVC, TwinVectorMachine

RESERVE = 2  # machine_state()["set"]: 0 margin (S), 1 error (E), 2 reserve (R)


def _stream(seed, n, d=5, n_classes=2, noise=0.2):
    """A noisy checkerboard in the first two coordinates (more classes: a coloured board)."""
    rng = np.random.RandomState(seed)
    X = rng.uniform(-1, 1, (n, d))
    cell = (np.floor(2 * X[:, 0]) + 2 * np.floor(2 * X[:, 1])).astype(int)
    y = cell % n_classes if n_classes > 2 else cell % 2
    flip = rng.rand(n) < noise
    y[flip] = rng.randint(0, n_classes, flip.sum())
    return X, y


def _copies(model, tmp_path):
    """The model through pickle and through save/load."""
    path = os.fspath(tmp_path / "m.bkm")
    model.save(path)
    return {"pickle": pickle.loads(pickle.dumps(model)), "save/load": budgetkernel.load(path)}


def _assert_same(a, b, Xt):
    assert np.array_equal(a.decision_function(Xt), b.decision_function(Xt))
    assert np.array_equal(a.dual_coef_, b.dual_coef_)
    assert np.array_equal(a.intercept_, b.intercept_)
    assert a._model.to_bytes() == b._model.to_bytes()


def _grow_storage(model, X, y, n_copies=1800):
    """Learns n_copies copies of an example that lies in R in every machine (g > 0: each copy
    goes straight to R), then unlearns them: the model is as before, its storage grown."""
    n = model.n_seen_
    states = [model.machine_state(k) for k in range(len(model.classes_) if len(model.classes_) > 2 else 1)]
    ok = np.all([(s["set"] == RESERVE) & (s["g"] > 0.1) for s in states], axis=0)
    i = int(np.flatnonzero(ok)[0])
    key = int(states[0]["key"][i])
    model.partial_fit(np.repeat(X[key:key + 1], n_copies, axis=0), np.repeat(y[key:key + 1], n_copies))
    for e in range(n + n_copies - 1, n - 1, -1):
        model.unlearn(e)
    return n + n_copies  # the number the next learned example gets


@pytest.mark.parametrize("n_classes", [2, 3])
@pytest.mark.parametrize("seed", [0, 1])
def test_incremental_svc_resumes_exactly_when_storage_outgrew_the_examples(tmp_path, seed, n_classes):
    X, y = _stream(seed, 420, n_classes=n_classes)
    Xt = _stream(seed + 100, 200, n_classes=n_classes)[0]
    m = IncrementalSVC(C=10, gamma=1.0).partial_fit(X[:300], y[:300], classes=np.arange(n_classes))
    assert max(int(np.sum(m.machine_state(k)["set"] == 0)) for k in range(1 if n_classes == 2 else n_classes)) >= 128
    nxt = _grow_storage(m, X, y)
    copies = _copies(m, tmp_path)
    for c in copies.values():
        _assert_same(m, c, Xt)
    for est in [m, *copies.values()]:
        est.partial_fit(X[300:360], y[300:360])
        est.unlearn(5)
        est.unlearn(nxt)
        est.set_C(30.0)
        est.set_sample_weight(nxt + 1, 2.5)
        est.partial_fit(X[360:], y[360:], sample_weight=np.linspace(0.5, 1.5, 60))
        est.set_C(10.0)
    for c in copies.values():
        _assert_same(m, c, Xt)


KERNELS = [
    dict(kernel="rbf", gamma=0.8),
    dict(kernel="linear"),
    dict(kernel="poly", degree=2, gamma=0.5, coef0=1.0),
    dict(kernel="poly", degree=3, gamma=0.7, coef0=0.0),
]


@pytest.mark.parametrize("params", KERNELS, ids=lambda p: "-".join(str(v) for v in p.values()))
@pytest.mark.parametrize("n_classes", [2, 3])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_incremental_svc_resumes_exactly(tmp_path, params, n_classes, seed):
    X, y = _stream(seed, 260, d=3, n_classes=n_classes)
    Xt = _stream(seed + 50, 150, d=3, n_classes=n_classes)[0]
    m = IncrementalSVC(C=5, **params).partial_fit(X[:120], y[:120], classes=np.arange(n_classes))
    m.unlearn(3)  # the saved state already went through every kind of operation
    m.set_sample_weight(4, 0.5)
    copies = _copies(m, tmp_path)
    for est in [m, *copies.values()]:
        for s in range(120, 260, 35):
            est.partial_fit(X[s:s + 35], y[s:s + 35])
        est.unlearn(130)
        est.set_sample_weight(140, 3.0)
        est.set_C(0.7)
        est.unlearn(10)
    for c in copies.values():
        _assert_same(m, c, Xt)


TVM_PARAMS = [
    dict(kernel="rbf", gamma=1.0),
    dict(kernel="rbf", gamma=2.0, merge="feature", one_sided=False),
    dict(kernel="linear"),
    dict(kernel="poly", degree=2, gamma=0.5, coef0=1.0),
]


def _check_resumes(m, X, y, chunk, Xt, tmp_path):
    """m and its pickled / saved copies learn X in chunks and end up the same."""
    copies = _copies(m, tmp_path)
    for est in [m, *copies.values()]:
        for s in range(0, len(X), chunk):
            est.partial_fit(X[s:s + chunk], y[s:s + chunk])
    for c in copies.values():
        _assert_same(m, c, Xt)


@pytest.mark.parametrize("params", TVM_PARAMS, ids=lambda p: "-".join(str(v) for v in p.values()))
@pytest.mark.parametrize("n_classes", [2, 3])
@pytest.mark.parametrize("seed", [0, 1])
def test_twin_vector_machine_resumes_exactly(tmp_path, params, n_classes, seed):
    X, y = _stream(seed, 1500, d=3, n_classes=n_classes)
    Xt = _stream(seed + 50, 150, d=3, n_classes=n_classes)[0]
    m = TwinVectorMachine(budget=40, C=10, **params).partial_fit(X[:500], y[:500], classes=np.arange(n_classes))
    _check_resumes(m, X[500:], y[500:], 250, Xt, tmp_path)


@pytest.mark.parametrize("params", KERNELS[:3], ids=lambda p: "-".join(str(v) for v in p.values()))
@pytest.mark.parametrize("n_classes", [2, 3])
@pytest.mark.parametrize("seed", [0, 1])
def test_reservoir_svc_resumes_exactly(tmp_path, params, n_classes, seed):
    X, y = _stream(seed, 1500, d=3, n_classes=n_classes)
    Xt = _stream(seed + 50, 150, d=3, n_classes=n_classes)[0]
    m = ReservoirSVC(budget=60, C=10, random_state=seed, **params)
    m.partial_fit(X[:400], y[:400], classes=np.arange(n_classes))
    _check_resumes(m, X[400:], y[400:], 275, Xt, tmp_path)
