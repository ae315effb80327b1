"""PrequentialSearch against its oracles: a one-candidate search is the estimator alone (same
bytes); each candidate's recorded prequential error is an independent predict-then-learn loop's;
a halving keeps exactly the best ceil(n / eta); n_jobs changes nothing; memory stays at the
candidates plus one chunk; bad grids and bad input fail before anything learns."""

import math
import pickle

import numpy as np
import pytest
from conftest import LEARNERS, SMALL
from scipy import stats

from budgetkernel import BudgetedPAClassifier, BudgetedSGDClassifier, KernelPerceptron, load
from budgetkernel.datasets import checkerboard
from budgetkernel.model_selection import PrequentialSearch, default_grid, median_gamma
from budgetkernel.model_selection._schedule import keep, rung_schedule


def _data(n=1200, seed=0):
    X, y = checkerboard(n, random_state=seed)
    return X, y


def _chunks(X, y, size=250):
    for i in range(0, len(y), size):
        yield X[i : i + size], y[i : i + size]


def _stream(est, X, y, size=250):
    classes = np.unique(y)
    for Xc, yc in _chunks(X, y, size):
        est.partial_fit(Xc, yc, classes=classes)
    return est


# ------------------------------------------------------------------ oracles


@pytest.mark.parametrize("case", LEARNERS, ids=repr)
def test_one_candidate_is_the_estimator_alone(case):
    X, y = _data(600)
    alone = _stream(case.make(**SMALL), X, y)
    search = _stream(PrequentialSearch(case.make(**SMALL), {"n_epochs": [1]}, n_jobs=2), X, y)
    assert search.best_estimator_._model.to_bytes() == alone._model.to_bytes()
    assert search.n_seen_ == len(y)
    np.testing.assert_array_equal(search.decision_function(X[:50]), alone.decision_function(X[:50]))


def _window(rung, rungs, eta=3):
    """Where the window judged at ``rung`` starts: the latest mark (0, a power of two from 16,
    an earlier rung) at most rung / eta."""
    marks = [0] + [2**k for k in range(4, 40) if 2**k < rung] + [r for r in rungs if r < rung]
    return max(m for m in marks if m * eta <= rung + eta)


@pytest.mark.parametrize("case", LEARNERS, ids=repr)
def test_every_learner_is_searched_with_its_default_grid(case):
    X, y = _data(1500)
    est = case.make(**{k: v for k, v in SMALL.items() if k != "gamma"})
    search = _stream(PrequentialSearch(est, random_state=0), X, y)
    grid = default_grid(est, X[:250], None)
    assert len(search.candidate_params_) == int(np.prod([len(v) for v in grid.values()])) >= 9
    assert set(search.best_params_) == set(grid)
    assert search.n_seen_ == 1500
    if case.accepts("kernel"):  # (a linear model cannot learn the checkerboard)
        assert search.score(X, y) > 0.6


def _loop_rung_errors(est, X, y, rungs):
    """Prequential error over each rung's window, by predict_one then learn_one per example."""
    classes, wrong = np.unique(y), []
    for t, (x, label) in enumerate(zip(X, y), start=1):
        # the first example: an empty model predicts classes_[0]
        wrong.append(est.predict_one(x) != label if t > 1 else label != classes[0])
        est.learn_one(x, label, classes=classes if t == 1 else None)
    return [float(np.mean(wrong[_window(r, rungs) : r])) for r in rungs]


@pytest.mark.parametrize("cls", [BudgetedSGDClassifier, BudgetedPAClassifier, KernelPerceptron])
def test_rung_errors_equal_an_independent_loop(cls):
    X, y = _data(1300, seed=3)
    grid = {"gamma": [0.3, 3.0, 30.0]}
    search = _stream(PrequentialSearch(cls(budget=20, random_state=0), grid, first_rung=100), X, y, size=170)
    res = search.results_
    assert search.rungs_ == [100]
    for params, errs in zip(res["params"], res["rung_errors"]):
        est = cls(budget=20, random_state=0, **params)
        assert errs == _loop_rung_errors(est, X, y, search.rungs_)


def test_halving_keeps_exactly_the_best_fraction():
    X, y = _data(3000)
    search = _stream(PrequentialSearch(BudgetedSGDClassifier(budget=20, random_state=0), first_rung=150, eta=2.5), X, y)
    res = search.results_
    n = len(res["params"])
    alive = list(range(n))
    for j, rung in enumerate(search.rungs_):
        errs = {i: res["rung_errors"][i][j] for i in alive}
        kept = [i for i in alive if res["dropped_at"][i] is None or res["dropped_at"][i] > rung]
        assert len(kept) == math.ceil(len(alive) / 2.5)
        order = sorted(alive, key=lambda i: (errs[i], i))  # ties: the earlier candidate
        assert set(kept) == set(order[: len(kept)])
        for i in set(alive) - set(kept):
            assert res["dropped_at"][i] == rung
        alive = kept
    assert len(alive) == 1 and search.best_index_ == alive[0]
    assert res["rank"][alive[0]] == 1


