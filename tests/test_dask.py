"""budgetkernel.dask: iterative parameter mixing over Dask partitions, prediction over Dask
collections, scikit-learn's searches on the Dask joblib backend.

Most tests run on an in-process cluster (Client(processes=False)); one module-scoped cluster of
worker processes exercises real serialisation and a worker killed mid-fit.
"""

import os
import pickle
import re
import signal
import threading
import time

import numpy as np
import pytest
from sklearn.base import clone

pytest.importorskip("distributed")

import dask.array as da  # noqa: E402
import dask.dataframe as dd  # noqa: E402
import pandas as pd  # noqa: E402
from distributed import Client, LocalCluster  # noqa: E402

import budgetkernel.dask as bkd  # noqa: E402
from budgetkernel import BudgetedPAClassifier, BudgetedSGDClassifier, IncrementalSVC, datasets  # noqa: E402


def _client(**kw):
    return Client(processes=False, threads_per_worker=1, dashboard_address=":0", **kw)


@pytest.fixture(scope="module")
def client():
    with _client(n_workers=2) as c:
        yield c


@pytest.fixture(scope="module")
def process_client():
    """Two worker processes: every model crosses a process boundary (real pickling)."""
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0") as cluster:
        with Client(cluster) as c:
            yield c


def _darray(X, y, rows):
    """X and y as dask arrays with the row chunks ``rows`` (an int or a tuple of lengths)."""
    return da.from_array(X, chunks=(rows, X.shape[1])), da.from_array(y, chunks=(rows,))


def _skip_unless_combinable(cls):
    if not hasattr(cls()._core_class(), "combine"):
        pytest.skip(f"budgetkernel.combine does not take {cls.__name__} models yet")


def _bytes(est):
    return est._model.to_bytes()


def test_import_budgetkernel_does_not_import_dask(packages_import_budgetkernel_loads):
    assert "budgetkernel" in packages_import_budgetkernel_loads
    assert not {"dask", "distributed"} & packages_import_budgetkernel_loads


# ------------------------------------------------------- one partition is fit
@pytest.mark.parametrize("cls", [BudgetedSGDClassifier, BudgetedPAClassifier])
@pytest.mark.parametrize("n_epochs", [1, 2])
@pytest.mark.parametrize("gamma", [2.0, "scale"])
def test_one_partition_equals_fit(client, cls, n_epochs, gamma):
    _skip_unless_combinable(cls)
    X, y = datasets.checkerboard(3000, random_state=1)
    ref = cls(budget=40, gamma=gamma, n_epochs=n_epochs, random_state=0).fit(X, y)
    est = cls(budget=40, gamma=gamma, random_state=0)
    got = bkd.fit(est, *_darray(X, y, 3000), client=client, n_epochs=n_epochs)
    assert _bytes(got) == _bytes(ref)
    assert got.gamma_ == ref.gamma_
    assert not hasattr(est, "_model")  # the estimator passed in stays unfitted
    assert [r["round"] for r in got.mixing_history_] == list(range(n_epochs))
    assert all(r["examples"] == 3000 and r["bytes_sent"] > 0 for r in got.mixing_history_)


def test_one_partition_dataframe_equals_fit(client):
    X, y = datasets.checkerboard(2000, random_state=2)
    frame = pd.DataFrame(X, columns=["a", "b"])
    ref = BudgetedSGDClassifier(budget=30, random_state=0).fit(frame, y)
    got = bkd.fit(BudgetedSGDClassifier(budget=30, random_state=0), dd.from_pandas(frame, npartitions=1),
                  dd.from_pandas(pd.Series(y), npartitions=1), client=client)
    assert _bytes(got) == _bytes(ref)
    assert list(got.feature_names_in_) == ["a", "b"]
    assert np.array_equal(got.predict(frame), ref.predict(frame))


def test_fitted_estimator_continues(client):
    X, y = datasets.checkerboard(4000, random_state=3)
    first = BudgetedSGDClassifier(budget=30, gamma=2.0, random_state=0).fit(X[:2000], y[:2000])
    before = _bytes(first)
    ref = pickle.loads(pickle.dumps(first)).partial_fit(X[2000:], y[2000:])
    got = bkd.fit(first, *_darray(X[2000:], y[2000:], 2000), client=client)
    assert _bytes(got) == _bytes(ref)
    assert _bytes(first) == before  # not changed


