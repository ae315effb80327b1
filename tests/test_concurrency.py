"""One estimator used from several threads, callbacks that use the model they run under, and
Ctrl-C during a chunk. docs/guide/contract.md: calls on one model from several threads are serialised (as with
a lock around the model). Every wait here is bounded (Event/Barrier timeouts, faulthandler), so
a deadlock fails a test instead of hanging the suite."""

import copy
import faulthandler
import itertools
import pickle
import random
import signal
import subprocess
import sys
import textwrap
import threading
import time

import numpy as np
import pytest

import budgetkernel
from budgetkernel import (
    BudgetedPAClassifier,
    BudgetedSGDClassifier,
    IncrementalSVC,
    KernelPerceptron,
    datasets,
)
from conftest import LEARNERS, Started, cases

X, Y = datasets.noisy_checkerboard(20_000, random_state=0)
# an unbudgeted perceptron errs on ~1/3 of these and keeps every mistake: a chunk of n costs
# O(n^2) (30,000 rows ~0.6 s, 60,000 ~2.3 s), a call long enough to interrupt
XL, YL = datasets.noisy_checkerboard(60_000, random_state=5)


@pytest.fixture(autouse=True)
def _no_hang():
    # a deadlock dumps every thread's stack and ends the run instead of hanging it
    faulthandler.dump_traceback_later(120, exit=True)
    yield
    faulthandler.cancel_dump_traceback_later()


class Gate:
    """Array-like whose conversion (inside validate_data) waits until `parties` threads convert
    at once, or `timeout` s: holds threads together between their "is there a model?" check and
    the model they build."""

    def __init__(self, a, barrier, timeout=1.0):
        self.a, self.barrier, self.timeout = a, barrier, timeout
        self.shape = a.shape

    def __len__(self):
        return len(self.a)

    def __array__(self, dtype=None, copy=None):
        try:
            self.barrier.wait(self.timeout)
        except threading.BrokenBarrierError:
            pass
        return self.a if dtype is None else self.a.astype(dtype)


def in_its_chunk(call, X, y):
    """Starts call(X, y) in a thread and returns it once the call is converting X, i.e. about to
    hold the model for its chunk (plus a margin for the checks between)."""
    started = Started(X)
    worker = threading.Thread(target=lambda: call(started, y))
    worker.start()
    assert started.event.wait(30)
    time.sleep(0.05)
    return worker


def run_threads(*targets):
    errors = []

    def wrap(f):
        def run():
            try:
                f()
            except Exception as e:  # noqa: BLE001 - reported by the caller's assertion
                errors.append(e)

        return run

    threads = [threading.Thread(target=wrap(f)) for f in targets]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not any(t.is_alive() for t in threads)
    return errors


def test_two_first_partial_fits_at_once_learn_both_chunks():
    # Both threads saw "no model yet", each built one, and the one assigned last dropped the
    # other's chunk: 500 examples after two chunks of 500.
    clf = BudgetedSGDClassifier(budget=50, gamma=1.0, random_state=0)
    both = threading.Barrier(2)

    def chunk(s):
        return lambda: clf.partial_fit(Gate(X[s : s + 500], both), Y[s : s + 500], classes=[-1, 1])

    assert run_threads(chunk(0), chunk(500)) == []
    assert clf.counters_["examples"] == 1000
    assert clf.prequential_curve_[-1][0] == 1000


def test_two_first_learn_ones_at_once_learn_both_examples():
    clf = KernelPerceptron(budget=10, gamma=1.0)
    both = threading.Barrier(2)

    class Example(dict):  # read inside learn_one, before it builds the model
        def items(self):
            try:
                both.wait(1.0)
            except threading.BrokenBarrierError:
                pass
            return super().items()

    def one(v, label):
        return lambda: clf.learn_one(Example(a=v, b=1.0), label, classes=[-1, 1])

    assert run_threads(one(0.5, 1), one(-0.5, -1)) == []
    assert clf.counters_["examples"] == 2


