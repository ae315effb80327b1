"""The single-example (river-style) API and model files, beyond scikit-learn's checks: river
pipelines, failed first calls, gamma='scale' on one example, dict keys and pandas Series,
the prequential curve of learn_one, model files written by C++, and clear errors."""

import inspect
import pickle
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from sklearn.base import clone

import budgetkernel
from budgetkernel import BudgetedSGDClassifier, IncrementalSVC, LinearPegasosClassifier, datasets
from budgetkernel._native import core as _core


def dict_stream(n, seed):
    X, y = datasets.checkerboard(n, random_state=seed)
    return [{"a": float(a), "b": float(b)} for a, b in X], y


# ------------------------------------------------------------------------------- river
def test_river_protocol_without_river(estimator):
    # What river's Pipeline and evaluate read off a classifier, checked without river: the
    # flags, keyword calls learn_one(x=..., y=...) / predict_one(x=...), and a learn_one
    # whose extra parameter (classes) a Pipeline can route to it by name.
    est = estimator
    assert est._supervised is True and est._multiclass is True
    assert list(inspect.signature(type(est).learn_one).parameters) == ["self", "x", "y", "classes"]
    xs, y = dict_stream(60, 0)
    assert est.predict_one(x=xs[0]) is None
    for x, t in zip(xs, y):
        est.learn_one(x=x, y=bool(t > 0))
    assert est.predict_one(x=xs[1]) in (True, False)
    assert list(est.classes_) == [False, True]


def test_river_pipeline_learns_and_predicts():
    pytest.importorskip("river")
    from river import compose, preprocessing

    p = preprocessing.StandardScaler() | BudgetedSGDClassifier(budget=50, gamma=0.5, random_state=0)
    assert isinstance(p, compose.Pipeline)
    assert p.predict_one({"a": 1.0, "b": 2.0}) is None  # raised AttributeError: _supervised
    xs, y = dict_stream(600, 1)
    # The same stream by hand: scale with river's scaler, then learn_one.
    scaler, clf = preprocessing.StandardScaler(), BudgetedSGDClassifier(budget=50, gamma=0.5, random_state=0)
    for x, t in zip(xs, y):
        p.learn_one(x, bool(t > 0))
        scaler.learn_one(x)
        clf.learn_one(scaler.transform_one(x), bool(t > 0))
    last = p[-1]
    np.testing.assert_array_equal(last.dual_coef_, clf.dual_coef_)
    assert last.counters_["examples"] == 600
    assert p.predict_one(xs[0]) == clf.predict_one(scaler.transform_one(xs[0]))
    # Non-bool labels: river never passes classes; the error says how, and a Pipeline
    # forwards classes= to this step (river routes keywords a step's learn_one declares).
    q = preprocessing.StandardScaler() | BudgetedSGDClassifier(budget=50, gamma=0.5)
    with pytest.raises(ValueError, match=r"pipeline\.learn_one\(x, y, classes="):
        q.learn_one(xs[0], int(y[0]))
    assert not hasattr(q[-1], "classes_")  # the failed call left it unfitted
    q.learn_one(xs[0], int(y[0]), classes=[-1, 1])
    for x, t in zip(xs[1:], y[1:]):
        q.learn_one(x, int(t))
    assert q.predict_one(xs[0]) in (-1, 1)
    # evaluate.progressive_val_score, after the registration learn_one's docstring describes
    from river import base, evaluate, metrics

    base.Classifier.register(BudgetedSGDClassifier)
    r = preprocessing.StandardScaler() | BudgetedSGDClassifier(budget=50, gamma=0.5, random_state=0)
    acc = evaluate.progressive_val_score(list(zip(xs, (y > 0).tolist())), r, metrics.Accuracy())
    assert r[-1].counters_["examples"] == 600 and acc.cm.total_weight == 599  # river skips a None prediction


def test_budgetkernel_does_not_import_river(packages_import_budgetkernel_loads):
    assert "budgetkernel" in packages_import_budgetkernel_loads
    assert "river" not in packages_import_budgetkernel_loads


# -------------------------------------------------------------------- failed first calls
def test_failed_first_partial_fit_leaves_the_estimator_unfitted():
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(6, 2)), np.array([0, 1, 2] * 2)
    c = BudgetedSGDClassifier(gamma=1.0)
    with pytest.raises(ValueError, match=r"not in classes_=\[0, 1\]: \[2\]"):
        c.partial_fit(X, y, classes=[0, 1])
    assert not hasattr(c, "classes_") and not hasattr(c, "n_features_in_") and not hasattr(c, "_model")
    c.partial_fit(X, y, classes=[0, 1, 2])  # said 'classes=[0, 1, 2] differs from ... [0, 1]'
    assert list(c.classes_) == [0, 1, 2] and c.n_seen_ == 6
    # A subclass's own partial_fit (the SVM's, with sample weights) builds through the same
    # checked first chunk.
    s = IncrementalSVC(gamma=1.0)
    with pytest.raises(ValueError, match="not in classes_"):
        s.partial_fit(X, y, classes=[0, 1])
    assert not hasattr(s, "classes_")
    s.partial_fit(X, y, classes=[0, 1, 2])
    # A first chunk the core rejects (a row too large) leaves nothing either.
    big = X.copy()
    big[4] = 1e200
    with pytest.raises(ValueError, match="too large"):
        c2 = BudgetedSGDClassifier(gamma=1.0)
        c2.partial_fit(big, y, classes=[0, 1, 2])
    assert not hasattr(c2, "classes_")


