"""Learning a chunk with blocked dot products (inputs of 32 or more features, stores of 4096
values or more, in the AVX2+FMA module: cpp/include/budgetkernel/detail/chunk_dots.hpp)
changes no result.

Oracles: a chunk learned in one partial_fit call equals the same rows fed one partial_fit call
per row (and learn_one per row), bit for bit: model bytes (SVs, coefficients, counters, random
state), predictions and decision values. Saving mid-stream, loading and continuing equals the
uninterrupted stream, bit for bit.
"""

import numpy as np
import pytest

import budgetkernel as bk
from conftest import LEARNERS, VARIANTS, cases, kernel_cases

GRID = [(40, 3), (100, 10)]


def _params(d):
    """A budget whose full store just passes the blocks' threshold (4096 values), small enough
    that maintenance runs at most steps of a few hundred rows; gamma fixed (gamma='scale' would
    come from the first chunk, which differs between the ways of cutting the stream)."""
    return dict(budget=4096 // d + 10, gamma=1.0 / d, random_state=0)


def _mixture(n, d, n_classes, seed):
    """A standardised Gaussian mixture with a fifth of the labels at random (every learner
    keeps updating)."""
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((n_classes, d)) * 3.0 / np.sqrt(d)
    y = rng.integers(0, n_classes, n)
    X = centres[y] + rng.standard_normal((n, d))
    noisy = rng.random(n) < 0.2
    y[noisy] = rng.integers(0, n_classes, noisy.sum())
    return (X - X.mean(0)) / X.std(0), y


def _bytes(clf):
    """The core model's bytes without the Python metadata (whose prequential curve records how
    the stream was cut into calls)."""
    model = clf._model
    meta = model.metadata
    model.metadata = b""
    try:
        return model.to_bytes()
    finally:
        model.metadata = meta


def _assert_same(a, b, X):
    assert _bytes(a) == _bytes(b)
    probe = X[:60] * 0.9
    assert np.array_equal(a.decision_function(probe), b.decision_function(probe))
    assert np.array_equal(a.predict(probe), b.predict(probe))


# Every kernel learner (the exact SVMs keep their examples in storage of their own, without
# blocks; they must not change either).
CASES = kernel_cases(LEARNERS + VARIANTS)


@pytest.mark.parametrize("d, n_classes", GRID)
@pytest.mark.parametrize("case", CASES, ids=repr)
def test_a_chunk_equals_one_call_per_row(case, d, n_classes):
    X, y = _mixture(240, d, n_classes, d + n_classes)
    classes = np.arange(n_classes)
    whole = case.make(**_params(d)).partial_fit(X, y, classes=classes)
    rows = case.make(**_params(d))
    for i in range(len(y)):
        rows.partial_fit(X[i : i + 1], y[i : i + 1], classes=classes)
    _assert_same(whole, rows, X)
    assert whole.prequential_curve_[-1] == rows.prequential_curve_[-1]  # (examples, mistakes)


@pytest.mark.parametrize("case", cases("BudgetedSGDClassifier", "BudgetedPAClassifier", "bpa-project"), ids=repr)
def test_a_chunk_equals_learn_one_per_row(case):
    X, y = _mixture(200, 64, 10, 1)
    whole = case.make(**_params(64)).partial_fit(X, y, classes=np.arange(10))
    one = case.make(**_params(64))
    for i in range(len(y)):
        one.learn_one(X[i], y[i], classes=np.arange(10))
    _assert_same(whole, one, X)


@pytest.mark.parametrize("d, n_classes", GRID)
@pytest.mark.parametrize(
    "case",
    cases("BudgetedSGDClassifier", "bsgd-merge-average", "BudgetedPAClassifier", "bpa-project", "KernelPerceptron",
          "SparsePAClassifier", "BOGDClassifier", "bogd-averaged"),
    ids=repr,
)
def test_save_load_mid_stream_then_continue_equals_uninterrupted(case, d, n_classes, tmp_path):
    X, y = _mixture(300, d, n_classes, 7)
    classes = np.arange(n_classes)
    straight = case.make(**_params(d)).partial_fit(X, y, classes=classes)
    first = case.make(**_params(d)).partial_fit(X[:131], y[:131], classes=classes)
    first.save(tmp_path / "mid.bkm")
    resumed = bk.load(tmp_path / "mid.bkm").partial_fit(X[131:], y[131:])
    _assert_same(straight, resumed, X)


def test_learning_leaves_other_models_alone():
    """Two models learning the same chunk in turn, and a model learning chunks that are
    views of one array, give the results of separate runs (each store keeps its own blocks)."""
    X, y = _mixture(300, 50, 3, 11)
    common = dict(budget=90, gamma=0.02, random_state=0)
    a = bk.BudgetedPAClassifier(variant="nn", **common).partial_fit(X, y, classes=[0, 1, 2])
    b = bk.BudgetedSGDClassifier(maintenance="merge", **common).partial_fit(X, y, classes=[0, 1, 2])
    a2 = bk.BudgetedPAClassifier(variant="nn", **common)
    b2 = bk.BudgetedSGDClassifier(maintenance="merge", **common)
    for i in range(0, 300, 50):  # interleaved, on views of the same rows
        a2.partial_fit(X[i : i + 50], y[i : i + 50], classes=[0, 1, 2])
        b2.partial_fit(X[i : i + 50], y[i : i + 50], classes=[0, 1, 2])
    _assert_same(a, a2, X)
    _assert_same(b, b2, X)
