"""budgetkernel.load of model files without the Python package's metadata, as a C++ program
writes them: every learner is rebuilt as its estimator (classes 0..c-1, the file's parameters),
predicts as the core learner does, resumes training exactly as it would, and saves and loads
again as an ordinary estimator file."""

import math

import numpy as np
import pytest
from sklearn.base import clone

import budgetkernel
from budgetkernel import datasets
from budgetkernel._persistence import _REGISTRY
from budgetkernel._native import core as _core

# Each factory takes the gamma that suits the data set. Every random_state is an int, so that
# the file's seed gives it back (a random_state of None is rebuilt as the seed it drew).
CASES = {
    "bsgd-merge": lambda g: budgetkernel.BudgetedSGDClassifier(budget=20, maintenance="merge", lam=1e-3, gamma=g, random_state=3),
    "bsgd-project-poly-avg": lambda g: budgetkernel.BudgetedSGDClassifier(
        budget=20, maintenance="project", kernel="poly", gamma=g, degree=2, coef0=1.0, average=5, random_state=4
    ),
    "linear-pegasos": lambda g: budgetkernel.LinearPegasosClassifier(lam=1e-2, batch_size=3),
    "pa-nn": lambda g: budgetkernel.BudgetedPAClassifier(budget=20, variant="nn", C=0.5, gamma=g, random_state=1),
    "pa-ramp-project-avg": lambda g: budgetkernel.BudgetedPAClassifier(
        budget=15, variant="project", loss="ramp", pa_type=2, averaged=True, gamma=g, random_state=2
    ),
    "pa-random": lambda g: budgetkernel.BudgetedPAClassifier(budget=15, variant="random", gamma=g, random_state=2**40 + 7),
    "pa-unbudgeted-linear": lambda g: budgetkernel.BudgetedPAClassifier(
        budget=None, pa_type=0, kernel="linear", gamma=g, random_state=0
    ),
    "perceptron-random": lambda g: budgetkernel.KernelPerceptron(budget=15, gamma=g, random_state=5),
    "perceptron-forgetron": lambda g: budgetkernel.KernelPerceptron(budget=15, maintenance="forgetron", gamma=g, random_state=0),
    "perceptron-max-margin": lambda g: budgetkernel.KernelPerceptron(
        budget=15, maintenance="max-margin", beta=0.5, gamma=g, random_state=0
    ),
    "perceptron-projectron++": lambda g: budgetkernel.KernelPerceptron(
        budget=25, maintenance="projectron++", eta=0.3, gamma=g, random_state=0
    ),
    "perceptron-unbudgeted": lambda g: budgetkernel.KernelPerceptron(budget=None, maintenance="stop", gamma=g, random_state=0),
    "spa-avg": lambda g: budgetkernel.SparsePAClassifier(alpha=1.0, beta=2.0, eta=1.0, gamma=g, random_state=6),
    "spa-last": lambda g: budgetkernel.SparsePAClassifier(alpha=0.5, beta=3.0, eta=0.5, averaged=False, gamma=g, random_state=7),
    "bogd-uniform": lambda g: budgetkernel.BOGDClassifier(budget=20, gamma=g, random_state=8),
    "bogd++-bounded-avg": lambda g: budgetkernel.BOGDClassifier(
        budget=20, sampling="nonuniform", eta=0.3, lam=0.05, max_coef=2.0, averaged=True, gamma=g, random_state=9
    ),
    "ogd-unbudgeted": lambda g: budgetkernel.BOGDClassifier(budget=None, lam=0.0, gamma=g, random_state=0),
    "idsvm": lambda g: budgetkernel.IncrementalSVC(C=1.0, gamma=g),
    "idsvm-ridge": lambda g: budgetkernel.IncrementalSVC(C=5.0, gamma=g, ridge=1e-6),
    "tvm": lambda g: budgetkernel.TwinVectorMachine(budget=15, C=1.0, gamma=g, random_state=0),
    "tvm-feature-global": lambda g: budgetkernel.TwinVectorMachine(
        budget=15, C=2.0, m1=0.5, m2=3.0, merge="feature", one_sided=False, rejection_eta=None, fixed_C_total=False,
        gamma=g, random_state=1, ridge=1e-8,
    ),
    "reservoir": lambda g: budgetkernel.ReservoirSVC(budget=15, C=2.0, gamma=g, random_state=11),
}


def _data(n_classes):
    """(X, y, gamma): 300 examples, two classes labelled -1 / 1 or three labelled 0..2."""
    if n_classes == 2:
        X, y = datasets.checkerboard(300, random_state=1)
        return X, y, 2.0
    X, y = datasets.waveform(300, random_state=1)
    return X, y, 0.05


