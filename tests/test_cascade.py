"""The cascade SVM with feedback (budgetkernel._cascade.cascade_fit): the same machine as one
IncrementalSVC on all the data (dual objective, support vectors, decision values), agreement
with LIBSVM, one partition = plain fit, the feedback loop doing real work, and one run on
worker processes (real serialisation)."""

import os
import pickle
import signal
import threading
import time

import numpy as np
import pytest

distributed = pytest.importorskip("distributed")

from sklearn.svm import SVC  # noqa: E402

from budgetkernel import IncrementalSVC  # noqa: E402
from budgetkernel._cascade import cascade_fit  # noqa: E402
from budgetkernel._kernel_params import _scale_gamma  # noqa: E402
from budgetkernel.datasets import checkerboard  # noqa: E402


@pytest.fixture(scope="module")
def client():
    with distributed.Client(processes=False, n_workers=2, threads_per_worker=1, dashboard_address=":0") as c:
        yield c


@pytest.fixture(scope="module")
def process_client():
    """Two worker processes (real serialisation of blocks, machines and roots)."""
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0") as cluster:
        with distributed.Client(cluster) as c:
            yield c


def _blocks(client, X, y, k):
    return [client.scatter((X[p], y[p])) for p in np.array_split(np.arange(len(X)), k)]


