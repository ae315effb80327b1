"""partial_fit_many (python/src/partial_fit_many.cpp): one chunk through many core learners at once, in
parallel with the GIL released, as the candidates of a self-tuning search are trained.

Each model's result is exactly that of its own partial_fit on the chunk (the same bytes and
counters), whatever the number of threads; every input error is raised before any model
learns; a model another thread uses is waited for; Ctrl-C stops every model at a row and leaves
each consistent (the model of the rows before its stop), the models not started unchanged.
"""

import _thread
import faulthandler
import signal
import threading
import time

import numpy as np
import pytest

from budgetkernel import datasets
from budgetkernel._native import core
from conftest import LEARNERS, SMALL, VARIANTS, Started, cases, interrupted

X, Y = datasets.noisy_checkerboard(400, random_state=0)
X = np.ascontiguousarray(X, dtype=np.float64)
Y_INDEX = (Y > 0).astype(np.int32)  # the core learns class indices
CHUNK = slice(50, 400)

# Three settings per learner kind; each class takes the ones it has (Case.make).
SETTINGS = [
    {"gamma": 0.5, "lam": 1e-3, "C": 1.0, "batch_size": 1, "random_state": 0},
    {"gamma": 2.0, "lam": 1e-4, "C": 10.0, "batch_size": 3, "random_state": 1},
    {"gamma": 8.0, "lam": 1e-2, "C": 0.1, "batch_size": 7, "random_state": 2},
]


@pytest.fixture(autouse=True)
def _no_hang():
    # a deadlock dumps every thread's stack and ends the run instead of hanging it
    faulthandler.dump_traceback_later(120, exit=True)
    yield
    faulthandler.cancel_dump_traceback_later()


def fitted(case, **params):
    """The core learner of `case` after its estimator's first chunk of 50 examples."""
    est = case.make(**{**SMALL, **params})
    est.partial_fit(X[:50], Y[:50], classes=[-1, 1])
    return est._model


def state(models):
    return [(m.to_bytes(), m.counters) for m in models]


def each_alone(models, Xc, yc):
    for m in models:
        m.partial_fit(Xc, yc)
    return state(models)


@pytest.mark.parametrize("case", LEARNERS + VARIANTS, ids=repr)
def test_every_learner_kind_learns_as_its_own_partial_fit(case):
    alone = [fitted(case, **s) for s in SETTINGS]
    many = [fitted(case, **s) for s in SETTINGS]
    assert state(many) == state(alone)
    expected = each_alone(alone, X[CHUNK], Y_INDEX[CHUNK])
    assert core.partial_fit_many(many, X[CHUNK], Y_INDEX[CHUNK], 2) is None
    assert state(many) == expected
    assert all(m.counters["examples"] == 400 for m in many)


def mixed():
    """One model of every learner class and a few variants, in one list."""
    chosen = LEARNERS + cases("bsgd-merge-average", "bpa-nn-ramp", "projectron++", "bogd++-averaged")
    return [fitted(case, **SETTINGS[i % 3]) for i, case in enumerate(chosen)]


def test_a_mixed_list_gives_the_same_bytes_for_any_number_of_threads():
    expected = each_alone(mixed(), X[CHUNK], Y_INDEX[CHUNK])
    assert len({type(m).__name__ for m in mixed()}) >= 7
    for n_jobs in (1, 2, 4, 64):
        models = mixed()
        core.partial_fit_many(models, X[CHUNK], Y_INDEX[CHUNK], n_jobs)
        assert state(models) == expected, n_jobs
    # in smaller chunks, a tuple, no models at all
    models = mixed()
    for start in range(50, 400, 70):
        core.partial_fit_many(tuple(models), X[start : start + 70], Y_INDEX[start : start + 70], 3)
    assert state(models) == expected
    core.partial_fit_many([], X[CHUNK], Y_INDEX[CHUNK], 2)