class PausedSGD(BudgetedSGDClassifier):
    """Stops inside fit, after the new model is built and before it learns, while `pause` is set."""

    pause, inside, resume = threading.Event(), threading.Event(), threading.Event()

    def _learn_chunk(self, *args, **kw):
        if self.pause.is_set():
            self.inside.set()
            assert self.resume.wait(30)
        return super()._learn_chunk(*args, **kw)


def test_calls_during_fit_see_the_model_before_it_or_after_it():
    # fit published its new model (and classes_, label map) one attribute at a time before
    # training it: a predict in another thread got the untrained model's answer (every row the
    # first class, measured in 1/3 of the predictions during a loop of fits), and a learn_one of
    # an old label raised "label -1 is not in classes_=[10, 11, 12]".
    y3 = np.where(Y > 0, 12, np.where(X[:, 0] > 0, 11, 10))
    clf = PausedSGD(budget=50, gamma=1.0, random_state=0).fit(X[:300], Y[:300])
    before = clf.predict(X[:50])
    after = BudgetedSGDClassifier(budget=50, gamma=1.0, random_state=0).fit(X[:300], y3[:300]).predict(X[:50])
    PausedSGD.pause.set()
    refit = threading.Thread(target=lambda: clf.fit(X[:300], y3[:300]))
    refit.start()
    try:
        assert PausedSGD.inside.wait(30)
        np.testing.assert_array_equal(clf.predict(X[:50]), before)
        assert clf.predict_one(X[0]) == before[0]
        clf.learn_one(X[0], -1)  # the old model learns it; fit then starts over
        assert set(clf.classes_.tolist()) == {-1, 1}
    finally:
        PausedSGD.pause.clear()
        PausedSGD.resume.set()
        refit.join(30)
    np.testing.assert_array_equal(clf.predict(X[:50]), after)
    assert clf.counters_["examples"] == 300


def test_set_params_during_fit_is_not_lost():
    clf = PausedSGD(budget=50, gamma=1.0, random_state=0).fit(X[:300], Y[:300])
    PausedSGD.inside.clear()
    PausedSGD.resume.clear()
    PausedSGD.pause.set()
    refit = threading.Thread(target=lambda: clf.fit(X[:300], Y[:300]))
    refit.start()
    try:
        assert PausedSGD.inside.wait(30)
        setter = threading.Thread(target=lambda: clf.set_params(n_epochs=2))
        setter.start()
        setter.join(0.2)  # waits for fit (else fit's publish of its copy dropped it)
    finally:
        PausedSGD.pause.clear()
        PausedSGD.resume.set()
        refit.join(30)
    setter.join(30)
    assert clf.n_epochs == 2


class Interrupted(Exception):
    pass


@pytest.fixture
def sigint_raises():
    def handler(signum, frame):
        raise Interrupted

    old = signal.signal(signal.SIGINT, handler)
    yield
    signal.signal(signal.SIGINT, old)


def test_an_interrupted_chunk_keeps_its_curve_point_and_the_model_goes_on(sigint_raises, tmp_path):
    # Ctrl-C during a chunk (the GIL released) stops it between two examples (test_interrupt.py)
    # and the rows before the stop stay learned; their prequential_curve_ point was lost once:
    # the curve ended at (10, ...) with 30,010 examples seen.
    clf = KernelPerceptron(budget=None, gamma=4.0).partial_fit(X[:10], Y[:10], classes=[-1, 1])
    Xb, yb = Started(XL[:30_000]), YL[:30_000]

    def ctrl_c_in_the_chunk():
        assert Xb.event.wait(30)
        time.sleep(0.05)
        signal.raise_signal(signal.SIGINT)

    timer = threading.Thread(target=ctrl_c_in_the_chunk)
    timer.start()
    with pytest.raises(Interrupted):
        clf.partial_fit(Xb, yb)
        time.sleep(5)  # pragma: no cover - the signal came after the chunk: still raises here
    timer.join()
    c = clf.counters_
    assert 10 < c["examples"] <= 30_010
    assert clf.prequential_curve_[-1] == (c["examples"], c["mistakes"])
    clf.partial_fit(X[:100], Y[:100])
    clf.save(tmp_path / "m.bk")
    back = budgetkernel.load(tmp_path / "m.bk")
    assert back.counters_["examples"] == c["examples"] + 100
    np.testing.assert_array_equal(back.predict(X[:200]), clf.predict(X[:200]))


