"""PrequentialSearch over the regressors, against its oracle: each candidate fitted alone, one
example at a time (predict_one, then learn_one), gives the prequential squared errors the
search ranks by, and the search selects the candidate with the lowest of them. Also: n_jobs
changes nothing, scoring='mae', the default grids, learn_one, pickling, save, bad input, and
Dask (skipped without it)."""

import math
import pickle

import numpy as np
import pytest
from conftest import interrupted
from sklearn.base import clone, is_regressor

from budgetkernel import (
    BudgetedPARegressor,
    BudgetedSGDClassifier,
    BudgetedSGDRegressor,
    KLMSRegressor,
    KRLSRegressor,
    SlidingWindowKRLSRegressor,
    load,
)
from budgetkernel.model_selection import PrequentialSearch, default_grid, median_gamma

# Each regressor with a small grid of what a user would search (gamma given: the oracle's
# learn_one would otherwise take 'scale' from its first example alone).
CASES = {
    "bsgd": (BudgetedSGDRegressor(budget=20, random_state=0), {"gamma": [0.2, 2.0], "lam": [1e-2, 1e-4]}),
    "bsgd-squared": (BudgetedSGDRegressor(budget=20, loss="squared", gamma=1.0, random_state=0), {"lam": [0.5, 1e-2, 1e-3]}),
    "klms": (KLMSRegressor(epsilon=0.1), {"gamma": [0.2, 2.0], "eta": [0.1, 0.6]}),
    "krls": (KRLSRegressor(nu=1e-2), {"gamma": [0.2, 2.0], "lam": [1e-3, 1.0]}),
    "sliding-krls": (SlidingWindowKRLSRegressor(budget=30), {"gamma": [0.2, 2.0], "lam": [1e-3, 1.0]}),
    "pa": (BudgetedPARegressor(budget=20, variant="project", random_state=0), {"gamma": [0.2, 2.0], "C": [0.1, 10.0]}),
}


def _data(n=900, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-3, 3, size=(n, 2))
    y = np.sin(X[:, 0]) + 0.5 * X[:, 1] + 0.1 * rng.standard_normal(n)
    return X, y


def _chunks(X, y, size=200):
    for i in range(0, len(y), size):
        yield X[i : i + size], y[i : i + size]


def _prequential_errors(est, params, X, y):
    """The candidate alone, one example at a time: its prediction of each example before
    learning it, minus the target."""
    c = clone(est).set_params(**params)
    r = np.empty(len(y))
    for i in range(len(y)):
        r[i] = c.predict_one(X[i]) - y[i]
        c.learn_one(X[i], y[i])
    return r


def _ids(cases):
    return list(cases)


@pytest.mark.parametrize("name", _ids(CASES))
def test_the_selected_candidate_has_the_lowest_prequential_mse(name):
    est, grid = CASES[name]
    X, y = _data()
    # One rung at the end of the stream that keeps one candidate, each judged over all it saw:
    # the winner is the candidate of the lowest prequential MSE over the whole stream.
    search = PrequentialSearch(est, grid, eta=8, first_rung=len(y), judge="cumulative", n_jobs=2)
    for Xc, yc in _chunks(X, y):
        search.partial_fit(Xc, yc)
    mse = [float(np.mean(_prequential_errors(est, p, X, y) ** 2)) for p in search.candidate_params_]
    np.testing.assert_allclose(search.results_["online_error"], mse, rtol=1e-9)
    assert search.best_index_ == int(np.argmin(mse))
    assert search.results_["rank"][int(np.argmin(mse))] == 1
    # and the winner is that candidate fitted alone, byte for byte
    alone = clone(est).set_params(**search.best_params_)
    for Xc, yc in _chunks(X, y):
        alone.partial_fit(Xc, yc)
    assert search.best_estimator_._model.to_bytes() == alone._model.to_bytes()
    np.testing.assert_array_equal(search.predict(X[:50]), alone.predict(X[:50]))


