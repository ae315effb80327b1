"""Probabilities: kernel logistic regression (BudgetedSGDClassifier(loss="log")) and the online
Platt calibration of every other classifier (learners/calibration.hpp), opt-in with
probability=True as scikit-learn's SVC: off, the model and its file are those of a model
without calibration, and predict_proba is not there.

Oracles: a NumPy replay of unbudgeted kernel Pegasos on the logistic loss; scikit-learn's
LogisticRegression for Platt's fit (two classes) and SciPy's scalar minimiser for the
temperature (more classes), on the calibration's own window of prequential pairs.
"""

import json
import pickle

import numpy as np
import pytest
from scipy.optimize import minimize_scalar
from scipy.special import expit, log_softmax, logsumexp, softmax
from sklearn.exceptions import NotFittedError
from sklearn.linear_model import LogisticRegression

import budgetkernel
from budgetkernel import BudgetedPAClassifier, BudgetedSGDClassifier, datasets
from conftest import LEARNERS, sklearn_check_results
from test_model_file_fields import encode, parse

WINDOW, REFIT = 1024, 1024  # PlattCalibration::kWindow, kRefitEvery


def three_classes(n, random_state=0):
    rng = np.random.default_rng(random_state)
    X = rng.normal(size=(n, 3))
    y = (X[:, 0] > 0.3).astype(int) + (X[:, 1] > 0).astype(int)
    return X, y


def make(case, **kw):
    return case.make(budget=30, gamma=2.0, random_state=0, **{"probability": True, **kw})


# ------------------------------------------------------------ kernel logistic regression
def replay_klr(X, y01, lam, gamma, n_classes):
    """Unbudgeted kernel Pegasos on the logistic loss, written out in NumPy: step 1/(lam t),
    w <- (1 - 1/t) w + eta_t * (-dloss/df) phi(x_t), then the ball ||w|| <= 1/sqrt(lam)."""
    k = 1 if n_classes == 2 else n_classes
    svs, coef = [], np.zeros((0, k))
    for t, (x, yt) in enumerate(zip(X, y01), start=1):
        K = np.exp(-gamma * ((np.array(svs).reshape(-1, X.shape[1]) - x) ** 2).sum(1))
        f = K @ coef if svs else np.zeros(k)
        eta = 1.0 / (lam * t)
        if k == 1:
            s = 1.0 if yt == 1 else -1.0
            beta = np.array([eta * s * expit(-s * f[0])])
        else:
            beta = -eta * softmax(f)
            beta[yt] += eta
        coef = coef * (1.0 - 1.0 / t)
        svs.append(x)
        coef = np.vstack([coef, beta])
        S = np.array(svs)
        G = np.exp(-gamma * ((S[:, None, :] - S[None, :, :]) ** 2).sum(2))
        norm2 = np.einsum("ik,ij,jk->", coef, G, coef)
        if norm2 * lam > 1.0:
            coef = coef / np.sqrt(lam * norm2)
    return np.array(svs), coef


