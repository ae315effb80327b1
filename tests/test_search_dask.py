"""PrequentialSearch(client=...): the candidates learn on Dask workers, each model the same,
bit for bit, as in a local search (same examples, same order, pieces ending at the same marks
and rungs); fit reads Dask arrays and dataframes partition by partition."""

import pickle

import numpy as np
import pytest

from budgetkernel import BudgetedPAClassifier, BudgetedSGDClassifier, IncrementalSVC, datasets
from budgetkernel.model_selection import PrequentialSearch

da = pytest.importorskip("dask.array")
distributed = pytest.importorskip("distributed")

GRID = {"gamma": [0.5, 2.0, 8.0], "lam": [1e-3, 1e-5]}


@pytest.fixture(scope="module")
def client():
    with distributed.Client(processes=False, n_workers=2, threads_per_worker=1, dashboard_address=":0") as c:
        yield c


def _same_candidates(a, b):
    assert a.rungs_ == b.rungs_ and a.best_index_ == b.best_index_
    assert a.results_["rung_errors"] == b.results_["rung_errors"]
    for ca, cb in zip(a.candidates_, b.candidates_):
        assert ca._model.to_bytes() == cb._model.to_bytes()


@pytest.mark.parametrize("chunks", [20000, 3000, 777])
def test_fit_on_dask_partitions_equals_the_local_search(client, chunks):
    X, y = datasets.noisy_checkerboard(20000, random_state=0)
    local = PrequentialSearch(BudgetedSGDClassifier(budget=40), GRID, random_state=0).fit(X, y)
    remote = PrequentialSearch(BudgetedSGDClassifier(budget=40), GRID, random_state=0, client=client)
    remote.fit(da.from_array(X, chunks=(chunks, 2)), da.from_array(y, chunks=chunks))
    _same_candidates(local, remote)
    np.testing.assert_array_equal(remote.predict(X[:100]), local.predict(X[:100]))


def test_default_grid_and_dataframes(client):
    dd = pytest.importorskip("dask.dataframe")
    pd = pytest.importorskip("pandas")
    X, y = datasets.waveform(6000, random_state=1)
    local = PrequentialSearch(BudgetedPAClassifier(budget=30), random_state=0).fit(X, y)
    frame = dd.from_pandas(pd.DataFrame(X), npartitions=3)
    labels = dd.from_pandas(pd.Series(y), npartitions=3)
    remote = PrequentialSearch(BudgetedPAClassifier(budget=30), random_state=0, client=client).fit(frame, labels)
    assert remote.candidate_params_ == local.candidate_params_  # the median heuristic read the same rows
    _same_candidates(local, remote)


def test_partial_fit_chunks_go_to_the_workers(client):
    X, y = datasets.checkerboard(12000, random_state=2)
    local = PrequentialSearch(BudgetedSGDClassifier(budget=40), GRID, random_state=0, n_expected=12000)
    remote = PrequentialSearch(BudgetedSGDClassifier(budget=40), GRID, random_state=0, n_expected=12000,
                               client=client)
    for i in range(0, 12000, 2500):
        local.partial_fit(X[i:i + 2500], y[i:i + 2500], classes=[-1, 1])
        remote.partial_fit(X[i:i + 2500], y[i:i + 2500], classes=[-1, 1])
    _same_candidates(local, remote)
    back = pickle.loads(pickle.dumps(remote))  # forgets the client, keeps the candidates
    assert back.client is None and back.best_params_ == remote.best_params_


def test_invalid_uses_are_rejected(client):
    X, y = datasets.checkerboard(3000, random_state=3)
    with pytest.raises(TypeError, match="dask.distributed.Client"):
        PrequentialSearch(BudgetedSGDClassifier(), GRID, client="tcp://nowhere").fit(X, y)
    dX, dy = da.from_array(X, chunks=(1000, 2)), da.from_array(y, chunks=1000)
    with pytest.raises(ValueError, match="shuffle"):
        PrequentialSearch(BudgetedSGDClassifier(shuffle=True), GRID, client=client).fit(dX, dy)
    with pytest.raises(ValueError, match="locally"):
        PrequentialSearch(IncrementalSVC(gamma=1.0), {"C": [0.1, 1.0]}, client=client).fit(dX, dy)
    with pytest.raises(ValueError, match="rows"):
        PrequentialSearch(BudgetedSGDClassifier(), GRID, client=client).fit(dX, dy[:100])
    bad = X.copy()
    bad[2500, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        PrequentialSearch(BudgetedSGDClassifier(), GRID, client=client).fit(
            da.from_array(bad, chunks=(1000, 2)), dy)