# ------------------------------------------------------ several partitions
def test_same_partitions_any_number_of_workers(process_client):
    X, y = datasets.checkerboard(8000, random_state=4)
    est = BudgetedSGDClassifier(budget=30, gamma=2.0, random_state=0)
    with _client(n_workers=1) as one:
        a = bkd.fit(est, *_darray(X, y, 2000), client=one, sync_every=700, n_epochs=2)
    b = bkd.fit(est, *_darray(X, y, 2000), client=process_client, sync_every=700, n_epochs=2)
    assert _bytes(a) == _bytes(b)
    assert [r["examples"] for r in a.mixing_history_] == [r["examples"] for r in b.mixing_history_]


def test_without_a_client_an_embedded_cluster(client, monkeypatch):
    X, y = datasets.checkerboard(4000, random_state=16)
    est = BudgetedSGDClassifier(budget=30, gamma=2.0, random_state=0)
    # a LocalCluster of os.cpu_count() processes, closed after: of one here (each worker process
    # imports budgetkernel and scikit-learn; the number of workers does not change the model)
    monkeypatch.setattr(os, "cpu_count", lambda: 1)
    got = bkd.fit(est, *_darray(X, y, 2000))
    assert _bytes(got) == _bytes(bkd.fit(est, *_darray(X, y, 2000), client=client))


def test_four_partitions_close_to_one_stream(client):
    X, y = datasets.noisy_checkerboard(40000, random_state=5)
    Xt, yt = datasets.checkerboard(5000, random_state=6)
    est = BudgetedSGDClassifier(budget=100, gamma=2.0, lam=1e-3, random_state=0)
    one = clone(est).fit(X, y).score(Xt, yt)
    got = bkd.fit(est, *_darray(X, y, 10000), client=client)
    assert got.score(Xt, yt) > one - 0.02  # one-shot mixing; measured 0.952 against 0.964
    (record,) = got.mixing_history_
    assert record["examples"] == 40000 and record["bytes_sent"] > 0 and record["degradation"] >= 0
    assert all(record[k] >= 0 for k in ("train_s", "serialise_s", "combine_s", "wall_s"))
    assert got.n_seen_ == 40000 and got.n_support_ <= 100


def test_uneven_partitions_sit_rounds_out(client):
    X, y = datasets.checkerboard(20000, random_state=7)
    est = BudgetedSGDClassifier(budget=50, gamma=2.0, random_state=0)
    dX = da.from_array(X, chunks=((5000, 5000, 3000, 7000), 2))
    dy = da.from_array(y, chunks=4000)  # rechunked to X's partitions
    got = bkd.fit(est, dX, dy, client=client, sync_every=2000, n_epochs=2)
    per_epoch = [8000, 7000, 4000, 1000]  # the 3000-row partition runs out in round 1, the others later
    assert [r["examples"] for r in got.mixing_history_] == per_epoch * 2
    assert [r["round"] for r in got.mixing_history_] == list(range(8))
    assert got.n_seen_ == 40000


def test_scale_gamma_pooled_from_the_partitions(client):
    X, y = datasets.waveform(3000, random_state=8)
    got = bkd.fit(BudgetedSGDClassifier(budget=20, random_state=0), *_darray(X, y, 700), client=client)
    ref = BudgetedSGDClassifier(budget=20).fit(X, y)  # gamma='scale' over all of X
    assert got.gamma_ == pytest.approx(ref.gamma_, rel=1e-12)
    assert got.gamma == got.gamma_
    assert list(got.classes_) == [0, 1, 2]


# ------------------------------------------------------------- prediction
@pytest.mark.parametrize("name", ["checkerboard", "waveform"])
def test_prediction_equals_the_estimators(client, name):
    X, y = getattr(datasets, name)(3000, random_state=9)
    est = BudgetedSGDClassifier(budget=40, gamma=0.5, random_state=0).fit(X, y)
    dX, dy = _darray(X, y, 800)
    assert np.array_equal(bkd.predict(est, dX).compute(), est.predict(X))
    assert np.array_equal(bkd.decision_function(est, dX).compute(), est.decision_function(X))
    assert bkd.score(est, dX, dy) == est.score(X, y)
    frame = dd.from_pandas(pd.DataFrame(X), npartitions=3)
    series = dd.from_pandas(pd.Series(y), npartitions=3)
    assert np.array_equal(bkd.predict(est, frame).compute().to_numpy(), est.predict(X))
    assert np.array_equal(bkd.decision_function(est, frame).compute().to_numpy(), est.decision_function(X))
    assert bkd.score(est, frame, series) == est.score(X, y)