def test_bad_input_raises_before_any_model_learns():
    models = mixed()
    before = state(models)
    Xc, yc = X[CHUNK], Y_INDEX[CHUNK]
    other = fitted(LEARNERS[0])
    wide = datasets.noisy_checkerboard(60, random_state=1)[0]
    wide_model = LEARNERS[0].make(**SMALL).fit(np.hstack([wide, wide]), np.arange(60) % 2)._model
    nan_last, bad_label = Xc.copy(), yc.copy()
    nan_last[-1, 0] = np.nan
    bad_label[-1] = 2
    calls = [
        (TypeError, r"models\[3\] is a str", lambda: core.partial_fit_many(models[:3] + ["x"], Xc, yc, 2)),
        (
            TypeError,
            r"models\[1\] is a BudgetedSGDClassifier",
            lambda: core.partial_fit_many([models[0], LEARNERS[0].make(**SMALL)], Xc, yc, 2),
        ),
        (
            ValueError,
            rf"models\[{len(models)}\] is the same model as models\[2\]",
            lambda: core.partial_fit_many(models + [models[2]], Xc, yc, 2),
        ),
        (ValueError, r"models\[1\].* fitted with 4", lambda: core.partial_fit_many([other, wide_model], Xc, yc, 2)),
        (ValueError, "features", lambda: core.partial_fit_many(models, np.hstack([Xc, Xc]), yc, 2)),
        (ValueError, "2-D", lambda: core.partial_fit_many(models, Xc[0], yc[:1], 2)),
        (ValueError, "one label per row", lambda: core.partial_fit_many(models, Xc, yc[:-1], 2)),
        (ValueError, "n_jobs must be >= 1", lambda: core.partial_fit_many(models, Xc, yc, 0)),
        (ValueError, "n_jobs must be >= 1", lambda: core.partial_fit_many(models, Xc, yc, -3)),
        (ValueError, "row 349", lambda: core.partial_fit_many(models, nan_last, yc, 2)),
        (ValueError, "label index 2", lambda: core.partial_fit_many(models, Xc, bad_label, 2)),
        (TypeError, "incompatible function arguments", lambda: core.partial_fit_many(5, Xc, yc, 2)),
    ]
    for error, match, call in calls:
        with pytest.raises(error, match=match):
            call()
        assert state(models) == before


@pytest.mark.skipif(core.__name__.endswith("._core"), reason="only the baseline module is built or used here")
def test_learners_of_the_other_module_are_refused():
    from budgetkernel import _core as baseline

    models = mixed()[:2]
    with pytest.raises(TypeError, match=r"models\[0\].*not a learner of this core module"):
        baseline.partial_fit_many(models, X[CHUNK], Y_INDEX[CHUNK], 2)


# An unbudgeted perceptron keeps every mistake (~1/3 of these rows): a chunk of n rows costs
# O(n^2) kernel values, seconds for the tens of thousands here.
XL, YL = datasets.noisy_checkerboard(60_000, random_state=5)
XL = np.ascontiguousarray(XL, dtype=np.float64)
YL_INDEX = (YL > 0).astype(np.int32)
PERCEPTRON = cases("perceptron-unbudgeted")[0]


def test_a_model_another_thread_uses_is_waited_for():
    long_chunk = slice(0, 15_000)
    busy, idle = fitted(PERCEPTRON, gamma=2.0), fitted(PERCEPTRON, gamma=1.0)
    ref_busy, ref_idle = fitted(PERCEPTRON, gamma=2.0), fitted(PERCEPTRON, gamma=1.0)
    ref_busy.partial_fit(XL[long_chunk], YL_INDEX[long_chunk])
    expected = each_alone([ref_busy, ref_idle], X[CHUNK], Y_INDEX[CHUNK])

    started = Started(XL[long_chunk])
    worker = threading.Thread(target=lambda: busy.partial_fit(started, YL_INDEX[long_chunk]))
    worker.start()
    assert started.event.wait(30)
    time.sleep(0.05)
    core.partial_fit_many([idle, busy], X[CHUNK], Y_INDEX[CHUNK], 2)  # runs after the other thread's chunk
    worker.join(60)
    assert state([busy, idle]) == expected


