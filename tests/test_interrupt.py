"""Ctrl-C (and Jupyter's "interrupt kernel") stops a long chunk between two examples.

The chunk loops run in C++ without the GIL; the core polls Python's signal handlers about
every 20 ms (stop_poll.hpp, run_released in model_lock.hpp). Each test simulates Ctrl-C with
_thread.interrupt_main from a timer thread, during a call that would otherwise run for tens of
seconds, and checks that the call stopped part-way and left a consistent model: a stopped
fit or partial_fit has learned exactly the rows before the stop (the same model as a fresh
learner trained on that prefix), and goes on learning from there.
"""

import threading

import numpy as np
import pytest

from budgetkernel import BudgetedPAClassifier, BudgetedSGDClassifier, IncrementalSVC
from budgetkernel.datasets import checkerboard, noisy_checkerboard
from conftest import interrupted

pytestmark = pytest.mark.skipif(
    threading.current_thread() is not threading.main_thread(), reason="signals reach the main thread only"
)


def _stream(n, seed=0):
    X, y = noisy_checkerboard(n, random_state=seed)
    return np.ascontiguousarray(X, dtype=np.float64), y




def test_ctrl_c_stops_partial_fit_and_keeps_the_rows_learned():
    # Unbudgeted kernel Pegasos over 200,000 rows: O(n^2) kernel values, far more than 0.3 s.
    X, y = _stream(200_000)
    est = BudgetedSGDClassifier(budget=None, gamma=4.0, lam=1e-4, random_state=0)
    est.partial_fit(X[:10], y[:10], classes=[-1, 1])
    interrupted(lambda: est.partial_fit(X[10:], y[10:]))
    learned = est.n_seen_
    assert 10 < learned < 200_000
    assert est.prequential_curve_[-1][0] == learned  # the curve ends where the model does

    prefix = BudgetedSGDClassifier(budget=None, gamma=4.0, lam=1e-4, random_state=0)
    prefix.partial_fit(X[:10], y[:10], classes=[-1, 1])
    prefix.partial_fit(X[10:learned], y[10:learned])
    probe = X[:500]
    np.testing.assert_array_equal(est.decision_function(probe), prefix.decision_function(probe))

    # and the stopped estimator goes on learning as if nothing happened
    est.partial_fit(X[learned : learned + 100], y[learned : learned + 100])
    prefix.partial_fit(X[learned : learned + 100], y[learned : learned + 100])
    np.testing.assert_array_equal(est.decision_function(probe), prefix.decision_function(probe))


def test_ctrl_c_stops_the_exact_svm_and_keeps_what_it_learned():
    X, y = _stream(100_000, seed=1)
    est = IncrementalSVC(C=10.0, gamma=2.0)
    interrupted(lambda: est.fit(X, y))
    # a stopped fit publishes the model of the rows it learned, like a stopped partial_fit
    learned = est.n_seen_
    assert 0 < learned < 100_000
    probe = X[:300]
    prefix = IncrementalSVC(C=10.0, gamma=2.0).fit(X[:learned], y[:learned])
    np.testing.assert_allclose(est.decision_function(probe), prefix.decision_function(probe), rtol=0, atol=1e-12)

    # a weighted chunk stops too, its learned rows kept
    w = np.full(len(y), 2.0)
    interrupted(lambda: est.partial_fit(X[learned:], y[learned:], sample_weight=w[learned:]))
    more = est.n_seen_
    assert learned < more < 100_000
    prefix.partial_fit(X[learned:more], y[learned:more], sample_weight=w[learned:more])
    np.testing.assert_allclose(est.decision_function(probe), prefix.decision_function(probe), rtol=0, atol=1e-12)


def test_ctrl_c_stops_prediction():
    X, y = _stream(3_000, seed=2)
    est = BudgetedSGDClassifier(budget=None, gamma=4.0, lam=1e-4).fit(X, y)
    assert est.n_support_ > 500
    big = np.tile(X, (4_000, 1))  # 12,000,000 rows x ~1,000+ SVs: many seconds of kernel rows
    before = est.decision_function(X[:50])
    interrupted(lambda: est.decision_function(big))
    interrupted(lambda: est.predict(big))
    np.testing.assert_array_equal(est.decision_function(X[:50]), before)