def test_prediction_without_a_client(monkeypatch):
    def no_client():
        raise ValueError("No clients found")

    monkeypatch.setattr(bkd, "default_client", no_client)  # the module's client may still be open
    X, y = datasets.checkerboard(1000, random_state=10)
    est = BudgetedPAClassifier(budget=20, gamma=2.0).fit(X, y)
    dX, dy = _darray(X, y, 300)
    assert np.array_equal(bkd.predict(est, dX).compute(scheduler="sync"), est.predict(X))
    assert np.array_equal(bkd.decision_function(est, dX).compute(scheduler="sync"), est.decision_function(X))
    assert bkd.score(est, dX, dy) == est.score(X, y)


def test_grid_search_on_the_dask_joblib_backend(client):
    import joblib
    from sklearn.model_selection import GridSearchCV, RandomizedSearchCV

    X, y = datasets.checkerboard(1500, random_state=11)
    grid = {"gamma": [0.5, 2.0], "budget": [20, 40]}
    with joblib.parallel_backend("dask"):
        search = GridSearchCV(BudgetedSGDClassifier(random_state=0), grid, cv=3).fit(X, y)
        rand = RandomizedSearchCV(BudgetedSGDClassifier(random_state=0), grid, n_iter=3, cv=3, random_state=0).fit(X, y)
    plain = GridSearchCV(BudgetedSGDClassifier(random_state=0), grid, cv=3).fit(X, y)
    assert search.best_params_ == plain.best_params_
    assert np.array_equal(search.cv_results_["mean_test_score"], plain.cv_results_["mean_test_score"])
    assert len(rand.cv_results_["params"]) == 3


# --------------------------------------------------------------- bad input
def test_bad_inputs(client):
    X, y = datasets.checkerboard(100, random_state=12)
    dX, dy = _darray(X, y, 50)
    est = BudgetedSGDClassifier(gamma=2.0)
    with pytest.raises(TypeError, match="X must be a dask array or dask DataFrame"):
        bkd.fit(est, X, dy, client=client)
    with pytest.raises(TypeError, match="y must be a dask array or dask Series"):
        bkd.fit(est, dX, y, client=client)
    with pytest.raises(TypeError, match="estimator must be a budgetkernel estimator"):
        bkd.fit(object(), dX, dy, client=client)
    with pytest.raises(ValueError, match="X and y have different lengths: 100 and 60"):
        bkd.fit(est, dX, dy[:60], client=client)
    with pytest.raises(ValueError, match=r"one chunk along the features.*rechunk"):
        bkd.fit(est, da.from_array(X, chunks=(50, 1)), dy, client=client)
    for bad in (0, -1, 1.5, True):
        with pytest.raises(ValueError, match="sync_every must be a positive integer or None"):
            bkd.fit(est, dX, dy, client=client, sync_every=bad)
        with pytest.raises(ValueError, match="n_epochs must be a positive integer"):
            bkd.fit(est, dX, dy, client=client, n_epochs=bad)
    with pytest.raises(ValueError, match="y must be partitioned like X"):
        bkd.fit(est, dd.from_pandas(pd.DataFrame(X), npartitions=2), dd.from_pandas(pd.Series(y), npartitions=3),
                client=client)
    with pytest.raises(ValueError, match="needs at least 2 classes"):
        bkd.fit(est, dX, dy, client=client, classes=[1])
    with pytest.raises(ValueError, match="budget"):
        bkd.fit(BudgetedSGDClassifier(budget=0), dX, dy, client=client)
    with pytest.raises(ValueError, match="sync_every and n_epochs do not apply to IncrementalSVC"):
        bkd.fit(IncrementalSVC(), dX, dy, client=client, sync_every=10)


