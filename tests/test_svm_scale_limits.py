"""C and ridge too large for the exact SVM's path in double precision: a ValueError that names the
parameter and the limit (C x weight x max(k(x, x) + ridge) < 1e14), up front where the kernel's
k(x, x) is known (RBF), at the first example that fails otherwise; valid C keep their results."""

import numpy as np
import pytest

from budgetkernel import IncrementalSVC, TwinVectorMachine
from conftest import LEARNERS


def _data(seed=0, n=200):
    rng = np.random.RandomState(seed)
    X = rng.randn(n, 2)
    y = (X[:, 0] + 0.3 * rng.randn(n) > 0).astype(int)
    return X, y


EXACT_SVMS = [case.cls for case in LEARNERS if case.exact_svm]


@pytest.mark.parametrize("cls", EXACT_SVMS)
@pytest.mark.parametrize("C", [1e14, 1e15, 1e300])
def test_huge_C_raises_up_front_naming_C(cls, C):
    X, y = _data()
    m = cls(C=C)
    with pytest.raises(ValueError, match=r"C = 1e\+\d+ is too large .* C x weight x max\(k\(x, x\) \+ ridge\) < 1e\+14"):
        m.fit(X, y)
    assert not hasattr(m, "_model") or m._model.counters["examples"] == 0
    with pytest.raises(ValueError, match="checked up front"):
        cls(C=C).partial_fit(X[:5], y[:5], classes=[0, 1])


@pytest.mark.parametrize("cls", EXACT_SVMS)
def test_huge_ridge_raises_up_front_naming_ridge(cls):
    X, y = _data()
    with pytest.raises(ValueError, match=r"ridge = 1e\+20 is too large.*at most ~1e6 times"):
        cls(ridge=1e20).fit(X, y)


@pytest.mark.parametrize("cls", EXACT_SVMS)
@pytest.mark.parametrize("ridge", [1e8, 1e13])
def test_ridge_far_above_the_kernel_scale_raises_naming_ridge(cls, ridge):
    # Below the 1e14 limit, but J = [[0, y^T], [y, K + ridge I]] is numerically singular.
    X, y = _data()
    with pytest.raises(ValueError, match=r"ridge = 1e\+\d+ is too large for the kernel's scale.*at most ~1e6 times"):
        cls(ridge=ridge, C=1.0).fit(X, y)


def test_linear_kernel_at_the_first_failing_example_names_C():
    # k(x, x) = |x|^2 depends on the data: the limit is found when the first example fails.
    X, y = _data()
    X = X * 100.0  # k(x, x) ~ 1e4
    m = IncrementalSVC(kernel="linear", C=1e11)
    with pytest.raises(ValueError, match=r"example 0 of the chunk.*C = 1e\+11 is too large for the kernel's scale.*scaling"):
        m.fit(X, y)
    IncrementalSVC(kernel="linear", C=1e11).fit(X / 100.0, y)  # the same C on unscaled features works


def test_set_C_beyond_the_limit_raises_naming_C_and_keeps_the_model():
    X, y = _data()
    m = IncrementalSVC(C=1.0).fit(X, y)
    before = m._model.to_bytes()
    with pytest.raises(ValueError, match=r"C = 1e\+15 is too large .*checked up front"):
        m.set_C(1e15)
    assert m._model.to_bytes() == before and m.C == 1.0
    m.set_C(1e3)  # a valid C still moves the model


@pytest.mark.parametrize("C", [1e13, 9e13])
def test_large_valid_C_still_learns(C):
    X, y = _data()
    m = IncrementalSVC(C=C).fit(X, y)
    assert m.score(X, y) > 0.9
    TwinVectorMachine(C=C, budget=30).fit(X, y)
