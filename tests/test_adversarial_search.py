"""Adversarial cases of PrequentialSearch (issue 41: items 0, 2, 3, 8, 8b, 9, 10), table-driven.

Each table row is one reproducer of a finding, small enough to run in well under a second.
Ctrl-C is simulated two ways: deterministically, by a stand-in for the core call that lets
some candidates learn their whole piece, one a prefix of it, and then raises
KeyboardInterrupt (what the core does on Ctrl-C: each candidate keeps the rows before its
stop); and once with a real interrupt (conftest.interrupted). The oracles are an
uninterrupted search of the same stream (bit for bit), the exact SVM of the winner's C
trained alone on the whole stream, and the state before a rejected call (bit for bit).
"""

import subprocess
import sys
import threading

import numpy as np
import pytest
from sklearn.exceptions import NotFittedError

import budgetkernel as bk
from budgetkernel import cli, datasets
from budgetkernel.model_selection import PrequentialSearch, _regression, _search
from budgetkernel.model_selection._schedule import halvings, rung_schedule
from conftest import interrupted

_CORE = _search._core  # the real one, which the stand-ins below call


def _stream(n, seed=0):
    X, y = datasets.noisy_checkerboard(n, random_state=seed)
    return np.ascontiguousarray(X, dtype=np.float64), y


def _regression_stream(n, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, size=(n, 2))
    return X, np.sin(3 * X[:, 0]) + 0.1 * rng.normal(size=n)


def _state(search):
    """Everything a search has learned and recorded, as bytes and lists (compared exactly)."""
    models = [c._model.to_bytes() if "_model" in c.__dict__ else None for c in search.candidates_]
    return models, search.results_, search.n_seen_, search.rungs_


def _finishes(call, seconds=60):
    """call() in a daemon thread; whether it returned within ``seconds`` (a hang fails)."""
    out = {}
    t = threading.Thread(target=lambda: out.setdefault("result", call()), daemon=True)
    t.start()
    t.join(seconds)
    return not t.is_alive(), out.get("result")


# --------------------------------------------------------------------------- 0: eta in (1, 2)
# eta, candidates -> survivors after each rung, counted by hand: ceil(n / eta), at most n - 1.
ETA_CASES = [
    (1.5, 2, [1]),
    (1.5, 5, [4, 3, 2, 1]),
    (1.999, 3, [2, 1]),
    (1.0001, 4, [3, 2, 1]),
    (2.0, 5, [3, 2, 1]),
    (3.0, 9, [3, 1]),
]


@pytest.mark.parametrize("eta,n,survivors", ETA_CASES)
def test_eta_below_two_finishes_dropping_at_least_one_per_rung(eta, n, survivors):
    X, y = _stream(400)
    grid = {"gamma": [0.5 * 2.0**k for k in range(n)]}
    search = PrequentialSearch(bk.BudgetedSGDClassifier(budget=20, random_state=0), grid, eta=eta, first_rung=20)
    done, _ = _finishes(lambda: search.fit(X, y))
    assert done, f"fit with eta={eta} did not return"
    assert halvings(n, eta) == len(survivors) == len(search.rungs_)
    assert all(b > a for a, b in zip(search.rungs_, search.rungs_[1:]))  # eta ~ 1: still apart
    dropped = search.results_["dropped_at"]
    alive = [n - sum(d is not None and d <= r for d in dropped) for r in search.rungs_]
    assert alive == survivors
    assert search.n_seen_ == 400


def test_rungs_close_to_one_stay_apart():
    assert rung_schedule(4, 1.0001, first_rung=1000) == [1000, 1001, 1002]


def test_cli_tune_eta_below_two_finishes(tmp_path):
    X, y = _stream(300)
    path = tmp_path / "s.svm"
    path.write_text("".join(f"{int(t)} 1:{float(a)!r} 2:{float(b)!r}\n" for (a, b), t in zip(X, y)))
    cmd = [sys.executable, "-m", "budgetkernel", "train", str(path), "-o", str(tmp_path / "m.bkm"),
           "--budget", "20", "--tune-grid", "gamma=0.5,2.0", "--tune-eta", "1.5", "--quiet"]
    out = subprocess.run(cmd, check=False, capture_output=True, text=True, timeout=120)  # a hang fails
    assert out.returncode == 0, out.stderr
    assert (tmp_path / "m.bkm").exists()