def test_a_call_waiting_for_a_busy_model_can_be_interrupted(sigint_raises):
    # A partial_fit in the main thread waiting (GIL released) for another thread's long chunk
    # saw Ctrl-C only once that chunk ended (seconds later). The wait is given up cleanly:
    # readers that queued behind the abandoned writer still run.
    clf = KernelPerceptron(budget=None, gamma=4.0).partial_fit(X[:10], Y[:10], classes=[-1, 1])
    worker = in_its_chunk(clf.partial_fit, XL, YL)
    reader_result = []
    reader = threading.Thread(target=lambda: reader_result.append(clf.decision_function(X[:5])))
    timer = threading.Timer(0.3, signal.raise_signal, args=(signal.SIGINT,))
    timer.start()
    with pytest.raises(Interrupted):
        reader.start()  # may queue behind the waiting writer below
        clf.partial_fit(X[:100], Y[:100])  # waits for the worker's chunk; given up on Ctrl-C
    timer.join()
    worker.join(60)
    reader.join(60)
    assert not reader.is_alive() and len(reader_result) == 1
    # the interrupted call learned nothing (it used to run once the chunk ended: 60,110)
    assert clf.counters_["examples"] == 60_010
    assert clf.prequential_curve_[-1][0] == 60_010


def test_a_signal_handler_may_use_the_model_a_waiting_call_is_queued_for():
    # Handlers now run while a call waits for the model (above); one that uses the model (a
    # checkpoint on Ctrl-C) must not wait behind the waiting call's own place in the queue.
    clf = KernelPerceptron(budget=None, gamma=4.0).partial_fit(X[:10], Y[:10], classes=[-1, 1])
    seen = []
    old = signal.signal(signal.SIGINT, lambda signum, frame: seen.append(clf.counters_["examples"]))
    try:
        worker = in_its_chunk(clf.partial_fit, XL[:30_000], YL[:30_000])  # a chunk of ~0.6 s
        timer = threading.Timer(0.1, signal.raise_signal, args=(signal.SIGINT,))
        timer.start()
        clf.partial_fit(X[:100], Y[:100])
        timer.join()
        worker.join(60)
    finally:
        signal.signal(signal.SIGINT, old)
    assert seen == [30_010]  # the handler's read waited for the chunk, not for the queued call
    assert clf.counters_["examples"] == 30_110


FINALISER_SCRIPT = textwrap.dedent(
    """
    import faulthandler, gc, threading, time
    faulthandler.dump_traceback_later(30, exit=True)
    from budgetkernel import BudgetedSGDClassifier, datasets
    X, y = datasets.noisy_checkerboard(2000, random_state=0)
    clf = BudgetedSGDClassifier(budget=50, gamma=1.0, random_state=0).fit(X[:500], y[:500])
    go, out = threading.Event(), []
    def writer():
        go.wait(10)
        clf.partial_fit(X[500:1000], y[500:1000])
    w = threading.Thread(target=writer)
    w.start()
    class Finalised:
        def __init__(self):
            self.cycle = self
        def __del__(self):
            go.set()
            time.sleep(0.3)  # the writer queues behind the read that runs this finaliser
            out.append(clf.decision_function(X[:3]).shape)
            try:
                clf.learn_one(X[0], y[0])
            except RuntimeError as e:
                out.append(str(e)[:40])
    gc.disable()
    Finalised()
    keep = [{} for _ in range(200)]  # no free dicts left: the next dict is a new allocation
    gc.set_threshold(1)
    gc.enable()
    c = clf._model.counters  # builds that dict under a read of the model: the collection runs there
    gc.set_threshold(700)
    w.join(20)
    print(c["examples"], out, w.is_alive(), clf.counters_["examples"])
    """
)