def test_failed_first_learn_one_and_fit_leave_the_estimator_as_it_was():
    c = BudgetedSGDClassifier(gamma=1.0)
    with pytest.raises(ValueError, match="is not in classes_"):
        c.learn_one({"a": 1.0, "b": 2.0}, 5, classes=[0, 1])
    assert not hasattr(c, "classes_") and not hasattr(c, "feature_names_in_") and not hasattr(c, "_model")
    c.learn_one({"b": 1.0, "c": 2.0}, 2, classes=[0, 1, 2])  # a different key order and classes
    assert list(c.feature_names_in_) == ["b", "c"] and list(c.classes_) == [0, 1, 2]
    # fit that fails keeps the model fitted before (it used to replace it with a half-built one)
    X, y = datasets.checkerboard(100, random_state=0)
    f = BudgetedSGDClassifier(budget=10, gamma=1.0).fit(X, y)
    before = f.decision_function(X)
    bad = np.c_[X, X][:, :3] * 1.0
    bad[5] = 1e200
    with pytest.raises(ValueError, match="too large"):
        f.fit(bad, y)
    assert f.n_features_in_ == 2
    np.testing.assert_array_equal(f.decision_function(X), before)


# -------------------------------------------------------------------- gamma='scale'
def test_scale_gamma_of_a_single_first_example_is_one_over_n_features():
    # It was 1 / (d * var of the example's own features): 0.318, 0.351 or 2.47 depending on
    # which example came first, and silently 1.0 for one feature or a constant example.
    X, y = datasets.waveform(50, random_state=0)
    d = X.shape[1]
    for i in range(3):
        c = BudgetedSGDClassifier(budget=10)
        c.learn_one(X[i], y[i], classes=[0, 1, 2])
        assert c.gamma_ == 1.0 / d
    one = BudgetedSGDClassifier(budget=10).learn_one([3.0], True)
    assert one.gamma_ == 1.0
    assert BudgetedSGDClassifier(budget=10).partial_fit(X[:1], y[:1], classes=[0, 1, 2]).gamma_ == 1.0 / d
    assert BudgetedSGDClassifier(budget=10).fit(X, y).gamma_ == pytest.approx(1.0 / (d * X.var()))
    assert BudgetedSGDClassifier(budget=10).fit(np.ones((4, 3)), [0, 1, 0, 1]).gamma_ == 1.0
    assert "1 / n_features" in BudgetedSGDClassifier.__doc__


def test_scale_gamma_with_huge_values_says_rescale(kernel_estimator, recwarn):
    # gamma='scale' overflowed numpy (a RuntimeWarning) and then blamed gamma; it now gets
    # the core's "too large ... rescale it" that an explicit gamma gets.
    est = kernel_estimator.set_params(gamma="scale")
    with pytest.raises(ValueError, match="too large"):
        est.fit(np.array([[1e200, 1.0], [0.0, 1.0]]), [0, 1])
    assert not [w for w in recwarn if issubclass(w.category, RuntimeWarning)]
    # large but representable values get the variance of the data, not an overflow
    X = np.array([[1e149, 0.0], [-1e149, 1.0], [0.0, 0.0]])
    assert clone(est).fit(X, [0, 1, 0]).gamma_ == pytest.approx(1.0 / (2 * X.var()))


# ------------------------------------------------------------------ dict keys and Series
def test_dict_keys_that_a_model_file_cannot_store_are_rejected_at_learn_one():
    c = BudgetedSGDClassifier(budget=10, gamma=1.0)
    with pytest.raises(ValueError, match=r"feature name \('a', 1\) of type tuple cannot be stored"):
        c.learn_one({("a", 1): 0.5, ("b", 2): 1.0}, True)  # save() then wrote a file load() rejected
    assert not hasattr(c, "_model")
    for keys in ([1.5, 2.5], [True, "x"], [None, "x"]):
        with pytest.raises(ValueError, match="must be str or int"):
            clone(c).learn_one(dict(zip(keys, [1.0, 2.0])), True)