# ------------------------------------------------------ 2: a rejected chunk changes nothing
def _nan(X, y, row):
    X = X.copy()
    X[row, 0] = np.nan
    return X, y


def _huge(X, y, row):
    X = X.copy()
    X[row] = 1e200  # squared norm beyond 1e300
    return X, y


def _target_huge(X, y, row):
    y = np.array(y, dtype=np.float64)
    y[row] = 1e200  # its square is not finite
    return X, y


# Rungs beyond the first chunks, so that a chunk is learned in pieces: after 100 rows, the
# next 100 are split at 128 (a power-of-two mark) and 150 (the rung), or in the path's blocks.
def _classifier_search():
    return PrequentialSearch(bk.BudgetedSGDClassifier(budget=20, random_state=0), {"gamma": [0.5, 2.0]}, first_rung=150)


def _path_search():
    return PrequentialSearch(bk.IncrementalSVC(gamma=2.0), {"C": [0.1, 1.0, 10.0]}, first_rung=1000)


def _regressor_search():
    return PrequentialSearch(bk.BudgetedSGDRegressor(budget=20, random_state=0), {"gamma": [0.5, 2.0]}, first_rung=150)


# make, stream, corrupt, message: a chunk of 100 rows after 100 learned, bad at its row 60.
REJECTED = [
    (_classifier_search, _stream, _nan, "X row 60 "),
    (_classifier_search, _stream, _huge, "X row 60 "),
    (_path_search, _stream, _nan, "X row 60 "),
    (_path_search, _stream, _huge, "X row 60 "),
    (_regressor_search, _regression_stream, _nan, "X row 60 "),
    (_regressor_search, _regression_stream, _huge, "X row 60 "),
    (_regressor_search, _regression_stream, _target_huge, "target y[60]"),
]


def _first_chunk(search, X, y):
    kw = {} if _regression.is_regression(search.estimator) else {"classes": [-1, 1]}
    search.partial_fit(X, y, **kw)


@pytest.mark.parametrize("make,stream,corrupt,message", REJECTED)
def test_a_rejected_chunk_changes_nothing_and_names_the_chunks_row(make, stream, corrupt, message):
    X, y = stream(200)
    search = make()
    _first_chunk(search, X[:100], y[:100])
    before = _state(search)
    Xb, yb = corrupt(X[100:], y[100:], 60)
    with pytest.raises(ValueError, match=message.replace("[", r"\[")):
        search.partial_fit(Xb, yb)
    assert _state(search) == before
    search.partial_fit(X[100:], y[100:])  # and the search goes on from where it was
    assert search.n_seen_ == 200


@pytest.mark.parametrize("make,stream,corrupt,message", REJECTED[:1] + REJECTED[4:5])
def test_a_rejected_first_chunk_leaves_the_search_unfitted(make, stream, corrupt, message):
    X, y = stream(100)
    search = make()
    with pytest.raises(ValueError, match="NaN"):  # scikit-learn's validation of a first chunk
        _first_chunk(search, *corrupt(X, y, 60))
    with pytest.raises(NotFittedError):
        search.predict(X)


def test_a_rejected_refit_keeps_the_search_fitted_before():
    X, y = _stream(300)
    search = _classifier_search().fit(X, y)
    before, pred = _state(search), search.predict(X[:50])
    with pytest.raises(ValueError):
        search.fit(*_huge(X, y, 250))
    assert _state(search) == before
    np.testing.assert_array_equal(search.predict(X[:50]), pred)


def test_a_regressor_search_refuses_classes():
    X, y = _regression_stream(50)
    with pytest.raises(ValueError, match="classes does not apply"):
        _regressor_search().partial_fit(X, y, classes=[0, 1])


# ---------------------------------------- 3, 8b: Ctrl-C leaves a search that resumes exactly
class _StopInPartialFitMany:
    """Stands for _core.partial_fit_many on the call ``at``: the first ``whole`` models learn
    the piece, the next one its first ``rows`` rows, and Ctrl-C is raised (the rest did not
    start), as the core's pool stops on Ctrl-C."""

    def __init__(self, at, whole, rows):
        self.calls, self.at, self.whole, self.rows = 0, at, whole, rows

    def partial_fit_many(self, models, X, y, n_jobs):
        self.calls += 1
        if self.calls != self.at:
            return _CORE.partial_fit_many(models, X, y, n_jobs)
        for m in models[: self.whole]:
            m.partial_fit(X, y)
        models[self.whole].partial_fit(X[: self.rows], y[: self.rows])
        raise KeyboardInterrupt


