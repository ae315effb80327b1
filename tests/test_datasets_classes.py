"""Tests for budgetkernel.datasets.gaussian_classes (issue 29's multi-class, high-d stream)."""

import itertools

import numpy as np
import pytest

from budgetkernel import datasets
from budgetkernel.datasets import gaussian_classes
from budgetkernel.datasets._classes import _bayes_predict, _classes_layout


def _concat(chunks):
    chunks = list(chunks)
    return np.concatenate([c[0] for c in chunks]), np.concatenate([c[1] for c in chunks])


@pytest.mark.parametrize("d, c", [(2, 2), (16, 10), (64, 26), (784, 10)])
def test_shapes_dtypes_and_every_class_present(d, c):
    X, y = gaussian_classes(3000, n_features=d, n_classes=c, random_state=0)
    assert X.shape == (3000, d) and X.dtype == np.float64 and X.flags.c_contiguous
    assert y.shape == (3000,) and y.dtype == np.int64
    assert np.array_equal(np.unique(y), np.arange(c))
    assert np.all(np.isfinite(X))
    # Uniform classes: every class within 5 standard errors of n / c.
    counts = np.bincount(y, minlength=c)
    p = 1.0 / c
    assert np.all(np.abs(counts - 3000 * p) <= 5 * np.sqrt(3000 * p * (1 - p)))


def test_zero_samples():
    X, y = gaussian_classes(0, n_features=5, random_state=0)
    assert X.shape == (0, 5) and y.shape == (0,) and y.dtype == np.int64


def test_determinism_per_seed_and_prefix():
    a = gaussian_classes(5000, n_features=64, random_state=3)
    b = gaussian_classes(5000, n_features=64, random_state=np.random.SeedSequence(3))
    np.testing.assert_array_equal(a[0], b[0])
    np.testing.assert_array_equal(a[1], b[1])
    short = gaussian_classes(4100, n_features=64, random_state=3)  # crosses a block boundary
    np.testing.assert_array_equal(short[0], a[0][:4100])
    np.testing.assert_array_equal(short[1], a[1][:4100])
    other = gaussian_classes(5000, n_features=64, random_state=4)
    assert not np.array_equal(other[0], a[0])
    # A different layout is a different problem with the same example seed.
    lay = gaussian_classes(5000, n_features=64, layout_seed=1, random_state=3)
    assert not np.array_equal(lay[0], a[0])


def test_stream_registry_and_test_set_share_the_layout():
    kw = {"n_features": 32, "n_classes": 5}
    X, y = gaussian_classes(9001, random_state=42, **kw)
    for chunk_size in (1000, 7):
        Xs, ys = _concat(datasets.stream("gaussian_classes", 9001, chunk_size=chunk_size, random_state=42, **kw))
        np.testing.assert_array_equal(Xs, X)
        np.testing.assert_array_equal(ys, y)
    Xi, _ = _concat(itertools.islice(datasets.stream("gaussian_classes", chunk_size=4000, random_state=42, **kw), 3))
    np.testing.assert_array_equal(Xi[:9001], X)
    train, (Xte, yte) = datasets.make_stream_and_test("gaussian_classes", 4000, 4000, 1, **kw)
    Xtr, ytr = _concat(train)
    assert Xte.shape == (4000, 32) and not set(map(tuple, Xtr.tolist())) & set(map(tuple, Xte.tolist()))
    # Both come from one distribution: the Bayes rule of the layout is as accurate on each.
    layout = _classes_layout(**kw)
    acc_tr = np.mean(_bayes_predict(Xtr, layout) == ytr)
    acc_te = np.mean(_bayes_predict(Xte, layout) == yte)
    assert abs(acc_tr - acc_te) < 0.03
    assert "gaussian_classes" in datasets.STREAM_NAMES and "gaussian_classes" in datasets.__all__


def test_noise_is_orthogonal_to_the_class_subspace_with_the_documented_variance():
    d, r, noise = 200, 8, 2.0
    layout = _classes_layout(n_features=d, noise=noise)
    X, _ = gaussian_classes(20_000, n_features=d, noise=noise, random_state=5)
    B = layout.basis
    np.testing.assert_allclose(B.T @ B, np.eye(r), atol=1e-12)
    resid = X - (X @ B) @ B.T
    # Total variance of the noise = noise * r (the clusters' total variance).
    total = np.mean(np.sum(resid**2, axis=1))
    assert abs(total / (noise * r) - 1.0) < 0.02
    # Zero noise puts every example in the subspace.
    X0, _ = gaussian_classes(100, n_features=d, noise=0.0, random_state=5)
    np.testing.assert_allclose(X0 - (X0 @ B) @ B.T, 0.0, atol=1e-12)


def test_overlap_is_as_documented():
    """Defaults (d = 16, 10 classes): Bayes about 96%, an RBF SVM on 5,000 standardised
    examples about 92%, 1-NN clearly below; a higher d with the same layout keeps the
    Bayes accuracy (the noise carries no class information)."""
    from sklearn.neighbors import KNeighborsClassifier
    from sklearn.preprocessing import StandardScaler
    from sklearn.svm import SVC

    X, y = gaussian_classes(10_000, random_state=1)
    bayes = np.mean(_bayes_predict(X, _classes_layout()) == y)
    assert 0.94 <= bayes <= 0.98
    sc = StandardScaler().fit(X[:5000])
    Xtr, Xte = sc.transform(X[:5000]), sc.transform(X[5000:])
    svc = SVC(C=10).fit(Xtr, y[:5000]).score(Xte, y[5000:])
    knn = KNeighborsClassifier(1).fit(Xtr, y[:5000]).score(Xte, y[5000:])
    assert 0.88 <= svc <= 0.95
    assert 0.80 <= knn < svc
    Xh, yh = gaussian_classes(10_000, n_features=64, random_state=1)
    assert abs(np.mean(_bayes_predict(Xh, _classes_layout(n_features=64)) == yh) - bayes) < 0.02


@pytest.mark.parametrize("kwargs, error, fragment", [
    ({"n_features": 0}, ValueError, "n_features must be >= 1"),
    ({"n_classes": 1}, ValueError, "n_classes must be >= 2"),
    ({"n_clusters": 0}, ValueError, "n_clusters must be >= 1"),
    ({"n_features": 4, "n_informative": 5}, ValueError, "n_informative (5) must be <= n_features (4)"),
    ({"n_informative": 0}, ValueError, "n_informative must be >= 1"),
    ({"separation": 0.0}, ValueError, "separation must be a finite positive"),
    ({"separation": float("nan")}, ValueError, "separation must be a finite positive"),
    ({"noise": -1.0}, ValueError, "noise must be a finite non-negative"),
    ({"noise": "loud"}, TypeError, "noise must be a float"),
    ({"n_classes": 2.5}, TypeError, "n_classes must be an int"),
    ({"n_features": True}, TypeError, "n_features must be an int"),
    ({"layout_seed": -1}, ValueError, "layout_seed must be >= 0"),
    ({"random_state": -3}, ValueError, "non-negative"),
])
def test_invalid_parameters_raise(kwargs, error, fragment):
    with pytest.raises(error) as info:
        gaussian_classes(10, **kwargs)
    assert fragment in str(info.value)


def test_invalid_parameters_raise_through_the_stream():
    with pytest.raises(ValueError, match="n_classes must be >= 2"):
        datasets.stream("gaussian_classes", 10, n_classes=1)
    with pytest.raises(TypeError, match="unexpected keyword"):
        datasets.stream("gaussian_classes", 10, clean=True)
    with pytest.raises(ValueError):
        gaussian_classes(-1)