def test_ctrl_c_stops_partial_fit_active_between_labels():
    # Ramp-loss PA asks for few labels once trained: the C++ runs over the rows that need none
    # are long (4,000,000 rows against ~10^3 SVs), and a stop there keeps the rows observed.
    X, y = checkerboard(20_000, random_state=3)
    est = BudgetedPAClassifier(loss="ramp", budget=None, gamma=2.0).partial_fit(X, y, classes=[-1, 1])
    big, labels = np.tile(X, (200, 1)), np.tile(y, 200)
    seen = est.n_seen_
    interrupted(lambda: est.partial_fit_active(big, lambda i, x: labels[i]))
    assert seen < est.n_seen_ < seen + len(big)
    assert est.prequential_curve_[-1][0] == est.n_seen_


def test_ctrl_c_stops_set_C_and_leaves_the_svm_as_it_was():
    # set_C(1 -> 1000) walks the regularisation path of 3,000 examples: thousands of
    # bookkeeping steps of O(N |S|) each, seconds in all. Stopped, the operation is undone.
    X, y = _stream(3_000, seed=4)
    est = IncrementalSVC(C=1.0, gamma=4.0).fit(X, y)
    state = est.machine_state()
    before = est.decision_function(X[:200])
    interrupted(lambda: est.set_C(1000.0))
    assert est.C == 1.0
    np.testing.assert_array_equal(est.machine_state()["alpha"], state["alpha"])
    np.testing.assert_array_equal(est.decision_function(X[:200]), before)


def test_ctrl_c_stops_a_search_and_every_candidate_keeps_its_prefix():
    # Three unbudgeted candidates over 200,000 rows in parallel threads: the threads cannot see
    # signals; the calling thread polls for them and stops them all.
    from budgetkernel.model_selection import PrequentialSearch

    X, y = _stream(200_000)
    est = BudgetedSGDClassifier(budget=None, lam=1e-4, random_state=0)
    search = PrequentialSearch(est, {"gamma": [1.0, 4.0, 16.0]}, first_rung=150_000, n_jobs=3)
    search.partial_fit(X[:10], y[:10], classes=[-1, 1])
    interrupted(lambda: search.partial_fit(X[10:], y[10:]))
    probe = X[:300]
    for cand in search.candidates_:
        learned = cand.n_seen_
        assert 10 < learned < 200_000
        prefix = BudgetedSGDClassifier(budget=None, lam=1e-4, random_state=0, gamma=cand.gamma)
        prefix.partial_fit(X[:learned], y[:learned], classes=[-1, 1])
        np.testing.assert_array_equal(cand.decision_function(probe), prefix.decision_function(probe))
    assert search.n_seen_ == min(c.n_seen_ for c in search.candidates_)  # where the next chunk starts
    assert search.results_["examples"] == [c.n_seen_ for c in search.candidates_]
    counts, seen = [c.n_seen_ for c in search.candidates_], search.n_seen_
    search.partial_fit(X[seen : seen + 100], y[seen : seen + 100])  # and the search goes on from there:
    # each candidate learns the rows of the chunk it had not learned yet
    assert [c.n_seen_ for c in search.candidates_] == [max(n, seen + 100) for n in counts]


def test_ctrl_c_stops_the_svc_path_search_consistently():
    from budgetkernel.model_selection import PrequentialSearch

    X, y = _stream(100_000, seed=1)
    search = PrequentialSearch(IncrementalSVC(gamma=2.0), {"C": [1.0, 10.0]}, first_rung=90_000)
    interrupted(lambda: search.partial_fit(X, y, classes=[-1, 1]))
    (holder,) = [c for c in search.candidates_ if "_model" in c.__dict__]  # one model, at its C
    learned = holder.n_seen_
    assert 0 < learned < 100_000
    prefix = IncrementalSVC(gamma=2.0, C=holder.C).fit(X[:learned], y[:learned])
    np.testing.assert_allclose(holder.decision_function(X[:300]), prefix.decision_function(X[:300]), atol=1e-6)