# grid, chunks of the stream, (call to stop, models that finish it, rows of the next one)
INTERRUPTS = [
    ({"gamma": [0.5, 2.0, 8.0]}, [300, 700], (2, 1, 7)),
    ({"gamma": [0.5, 2.0, 8.0], "lam": [1e-3, 1e-4]}, [1000], (4, 3, 40)),
    ({"gamma": [0.5, 2.0, 8.0]}, [1000], (1, 0, 0)),  # the very first call: nothing learned
]


@pytest.mark.parametrize("grid,chunks,stop", INTERRUPTS)
def test_ctrl_c_then_resume_at_n_seen_is_the_uninterrupted_search(grid, chunks, stop, monkeypatch):
    X, y = _stream(1000)
    def make():
        return PrequentialSearch(bk.BudgetedSGDClassifier(budget=20, random_state=0), grid, first_rung=200)

    whole = make()
    for a, b in zip([0, *chunks], chunks):
        whole.partial_fit(X[a:b], y[a:b], classes=[-1, 1])

    search = make()
    monkeypatch.setattr(_search, "_core", _StopInPartialFitMany(*stop))
    for b in chunks:
        seen = search.n_seen_ if hasattr(search, "_alive") else 0
        try:
            search.partial_fit(X[seen:b], y[seen:b], classes=[-1, 1])
        except KeyboardInterrupt:
            if not hasattr(search, "_alive"):  # stopped before anything was learned: unfitted
                with pytest.raises(NotFittedError):
                    search.predict(X[:5])
                search.partial_fit(X[:b], y[:b], classes=[-1, 1])
                continue
            alive = search._alive
            counts = [search.candidates_[i].n_seen_ for i in alive]
            assert search.n_seen_ == min(counts) and len(set(counts)) > 1  # stopped unevenly
            assert search.best_estimator_.predict(X[:5]).shape == (5,)
            seen = search.n_seen_
            search.partial_fit(X[seen:b], y[seen:b])  # the resume recipe: from n_seen_
    assert _state(search) == _state(whole)


def test_a_stopped_refit_publishes_what_it_learned(monkeypatch):
    X, y = _stream(600)
    search = _classifier_search().fit(X[:100], y[:100])
    monkeypatch.setattr(_search, "_core", _StopInPartialFitMany(3, 1, 5))
    with pytest.raises(KeyboardInterrupt):
        search.fit(X, y)
    assert 0 < search.n_seen_ < 600  # the new search, as far as it got
    seen = search.n_seen_
    monkeypatch.undo()
    search.partial_fit(X[seen:], y[seen:])
    assert [search.candidates_[i].n_seen_ for i in search._alive] == [600] * len(search._alive)


class _StopAfterRows:
    """A core model standing for bk.IncrementalSVC's shared one: it learns as the model does,
    until ``rows`` rows in all, then raises KeyboardInterrupt in the partial_fit that reaches
    them (having learned up to them), as Ctrl-C stops a chunk between two examples."""

    def __init__(self, model, rows):
        self.model, self.rows = model, rows

    def __getattr__(self, name):
        return getattr(self.model, name)

    def partial_fit(self, X, y, *args):
        left = self.rows - self.model.counters["examples"]
        if left >= len(y):
            return self.model.partial_fit(X, y, *args)
        self.model.partial_fit(X[:left], y[:left])
        raise KeyboardInterrupt


def _unwrap(search):
    for c in search.candidates_:
        if isinstance(c.__dict__.get("_model"), _StopAfterRows):
            c.__dict__["_model"] = c.__dict__["_model"].model


# grid, stop after this many rows learned (in blocks of at most 1/8 of those seen before)
PATH_STOPS = [
    ({"C": [0.1, 1.0, 10.0]}, 150),
    # at a block's end (blocks of 16 from 32): the stop comes in the next block's partial_fit,
    # after its predictions and before it learned a row
    ({"C": [0.1, 1.0, 10.0]}, 112),
    ({"C": [0.1, 1.0, 10.0], "gamma": [1.0, 4.0]}, 170),
]