def _data(seed, n, n_classes, d=3):
    """Overlapping Gaussian classes (the SVM has margin and error support vectors)."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, n_classes, n)
    X = rng.normal(size=(n, d)) + 1.5 * np.eye(n_classes, d)[y]
    return np.ascontiguousarray(X), y


def _n_machines(m):
    return 1 if len(m.classes_) == 2 else len(m.classes_)


def _rows(A):
    return {tuple(r) for r in A}


def _assert_same_machine(m, ref, X):
    """m is the SVM ref is: every machine's dual objective to 1e-9 relative, the same support
    vectors (as sets of rows), the same decision values (to the solver's tolerance)."""
    for k in range(_n_machines(ref)):
        a, b = m.machine_state(k)["dual_objective"], ref.machine_state(k)["dual_objective"]
        assert abs(a - b) <= 1e-9 * abs(b), (k, a, b)
    assert _rows(m.support_vectors_) == _rows(ref.support_vectors_)
    np.testing.assert_allclose(m.decision_function(X), ref.decision_function(X), rtol=0, atol=1e-7)


CASES = [  # kernel, parameters, seed, classes, partitions
    ("rbf", dict(C=1.0, gamma=0.5), 0, 2, 3),
    ("rbf", dict(C=10.0, gamma=1.0), 1, 2, 4),
    ("linear", dict(C=1.0), 2, 2, 4),
    ("poly", dict(C=1.0, gamma=0.5, degree=2, coef0=1.0), 3, 2, 2),
    ("rbf", dict(C=1.0, gamma=0.5), 4, 3, 4),
    ("linear", dict(C=0.5), 5, 3, 3),
    ("poly", dict(C=1.0, gamma=0.5, degree=3, coef0=1.0), 6, 4, 5),
    ("rbf", dict(C=5.0, gamma=0.5, ridge=1e-3), 14, 2, 3),  # the dual on K + ridge I
]


@pytest.mark.parametrize("kernel, params, seed, n_classes, k", CASES)
def test_same_machine_as_one_svm_on_all_data(client, kernel, params, seed, n_classes, k):
    X, y = _data(seed, 400, n_classes)
    est = IncrementalSVC(kernel=kernel, **params)
    m = cascade_fit(est, _blocks(client, X, y, k), client, classes=np.unique(y))
    ref = IncrementalSVC(kernel=kernel, **params).fit(X, y)
    _assert_same_machine(m, ref, X)
    assert not hasattr(est, "_model")  # the estimator given stays unfitted
    # the global ids name the support vectors' rows of the data
    assert _rows(X[m.support_ids_]) == _rows(m.support_vectors_)
    h = m.cascade_history_
    assert h[-1]["violators"] == 0 and h[-1]["n_support"] == m.n_support_
    assert [len(s) for s in h[0]["layer_sizes"]][0] == k and h[0]["layer_sizes"][-1] == [h[0]["n_support"]]
    assert all(len(r["layer_times"]) == len(r["layer_sizes"]) for r in h)
    assert len(h[-1]["dual_objective"]) == _n_machines(ref)
    for a, b in zip(h, h[1:]):
        assert all(y <= x + 1e-12 * abs(x) for x, y in zip(a["dual_objective"], b["dual_objective"]))


@pytest.mark.parametrize("n_classes", [2, 3])
def test_agrees_with_libsvm(client, n_classes):
    """LIBSVM (tol 1e-10) on the same data: binary directly; one-vs-rest as one binary SVC per class."""
    X, y = _data(7, 300, n_classes)
    m = cascade_fit(IncrementalSVC(C=2.0, gamma=0.3), _blocks(client, X, y, 3), client, classes=np.unique(y))
    f = m.decision_function(X).reshape(len(X), -1)
    targets = [y == 1] if n_classes == 2 else [y == c for c in range(n_classes)]
    for k, t in enumerate(targets):
        svc = SVC(C=2.0, gamma=0.3, tol=1e-10).fit(X, np.where(t, 1, -1))
        np.testing.assert_allclose(f[:, k], svc.decision_function(X), rtol=0, atol=1e-6)


def test_one_partition_is_plain_fit(client):
    X, y = _data(8, 300, 3)
    m = cascade_fit(IncrementalSVC(C=1.0), _blocks(client, X, y, 1), client, classes=[0, 1, 2])
    ref = IncrementalSVC(C=1.0).fit(X, y)
    assert m.gamma == "scale" and m.gamma_ == ref.gamma_
    assert m._model.to_bytes() == ref._model.to_bytes()
    assert len(m.cascade_history_) == 1 and m.cascade_history_[0]["violators"] == 0


def test_feedback_finds_what_the_first_pass_missed(client):
    """Checkerboard in 4 partitions: the first pass's root misses support vectors (global KKT
    violators), the feedback passes bring them in, and the end is the one-machine optimum."""
    X, y = checkerboard(1200, random_state=1)
    m = cascade_fit(IncrementalSVC(C=10.0, gamma=2.0), _blocks(client, X, y, 4), client, classes=[-1, 1])
    h = m.cascade_history_
    assert len(h) > 1 and h[0]["violators"] > 0 and h[0]["max_violation"] > 1e-3
    assert h[-1]["violators"] == 0
    # Graf et al.'s monotonicity: every pass's root holds the last root's training set, so its
    # (minimised) dual objective never rises; here it falls while violators are found
    dual = [r["dual_objective"][0] for r in h]
    assert all(b < a for a, b in zip(dual, dual[1:]))
    _assert_same_machine(m, IncrementalSVC(C=10.0, gamma=2.0).fit(X, y), X)


def test_scale_gamma_from_all_the_data(client):
    X, y = _data(9, 300, 2)
    X[:100] *= 3.0  # the blocks' own variances differ from the whole's
    m = cascade_fit(IncrementalSVC(), _blocks(client, X, y, 3), client, classes=[0, 1])
    assert m.gamma == "scale"
    assert m.gamma_ == pytest.approx(_scale_gamma(X), rel=1e-13)
    _assert_same_machine(m, IncrementalSVC(gamma=m.gamma_).fit(X, y), X)


def test_result_keeps_learning_and_pickles(client):
    X, y = _data(10, 300, 2)
    m = cascade_fit(IncrementalSVC(C=1.0), _blocks(client, X, y, 2), client, classes=[0, 1])
    back = pickle.loads(pickle.dumps(m))
    np.testing.assert_array_equal(back.decision_function(X), m.decision_function(X))
    m.partial_fit(X[:5], y[:5])  # the parameters given are the ones built: no pending change


def test_partitions_with_one_class(client):
    """A partition holding one class has no support vector of its own; the feedback gives it the
    other class's. If every partition holds one class, nothing can start: a clear error."""
    X, y = _data(11, 300, 2)
    order = np.argsort(y, kind="stable")
    X, y = X[order], y[order]
    blocks = [client.scatter((X[:100], y[:100])), client.scatter((X[100:], y[100:]))]  # the first: one class
    assert len(np.unique(y[:100])) == 1
    m = cascade_fit(IncrementalSVC(gamma=0.5), blocks, client, classes=[0, 1])
    _assert_same_machine(m, IncrementalSVC(gamma=0.5).fit(X, y), X)
    n0 = int(np.sum(y == 0))
    pure = [client.scatter((X[:n0], y[:n0])), client.scatter((X[n0:], y[n0:]))]
    with pytest.raises(ValueError, match="shuffle the data"):
        cascade_fit(IncrementalSVC(gamma=0.5), pure, client, classes=[0, 1])


def test_string_labels_and_an_empty_block(client):
    X, y = _data(15, 300, 3)
    labels = np.array(["ant", "bee", "cat"])[y]
    blocks = _blocks(client, X, labels, 3) + [client.scatter((X[:0], labels[:0]))]
    m = cascade_fit(IncrementalSVC(gamma=0.5), blocks, client, classes=["cat", "bee", "ant"])
    ref = IncrementalSVC(gamma=0.5).fit(X, labels)
    _assert_same_machine(m, ref, X)
    np.testing.assert_array_equal(m.classes_, ref.classes_)
    np.testing.assert_array_equal(m.predict(X), ref.predict(X))


def test_rejected_inputs(client):
    X, y = _data(12, 50, 2)
    blocks = _blocks(client, X, y, 2)
    with pytest.raises(ValueError, match="n_epochs"):
        cascade_fit(IncrementalSVC(n_epochs=2), blocks, client, classes=[0, 1])
    with pytest.raises(ValueError, match="unfitted"):
        cascade_fit(IncrementalSVC().fit(X, y), blocks, client, classes=[0, 1])
    with pytest.raises(ValueError, match="at least one block"):
        cascade_fit(IncrementalSVC(), [], client, classes=[0, 1])
    with pytest.raises(ValueError, match=r"labels not in classes=\[0, 2\]: \[1\]"):
        cascade_fit(IncrementalSVC(), blocks, client, classes=[0, 2])
    with pytest.raises(ValueError, match="no example"):
        cascade_fit(IncrementalSVC(), [client.scatter((X[:0], y[:0]))], client, classes=[0, 1])
    with pytest.raises(ValueError, match="numbers of features"):
        cascade_fit(IncrementalSVC(), [blocks[0], client.scatter((X[:, :2], y))], client, classes=[0, 1])


def test_worker_processes(process_client):
    """Real serialisation: the blocks, the first-layer machines and the root travel between
    two worker processes."""
    X, y = _data(13, 400, 3)
    c = process_client
    m = cascade_fit(IncrementalSVC(C=1.0, gamma=0.5), _blocks(c, X, y, 4), c, classes=[0, 1, 2])
    _assert_same_machine(m, IncrementalSVC(C=1.0, gamma=0.5).fit(X, y), X)


def test_a_worker_killed_mid_fit_changes_nothing(process_client):
    """A worker process killed while the cascade runs: Dask reruns the lost tasks from their
    lineage (every cascade task is a pure function of its inputs), so the fit gives the same
    machine, or raises; never a silently partial model."""
    X, y = checkerboard(4000, random_state=2)
    parts = np.array_split(np.arange(len(X)), 4)
    c = process_client  # (the nanny restarts the killed worker; this test runs last)
    # blocks with a lineage (made by tasks), so that the lost ones can be made again
    blocks = [c.submit(lambda p: (X[p], y[p]), p, pure=False) for p in parts]
    distributed.wait(blocks)
    address, victim = next(iter(c.run(os.getpid).items()))
    outcome = {}

    def run():
        try:
            outcome["model"] = cascade_fit(IncrementalSVC(C=10.0, gamma=2.0), blocks, c, classes=[-1, 1])
        except Exception as e:  # a clear error is the other allowed outcome
            outcome["error"] = e

    fit = threading.Thread(target=run)
    fit.start()
    # kill the worker once it runs a cascade task (not after a fixed delay: a fast machine
    # finished the fit first)
    killed = False
    while fit.is_alive() and not killed:
        if c.processing(workers=[address]).get(address):
            os.kill(victim, signal.SIGKILL)
            killed = True
        time.sleep(0.001)
    fit.join()
    assert killed, "the fit ended before a task ran on the worker to kill"
    m, error = outcome.get("model"), outcome.get("error")
    if m is None:
        assert isinstance(error, (distributed.client.FutureCancelledError, distributed.scheduler.KilledWorker))
    else:
        _assert_same_machine(m, IncrementalSVC(C=10.0, gamma=2.0).fit(X, y), X)
