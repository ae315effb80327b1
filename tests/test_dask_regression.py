"""budgetkernel.dask with regressors: iterative parameter mixing of BudgetedSGDRegressor,
BudgetedPARegressor and KLMSRegressor equals the same mixing done serially with budgetkernel.combine (byte for byte),
one partition equals fit, prediction and R^2 over Dask collections, and the refusals (the KRLS
filters, classes for a regressor, decision_function). On an in-process cluster, as most of
tests/test_dask.py.
"""

import pickle

import numpy as np
import pytest
from sklearn.base import clone

pytest.importorskip("distributed")

import dask.array as da  # noqa: E402
from distributed import Client  # noqa: E402

import budgetkernel.dask as bkd  # noqa: E402
from budgetkernel import (  # noqa: E402
    BudgetedPARegressor,
    BudgetedSGDRegressor,
    KLMSRegressor,
    KRLSRegressor,
    SlidingWindowKRLSRegressor,
)
from budgetkernel._combine import combine  # noqa: E402


@pytest.fixture(scope="module")
def client():
    with Client(processes=False, n_workers=2, threads_per_worker=1, dashboard_address=":0") as c:
        yield c


def _data(n, seed):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, size=(n, 2))
    return X, np.sin(3 * X[:, 0]) + X[:, 1] ** 2 + 0.1 * rng.normal(size=n) + 1.0


def _darray(X, y, rows):
    return da.from_array(X, chunks=(rows, X.shape[1])), da.from_array(y, chunks=(rows,))


def _serial_mix(est, X, y, rows, sync_every, n_epochs):
    """dask.fit's rounds, done here: a copy of the mixture per partition learns its next rows,
    the copies are combined weighted by those rows, the mixture their base."""
    bounds = [(i, min(i + rows, len(X))) for i in range(0, len(X), rows)]
    mixture, fitted = clone(est), False
    for _ in range(n_epochs):
        offsets = [0] * len(bounds)
        while True:
            spans = [(i, o, n if sync_every is None else min(n, o + sync_every))
                     for i, (o, n) in enumerate(zip(offsets, [b - a for a, b in bounds])) if o < n]
            if not spans:
                break
            copies, weights = [], []
            for i, o, stop in spans:
                c = pickle.loads(pickle.dumps(mixture))
                a = bounds[i][0]
                c.partial_fit(X[a + o:a + stop], y[a + o:a + stop])
                copies.append(c)
                weights.append(stop - o)
            mixture = combine(copies, weights=weights, base=mixture if fitted else None)
            fitted = True
            for i, _, stop in spans:
                offsets[i] = stop
    return mixture


@pytest.mark.parametrize("est", [
    BudgetedSGDRegressor(budget=30, gamma=1.5, random_state=0),
    BudgetedSGDRegressor(budget=30, maintenance="remove-random", loss="squared", gamma=1.5, fit_intercept=False,
                         random_state=1),
    KLMSRegressor(eta=0.3, gamma=1.5),
    KLMSRegressor(eta=0.3, epsilon=0.2, gamma=1.5),
    BudgetedPARegressor(budget=30, variant="nn", C=0.5, gamma=1.5, random_state=3),
    BudgetedPARegressor(budget=30, variant="project", averaged=True, C=0.5, gamma=1.5, random_state=4),
    BudgetedPARegressor(budget=30, variant="simple", sampling=True, beta=2.0, gamma=1.5, random_state=2),
])
@pytest.mark.parametrize("sync_every,n_epochs", [(None, 1), (150, 2)])
def test_fit_equals_the_same_mixing_done_serially(client, est, sync_every, n_epochs):
    X, y = _data(1800, seed=0)
    got = bkd.fit(est, *_darray(X, y, 600), client=client, sync_every=sync_every, n_epochs=n_epochs)
    want = _serial_mix(est, X, y, 600, sync_every, n_epochs)
    assert type(got) is type(est)
    assert got._model.to_bytes() == want._model.to_bytes()
    np.testing.assert_array_equal(got.predict(X), want.predict(X))
    assert got.n_seen_ == len(X) * n_epochs
    assert len(got.mixing_history_) == (1 if sync_every is None else 4) * n_epochs
    assert np.isfinite(got.predict(X)).all()


@pytest.mark.parametrize("est", [BudgetedSGDRegressor(budget=30, gamma="scale", random_state=0), KLMSRegressor(epsilon=0.1),
                                 BudgetedPARegressor(budget=30, gamma="scale", random_state=5)])
def test_one_partition_equals_fit(client, est):
    X, y = _data(1000, seed=1)
    ref = clone(est).fit(X, y)
    got = bkd.fit(est, *_darray(X, y, 1000), client=client)
    assert got._model.to_bytes() == ref._model.to_bytes()
    assert got.gamma == pytest.approx(ref.gamma_, rel=1e-15)


def test_fit_continues_a_fitted_regressor(client):
    X, y = _data(1200, seed=2)
    start = BudgetedSGDRegressor(budget=30, gamma=1.5, random_state=0).fit(X[:300], y[:300])
    got = bkd.fit(start, *_darray(X[300:], y[300:], 300), client=client)
    assert got.n_seen_ == 1200 and start.n_seen_ == 300
    copies = [pickle.loads(pickle.dumps(start)).partial_fit(X[a:a + 300], y[a:a + 300]) for a in (300, 600, 900)]
    want = combine(copies, weights=[300] * 3, base=start)
    assert got._model.to_bytes() == want._model.to_bytes()


def test_predict_and_score_over_dask_collections(client):
    X, y = _data(1500, seed=3)
    reg = BudgetedSGDRegressor(budget=40, gamma=1.5).fit(X, y)
    Xd, yd = _darray(X, y, 400)
    pred = bkd.predict(reg, Xd)
    assert pred.dtype == np.float64
    np.testing.assert_array_equal(pred.compute(), reg.predict(X))
    assert bkd.score(reg, Xd, yd) == pytest.approx(reg.score(X, y), rel=1e-12, abs=1e-12)
    with pytest.raises(TypeError, match="no decision_function"):
        bkd.decision_function(reg, Xd)


@pytest.mark.parametrize("cls", [KRLSRegressor, SlidingWindowKRLSRegressor])
def test_regressors_combine_does_not_take_are_refused_before_any_work(cls):
    X, y = _data(100, seed=4)
    with pytest.raises(TypeError, match="does not combine"):
        bkd.fit(cls(gamma=1.0), *_darray(X, y, 50), client=object())  # refused before the client is used


def test_a_regressor_takes_no_classes(client):
    X, y = _data(100, seed=5)
    with pytest.raises(ValueError, match="classes does not apply"):
        bkd.fit(BudgetedSGDRegressor(gamma=1.0), *_darray(X, y, 50), classes=[0, 1], client=client)