@pytest.mark.parametrize("grid,rows", PATH_STOPS)
def test_the_svc_path_keeps_its_model_and_count_after_ctrl_c(grid, rows):
    X, y = _stream(400, seed=1)
    search = PrequentialSearch(bk.IncrementalSVC(gamma=2.0, random_state=0), grid, first_rung=1000)
    search.partial_fit(X[:32], y[:32], classes=[-1, 1])
    group = [i for i in range(len(search.candidates_)) if "_model" in search.candidates_[i].__dict__][0]
    c = search.candidates_[group]
    c.__dict__["_model"] = _StopAfterRows(c.__dict__["_model"], rows)
    with pytest.raises(KeyboardInterrupt):
        search.partial_fit(X[32:], y[32:])
    _unwrap(search)
    best = search.best_estimator_  # a candidate that holds its group's model, at its C
    assert best._model.params.C == best.C
    assert best.predict(X[:5]).shape == (5,)
    stopped = next(g for g in search._groups if group in g)
    assert {search._seen[i] for i in stopped if i in search._alive} == {rows}  # all at the model's count
    seen = search.n_seen_
    assert seen == min(search._seen[i] for i in search._alive)
    search.partial_fit(X[seen:], y[seen:])  # the resume recipe
    for g in search._groups:
        holder = [i for i in g if "_model" in search.candidates_[i].__dict__]
        assert len(holder) == 1 and search.candidates_[holder[0]].n_seen_ == 400
    # Each row learned once: the winner is the exact SVM of its C trained alone on the stream.
    best = search.best_estimator_
    alone = bk.IncrementalSVC(gamma=best.gamma, C=best.C, random_state=0).fit(X, y)
    np.testing.assert_allclose(best.decision_function(X[:100]), alone.decision_function(X[:100]), atol=1e-6)


def test_a_rung_that_drops_the_holder_hands_its_model_over_at_the_kept_C():
    from budgetkernel.model_selection import _path

    X, y = _stream(300, seed=3)
    search = PrequentialSearch(bk.IncrementalSVC(gamma=2.0, random_state=0), {"C": [0.1, 1.0, 10.0]}, first_rung=1000)
    search.partial_fit(X, y, classes=[-1, 1])
    (h,) = [i for i, c in enumerate(search.candidates_) if "_model" in c.__dict__]
    kept = [i for i in range(3) if i != h][::-1]  # the holder dropped, the best kept first
    _path.hand_over(search, kept)
    to = search.candidates_[kept[0]]
    assert "_model" not in search.candidates_[h].__dict__ and to._model.params.C == to.C
    alone = bk.IncrementalSVC(gamma=2.0, C=to.C, random_state=0).fit(X, y)
    np.testing.assert_allclose(to.decision_function(X[:100]), alone.decision_function(X[:100]), atol=1e-6)


def test_the_svc_path_after_a_real_ctrl_c_holds_a_usable_model():
    X, y = _stream(30_000, seed=2)
    search = PrequentialSearch(bk.IncrementalSVC(gamma=2.0, random_state=0), {"C": [0.1, 1.0, 10.0]}, first_rung=20_000)
    interrupted(lambda: search.partial_fit(X, y, classes=[-1, 1]), delay=0.2)
    best = search.best_estimator_
    assert best.predict(X[:5]).shape == (5,)
    assert best.n_seen_ == search.n_seen_ == min(search._seen[i] for i in search._alive)
    assert 0 < search.n_seen_ < 30_000


# -------------------------------------------------------------- 8b: refit seen atomically
def test_readers_never_see_a_search_half_refitted():
    X, y = _stream(400)
    search = _classifier_search().fit(X, y)
    errors, stop = [], threading.Event()

    def read():
        while not stop.is_set():
            try:
                search.predict(X[:3])
                _ = search.best_params_, search.n_seen_, search.results_
            except Exception as e:  # noqa: BLE001 - any failure is what the test counts
                errors.append(e)

    reader = threading.Thread(target=read)
    reader.start()
    try:
        for _ in range(15):
            search.fit(X, y)
    finally:
        stop.set()
        reader.join()
    assert errors == []


# ------------------------------------------------------------------- 8: probabilities
@pytest.mark.parametrize("est", [bk.BudgetedPAClassifier(budget=20, probability=True, random_state=0),
                                 bk.BudgetedSGDClassifier(budget=20, loss="log", random_state=0)])