def test_a_finaliser_using_the_model_it_runs_under_does_not_deadlock():
    # An accessor builds Python objects while it reads the model; the garbage collector can run
    # there, and a finaliser that predicted with the same model waited behind a queued writer,
    # which waited for the read running the finaliser: a deadlock (found with this script).
    # A nested read now runs at once; a nested change raises RuntimeError.
    r = subprocess.run(
        [sys.executable, "-c", FINALISER_SCRIPT], capture_output=True, text=True, timeout=90, check=False
    )
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.split() == ["500", "[(3,),", "'a", "model", "was", "used", "again", "by", "code", "that", "runs']",
                                "False", "1000"], r.stdout


def test_callbacks_may_use_the_model_they_run_for():
    # The oracle of partial_fit_active, a dict example's methods and an array-like's __array__
    # run while a call is under way; each may use the same model (also on the first call).
    clf = BudgetedPAClassifier(budget=40, loss="ramp", gamma=1.0, random_state=0)

    def oracle(i, x):
        if hasattr(clf, "_model"):
            clf.predict(x.reshape(1, -1))
            clf.decision_function(X[:3])
            assert clf.counters_["examples"] >= 0
        return Y[i]

    clf.partial_fit_active(X[:300], oracle, classes=[-1, 1])
    n = clf.counters_["examples"]

    def oracle2(i, x):
        clf.predict(x.reshape(1, -1))
        clf.partial_fit(X[:2], Y[:2])
        clf.learn_one(X[5], Y[5])
        return Y[300 + i]

    queried = clf.partial_fit_active(X[300:500], oracle2)
    assert clf.counters_["examples"] == n + 200 + 3 * int(queried.sum())

    class Array:
        shape = (5, 2)

        def __len__(self):
            return 5

        def __array__(self, dtype=None, copy=None):
            clf.predict(X[:2])
            clf.learn_one(X[1], Y[1])
            return X[:5]

    n = clf.counters_["examples"]
    clf.predict(Array())
    clf.partial_fit(Array(), Y[:5])
    assert clf.counters_["examples"] == n + 2 + 5

    perc = KernelPerceptron(budget=10, gamma=1.0)

    class Example(dict):
        def items(self):
            perc.predict_one({"a": 0.0, "b": 1.0})
            if hasattr(perc, "_model"):
                perc.learn_one({"a": 0.0, "b": 1.0}, -1)
            return super().items()

    perc.learn_one(Example(a=1.0, b=0.5), 1, classes=[-1, 1])
    perc.learn_one(Example(a=1.0, b=0.5), 1)
    assert perc.predict_one(Example(a=1.0, b=0.5)) in (-1, 1)
    assert perc.counters_["examples"] == 2 + 2

    sgd = BudgetedSGDClassifier(budget=10, gamma=1.0)

    class Label(str):  # looked up (hash, ==) while learn_one / partial_fit encode labels
        def __hash__(self):
            if hasattr(sgd, "_model"):
                sgd.predict(X[:2])
            return str.__hash__(self)

        def __eq__(self, other):
            if hasattr(sgd, "_model"):
                sgd.predict(X[:2])
            return str.__eq__(self, other)

    a, b = Label("a"), Label("b")
    sgd.learn_one(X[0], a, classes=[a, b])
    sgd.learn_one(X[1], b)
    sgd.partial_fit(X[:50], np.array([a if v < 0 else b for v in Y[:50]], dtype=object))
    assert sgd.counters_["examples"] == 52 and sgd.predict_one(X[3]) in ("a", "b")


# Every learner, and the BPA loss and BOGD averaging that keep state of their own.
CASES = [*LEARNERS, *cases("bpa-nn-ramp", "bogd-averaged")]
PARAMS = dict(budget=40, gamma=1.0, lam=1e-3, batch_size=4, random_state=0)