def _cpp_file(est, path):
    """A copy of est's core learner without metadata, written to path as a C++ program would."""
    core = type(est._model).from_bytes(est._model.to_bytes())
    core.metadata = b""
    data = core.to_bytes()
    assert _core.load_model_info(data)["metadata"] == b""
    path.write_bytes(data)
    return core


def _scores(core, X):
    """The core's decision values as the estimator gives them (1-D for one output)."""
    s = core.decision_function(np.ascontiguousarray(X, dtype=np.float64))
    return s[:, 0] if s.shape[1] == 1 else s


@pytest.mark.parametrize("n_classes", [2, 3])
@pytest.mark.parametrize("name", list(CASES))
def test_load_rebuilds_every_estimator_from_a_file_without_metadata(tmp_path, name, n_classes):
    X, y, gamma = _data(n_classes)
    est = CASES[name](gamma)
    n1 = 200
    est.partial_fit(X[:n1], y[:n1], classes=np.unique(y))
    yi = np.searchsorted(est.classes_, y).astype(np.int32)  # the C++ label indices
    core = _cpp_file(est, tmp_path / "cpp.bkm")

    loaded = budgetkernel.load(tmp_path / "cpp.bkm")
    assert type(loaded) is type(est)
    np.testing.assert_array_equal(loaded.classes_, np.arange(n_classes))
    assert loaded.n_features_in_ == X.shape[1] and not hasattr(loaded, "feature_names_in_")
    # the learner's parameters come back (Python-only ones, n_epochs / shuffle, at defaults; a
    # BSGD maintenance rule that 'auto' gives for the kernel as 'auto')
    assert loaded.get_params() == type(est)._params_from_file(est.get_params())
    assert loaded._extra_fitted() == est._extra_fitted()
    assert loaded.counters_ == core.counters == est.counters_

    # predictions are the core's (and the original estimator's, in label indices)
    np.testing.assert_array_equal(loaded.decision_function(X), _scores(core, X))
    np.testing.assert_array_equal(loaded.decision_function(X), est.decision_function(X))
    np.testing.assert_array_equal(loaded.predict(X), core.predict(np.ascontiguousarray(X)))
    np.testing.assert_array_equal(loaded.predict(X), np.searchsorted(est.classes_, est.predict(X)))
    assert loaded.predict_one(X[0]) == core.predict(np.ascontiguousarray(X[:1]))[0]

    # training resumes exactly as the core continuing on the same data (and the original)
    loaded.partial_fit(X[n1:], yi[n1:])
    core.partial_fit(np.ascontiguousarray(X[n1:]), yi[n1:])
    est.partial_fit(X[n1:], y[n1:])
    for i in range(5):
        loaded.learn_one(X[i], int(yi[i]))
        core.learn_one(np.ascontiguousarray(X[i]), int(yi[i]))
        est.learn_one(X[i], y[i])
    np.testing.assert_array_equal(loaded.decision_function(X), _scores(core, X))
    np.testing.assert_array_equal(loaded.decision_function(X), est.decision_function(X))
    assert loaded.counters_ == core.counters
    assert loaded.online_error_ == est.online_error_

    # save() then load() of the rebuilt estimator: an ordinary estimator file now
    loaded.save(tmp_path / "again.bkm")
    again = budgetkernel.load(tmp_path / "again.bkm")
    assert type(again) is type(est) and again.get_params() == loaded.get_params()
    assert again._extra_fitted() == loaded._extra_fitted()
    np.testing.assert_array_equal(again.classes_, loaded.classes_)
    np.testing.assert_array_equal(again.decision_function(X), loaded.decision_function(X))
    again.partial_fit(X[:50], yi[:50])
    loaded.partial_fit(X[:50], yi[:50])
    np.testing.assert_array_equal(again.decision_function(X), loaded.decision_function(X))

    # the parameters are complete: a fresh fit with them is the original's fresh fit
    refit = clone(loaded).fit(X, yi)
    np.testing.assert_array_equal(refit.decision_function(X), clone(est).fit(X, y).decision_function(X))


def test_gamma_scale_is_rebuilt_as_the_gamma_in_use(tmp_path):
    X, y, _ = _data(3)
    est = budgetkernel.BudgetedPAClassifier(budget=20, random_state=0).partial_fit(X, y, classes=[0, 1, 2])
    _cpp_file(est, tmp_path / "m.bkm")
    loaded = budgetkernel.load(tmp_path / "m.bkm")
    assert est.gamma == "scale" and loaded.gamma == loaded.gamma_ == est.gamma_
    assert {k: v for k, v in loaded.get_params().items() if k != "gamma"} == {
        k: v for k, v in est.get_params().items() if k != "gamma"
    }
    np.testing.assert_array_equal(loaded.decision_function(X), est.decision_function(X))