def test_a_search_has_the_winners_probabilities(est):
    X, y = _stream(400)
    search = PrequentialSearch(est, {"gamma": [0.5, 2.0]}, first_rung=100).fit(X, y)
    np.testing.assert_array_equal(search.predict_proba(X[:20]), search.best_estimator_.predict_proba(X[:20]))
    np.testing.assert_array_equal(search.predict_log_proba(X[:20]), search.best_estimator_.predict_log_proba(X[:20]))


def test_a_search_without_probabilities_has_no_predict_proba():
    assert not hasattr(_classifier_search(), "predict_proba")


# ------------------------------------------------------------------------------ 9: ties
TIE_CLASSIFIERS = [bk.BudgetedSGDClassifier, bk.BudgetedPAClassifier, bk.KernelPerceptron, bk.BOGDClassifier, bk.IncrementalSVC,
                   bk.TwinVectorMachine, bk.ReservoirSVC, bk.SparsePAClassifier, bk.LinearPegasosClassifier]


@pytest.mark.parametrize("cls", TIE_CLASSIFIERS)
@pytest.mark.parametrize("n_classes", [2, 3])
def test_predict_is_the_first_most_probable_class(cls, n_classes):
    # Random labels: the calibration finds no signal and fits slopes of 0 on some side, so
    # many rows get exactly equal probabilities while their decision values differ.
    rng = np.random.default_rng(n_classes)
    X, y = rng.normal(size=(300, 2)), rng.integers(0, n_classes, 300)
    clf = cls(probability=True).fit(X, y)
    Xt = rng.normal(size=(400, 2))
    P, pred, D = clf.predict_proba(Xt), clf.predict(Xt), clf.decision_function(Xt)
    np.testing.assert_array_equal(pred, clf.classes_[P.argmax(axis=1)])
    # ... which is the class of the decision values wherever the probabilities do not tie.
    top = np.sort(P, axis=1)
    strict = top[:, -1] > top[:, -2]
    by_score = (D > 0).astype(int) if n_classes == 2 else D.argmax(axis=1)
    np.testing.assert_array_equal(pred[strict], clf.classes_[by_score[strict]])
    assert [clf.predict_one(x) for x in Xt[:20]] == list(pred[:20])
    # Without probabilities predict is the decision values' class everywhere.
    plain = cls().fit(X, y)
    D = plain.decision_function(Xt)
    np.testing.assert_array_equal(plain.predict(Xt), plain.classes_[(D > 0).astype(int) if n_classes == 2 else D.argmax(1)])


# ------------------------------------------------------------------ 10: clear messages
def test_a_search_over_dask_names_the_bad_row_in_the_stream():
    distributed = pytest.importorskip("distributed")
    da = pytest.importorskip("dask.array")
    X, y = _stream(800)
    X = X.copy()
    X[612, 1] = np.inf  # not among the 500 rows the candidates are built from
    with distributed.Client(processes=False, n_workers=1, threads_per_worker=1, dashboard_address=":0") as client:
        search = PrequentialSearch(bk.BudgetedSGDClassifier(budget=20, random_state=0), {"gamma": [0.5, 2.0]},
                                   first_rung=100, client=client)
        with pytest.raises(ValueError, match=r"the partition of stream rows 600 to 799: X row 612 contains NaN or infinity"):
            search.fit(da.from_array(X, chunks=(200, 2)), da.from_array(y, chunks=200))
    with pytest.raises(NotFittedError):  # a fit rejected on its input publishes nothing
        search.predict(X[:3])


@pytest.mark.parametrize("options,message", [
    (["--budget", "0"], "--budget 0 (no budget) does not apply to --learner sliding-krls"),
    (["--tune-grid", "budget=0,5"], "--tune-grid budget 0 (no budget) does not apply to --learner sliding-krls"),
])
def test_cli_sliding_krls_budget_zero_says_why(tmp_path, capsys, options, message):
    path = tmp_path / "r.svm"
    path.write_text("1 1:0.5 2:0.1\n2 1:0.2 2:0.3\n0.5 1:0.1 2:0.9\n")
    assert cli.main(["train", str(path), "-o", str(tmp_path / "m.bkm"), "--learner", "sliding-krls", *options]) == 2
    err = capsys.readouterr().err
    assert message in err and "None" not in err