def test_keep_breaks_ties_by_position():
    assert keep([0.2, 0.1, 0.1, 0.3], 2) == [1, 2]
    assert keep([0.5, 0.5, 0.5], 3) == [0]


def test_rung_schedule():
    assert rung_schedule(27, 3, first_rung=100) == [100, 300, 900]
    assert rung_schedule(27, 3, n_expected=36_000) == [1000, 3000, 9000]  # the last at a quarter
    assert rung_schedule(27, 3, n_expected=360_000) == [10_000, 30_000, 90_000]
    assert rung_schedule(27, 3, n_expected=1000) == [1000, 3000, 9000]  # at least 1000 first
    assert rung_schedule(27, 3, n_expected=36_000, n_classes=26) == [2600, 7800, 23400]  # 100 per class
    assert rung_schedule(27, 3) == [1000, 3000, 9000]
    assert rung_schedule(1, 3) == []


def test_results_do_not_depend_on_n_jobs():
    X, y = _data(2000)
    runs = []
    for n_jobs in (1, 2, 4):
        s = PrequentialSearch(BudgetedPAClassifier(budget=30), first_rung=200, n_jobs=n_jobs, random_state=7)
        _stream(s, X, y, size=333)
        runs.append((s.results_, s.best_index_, [c._model.to_bytes() for c in s.candidates_]))
    assert runs[0] == runs[1] == runs[2]


# ------------------------------------------------------------------ grids


def test_default_grid_uses_the_median_heuristic_and_the_stream_length():
    X, _ = _data(400)
    gm = median_gamma(X)
    d = ((X[:, None, :] - X[None, :, :]) ** 2).sum(-1)[np.triu_indices(400, 1)]
    assert gm == pytest.approx(1.0 / np.median(d), rel=1e-9)
    grid = default_grid(BudgetedSGDClassifier(), X, n_expected=10_000)
    assert grid["gamma"] == pytest.approx([gm, gm * 4, gm * 16])
    assert grid["lam"][0] == pytest.approx(1 / (1e-4 * 10_000)) and grid["lam"][-1] == pytest.approx(1 / (10 * 10_000))
    assert len(grid["gamma"]) * len(grid["lam"]) == 27


def test_distributions_are_sampled_reproducibly():
    X, y = _data(600)
    grid = {"gamma": stats.loguniform(0.1, 10), "C": [0.5, 1.0]}
    a = _stream(PrequentialSearch(BudgetedPAClassifier(budget=20), grid, n_candidates=5, random_state=1), X, y)
    b = _stream(PrequentialSearch(BudgetedPAClassifier(budget=20), grid, n_candidates=5, random_state=1), X, y)
    assert len(a.candidate_params_) == 5 and a.candidate_params_ == b.candidate_params_
    assert [c.random_state for c in a.candidates_] == [c.random_state for c in b.candidates_]
    g = _stream(PrequentialSearch(BudgetedPAClassifier(budget=20), grid, n_candidates=5,
                                  random_state=np.random.default_rng(1)), X, y)  # a Generator too
    assert len(g.candidate_params_) == 5


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"param_grid": {"gama": [1.0]}}, "not a parameter"),
        ({"param_grid": {}}, "empty"),
        ({"param_grid": []}, "empty"),
        ({"param_grid": {"gamma": []}}, "empty"),
        ({"param_grid": {"gamma": [1.0, -1.0]}}, "gamma"),
        ({"param_grid": {"gamma": stats.uniform(0, 1)}}, "n_candidates"),
        ({"eta": 1}, "eta"),
        ({"n_jobs": 0}, "n_jobs"),
        ({"judge": "best"}, "judge"),
        ({"first_rung": 0}, "first_rung"),
    ],
)
def test_invalid_grids_and_parameters_fail_before_learning(kwargs, match):
    X, y = _data(100)
    search = PrequentialSearch(BudgetedSGDClassifier(budget=10), **kwargs)
    with pytest.raises(ValueError, match=match):
        search.partial_fit(X, y, classes=np.unique(y))
    assert not hasattr(search, "candidates_")