def test_sparse_pa_target_svs_becomes_the_beta_in_use(tmp_path):
    X, y, gamma = _data(2)
    est = budgetkernel.SparsePAClassifier(target_svs=10, stream_length=400, gamma=gamma, random_state=0)
    est.partial_fit(X[:200], y[:200], classes=[-1, 1])
    core = _cpp_file(est, tmp_path / "m.bkm")
    loaded = budgetkernel.load(tmp_path / "m.bkm")
    assert est.beta_ == 40.0
    assert loaded.beta == loaded.beta_ == est.beta_
    assert loaded.target_svs is None and loaded.stream_length is None  # known to Python only
    yi = (y > 0).astype(np.int32)
    loaded.partial_fit(X[200:], yi[200:])
    core.partial_fit(np.ascontiguousarray(X[200:]), yi[200:])
    np.testing.assert_array_equal(loaded.decision_function(X), _scores(core, X))
    assert loaded.expected_n_support_ == core.expected_support


def test_incremental_svc_is_rebuilt_with_the_C_set_last(tmp_path):
    X, y, gamma = _data(2)
    est = budgetkernel.IncrementalSVC(C=1.0, gamma=gamma).fit(X[:150], y[:150]).set_C(0.25)
    _cpp_file(est, tmp_path / "m.bkm")
    loaded = budgetkernel.load(tmp_path / "m.bkm")
    assert loaded.C == 0.25 and loaded.get_params() == est.get_params()
    loaded.unlearn(3)
    est.unlearn(3)
    np.testing.assert_array_equal(loaded.decision_function(X), est.decision_function(X))


def test_files_of_the_core_alone_map_to_the_right_estimator(tmp_path):
    """Learners built through the core only, as in C++: the TVM core in its random-baseline
    mode is a budgetkernel.ReservoirSVC (whatever its unused TVM fields hold), otherwise a TVM."""
    X, y, _ = _data(2)
    Xc, yi = np.ascontiguousarray(X), (y > 0).astype(np.int32)
    params = _core.TVMParams(
        kernel="rbf", gamma=1.5, budget=12, C=3.0, m1=0.5, m2=4.0, merge="feature", one_sided=False,
        rejection_eta=0.1, fixed_C_total=True, seed=21, ridge=1e-9,
    )
    for random_baseline, cls in ((True, budgetkernel.ReservoirSVC), (False, budgetkernel.TwinVectorMachine)):
        params.random_baseline = random_baseline
        core = _core.TwinVectorMachine(n_features=2, n_classes=2, params=params)
        core.partial_fit(Xc[:150], yi[:150])
        (tmp_path / "t.bkm").write_bytes(core.to_bytes())
        est = budgetkernel.load(tmp_path / "t.bkm")
        assert type(est) is cls
        p = est.get_params()
        assert (p["budget"], p["C"], p["gamma"], p["random_state"], p["ridge"]) == (12, 3.0, 1.5, 21, 1e-9)
        if cls is budgetkernel.TwinVectorMachine:
            assert (p["m1"], p["m2"], p["merge"], p["one_sided"], p["rejection_eta"], p["fixed_C_total"]) == (
                0.5, 4.0, "feature", False, 0.1, True,
            )
        est.partial_fit(X[150:], yi[150:])
        core.partial_fit(Xc[150:], yi[150:])
        np.testing.assert_array_equal(est.decision_function(X), _scores(core, X))
    # the other cores, constructed directly
    cores = [
        (_core.PassiveAggressive(2, 2, kernel="rbf", gamma=1.5, C=0.7, pa_type=1, loss="ramp", budget=10,
                                 variant="nn", seed=5, averaged=True), budgetkernel.BudgetedPAClassifier,
         dict(C=0.7, loss="ramp", budget=10, variant="nn", averaged=True, random_state=5)),
        (_core.KernelPerceptron(2, 2, kernel="poly", gamma=0.5, degree=2, coef0=1.0, budget=10,
                                maintenance="max-margin", eta=0.1, beta=0.25, seed=6), budgetkernel.KernelPerceptron,
         dict(kernel="poly", degree=2, coef0=1.0, maintenance="max-margin", beta=0.25, random_state=6)),
        (_core.SparsePA(2, 2, kernel="rbf", gamma=1.5, alpha=0.5, beta=5.0, eta=2.0, averaged=False, seed=7),
         budgetkernel.SparsePAClassifier,
         dict(alpha=0.5, beta=5.0, eta=2.0, averaged=False, random_state=7)),
        (_core.BOGD(2, 2, kernel="linear", gamma=1.0, eta=0.2, lam=0.1, budget=0, sampling="nonuniform",
                    max_coef=math.inf, averaged=False, seed=8), budgetkernel.BOGDClassifier,
         dict(kernel="linear", eta=0.2, lam=0.1, budget=None, sampling="nonuniform", max_coef=None, random_state=8)),
        (_core.IncrementalSVC(2, 2, kernel="rbf", gamma=1.5, C=4.0, ridge=1e-7), budgetkernel.IncrementalSVC,
         dict(C=4.0, ridge=1e-7, gamma=1.5)),
    ]
    for core, cls, expected in cores:
        core.partial_fit(Xc[:150], yi[:150])
        (tmp_path / "c.bkm").write_bytes(core.to_bytes())
        est = budgetkernel.load(tmp_path / "c.bkm")
        assert type(est) is cls
        assert {k: est.get_params()[k] for k in expected} == expected
        np.testing.assert_array_equal(est.decision_function(X), _scores(core, X))
        est.partial_fit(X[150:], yi[150:])
        core.partial_fit(Xc[150:], yi[150:])
        np.testing.assert_array_equal(est.decision_function(X), _scores(core, X))