@pytest.mark.parametrize("keys", [[0, 1, 2], [2, 0, 1], ["u", 7, "w"]])
def test_int_and_mixed_dict_keys_round_trip_through_save_load_and_pickle(keys, tmp_path):
    X, y = datasets.waveform(200, random_state=1)
    c = BudgetedSGDClassifier(budget=20, gamma=0.1, random_state=0)
    for x, t in zip(X[:, :3], y):
        c.learn_one(dict(zip(keys, x)), t, classes=[0, 1, 2])
    # feature_names_in_ holds str names only (scikit-learn's rule); int keys keep their order
    assert not hasattr(c, "feature_names_in_")
    c.save(tmp_path / "m.bkm")
    for back in (budgetkernel.load(tmp_path / "m.bkm"), pickle.loads(pickle.dumps(c))):
        assert back._feature_order == keys and [type(k) for k in back._feature_order] == [type(k) for k in keys]
        assert not hasattr(back, "feature_names_in_")
        for x in X[:20, :3]:
            probe = dict(reversed(list(zip(keys, x))))
            assert back.predict_one(probe) == c.predict_one(probe) == c.predict_one(x)
        back.learn_one(dict(zip(keys, X[0, :3])), y[0])
    s = BudgetedSGDClassifier(budget=5, gamma=1.0).learn_one({"p": 1.0, "q": 0.0}, True)
    s.save(tmp_path / "s.bkm")
    assert list(budgetkernel.load(tmp_path / "s.bkm").feature_names_in_) == ["p", "q"]


def test_a_series_is_used_by_feature_name_like_a_dict():
    pd = pytest.importorskip("pandas")
    X, y = datasets.checkerboard(300, random_state=2)
    df = pd.DataFrame({"u": X[:, 0], "v": X[:, 1]})
    m = BudgetedSGDClassifier(budget=20, gamma=2.0, random_state=0).fit(df[["u", "v"]], y)
    flipped = df[["v", "u"]]
    for i in range(40):
        by_frame = m.predict(df.iloc[[i]])[0]
        assert m.predict_one(flipped.iloc[i]) == by_frame == m.predict_one(flipped.iloc[i].to_dict())
    with pytest.raises(ValueError, match="unknown feature 'w'"):
        m.predict_one(pd.Series({"u": 1.0, "w": 2.0}))
    # learn_one too, and a first Series with str labels names the features as a dict does
    a = BudgetedSGDClassifier(budget=20, gamma=2.0, random_state=0)
    b = BudgetedSGDClassifier(budget=20, gamma=2.0, random_state=0)
    for i in range(100):
        a.learn_one(df.iloc[i], y[i], classes=[-1, 1])
        b.learn_one(flipped.iloc[i], y[i], classes=[-1, 1])
    assert list(a.feature_names_in_) == ["u", "v"] and list(b.feature_names_in_) == ["v", "u"]
    np.testing.assert_array_equal(a.predictor_coef_, b.predictor_coef_)
    np.testing.assert_array_equal(a.support_vectors_, b.support_vectors_[:, ::-1])
    # Without feature names (array-fitted), or with a positional index, a Series is positional.
    arr = BudgetedSGDClassifier(budget=20, gamma=2.0, random_state=0).fit(X, y)
    assert arr.predict_one(pd.Series(X[3])) == arr.predict_one(X[3])
    assert arr.predict_one(flipped.iloc[3]) == arr.predict_one(X[3, ::-1])
    assert m.predict_one(pd.Series(X[3])) == m.predict_one(X[3])