@pytest.mark.parametrize("n_classes", [2, 3])
def test_unbudgeted_klr_equals_the_numpy_replay(n_classes):
    X, y = datasets.checkerboard(60, random_state=3) if n_classes == 2 else three_classes(60, random_state=3)
    clf = BudgetedSGDClassifier(loss="log", budget=None, lam=0.05, gamma=1.5, average=False).fit(X, y)
    y01 = np.searchsorted(clf.classes_, y)
    S, A = replay_klr(X, y01, 0.05, 1.5, n_classes)
    np.testing.assert_allclose(clf.support_vectors_, S)
    np.testing.assert_allclose(clf.dual_coef_, A, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("n_classes", [2, 3])
@pytest.mark.parametrize("maintenance", ["merge", "project", "remove-random"])
def test_klr_probabilities_are_sigmoid_or_softmax_of_the_decision_values(n_classes, maintenance):
    X, y = datasets.checkerboard(800, random_state=0) if n_classes == 2 else three_classes(800)
    clf = BudgetedSGDClassifier(loss="log", budget=40, maintenance=maintenance, gamma=2.0, random_state=0).fit(X, y)
    assert clf.n_support_ == 40 and clf.counters_["updates"] == 800  # every example adds an SV
    assert clf.counters_["maintenance_steps"] == 800 - 40
    P, D = clf.predict_proba(X[:200]), clf.decision_function(X[:200])
    np.testing.assert_allclose(P.sum(axis=1), 1.0, rtol=0, atol=1e-15)
    expected = np.column_stack([expit(-D), expit(D)]) if n_classes == 2 else softmax(D, axis=1)
    np.testing.assert_allclose(P, expected, rtol=1e-13, atol=1e-300)
    logs = np.column_stack([-np.logaddexp(0, D), -np.logaddexp(0, -D)]) if n_classes == 2 else log_softmax(D, axis=1)
    np.testing.assert_allclose(clf.predict_log_proba(X[:200]), logs, rtol=1e-12, atol=1e-14)
    np.testing.assert_array_equal(clf.classes_[P.argmax(axis=1)], clf.predict(X[:200]))
    assert clf._model.calibration["seen"] == 0  # native: nothing recorded


def test_klr_log_proba_stays_finite_where_the_probability_underflows():
    X, y = datasets.checkerboard(500, random_state=0)
    clf = BudgetedSGDClassifier(loss="log", budget=None, kernel="linear", lam=1e-6, random_state=0).fit(X - 1, y)
    far = np.array([[-1e4, -1e4], [1e4, 1e4], [1e4, -1e4]])
    D = clf.decision_function(far)
    assert np.abs(D).max() > 1e3  # exp(-|f|) underflows to 0
    L = clf.predict_log_proba(far)
    assert np.isfinite(L).all()
    np.testing.assert_allclose(L, np.column_stack([-np.logaddexp(0, D), -np.logaddexp(0, -D)]), rtol=1e-14)
    assert (clf.predict_proba(far) == 0).any()


def test_hinge_is_the_default_and_the_loss_is_saved(tmp_path):
    X, y = datasets.checkerboard(300, random_state=0)
    assert BudgetedSGDClassifier().loss == "hinge"
    hinge = BudgetedSGDClassifier(budget=20, gamma=2.0, random_state=0).fit(X, y)
    hinge.save(tmp_path / "h.bkm")
    _, hinge_fields = parse((tmp_path / "h.bkm").read_bytes())
    assert "loss" not in {f[0] for f in hinge_fields}  # a hinge file is the one written before 'log'
    clf = BudgetedSGDClassifier(loss="log", budget=20, gamma=2.0, random_state=0).fit(X, y)
    clf.save(tmp_path / "m.bkm")
    version, fields = parse((tmp_path / "m.bkm").read_bytes())
    named = {name: raw for name, _, _, raw in fields}
    assert int.from_bytes(named["loss"], "little") == 1
    assert not any(name.startswith("platt.") for name in named)  # native: no calibration
    # A file a C++ program wrote (no Python metadata): the loss comes from the core's fields.
    bare = [(n, t, [0] if n == "meta" else s, b"" if n == "meta" else r) for n, t, s, r in fields]
    (tmp_path / "bare.bkm").write_bytes(encode(version, bare))
    loaded = budgetkernel.load(tmp_path / "bare.bkm")
    assert loaded.loss == "log"
    np.testing.assert_array_equal(loaded.predict_proba(X), clf.predict_proba(X))
    # A file written before the loss existed (no "loss" field) is a hinge model.
    old = [f for f in bare if f[0] != "loss"]
    (tmp_path / "old.bkm").write_bytes(encode(version, old))
    assert budgetkernel.load(tmp_path / "old.bkm").loss == "hinge"


def test_klr_accuracy_is_close_to_hinge_on_the_checkerboard():
    X, y = datasets.checkerboard(6000, random_state=0)
    Xt, yt = datasets.checkerboard(2000, random_state=1)
    kw = dict(budget=100, gamma=2.0, lam=1e-4, random_state=0)
    hinge = BudgetedSGDClassifier(**kw).fit(X, y).score(Xt, yt)
    log = BudgetedSGDClassifier(loss="log", **kw).fit(X, y).score(Xt, yt)
    assert log > hinge - 0.03, (log, hinge)


# ------------------------------------------------------------------- Platt calibration
def sklearn_platt(f, y01):
    """The two-slope Platt fit as scikit-learn's logistic regression without intercept on the
    features (max(f, 0), min(f, 0)), each pair twice: its smoothed target t as the weight of
    label 1 and 1 - t as the weight of label 0. P(1) = sigmoid(w . u), so the slopes are -w."""
    n1 = (y01 == 1).sum()
    n0 = len(y01) - n1
    t = np.where(y01 == 1, (n1 + 1) / (n1 + 2), 1 / (n0 + 2))
    U = np.column_stack([np.maximum(f, 0), np.minimum(f, 0)])
    lab = np.concatenate([np.ones(len(f)), np.zeros(len(f))])
    w = np.concatenate([t, 1 - t])
    lr = LogisticRegression(C=np.inf, fit_intercept=False, tol=1e-12, max_iter=10000)
    lr.fit(np.vstack([U, U]), lab, sample_weight=w)
    return -lr.coef_[0]


def scipy_temperature(F, y):
    c = F.shape[1]
    counts = np.bincount(y, minlength=c).astype(float)
    ny = counts[y]
    Q = np.repeat((1.0 / ((ny + 2) * (c - 1)))[:, None], c, axis=1)
    Q[np.arange(len(y)), y] = (ny + 1) / (ny + 2)

    def objective(a):
        return (logsumexp(a * F, axis=1) - a * (Q * F).sum(1)).sum()

    return minimize_scalar(objective, bounds=(0.0, 1e3), method="bounded", options={"xatol": 1e-12}).x


@pytest.mark.parametrize("case", [c for c in LEARNERS], ids=repr)
def test_platt_fit_equals_sklearn_logistic_regression(case):
    X, y = datasets.noisy_checkerboard(2 * REFIT, random_state=1)
    n = 2 * REFIT  # a multiple of the refit interval: the map was fitted on the current window
    clf = make(case).partial_fit(X[:n], y[:n], classes=[-1, 1])
    cal = clf._model.calibration
    assert cal["seen"] == n and cal["f"].shape == (WINDOW, 1)
    slopes = sklearn_platt(cal["f"][:, 0], np.asarray(cal["y"]))
    # The sides are independent fits (disjoint features); a side whose unconstrained slope is
    # > 0 (its decision values anti-correlated with the labels: e.g. a linear model on the
    # checkerboard) is clamped to 0.
    np.testing.assert_allclose([cal["a_pos"], cal["a_neg"]], np.minimum(slopes, 0.0), rtol=1e-6, atol=1e-12)
    D = clf.decision_function(X[:50])
    P = clf.predict_proba(X[:50])
    z = np.where(D >= 0, cal["a_pos"], cal["a_neg"]) * D
    np.testing.assert_allclose(P[:, 1], 1 / (1 + np.exp(z)), rtol=1e-12)
    np.testing.assert_array_equal(clf.classes_[P.argmax(axis=1)], clf.predict(X[:50]))


@pytest.mark.parametrize("case", [c for c in LEARNERS if c.id != "LinearPegasosClassifier"], ids=repr)
def test_temperature_fit_equals_scipy(case):
    X, y = three_classes(512, random_state=2)  # a power of two: refitted on every pair
    clf = make(case).fit(X, y)
    cal = clf._model.calibration
    a = scipy_temperature(cal["f"], np.asarray(cal["y"]))
    np.testing.assert_allclose(cal["a"], a, rtol=1e-6, atol=1e-9)
    P, D = clf.predict_proba(X[:100]), clf.decision_function(X[:100])
    np.testing.assert_allclose(P, softmax(cal["a"] * D, axis=1), rtol=1e-12, atol=1e-300)
    np.testing.assert_array_equal(clf.classes_[P.argmax(axis=1)], clf.predict(X[:100]))


def test_the_window_slides_and_the_refit_schedule_is_chunk_free():
    X, y = datasets.noisy_checkerboard(3000, random_state=4)
    case = LEARNERS[2]  # BudgetedPAClassifier
    whole = make(case).partial_fit(X, y, classes=[-1, 1])
    pieces = make(case)
    for a in range(0, 3000, 77):
        pieces.partial_fit(X[a : a + 77], y[a : a + 77], classes=[-1, 1])
    one = make(case)
    for a in range(200):
        one.learn_one(X[a], y[a], classes=[-1, 1])
    one.partial_fit(X[200:], y[200:])
    for other in (pieces, one):
        assert pickle.dumps(other._model.calibration) == pickle.dumps(whole._model.calibration)
    cal = whole._model.calibration
    assert cal["seen"] == 3000 and cal["f"].shape == (WINDOW, 1)
    # the window holds the last 1024 prequential pairs, in ring order
    order = (np.arange(WINDOW) + 3000 % WINDOW) % WINDOW
    yi = np.searchsorted(whole.classes_, y[-WINDOW:])
    np.testing.assert_array_equal(np.asarray(cal["y"])[order], yi)


@pytest.mark.parametrize("case", LEARNERS, ids=repr)
@pytest.mark.parametrize("n_classes", [2, 3])
def test_proba_rows_sum_to_one_and_logs_match(case, n_classes):
    X, y = datasets.noisy_checkerboard(600, random_state=0) if n_classes == 2 else three_classes(600)
    clf = make(case).fit(X, y)
    P = clf.predict_proba(X)
    assert P.shape == (600, n_classes) and (P >= 0).all() and (P <= 1).all()
    np.testing.assert_allclose(P.sum(axis=1), 1.0, rtol=0, atol=1e-12)
    L = clf.predict_log_proba(X)
    finite = P > 0
    np.testing.assert_allclose(L[finite], np.log(P[finite]), rtol=1e-10, atol=1e-12)
    assert np.isfinite(L).all()
    D = clf.decision_function(X)
    col = D if n_classes == 2 else D[:, 0]
    p = P[:, 1] if n_classes == 2 else P[:, 0]
    if n_classes == 2:  # monotone in the decision value (A <= 0)
        order = np.argsort(col, kind="stable")
        assert (np.diff(p[order]) >= -1e-15).all()


@pytest.mark.parametrize("case", LEARNERS, ids=repr)
def test_proba_resumes_bit_for_bit_after_save_load_and_pickle(case, tmp_path):
    X, y = datasets.noisy_checkerboard(1500, random_state=2)
    full = make(case).partial_fit(X, y, classes=[-1, 1])
    half = make(case).partial_fit(X[:700], y[:700], classes=[-1, 1])
    half.save(tmp_path / "half.bkm")
    restored = budgetkernel.load(tmp_path / "half.bkm")
    unpickled = pickle.loads(pickle.dumps(half))
    np.testing.assert_array_equal(restored.predict_proba(X), half.predict_proba(X))
    for r in (restored, unpickled):
        r.partial_fit(X[700:], y[700:])
        np.testing.assert_array_equal(r.predict_proba(X), full.predict_proba(X))
        np.testing.assert_array_equal(r.predict_log_proba(X), full.predict_log_proba(X))


@pytest.mark.parametrize("case", LEARNERS, ids=repr)
def test_a_file_without_calibration_loads_and_starts_untrained(case, tmp_path):
    X, y = datasets.noisy_checkerboard(400, random_state=2)
    clf = make(case).fit(X, y)
    clf.save(tmp_path / "new.bkm")
    version, fields = parse((tmp_path / "new.bkm").read_bytes())
    # the switch kept, the window and map dropped: a calibration that starts over
    old = [f for f in fields if not f[0].startswith("platt.")]
    assert len(old) < len(fields)
    (tmp_path / "old.bkm").write_bytes(encode(version, old))
    loaded = budgetkernel.load(tmp_path / "old.bkm")
    assert loaded.probability
    np.testing.assert_array_equal(loaded.decision_function(X), clf.decision_function(X))
    with pytest.raises(NotFittedError, match="calibration has not seen an example"):
        loaded.predict_proba(X)
    with pytest.raises(NotFittedError):
        loaded.predict_log_proba(X)
    loaded.partial_fit(X[:1], y[:1])  # one prequential pair is enough to fit a map
    assert np.isfinite(loaded.predict_proba(X)).all()


@pytest.mark.parametrize("case", LEARNERS, ids=repr)
def test_bad_input(case):
    X, y = datasets.checkerboard(100, random_state=0)
    with pytest.raises(ValueError, match="probability must be True or False"):
        make(case, probability="yes").fit(X, y)
    clf = make(case)
    with pytest.raises(NotFittedError):
        clf.predict_proba(X)
    clf.fit(X, y)
    with pytest.raises(ValueError, match="features"):
        clf.predict_proba(np.ones((3, 5)))
    with pytest.raises(ValueError):
        clf.predict_log_proba([[np.nan, 0.0]])
    with pytest.raises(ValueError):
        clf.predict_proba(np.ones(2))
    with pytest.raises(ValueError, match="0 sample"):  # as predict
        clf.predict_proba(np.empty((0, 2)))


def test_bad_loss():
    X, y = datasets.checkerboard(50, random_state=0)
    with pytest.raises(ValueError, match="loss"):
        BudgetedSGDClassifier(loss="squared").fit(X, y)


def test_combine_starts_with_an_empty_calibration():
    X, y = datasets.checkerboard(400, random_state=0)
    a = BudgetedSGDClassifier(budget=30, gamma=2.0, probability=True, random_state=0).fit(X[:200], y[:200])
    b = BudgetedSGDClassifier(budget=30, gamma=2.0, probability=True, random_state=1).fit(X[200:], y[200:])
    c = budgetkernel.combine([a, b])
    with pytest.raises(NotFittedError):
        c.predict_proba(X)
    c.partial_fit(X[:10], y[:10])
    assert np.isfinite(c.predict_proba(X)).all()


PARAMS = dict(budget=40, gamma=1.0, n_epochs=3, shuffle=True, random_state=0)

# IncrementalSVC's sample weight k equals k copies of the example for the exact SVM's solution,
# which does not depend on the order of the examples; its probability calibration is learned
# prequentially (each example scored before it is learned), which depends on the order and on
# the scores the copies get in turn. The check's other comparisons (predict,
# decision_function) hold: test_estimator_api runs it with probability=False.
PREQUENTIAL_PROBA = {"check_sample_weight_equivalence_on_dense_data", "check_sample_weight_equivalence_on_sparse_data"}


def failed_checks(est):
    def prequential(check_name, exception):
        return (isinstance(est, budgetkernel.IncrementalSVC) and check_name in PREQUENTIAL_PROBA
                and "IncrementalSVC.predict_proba revealed" in str(exception))

    return [(name, e) for name, e in sklearn_check_results(est)[1] if not prequential(name, e)]


@pytest.mark.parametrize("maintenance", ["merge", "project"])
def test_check_estimator_klr(maintenance):
    assert failed_checks(BudgetedSGDClassifier(loss="log", maintenance=maintenance, **PARAMS)) == []


@pytest.mark.parametrize("case", LEARNERS, ids=repr)
def test_check_estimator_with_probability(case):
    est = case.make(probability=True, **PARAMS)
    assert hasattr(est, "predict_proba") and hasattr(est, "predict_log_proba")
    assert failed_checks(est) == []


# ------------------------------------------------------------------ opt-in: probability=False
@pytest.mark.parametrize("case", LEARNERS, ids=repr)
def test_without_probability_there_is_no_predict_proba(case):
    clf = case.make(budget=30, gamma=2.0, random_state=0)
    assert clf.probability is False
    for name in ("predict_proba", "predict_log_proba"):
        assert not hasattr(clf, name)
        with pytest.raises(AttributeError, match=name) as e:
            getattr(clf, name)
        # scikit-learn's available_if chains the reason, as for SVC(probability=False)
        assert "pass probability=True" in str(e.value.__cause__)
    X, y = datasets.checkerboard(300, random_state=0)
    clf.fit(X, y)
    assert not hasattr(clf, "predict_proba")
    assert clf._model.probability is False and clf._model.calibration["seen"] == 0


def test_klr_has_predict_proba_whatever_probability_says():
    X, y = datasets.checkerboard(300, random_state=0)
    for probability in (False, True):
        clf = BudgetedSGDClassifier(loss="log", budget=30, gamma=2.0, probability=probability, random_state=0)
        assert hasattr(clf, "predict_proba")
        clf.fit(X, y)
        assert clf._model.calibration["seen"] == 0  # native: never calibrated
        np.testing.assert_allclose(clf.predict_proba(X[:5])[:, 1], expit(clf.decision_function(X[:5])))


def _drop_calibration(raw):
    """A probability=True model file's (version, fields) as probability=False writes them:
    without the core's switch and calibration fields, and without "probability" in the
    metadata's parameters. (Compared as fields, the same as comparing the payloads' bytes,
    without hashing the payload in Python for the checksum.)"""
    version, fields = parse(raw)
    kept = []
    for name, kind, shape, data in fields:
        if name == "probability" or name.startswith("platt."):
            continue
        if name == "meta":
            meta = json.loads(data.decode())
            del meta["params"]["probability"]
            data = json.dumps(meta).encode()
            shape = [len(data)]
        kept.append((name, kind, shape, data))
    return version, kept


@pytest.mark.parametrize("case", LEARNERS, ids=repr)
@pytest.mark.parametrize("n_classes", [2, 3])
def test_probability_false_files_are_those_without_calibration(case, n_classes, tmp_path):
    """probability=False writes no calibration (no core fields, no parameter in the metadata),
    and the calibration of probability=True changes nothing else: the same model, bit for bit."""
    X, y = datasets.noisy_checkerboard(1200, random_state=5) if n_classes == 2 else three_classes(1200)
    off = make(case, probability=False).fit(X, y)
    on = make(case).fit(X, y)
    off.save(tmp_path / "off.bkm")
    on.save(tmp_path / "on.bkm")
    raw_off = (tmp_path / "off.bkm").read_bytes()
    _, fields = parse(raw_off)
    names = {f[0] for f in fields}
    assert "probability" not in names and not any(n.startswith("platt.") for n in names)
    meta = json.loads(dict((f[0], f[3]) for f in fields)["meta"].decode())
    assert "probability" not in meta["params"]
    assert _drop_calibration((tmp_path / "on.bkm").read_bytes()) == parse(raw_off)
    np.testing.assert_array_equal(on.decision_function(X), off.decision_function(X))
    loaded = budgetkernel.load(tmp_path / "off.bkm")
    assert loaded.probability is False and not hasattr(loaded, "predict_proba")


@pytest.mark.parametrize("case", LEARNERS, ids=repr)
def test_a_core_file_with_calibration_restores_it(case, tmp_path):
    """A file without Python metadata (a C++ program's): probability comes from the core's switch."""
    X, y = datasets.noisy_checkerboard(600, random_state=6)
    for probability in (True, False):
        clf = make(case, probability=probability).fit(X, y)
        clf.save(tmp_path / "m.bkm")
        version, fields = parse((tmp_path / "m.bkm").read_bytes())
        bare = [(n, t, [0] if n == "meta" else s, b"" if n == "meta" else r) for n, t, s, r in fields]
        (tmp_path / "bare.bkm").write_bytes(encode(version, bare))
        loaded = budgetkernel.load(tmp_path / "bare.bkm")
        assert loaded.probability is probability
        if probability:
            np.testing.assert_array_equal(loaded.predict_proba(X), clf.predict_proba(X))
        else:
            assert not hasattr(loaded, "predict_proba")


def test_changing_probability_follows_the_structural_parameters_rule():
    X, y = datasets.checkerboard(400, random_state=0)
    clf = BudgetedPAClassifier(budget=30, gamma=2.0, random_state=0).partial_fit(X[:200], y[:200], classes=[-1, 1])
    clf.set_params(probability=True)
    with pytest.raises(ValueError, match="probability=True"):
        clf.partial_fit(X[200:], y[200:])
    with pytest.raises(NotFittedError, match="built with probability=False"):
        clf.predict_proba(X)
    clf.set_params(probability=False)  # set back: learning resumes
    clf.partial_fit(X[200:], y[200:])
    clf.set_params(probability=True).fit(X, y)  # fit starts over with it
    assert np.isfinite(clf.predict_proba(X)).all()


@pytest.mark.parametrize("case", LEARNERS, ids=repr)
def test_the_memory_plan_counts_the_calibration(case):
    off, on = case.make(budget=50), case.make(budget=50, probability=True)
    for n_classes, n_out in ((2, 1), (4, 4)):
        extra = on._memory_total(50, 3, n_classes) - off._memory_total(50, 3, n_classes)
        assert extra == WINDOW * (8 * n_out + 4)
        if on.get_params().get("budget"):  # the message lists the plan of a budgeted model
            assert "calibration" in on._memory_message(3, n_classes)
    klr = BudgetedSGDClassifier(loss="log", budget=50, probability=True)
    assert klr._memory_total(50, 3, 2) == BudgetedSGDClassifier(loss="log", budget=50)._memory_total(50, 3, 2)