def test_rung_errors_are_the_window_mse_and_halving_keeps_the_best():
    est, grid = CASES["krls"]
    X, y = _data(1200)
    search = PrequentialSearch(est, grid, eta=2, first_rung=300).fit(X, y)
    assert search.rungs_ == [300, 600]
    # the window judged at 300 starts at the latest power-of-two mark at most 300 / eta: 128
    sq = [_prequential_errors(est, p, X, y) ** 2 for p in search.candidate_params_]
    first = [float(np.mean(s[128:300])) for s in sq]
    np.testing.assert_allclose([e[0] for e in search.results_["rung_errors"]], first, rtol=1e-9)
    kept = sorted(range(4), key=lambda i: (first[i], i))[:2]
    assert sorted(i for i, d in enumerate(search.results_["dropped_at"]) if d is None) == [search.best_index_]
    assert search.best_index_ in kept


def test_scoring_mae_selects_the_lowest_prequential_mae():
    est, grid = CASES["klms"]
    X, y = _data()
    search = PrequentialSearch(est, grid, eta=8, first_rung=len(y), judge="cumulative", scoring="mae").fit(X, y)
    mae = [float(np.mean(np.abs(_prequential_errors(est, p, X, y)))) for p in search.candidate_params_]
    np.testing.assert_allclose(search.results_["online_error"], mae, rtol=1e-9)
    assert search.best_index_ == int(np.argmin(mae))
    assert "online_mae" in search.summary()


@pytest.mark.parametrize("name", ["bsgd", "klms"])
def test_n_jobs_changes_nothing(name):
    est, grid = CASES[name]
    X, y = _data(1500)
    runs = [PrequentialSearch(est, grid, first_rung=200, n_jobs=n).fit(X, y) for n in (1, 2, 3)]
    for other in runs[1:]:
        assert other.results_["rung_errors"] == runs[0].results_["rung_errors"]
        for a, b in zip(runs[0].candidates_, other.candidates_):
            assert a._model.to_bytes() == b._model.to_bytes()


@pytest.mark.parametrize(
    ("est", "names"),
    [
        (BudgetedSGDRegressor(budget=20), ["gamma", "lam"]),
        (KLMSRegressor(), ["eta", "gamma"]),
        (KRLSRegressor(), ["gamma", "lam"]),
        (SlidingWindowKRLSRegressor(budget=20), ["gamma", "lam"]),
        (BudgetedPARegressor(budget=20), ["C", "gamma"]),
    ],
    ids=["bsgd", "klms", "krls", "sliding-krls", "pa"],
)
def test_every_regressor_is_searched_with_its_default_grid(est, names):
    X, y = _data(1500)
    grid = default_grid(est, X, n_expected=len(y))
    assert sorted(grid) == names and all(len(v) == (3 if k == "gamma" else 5) for k, v in grid.items())
    np.testing.assert_allclose(np.array(grid["gamma"]) / median_gamma(X), [0.25, 1.0, 4.0])
    search = PrequentialSearch(est, random_state=0).fit(X, y)
    assert len(search.candidate_params_) == 15 and search.n_seen_ == len(y)
    assert is_regressor(search)
    assert search.score(X, y) == search.best_estimator_.score(X, y)
    assert search.score(X, y) > 0.8  # R^2 of the chosen model on the data it learned


def test_a_one_candidate_search_is_the_regressor_alone():
    X, y = _data()
    est = BudgetedSGDRegressor(budget=20, gamma=1.0, random_state=0)
    search = PrequentialSearch(est, {"n_epochs": [1]}).fit(X, y)
    alone = clone(est).fit(X, y)
    assert search.best_estimator_._model.to_bytes() == alone._model.to_bytes()


def test_learn_one_equals_partial_fit():
    est, grid = CASES["sliding-krls"]
    X, y = _data(400)
    a = PrequentialSearch(est, grid, first_rung=100, n_expected=400)
    assert a.predict_one(X[0]) == 0.0  # before any learning, as the regressors answer
    for i in range(len(y)):
        a.learn_one(X[i], float(y[i]))
    b = PrequentialSearch(est, grid, first_rung=100, n_expected=400)
    for Xc, yc in _chunks(X, y, 37):
        b.partial_fit(Xc, yc)
    for ea, eb in zip(a.results_["rung_errors"], b.results_["rung_errors"]):
        np.testing.assert_allclose(ea, eb, rtol=1e-12)
    assert a.best_index_ == b.best_index_
    np.testing.assert_allclose(a.predict(X[:20]), b.predict(X[:20]), rtol=1e-12)
    assert isinstance(a.predict_one(X[0]), float)