# -------------------------------------------------------------------- prequential curve
def test_learn_one_samples_the_prequential_curve():
    X, y = datasets.noisy_checkerboard(3000, random_state=3)
    a = BudgetedSGDClassifier(budget=20, gamma=2.0, lam=1e-3, random_state=0)
    for i, (x, t) in enumerate(zip(X, y)):
        a.learn_one(x, t, classes=[-1, 1])
        e, m = a.prequential_curve_[-1]
        assert e <= i + 1 and (e, m) != (0, 0)  # used to stay [(0, 0)] however much was learned
    curve = a.prequential_curve_
    examples = [e for e, _ in curve]
    assert curve[0] == (0, 0) and examples[1:33] == list(range(1, 33))
    gaps = np.diff(examples[1:])
    assert np.all(gaps == np.maximum(1, np.array(examples[1:-1]) // 32))  # the documented grid
    assert 100 < len(curve) < 200  # about 75 points per tenfold, not one per example
    # the points are the counters of the same stream fitted at once
    b = BudgetedSGDClassifier(budget=20, gamma=2.0, lam=1e-3, random_state=0)
    b.partial_fit(X[: examples[-1]], y[: examples[-1]], classes=[-1, 1])
    assert b.prequential_curve_[-1] == curve[-1]
    # partial_fit chunks still add their own point
    a.partial_fit(X[:10], y[:10])
    assert a.prequential_curve_[-1] == (3010, a.counters_["mistakes"])


# ------------------------------------------------------------------ files written in C++
def test_load_rebuilds_estimators_from_model_files_without_python_metadata(tmp_path):
    X, y = datasets.waveform(600, random_state=4)
    yi = y.astype(np.int32)
    # A learner used through the core alone, as a C++ program does: metadata left empty.
    core = _core.KernelPegasos(
        X.shape[1], 3, kernel="rbf", gamma=0.05, lam=1e-3, budget=30, maintenance="project", seed=17,
        average_start=5, average_decay=4.0,
    )
    core.partial_fit(np.ascontiguousarray(X[:400]), yi[:400])
    (tmp_path / "k.bkm").write_bytes(core.to_bytes())
    est = budgetkernel.load(tmp_path / "k.bkm")
    assert type(est) is BudgetedSGDClassifier
    expected = dict(budget=30, maintenance="project", lam=1e-3, kernel="rbf", gamma=0.05, average=5, average_decay=4.0)
    assert {k: est.get_params()[k] for k in expected} == expected
    assert est.gamma_ == 0.05 and list(est.classes_) == [0, 1, 2] and est.n_features_in_ == X.shape[1]
    np.testing.assert_array_equal(est.decision_function(X), core.decision_function(X))
    np.testing.assert_array_equal(est.predict(X), core.predict(X))
    est.partial_fit(X[400:], y[400:])  # resumes exactly as the core does
    core.partial_fit(np.ascontiguousarray(X[400:]), yi[400:])
    np.testing.assert_array_equal(est.decision_function(X), core.decision_function(X))
    assert est.counters_ == core.counters
    est.save(tmp_path / "again.bkm")  # and is now an ordinary estimator file
    np.testing.assert_array_equal(budgetkernel.load(tmp_path / "again.bkm").predict(X), est.predict(X))
    # binary: 1 is the positive class, as on the C++ side
    Xb, yb = datasets.checkerboard(300, random_state=4)
    lin = _core.LinearPegasos(2, 2, lam=1e-2, batch_size=4)
    lin.partial_fit(Xb, (yb > 0).astype(np.int32))
    (tmp_path / "l.bkm").write_bytes(lin.to_bytes())
    est = budgetkernel.load(tmp_path / "l.bkm")
    assert type(est) is LinearPegasosClassifier and est.get_params()["batch_size"] == 4
    assert list(est.classes_) == [0, 1]
    np.testing.assert_array_equal(est.decision_function(Xb), lin.decision_function(Xb)[:, 0])
    np.testing.assert_array_equal(est.predict(Xb), (lin.decision_function(Xb)[:, 0] > 0).astype(int))


# ------------------------------------------------------------------------ clear errors
def test_a_later_label_that_cannot_be_compared_is_named():
    X, y = datasets.checkerboard(50, random_state=0)
    c = BudgetedSGDClassifier(budget=10, gamma=1.0).partial_fit(X, y, classes=[-1, 1])
    for bad in ([1, None], np.array([1, None], dtype=object), [None, None]):
        with pytest.raises(ValueError, match=r"not in classes_=\[-1, 1\]: \[None\]"):  # was TypeError '<'
            c.partial_fit(X[:2], bad)
    s = BudgetedSGDClassifier(budget=10, gamma=1.0).partial_fit(X, np.where(y > 0, "p", "n"), classes=["n", "p"])
    with pytest.raises(ValueError, match=r"not in classes_=\['n', 'p'\]: \[None, 3\]"):
        s.partial_fit(X[:3], np.array(["p", None, 3], dtype=object))
    assert c.n_seen_ == 50 and s.n_seen_ == 50


def test_memory_error_names_the_budget():
    # Under a memory limit a budget of 10^9 raised a bare "MemoryError: std::bad_alloc".
    code = textwrap.dedent(
        """
        import resource
        import budgetkernel
        resource.setrlimit(resource.RLIMIT_AS, (3 * 2**30, resource.RLIM_INFINITY))
        c = budgetkernel.BudgetedSGDClassifier(budget=10**9, gamma=1.0)
        try:
            c.fit([[0.0, 1.0], [1.0, 0.0]], [0, 1])
        except MemoryError as e:
            print("MemoryError:", e, hasattr(c, "_model"))
        """
    )
    pytest.importorskip("resource")
    out = subprocess.run([sys.executable, "-c", code], check=False, capture_output=True, text=True, timeout=120)
    assert "MemoryError: BudgetedSGDClassifier: not enough memory" in out.stdout, out.stderr
    assert "budget=1000000000" in out.stdout and "48 GB" in out.stdout
    assert out.stdout.strip().endswith("False")  # and it stays unfitted
