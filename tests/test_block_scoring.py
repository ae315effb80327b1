"""Scoring a chunk in blocks of rows (inputs of 32 or more features: the core's register-tiled
dot products, cpp/include/budgetkernel/detail/dot_block.hpp).

Oracles: every row scored alone gives the same bits as the row scored inside a chunk (so a
prediction never depends on which other rows came with it), and the decision values equal a
NumPy evaluation of the model's own expansion sum_j alpha_j exp(-gamma |s_j - x|^2).
"""

import numpy as np
import pytest

import budgetkernel as bk
from conftest import LEARNERS, cases

D = 40  # >= 32: block scoring


def _stream(n, d, n_classes, seed):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    y = (X[:, 0] * X[:, 1] > 0).astype(int)
    if n_classes > 2:
        y = y + (X[:, 2] > 0.5)
    return X, y


# Every learner, and the averaged models (scored from their own expansion) and the unbudgeted
# perceptron (whose expansion grows past any budget).
CASES = [*LEARNERS, *cases("bsgd-average", "bpa-random-averaged", "bogd-averaged", "perceptron-unbudgeted")]
PARAMS = dict(budget=50, lam=1e-3, random_state=0)


@pytest.mark.parametrize("n_classes", [2, 3])
@pytest.mark.parametrize("case", CASES, ids=repr)
def test_rows_scored_alone_equal_rows_scored_in_a_chunk(case, n_classes):
    X, y = _stream(600, D, n_classes, 1)
    clf = case.make(**PARAMS).fit(X, y)
    T = np.random.default_rng(2).standard_normal((203, D))  # 203 rows: the last tile is partial
    chunk = clf.decision_function(T)
    alone = np.stack([clf.decision_function(T[i : i + 1])[0] for i in range(len(T))])
    assert np.array_equal(chunk, alone)
    assert np.array_equal(clf.predict(T), [clf.predict_one(t) for t in T])


@pytest.mark.parametrize("d, n_classes", [(2, 2), (10, 3)])  # below 32 features: per row, from support()
def test_incremental_svc_rows_scored_alone_equal_rows_in_a_chunk_in_few_dimensions(d, n_classes):
    X, y = _stream(400, d, n_classes, 5)
    clf = bk.IncrementalSVC(C=1.0).fit(X, y)
    T = np.random.default_rng(6).standard_normal((150, d))
    chunk = clf.decision_function(T)
    alone = np.stack([clf.decision_function(T[i : i + 1])[0] for i in range(len(T))])
    assert np.array_equal(chunk, alone)
    assert np.array_equal(clf.predict(T), [clf.predict_one(t) for t in T])


@pytest.mark.parametrize(
    "case", cases("BudgetedSGDClassifier", "BudgetedPAClassifier", "perceptron-unbudgeted"), ids=repr
)
def test_block_scores_equal_a_numpy_evaluation_of_the_expansion(case):
    X, y = _stream(600, D, 2, 3)
    clf = case.make(**PARAMS).fit(X, y)
    # the coefficients predictions use (BSGD averages by default)
    S, A = clf.support_vectors_, np.asarray(getattr(clf, "predictor_coef_", clf.dual_coef_)).reshape(-1)
    assert len(S) > 3  # several tiles of SVs
    gamma = clf.gamma_
    T = np.random.default_rng(4).standard_normal((130, D))
    sq = (T**2).sum(1)[:, None] + (S**2).sum(1)[None, :] - 2.0 * T @ S.T
    expected = np.exp(-gamma * np.maximum(sq, 0.0)) @ A
    np.testing.assert_allclose(clf.decision_function(T), expected, rtol=1e-10, atol=1e-12)