def test_pickle_resume_and_save(tmp_path):
    est, grid = CASES["bsgd"]
    X, y = _data(1200)
    whole = PrequentialSearch(est, grid, first_rung=300).fit(X, y)
    half = PrequentialSearch(est, grid, first_rung=300, n_expected=1200)
    for Xc, yc in _chunks(X[:600], y[:600]):
        half.partial_fit(Xc, yc)
    half = pickle.loads(pickle.dumps(half))
    for Xc, yc in _chunks(X[600:], y[600:]):
        half.partial_fit(Xc, yc)
    assert half.best_index_ == whole.best_index_
    assert half.best_estimator_._model.to_bytes() == whole.best_estimator_._model.to_bytes()
    whole.save(tmp_path / "best.bkm")
    back = load(tmp_path / "best.bkm")
    assert type(back) is BudgetedSGDRegressor and back.get_params() == whole.best_estimator_.get_params()
    np.testing.assert_array_equal(back.predict(X[:30]), whole.predict(X[:30]))


def test_bad_input_raises_clearly():
    X, y = _data(300)
    with pytest.raises(ValueError, match="scoring"):
        PrequentialSearch(KLMSRegressor(), scoring="error").fit(X, y)
    with pytest.raises(ValueError, match="scoring"):
        PrequentialSearch(BudgetedSGDClassifier(), scoring="mse").fit(X, np.sign(y))
    with pytest.raises(ValueError, match="real numbers"):
        PrequentialSearch(KLMSRegressor()).fit(X, np.array(["a"] * len(y), dtype=object))
    with pytest.raises(ValueError, match="NaN|infinity"):
        PrequentialSearch(KLMSRegressor()).fit(X, np.where(np.arange(len(y)) == 5, np.nan, y))
    search = PrequentialSearch(KLMSRegressor(), {"eta": [0.1, 0.5]}).fit(X, y)
    with pytest.raises(ValueError, match="features"):
        search.partial_fit(X[:, :1], y)
    with pytest.raises(ValueError, match="real number"):
        search.learn_one(X[0], "a")


def test_ctrl_c_stops_the_candidates_and_the_search_goes_on():
    X, y = _data(200_000, seed=3)
    search = PrequentialSearch(KLMSRegressor(gamma=1.0), {"eta": [0.1, 0.3]}, n_jobs=1, first_rung=10**6)
    search.partial_fit(X[:10], y[:10])
    interrupted(lambda: search.partial_fit(X[10:], y[10:]))
    seen, counts = search.n_seen_, search.results_["examples"]
    assert seen == min(counts) >= 10 and 10 < max(counts) < len(y)  # one thread: one after another
    assert math.isfinite(search.results_["online_error"][search.best_index_])
    search.partial_fit(X[seen : seen + 10], y[seen : seen + 10])  # goes on from n_seen_
    assert search.results_["examples"] == [max(n, seen + 10) for n in counts]


# ------------------------------------------------------------------------------ Dask


@pytest.fixture(scope="module")
def client():
    pytest.importorskip("dask.array")
    distributed = pytest.importorskip("distributed")
    with distributed.Client(processes=False, n_workers=2, threads_per_worker=1, dashboard_address=":0") as c:
        yield c


@pytest.mark.parametrize("name", ["bsgd", "krls"])
def test_dask_partitions_give_the_local_search(client, name):
    import dask.array as da

    est, grid = CASES[name]
    X, y = _data(3000)
    local = PrequentialSearch(est, grid, random_state=0).fit(X, y)
    remote = PrequentialSearch(est, grid, random_state=0, client=client)
    remote.fit(da.from_array(X, chunks=(700, 2)), da.from_array(y, chunks=700))
    assert remote.rungs_ == local.rungs_ and remote.best_index_ == local.best_index_
    assert remote.results_["rung_errors"] == local.results_["rung_errors"]
    for a, b in zip(local.candidates_, remote.candidates_):
        assert a._model.to_bytes() == b._model.to_bytes()
    # partial_fit with a client: the chunks go to the workers
    chunked = PrequentialSearch(est, grid, random_state=0, n_expected=3000, client=client)
    for Xc, yc in _chunks(X, y, 1000):
        chunked.partial_fit(Xc, yc)
    assert chunked.best_estimator_._model.to_bytes() == local.best_estimator_._model.to_bytes()