def test_a_failing_task_names_round_and_partition(client):
    X, y = datasets.checkerboard(400, random_state=13)
    X[350] = 1e200  # finite (the partitions' check passes), too large for the kernel: partition 3's task fails
    with pytest.raises(RuntimeError, match=r"round 0 failed in partition 3 \(rows 0:100\).*row 50"):
        bkd.fit(BudgetedSGDClassifier(gamma=2.0), *_darray(X, y, 100), client=client, classes=[-1, 1])


# ------------------------------------------------------------ a worker dies
def test_a_worker_killed_mid_fit_changes_nothing(process_client, client):
    """A worker process killed while rounds run: its task is retried elsewhere and its
    partition recomputed from the graph, so the model is the one of an undisturbed fit."""
    X, y = _slow_data(14)
    est = _slow_learner()
    ref = bkd.fit(est, *_darray(X, y, 10000), client=client, n_epochs=2)
    out = _fit_killing_a_worker(process_client, est, *_darray(X, y, 10000), n_epochs=2)
    assert "error" not in out, out.get("error")
    assert _bytes(out["model"]) == _bytes(ref)
    assert [r["examples"] for r in out["model"].mixing_history_] == [r["examples"] for r in ref.mixing_history_]


def test_a_task_lost_past_the_retries_raises(process_client):
    """When dask gives the task up (KilledWorker: no failure allowed here), the fit raises,
    naming the round and the partition, instead of mixing the partitions that survived."""
    def allow(n, dask_scheduler=None):
        old, dask_scheduler.allowed_failures = dask_scheduler.allowed_failures, n
        return old

    X, y = _slow_data(15)
    old = process_client.run_on_scheduler(allow, 0)
    try:
        out = _fit_killing_a_worker(process_client, _slow_learner(), *_darray(X, y, 10000), n_epochs=2)
    finally:
        process_client.run_on_scheduler(allow, old)
    assert "model" not in out
    assert isinstance(out["error"], RuntimeError)
    assert re.search(r"round \d+ failed in partition [01] \(rows \d+:\d+\): KilledWorker", str(out["error"]))


def _slow_data(seed):
    return datasets.noisy_checkerboard(20000, random_state=seed)


def _slow_learner():
    """A learner whose rounds take a good fraction of a second on a partition of _slow_data
    (projection costs O(B^2) per example once the budget is full), so that the kill lands
    while a round's task runs."""
    return BudgetedSGDClassifier(budget=100, maintenance="project", gamma=2.0, lam=1e-5, random_state=0)


def _fit_killing_a_worker(client, est, X, y, **kw):
    """dask.fit in a thread, the process of a worker running one of its rounds killed; returns
    {"model": ...} or {"error": the RuntimeError}, once the cluster has its workers back."""
    pids = client.run(os.getpid)
    out = {}

    def run():
        try:
            out["model"] = bkd.fit(est, X, y, client=client, **kw)
        except RuntimeError as e:
            out["error"] = e

    thread = threading.Thread(target=run)
    thread.start()
    os.kill(pids[_worker_running_a_round(client, thread)], signal.SIGKILL)
    thread.join(120)
    assert not thread.is_alive()
    client.wait_for_workers(len(pids), timeout=60)
    return out


def _worker_running_a_round(client, thread, timeout=30):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and thread.is_alive():
        for worker, keys in client.processing().items():
            if any(str(k).startswith("budgetkernel-round-") for k in keys):
                return worker
        time.sleep(0.005)
    pytest.fail("no round was seen running")


def test_incremental_svc_is_fitted_as_a_cascade(client):
    """dask.fit(IncrementalSVC) is the cascade (_cascade.py, tested there): the exact SVM of all
    the data, whatever the partitions."""
    X, y = datasets.checkerboard(600, random_state=5)
    one = IncrementalSVC(C=10.0, gamma=2.0).fit(X, y)
    casc = bkd.fit(IncrementalSVC(C=10.0, gamma=2.0), *_darray(X, y, 200), client=client)
    assert casc.cascade_history_
    assert abs(casc.machine_state()["dual_objective"] - one.machine_state()["dual_objective"]) <= 1e-9 * abs(
        one.machine_state()["dual_objective"])
    np.testing.assert_allclose(casc.decision_function(X), one.decision_function(X), atol=1e-9)