def test_bad_input_raises_clearly():
    X, y = _data(300)
    with pytest.raises(TypeError, match="budgetkernel classifier"):
        PrequentialSearch(object()).fit(X, y)
    search = PrequentialSearch(BudgetedSGDClassifier(budget=10))
    with pytest.raises(ValueError, match="classes"):
        search.partial_fit(X, y)
    Xn = X.copy()
    Xn[3, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        search.partial_fit(Xn, y, classes=[-1, 1])
    search.partial_fit(X, y, classes=[-1, 1])
    before = [c._model.to_bytes() for c in search.candidates_]
    with pytest.raises(ValueError, match="label"):
        search.partial_fit(X[:5], np.array([1, -1, 2, 1, -1]))
    with pytest.raises(ValueError, match="features"):
        search.partial_fit(X[:5, :1], y[:5])
    assert before == [c._model.to_bytes() for c in search.candidates_]


# ------------------------------------------------------------------ use


def test_fit_learn_one_pickle_and_save(tmp_path):
    X, y = _data(1500)
    search = PrequentialSearch(BudgetedPAClassifier(budget=20, random_state=0), random_state=0).fit(X[:1000], y[:1000])
    assert search.n_seen_ == 1000 and search.rungs_  # n_expected from fit: rungs placed in the stream
    for x, label in zip(X[1000:1010], y[1000:1010]):
        search.learn_one(x, label)
    assert search.n_seen_ == 1010
    acc = search.score(X[1010:], y[1010:])
    assert acc > 0.7
    back = pickle.loads(pickle.dumps(search))
    assert back.score(X[1010:], y[1010:]) == acc and back.best_params_ == search.best_params_
    search.save(tmp_path / "m.bk")
    model = load(tmp_path / "m.bk")
    assert type(model) is BudgetedPAClassifier
    assert model.get_params()["C"] == search.best_params_["C"]
    np.testing.assert_array_equal(model.predict(X[1010:]), search.predict(X[1010:]))
    assert search.predict_one(X[1100]) == search.predict(X[1100:1101])[0]


def test_learn_one_from_the_start_with_dicts():
    X, y = _data(400)
    search = PrequentialSearch(KernelPerceptron(budget=10), {"gamma": [1.0, 10.0]}, first_rung=100)
    for x, label in zip(X, y):
        search.learn_one({"a": x[0], "b": x[1]}, bool(label))
    assert search.n_seen_ == 400 and len(search._alive) == 1
    assert search.predict_one({"a": 0.1, "b": 0.2}) in (False, True)


def test_memory_is_the_candidates_plus_one_chunk():
    """A long generator stream (never held whole) through 27 candidates: the resident memory
    after the first chunks does not grow with the stream."""
    import resource

    def rss_mb():
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * resource.getpagesize() / 2**20

    rng = np.random.default_rng(0)
    d, rows, chunks = 50, 4000, 60  # 96 MB of data streamed, 1.6 MB per chunk

    def chunk():
        X = rng.standard_normal((rows, d))
        return X, (X[:, 0] * X[:, 1] > 0).astype(int)

    search = PrequentialSearch(BudgetedSGDClassifier(budget=10, maintenance="remove-random"), first_rung=2000)
    for _ in range(3):
        search.partial_fit(*chunk(), classes=[0, 1])
    base = rss_mb()
    for _ in range(chunks):
        search.partial_fit(*chunk())
    assert len(search.candidate_params_) == 27
    assert search.n_seen_ == rows * (chunks + 3)
    assert rss_mb() - base < 20  # 27 models of 10 SVs are ~0.1 MB; the streamed data 96 MB


# ------------------------------------------------------------------ IncrementalSVC's C path


def test_svc_over_C_walks_the_regularisation_path():
    """IncrementalSVC candidates that differ in C share one model per gamma (set_C moves it):
    the winner equals the SVM of its parameters trained alone, and each candidate's rung error
    equals an independent SVM of its C predicting each block before learning it."""
    from budgetkernel import IncrementalSVC
    from budgetkernel.model_selection import _path

    X, y = _data(900, seed=5)
    grid = {"C": [0.3, 3.0, 30.0], "gamma": [1.0, 10.0]}
    search = _stream(PrequentialSearch(IncrementalSVC(), grid, first_rung=300), X, y, size=300)
    assert search._groups == [[0, 2, 4], [1, 3, 5]]  # by gamma (the grid is ordered C, gamma)
    best = search.best_estimator_
    alone = IncrementalSVC(**search.best_params_).fit(X, y)
    np.testing.assert_allclose(best.decision_function(X), alone.decision_function(X), atol=1e-6)

    blocks, pos = [], 0  # the blocks _path predicts in: pieces end at marks (16, 32, ...) and the rung
    for end in (16, 32, 64, 128, 256, 300):
        while pos < end:
            stop = min(end, pos + max(_path._MIN_BLOCK, pos // _path._BLOCK_FRACTION))
            blocks.append((pos, stop))
            pos = stop
    start = _window(300, [300])  # 64
    res = search.results_
    for params, errs in zip(res["params"], res["rung_errors"]):
        svc, wrong = IncrementalSVC(**params), 0
        for a, b in blocks:
            if a == 0:  # an empty model predicts classes_[0]
                miss = int((y[a:b] != -1).sum())
                svc.partial_fit(X[a:b], y[a:b], classes=[-1, 1])
            else:
                miss = int((svc.predict(X[a:b]) != y[a:b]).sum())
                svc.partial_fit(X[a:b], y[a:b])
            wrong += miss if a >= start else 0
        assert errs[0] == pytest.approx(wrong / (300 - start))
