"""scipy.sparse input (e.g. from scikit-learn's load_svmlight_file) is accepted and densified:
the models equal those trained on the dense arrays, bit for bit."""

import numpy as np
import pytest
import scipy.sparse as sp

from budgetkernel import BudgetedSGDClassifier
from conftest import LEARNERS, cases

# Every learner, and the maintenance rules that touch the stored SVs differently.
CASES = [*LEARNERS, *cases("bpa-project", "forgetron")]
PARAMS = dict(budget=20, gamma=0.5, lam=1e-3, n_epochs=2, shuffle=True, random_state=0)


def data(n=300, d=8, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d)) * (rng.uniform(size=(n, d)) < 0.3)  # 70% zeros
    y = np.where(X[:, 0] + X[:, 1] - X[:, 2] > 0, "a", "b")
    return X, y


@pytest.mark.parametrize("case", CASES, ids=repr)
@pytest.mark.parametrize("fmt", ["csr", "csc", "coo"])
def test_sparse_input_equals_dense(case, fmt):
    def make():
        return case.make(**PARAMS)

    X, y = data()
    S = sp.csr_matrix(X).asformat(fmt)
    dense, sparse = make().fit(X, y), make().fit(S, y)
    np.testing.assert_array_equal(sparse.decision_function(S), dense.decision_function(X))
    np.testing.assert_array_equal(sparse.predict(S), dense.predict(X))
    assert sparse.score(S, y) == dense.score(X, y)

    # partial_fit with sparse chunks, a sparse first chunk included
    a, b = make(), make()
    for lo in range(0, 300, 100):
        a.partial_fit(X[lo : lo + 100], y[lo : lo + 100], classes=["a", "b"])
        b.partial_fit(sp.csr_array(X[lo : lo + 100]), y[lo : lo + 100], classes=["a", "b"])
    np.testing.assert_array_equal(a.decision_function(X), b.decision_function(S))


def test_sparse_input_is_validated():
    X, y = data()
    S = sp.csr_matrix(X)
    S.data[0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        BudgetedSGDClassifier(budget=10).fit(S, y)
    clf = BudgetedSGDClassifier(budget=10).fit(X, y)
    with pytest.raises(ValueError, match="features"):
        clf.predict(sp.csr_matrix(X[:, :5]))


def test_learn_one_takes_a_row_of_a_sparse_matrix():
    X, y = data(50)
    S = sp.csr_matrix(X)
    a, b = BudgetedSGDClassifier(budget=10, random_state=0), BudgetedSGDClassifier(budget=10, random_state=0)
    for i in range(50):
        assert a.predict_one(S[i]) == b.predict_one(X[i])
        a.learn_one(S[i], y[i], classes=["a", "b"])
        b.learn_one(X[i], y[i], classes=["a", "b"])
    np.testing.assert_array_equal(a.decision_function(X), b.decision_function(X))
    with pytest.raises(ValueError, match="one example"):
        a.learn_one(S[:2], "a")