@pytest.mark.parametrize("case", CASES, ids=repr)
def test_many_threads_on_one_model(case, tmp_path):
    clf = case.make(**PARAMS).partial_fit(X[:50], Y[:50], classes=[-1, 1])
    chunk = 20 if case.cls is IncrementalSVC else 200
    learned, snapshots, lock, forget = [0], [], threading.Lock(), iter(range(50))
    start = threading.Barrier(4)

    def work(k):
        rng = random.Random(k)
        start.wait(30)
        for _ in range(25):
            op, i = rng.randrange(12), rng.randrange(50, 19_000)
            if op == 0:
                clf.partial_fit(X[i : i + chunk], Y[i : i + chunk])
                with lock:
                    learned[0] += chunk
            elif op == 1:
                clf.learn_one(X[i], Y[i])
                with lock:
                    learned[0] += 1
            elif op == 2:
                assert clf.predict(X[:100]).shape == (100,)
            elif op == 3:
                assert np.all(np.isfinite(clf.decision_function(X[:100])))
            elif op == 4:
                assert clf.predict_one(X[i]) in (-1, 1)
            elif op == 5:
                assert 0.0 <= clf.score(X[:100], Y[:100]) <= 1.0
            elif op == 6:
                clf.save(tmp_path / f"{k}.bk")
            elif op == 7:
                snapshots.append(pickle.dumps(clf))
            elif op == 8:
                snapshots.append(pickle.dumps(copy.deepcopy(clf)))
            elif op == 9:
                clf.set_params(**clf.get_params())
            elif op == 10:
                c, curve = clf.counters_, clf.prequential_curve_
                assert curve[-1][0] <= c["examples"] and 0.0 <= clf.online_error_ <= 1.0
                if hasattr(type(clf), "support_vectors_"):
                    assert clf.support_vectors_.ndim == 2 and clf.n_support_ >= 0
            elif op == 11 and case.cls is BudgetedPAClassifier:
                clf.partial_fit_active(X[i : i + 50], lambda j, x, i=i: (clf.predict(x.reshape(1, -1)), Y[i + j])[1])
                with lock:
                    learned[0] += 50
            elif op == 11 and case.cls is IncrementalSVC:
                with lock:
                    example = next(forget)
                clf.unlearn(example)  # counters_["examples"] keeps counting what was learned

    assert run_threads(*[lambda k=k: work(k) for k in range(4)]) == []
    c = clf.counters_
    assert c["examples"] == 50 + learned[0]
    curve = clf.prequential_curve_
    assert all(a[0] <= b[0] for a, b in itertools.pairwise(curve))
    for s in snapshots:
        m = pickle.loads(s)
        np.testing.assert_array_equal(m.predict(X[:200]), m.predict(X[:200]))
        m.partial_fit(X[:10], Y[:10])
    clf.partial_fit(X[:10], Y[:10])
    clf.save(tmp_path / "end.bk")
    np.testing.assert_array_equal(budgetkernel.load(tmp_path / "end.bk").predict(X[:200]), clf.predict(X[:200]))


def test_fit_in_two_threads_gives_one_of_the_two_models():
    a = BudgetedSGDClassifier(budget=50, gamma=1.0, random_state=0).fit(X[:400], Y[:400]).predict(X[:100])
    b = BudgetedSGDClassifier(budget=50, gamma=1.0, random_state=0).fit(X[400:800], Y[400:800]).predict(X[:100])
    clf = BudgetedSGDClassifier(budget=50, gamma=1.0, random_state=0)
    errors = run_threads(lambda: clf.fit(X[:400], Y[:400]), lambda: clf.fit(X[400:800], Y[400:800]))
    assert errors == []
    p = clf.predict(X[:100])
    assert np.array_equal(p, a) or np.array_equal(p, b)
    assert clf.counters_["examples"] == 400 and clf.prequential_curve_[-1][0] == 400
