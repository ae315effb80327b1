"""Estimator behaviour scikit-learn and river users rely on: failed calls undo themselves, later
`classes` must agree, generators as random_state save, evaluate_prequential on a trained model."""

import pickle

import numpy as np
import pytest

import budgetkernel
from budgetkernel import BudgetedPAClassifier, BudgetedSGDClassifier, IncrementalSVC
from budgetkernel.stream import evaluate_prequential
from conftest import LEARNERS, cases


def data(n=60, d=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    return X, (X[:, 0] + X[:, 1] > 0).astype(int)


# ------------------------------------------------- IncrementalSVC's fit / partial_fit
def test_incremental_svc_fit_rejected_before_learning_keeps_the_fitted_model():
    # IncrementalSVC overrides fit (for sample_weight) without the base fit's undo: a rejected
    # refit left an empty model, and a rejected y left n_features_in_ of the rejected X (2)
    # beside a 3-feature model, so predict on the right data raised.
    X, y = data()
    clf = IncrementalSVC(gamma=1.0).fit(X, y)
    before = clf.decision_function(X)
    with pytest.raises(ValueError, match="Negative values"):
        clf.fit(X, y, sample_weight=-np.ones(len(y)))
    with pytest.raises(ValueError, match="at least 2 classes"):
        clf.fit(X[:, :2], np.zeros(len(y)))
    assert clf.n_features_in_ == 3
    assert clf.n_seen_ == len(y)
    np.testing.assert_array_equal(clf.decision_function(X), before)


def test_incremental_svc_first_partial_fit_with_bad_weights_leaves_it_unfitted():
    X, y = data()
    clf = IncrementalSVC(gamma=1.0)
    with pytest.raises(ValueError, match="sample_weight"):
        clf.partial_fit(X, y, classes=[0, 1], sample_weight=np.ones(5))
    assert not hasattr(clf, "_model") and not hasattr(clf, "classes_") and not hasattr(clf, "n_features_in_")
    # and a good first call then works as on a fresh estimator
    clf.partial_fit(X, y, classes=[0, 1])
    np.testing.assert_array_equal(
        clf.decision_function(X), IncrementalSVC(gamma=1.0).partial_fit(X, y, classes=[0, 1]).decision_function(X)
    )


# ------------------------------------------------------------ partial_fit_active
def test_partial_fit_active_first_call_with_a_bad_oracle_label_leaves_it_unfitted():
    X, _ = data()
    clf = BudgetedPAClassifier(loss="ramp", gamma=1.0)
    with pytest.raises(ValueError, match=r"oracle returned label 7, not in classes_=\[0, 1\]"):
        clf.partial_fit_active(X, lambda i, x: 7, classes=[0, 1])
    assert not hasattr(clf, "_model") and not hasattr(clf, "classes_")


def test_partial_fit_active_oracle_failure_mid_chunk_keeps_curve_and_counters_in_step():
    X, y = data()

    def oracle(i, x):
        if i >= 30:
            raise KeyError("label store down")
        return int(y[i])

    clf = BudgetedPAClassifier(loss="ramp", gamma=1.0)
    with pytest.raises(KeyError):
        clf.partial_fit_active(X, oracle, classes=[0, 1])
    ref = BudgetedPAClassifier(loss="ramp", gamma=1.0)
    ref.partial_fit_active(X[:30], lambda i, x: int(y[i]), classes=[0, 1])
    np.testing.assert_array_equal(clf.decision_function(X), ref.decision_function(X))
    assert clf.n_seen_ == 30
    assert clf.prequential_curve_ == ref.prequential_curve_  # was [(0, 0)]: no point for the 30 examples


# ------------------------------------------------------------------ learn_one
def test_learn_one_rejects_a_later_classes_that_differs_like_partial_fit():
    X, y = data()
    clf = BudgetedSGDClassifier(gamma=1.0, random_state=0)
    clf.learn_one(X[0], int(y[0]), classes=[0, 1])
    clf.learn_one(X[1], int(y[1]), classes=np.array([1, 0]))  # the same classes: fine
    # a class added later was silently ignored (never a class of the model)
    with pytest.raises(ValueError, match=r"classes=\[0, 1, 2\] differs from the classes of the first call \[0, 1\]"):
        clf.learn_one(X[2], int(y[2]), classes=[0, 1, 2])
    with pytest.raises(ValueError, match="differs"):
        clf.learn_one(X[2], int(y[2]), classes=[[0], [1]])
    assert clf.n_seen_ == 2
    assert clf.decision_function(X[:3]).shape == (3,)


# -------------------------------------------------------------------- save/load
# Every learner (shuffling, so that each one draws from its random_state), and BPA's variant
# that draws from it while learning.
@pytest.mark.parametrize("case", [*LEARNERS, *cases("bpa-random")], ids=repr)
@pytest.mark.parametrize("generator", [np.random.default_rng, np.random.RandomState])
def test_save_with_a_numpy_generator_as_random_state(tmp_path, case, generator):
    # json.dumps raised "ValueError: Circular reference detected" on the generator, and
    # set_params(random_state=<int>) to get round it made save raise "parameters changed".
    X, y = data(200)
    clf = case.make(budget=10, gamma=1.0, shuffle=True, random_state=generator(0)).fit(X[:100], y[:100])
    clf.save(tmp_path / "m.bkm")
    loaded = budgetkernel.load(tmp_path / "m.bkm")
    np.testing.assert_array_equal(loaded.decision_function(X), clf.decision_function(X))
    seed = getattr(getattr(clf._model, "params", None), "seed", None)  # LinearPegasos has no params
    assert loaded.random_state == (None if seed is None else int(seed))
    assert loaded.get_params() == {**clf.get_params(), "random_state": loaded.random_state}
    # resumes exactly
    ref = pickle.loads(pickle.dumps(clf))
    np.testing.assert_array_equal(
        loaded.partial_fit(X[100:], y[100:]).decision_function(X), ref.partial_fit(X[100:], y[100:]).decision_function(X)
    )
    assert loaded.counters_ == ref.counters_


# ------------------------------------------------------------ evaluate_prequential
def test_evaluate_prequential_of_a_trained_estimator_describes_this_stream_only():
    X, y = data(200)
    clf = BudgetedSGDClassifier(budget=20, gamma=1.0, random_state=0).fit(X[:100], y[:100])
    before = clf.counters_
    r = evaluate_prequential(clf, [(X[100:150], y[100:150]), (X[150:], y[150:])], classes=[0, 1])
    after = clf.counters_
    mistakes = after["mistakes"] - before["mistakes"]
    assert r["examples"] == 100
    # was the error over the fit's 100 examples and this stream's 100 together
    assert r["online_error"] == mistakes / 100
    assert [e for e, _ in r["curve"]] == [50, 100]
    assert r["curve"][-1][1] == 1 - mistakes / 100
    # a fresh estimator: as before
    fresh = evaluate_prequential(
        BudgetedSGDClassifier(budget=20, gamma=1.0, random_state=0), [(X[:100], y[:100])], classes=[0, 1]
    )
    ref = BudgetedSGDClassifier(budget=20, gamma=1.0, random_state=0).partial_fit(X[:100], y[:100], classes=[0, 1])
    assert fresh["online_error"] == ref.online_error_
    assert fresh["curve"] == [(100, 1 - ref.online_error_)]


def test_evaluate_prequential_after_learn_one_counts_from_the_counters():
    # learn_one samples the curve: its last point can lag behind the counters
    X, y = data(200)
    clf = BudgetedSGDClassifier(budget=20, gamma=1.0, random_state=0)
    for i in range(67):  # points at 64 and 66 (every second example from 64 on)
        clf.learn_one(X[i], int(y[i]), classes=[0, 1])
    assert clf.prequential_curve_[-1][0] == 66
    before = clf.counters_
    r = evaluate_prequential(clf, [(X[67:], y[67:])], classes=[0, 1])
    assert r["online_error"] == (clf.counters_["mistakes"] - before["mistakes"]) / 133
    assert [e for e, _ in r["curve"]] == [133]


def test_evaluate_prequential_test_accuracy_with_a_column_y_test():
    X, y = data(200)
    r = evaluate_prequential(
        BudgetedSGDClassifier(budget=20, gamma=1.0, random_state=0), [(X, y)], classes=[0, 1], test=(X, y.reshape(-1, 1))
    )
    clf = BudgetedSGDClassifier(budget=20, gamma=1.0, random_state=0).partial_fit(X, y, classes=[0, 1])
    # was mean(predict(X) == y[:, None]): a 200 x 200 comparison
    assert r["test_accuracy"] == clf.score(X, y)


def test_a_failed_save_leaves_no_temporary_file(tmp_path):
    X, y = data()
    clf = BudgetedSGDClassifier(budget=10, gamma=1.0).fit(X, y)
    target = tmp_path / "model.bkm"
    target.mkdir()  # os.replace onto a directory fails after the .tmp file was written
    with pytest.raises(OSError):
        clf.save(target)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model.bkm"]
    clf.save(tmp_path / "ok.bkm")
    np.testing.assert_array_equal(budgetkernel.load(tmp_path / "ok.bkm").decision_function(X), clf.decision_function(X))