@pytest.mark.parametrize(
    "make, message",
    [
        # core parameters that no estimator takes: the error names them
        (lambda: _core.TwinVectorMachine(2, 2, gamma=1.0, budget=10, m1=1.0, m2=math.inf, rejection_eta=0.2), "m2"),
        (lambda: _core.TwinVectorMachine(2, 2, gamma=1.0, budget=10, m1=1.0, m2=2.0, rejection_eta=0.0),
         "rejection_eta"),
        (lambda: _core.PassiveAggressive(2, 2, kernel="linear", gamma=-1.0, budget=10), "gamma"),  # linear: unchecked
    ],
)
def test_core_parameters_no_estimator_takes_raise_value_error(tmp_path, make, message):
    core = make()
    X, y, _ = _data(2)
    core.partial_fit(np.ascontiguousarray(X[:50]), (y[:50] > 0).astype(np.int32))
    (tmp_path / "m.bkm").write_bytes(core.to_bytes())
    with pytest.raises(ValueError, match=rf"cannot load .*{message}.*core\.{type(core).__name__}\.from_bytes"):
        budgetkernel.load(tmp_path / "m.bkm")


def test_every_estimator_reads_its_learner_back():
    """Nothing is left on the error path: every estimator declares its learner kind."""
    for cls in set(_REGISTRY.values()):
        assert isinstance(getattr(cls, "_learner_kind", None), str), cls.__name__
        assert callable(getattr(cls, "_params_from_core", None)), cls.__name__


def test_a_learner_without_an_estimator_is_a_clear_error(tmp_path, monkeypatch):
    # The error path, for a learner kind no estimator declares (none in this version).
    X, y = datasets.checkerboard(200, random_state=5)
    clf = budgetkernel.KernelPerceptron(budget=10, gamma=1.0, random_state=0).fit(X, y)
    _cpp_file(clf, tmp_path / "p.bkm")
    monkeypatch.delattr(budgetkernel.KernelPerceptron, "_learner_kind")
    message = r"cannot load .*no estimator of this version reads a 'perceptron' model"
    with pytest.raises(ValueError, match=message):
        budgetkernel.load(tmp_path / "p.bkm")


def test_a_core_setting_without_a_name_is_a_value_error(tmp_path):
    # Enums are stored as numbers; one no name has (a file from a later version, or altered) is
    # refused on load, naming the parameter and the names this version knows.
    from test_model_file_fields import _i64, _with_fields

    core = _core.KernelPegasos(2, 2, gamma=1.0, budget=10, maintenance="project")
    X, y, _ = _data(2)
    core.partial_fit(np.ascontiguousarray(X[:50]), (y[:50] > 0).astype(np.int32))
    (tmp_path / "m.bkm").write_bytes(_with_fields(core.to_bytes(), maintenance=_i64(7)))
    with pytest.raises(ValueError, match=r"cannot load .*unknown maintenance 7 .*'remove-random'.*'merge'"):
        budgetkernel.load(tmp_path / "m.bkm")


def test_a_spa_file_with_forced_sampling_is_refused(tmp_path):
    # force_sample was a test setting that files of version 0.1.0 recorded; the field is kept,
    # always 0, and a file with 1 (a state learned without Bernoulli draws) is not resumed.
    from test_model_file_fields import _i64, _with_fields

    core = _core.SparsePA(2, 2, gamma=1.0, beta=2.0)
    X, y, _ = _data(2)
    core.partial_fit(np.ascontiguousarray(X[:50]), (y[:50] > 0).astype(np.int32))
    data = core.to_bytes()
    assert _with_fields(data, force_sample=_i64(0)) == data  # written as 0
    (tmp_path / "m.bkm").write_bytes(_with_fields(data, force_sample=_i64(1)))
    with pytest.raises(ValueError, match="cannot load .*force_sample = 1"):
        budgetkernel.load(tmp_path / "m.bkm")
    with pytest.raises(RuntimeError, match="force_sample = 1"):
        _core.SparsePA.from_bytes((tmp_path / "m.bkm").read_bytes())