def test_two_calls_sharing_models_in_opposite_orders_do_not_deadlock():
    a, b = fitted(PERCEPTRON, gamma=2.0), fitted(PERCEPTRON, gamma=1.0)
    errors = []

    def call(models, rows):
        try:
            core.partial_fit_many(models, XL[rows], YL_INDEX[rows], 2)
        except Exception as e:  # noqa: BLE001 - reported by the assertion below
            errors.append(e)

    threads = [
        threading.Thread(target=call, args=([a, b], slice(0, 4_000))),
        threading.Thread(target=call, args=([b, a], slice(4_000, 8_000))),
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not any(t.is_alive() for t in threads) and errors == []
    assert a.counters["examples"] == b.counters["examples"] == 50 + 8_000




@pytest.mark.skipif(threading.current_thread() is not threading.main_thread(), reason="signals reach the main thread")
def test_ctrl_c_stops_every_model_at_a_row_and_leaves_each_consistent():
    gammas = [1.0, 2.0, 4.0, 8.0]
    models = [fitted(PERCEPTRON, gamma=g) for g in gammas]
    before = state(models)
    start = time.monotonic()
    interrupted(lambda: core.partial_fit_many(models, XL, YL_INDEX, 2))
    assert time.monotonic() - start < 30  # not the whole chunk (minutes for four models)

    # The two models that started stopped part-way, each the model of the rows before its stop;
    # the two not started (each of the first takes seconds) learned nothing.
    assert state(models[2:]) == before[2:]
    for model, gamma in zip(models[:2], gammas):
        learned = model.counters["examples"] - 50
        assert 0 < learned < len(XL)
        prefix = fitted(PERCEPTRON, gamma=gamma)
        prefix.partial_fit(XL[:learned], YL_INDEX[:learned])
        assert model.to_bytes() == prefix.to_bytes()

    # every model goes on learning and predicting
    core.partial_fit_many(models, X[CHUNK], Y_INDEX[CHUNK], 2)
    for model in models:
        assert model.predict(X[:20]).shape == (20,)


@pytest.mark.skipif(threading.current_thread() is not threading.main_thread(), reason="signals reach the main thread")
def test_ctrl_c_while_waiting_for_a_busy_model_gives_back_the_models_taken():
    # models[1] is in another thread's long chunk; Ctrl-C while this call waits for it raises,
    # marked as a call that did nothing, and models[0] (taken first if its address is lower) is
    # given back: were it kept, idle.partial_fit below would wait forever (faulthandler ends it).
    idle, busy = fitted(PERCEPTRON, gamma=1.0), fitted(PERCEPTRON, gamma=2.0)
    before = idle.to_bytes()
    started = Started(XL)
    worker = threading.Thread(target=lambda: busy.partial_fit(started, YL_INDEX))
    worker.start()
    try:
        assert started.event.wait(30)
        time.sleep(0.05)
        old = signal.signal(signal.SIGINT, signal.default_int_handler)
        timer = threading.Timer(0.3, _thread.interrupt_main)
        timer.start()
        try:
            with pytest.raises(KeyboardInterrupt) as info:
                core.partial_fit_many([idle, busy], X[CHUNK], Y_INDEX[CHUNK], 2)
                time.sleep(60)
        finally:
            timer.cancel()
            timer.join()
            signal.signal(signal.SIGINT, old)
        assert getattr(info.value, "_budgetkernel_not_run", False)
        assert idle.to_bytes() == before
        idle.partial_fit(X[CHUNK], Y_INDEX[CHUNK])
        assert idle.counters["examples"] == 400
    finally:
        worker.join(120)


def test_more_models_than_the_nesting_depth_of_the_model_lock():
    # the 27 candidates of a 3 x 3 x 3 grid and more: the models are held as one use, not 30
    settings = [{"gamma": 0.25 * (1 + k % 10), "lam": 10.0 ** -(1 + k % 3), "random_state": k} for k in range(30)]
    bsgd = LEARNERS[0]
    models = [fitted(bsgd, **s) for s in settings]
    expected = each_alone([fitted(bsgd, **s) for s in settings], X[CHUNK], Y_INDEX[CHUNK])
    core.partial_fit_many(models, X[CHUNK], Y_INDEX[CHUNK], 3)
    assert state(models) == expected


@pytest.mark.skipif(threading.current_thread() is not threading.main_thread(), reason="signals reach the main thread")
def test_a_signal_handler_that_uses_a_model_of_the_call_raises_instead_of_waiting_for_itself():
    models = [fitted(PERCEPTRON, gamma=g) for g in (1.0, 2.0)]

    def save_on_ctrl_c(signum, frame):
        models[1].to_bytes()  # a read while this thread writes the model: refused

    old = signal.signal(signal.SIGINT, save_on_ctrl_c)
    timer = threading.Timer(0.3, _thread.interrupt_main)
    timer.start()
    try:
        with pytest.raises(RuntimeError, match="used again"):
            core.partial_fit_many(models, XL, YL_INDEX, 2)
            time.sleep(60)
    finally:
        timer.cancel()
        timer.join()
        signal.signal(signal.SIGINT, old)
    for model in models:
        assert 50 < model.counters["examples"] < 50 + len(XL)
    core.partial_fit_many(models, X[CHUNK], Y_INDEX[CHUNK], 2)  # usable: the models were given back
