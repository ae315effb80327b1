"""Parameters checked up front with messages that name the parameter and what it accepts, and
error messages that name the argument at fault and the fix (issue 25)."""

import inspect
import re

import numpy as np
import pytest

from budgetkernel import (
    BudgetedPAClassifier,
    BudgetedSGDClassifier,
    IncrementalSVC,
    KernelPerceptron,
    LinearPegasosClassifier,
    TwinVectorMachine,
)
from budgetkernel import _memory
from conftest import LEARNERS

# Every classifier class of the registry, each with its defaults (and budget=10, see make below).
# The regressors take real targets (no classes): their parameters and messages are tested in
# tests/test_regressors.py, tests/test_regression.py, tests/test_pa_regression.py, tests/test_kaf.py.
ESTIMATORS = [case.cls for case in LEARNERS]
KERNEL_ESTIMATORS = [cls for cls in ESTIMATORS if "kernel" in inspect.signature(cls).parameters]


def data(n=60, d=3, seed=0):
    X = np.random.default_rng(seed).normal(size=(n, d))
    return X, np.where(X[:, 0] > 0, 1, -1)


def make(cls, **params):
    if "budget" in inspect.signature(cls).parameters:
        params.setdefault("budget", 10)
    return cls(**params)


# ----------------------------------------------------------------------------- bool parameters


def _bool_params(cls):
    """Every parameter whose default is a bool (BudgetedSGDClassifier's average also takes an
    int start, see below)."""
    return [p.name for p in inspect.signature(cls).parameters.values() if isinstance(p.default, bool)]


BOOL_CASES = [(cls, name) for cls in ESTIMATORS for name in _bool_params(cls) if name != "average"]


def test_bool_parameters_are_listed():
    assert {(c.__name__, n) for c, n in BOOL_CASES} >= {
        ("BudgetedSGDClassifier", "shuffle"),
        ("TwinVectorMachine", "one_sided"),
        ("TwinVectorMachine", "fixed_C_total"),
        ("SparsePAClassifier", "averaged"),
    }
    assert all(("shuffle" in _bool_params(c)) for c in ESTIMATORS)


@pytest.mark.parametrize("cls,name", BOOL_CASES, ids=[f"{c.__name__}-{n}" for c, n in BOOL_CASES])
@pytest.mark.parametrize("bad", ["False", "yes", None, 1, 0, 1.0, np.int64(1)])
def test_every_bool_parameter_accepts_only_bools(cls, name, bad):
    # shuffle='False' used to shuffle (a non-empty str is true), 'yes' and None were accepted
    X, y = data()
    est = make(cls, **{name: bad})
    with pytest.raises(ValueError, match=rf"^{name} must be True or False; got {re.escape(repr(bad))}$"):
        est.fit(X, y)
    assert not hasattr(est, "_model")
    with pytest.raises(ValueError, match=rf"^{name} must be True or False"):
        make(cls, **{name: bad}).partial_fit(X, y, classes=[-1, 1])
    with pytest.raises(ValueError, match=rf"^{name} must be True or False"):
        make(cls, **{name: bad}).learn_one(X[0], 1, classes=[-1, 1])


@pytest.mark.parametrize("cls,name", BOOL_CASES, ids=[f"{c.__name__}-{n}" for c, n in BOOL_CASES])
def test_numpy_bools_are_bools(cls, name):
    X, y = data()
    a = make(cls, random_state=0, **{name: np.bool_(True)}).fit(X, y)
    b = make(cls, random_state=0, **{name: True}).fit(X, y)
    np.testing.assert_array_equal(a.decision_function(X), b.decision_function(X))


@pytest.mark.parametrize("bad", ["yes", None, 1.5, -1])
def test_bsgd_average_is_a_bool_or_a_start(bad):
    X, y = data()
    with pytest.raises(ValueError, match=r"^average must be True, False, 'auto' or a positive integer \(the example"):
        BudgetedSGDClassifier(budget=10, average=bad).fit(X, y)


# ------------------------------------------------------------------------------ random_state

RS_MESSAGE = r"^random_state must be None, an int in \[0, 2\*\*64 - 1\], a numpy RandomState or a numpy Generator; got "


@pytest.mark.parametrize("cls", ESTIMATORS, ids=lambda c: c.__name__)
@pytest.mark.parametrize("bad", [-1, 2**64, 2**70, 1.5, 2.0, "abc", True, False, np.float64(3.0), [1, 2], object()])
@pytest.mark.parametrize("shuffle", [False, True])
def test_random_state_outside_what_a_seed_can_be_is_rejected_up_front(cls, bad, shuffle):
    # -1, 1.5 and 'abc' were accepted by IncrementalSVC and LinearPegasosClassifier unless
    # shuffle=True (they use no seed otherwise), and 2**64 wrapped around to the model of 0.
    X, y = data()
    est = make(cls, random_state=bad, shuffle=shuffle)
    with pytest.raises(ValueError, match=RS_MESSAGE + re.escape(repr(bad))):
        est.fit(X, y)
    assert not hasattr(est, "_model")
    with pytest.raises(ValueError, match=RS_MESSAGE):
        make(cls, random_state=bad).partial_fit(X, y, classes=[-1, 1])


@pytest.mark.parametrize("cls", ESTIMATORS, ids=lambda c: c.__name__)
@pytest.mark.parametrize(
    "good",
    [None, 0, 2**32, 2**64 - 1, np.int64(7), np.uint64(2**64 - 1), np.random.RandomState(0), np.random.default_rng(0)],
    ids=lambda v: type(v).__name__ if isinstance(v, (np.random.RandomState, np.random.Generator)) else repr(v),  # no address: ids must be the same in every pytest-xdist worker
)
def test_random_state_that_scikit_learn_or_the_core_takes_is_accepted(cls, good):
    X, y = data()
    assert make(cls, random_state=good, shuffle=True).fit(X, y).n_seen_ == len(y)


def test_the_largest_seed_is_its_own_model_not_zeros():
    X, y = data(200)
    top = BudgetedSGDClassifier(budget=5, maintenance="remove-random", gamma=1.0, random_state=2**64 - 1).fit(X, y)
    zero = BudgetedSGDClassifier(budget=5, maintenance="remove-random", gamma=1.0, random_state=0).fit(X, y)
    assert top._model.params.seed == 2**64 - 1
    assert not np.array_equal(top.decision_function(X), zero.decision_function(X))


# ---------------------------------------------------------------- polynomial kernel, coef0 < 0


@pytest.mark.parametrize("cls", KERNEL_ESTIMATORS, ids=lambda c: c.__name__)
@pytest.mark.parametrize("coef0", [-1.0, -1e-12, -3])
def test_negative_coef0_with_the_polynomial_kernel_is_refused_by_every_learner(cls, coef0):
    # IncrementalSVC accepted it; TwinVectorMachine and ReservoirSVC then broke down mid-fit.
    X, y = data()
    est = make(cls, kernel="poly", degree=2, coef0=coef0, gamma=1.0)
    with pytest.raises(ValueError, match=rf"^kernel='poly' needs coef0 >= 0; got coef0={re.escape(repr(coef0))}: "):
        est.fit(X, y)
    assert not hasattr(est, "_model")
    # other kernels ignore coef0
    assert make(cls, kernel="rbf", coef0=coef0, gamma=1.0).fit(X, y).n_seen_ == len(y)


@pytest.mark.parametrize("cls", [case.cls for case in LEARNERS if case.exact_svm], ids=lambda c: c.__name__)
def test_exact_svms_take_a_non_negative_coef0(cls):
    X, y = data()
    assert make(cls, kernel="poly", degree=2, coef0=0.5, gamma=0.5).fit(X, y).n_seen_ == len(y)


# ------------------------------------------------------------------- memory of a large budget

GB = 1e9


def _store(budget, d, n_out):
    return (budget + 1) * (d + n_out + 3) * 8


def _pow2_above(b):
    return 1 << b.bit_length()


# (estimator, bytes of its quadratic structure at budget b, its name, its formula)
QUADRATIC = [
    (dict(maintenance="merge"), lambda b: (b + 1) ** 2 * 8, "kernel-matrix cache of merging", "(budget + 1)^2"),
    (dict(maintenance="remove-random"), lambda b: (b + 1) ** 2 * 8, "kernel-matrix cache of removal", "(budget + 1)^2"),
    (
        dict(maintenance="remove-smallest"),
        lambda b: (b + 1) ** 2 * 8,
        "kernel-matrix cache of removal",
        "(budget + 1)^2",
    ),
    (
        dict(maintenance="project"),
        lambda b: 2 * (b + 1) ** 2 * 8,
        "kernel matrix and its inverse",
        "2 x (budget + 1)^2",
    ),
    (
        dict(maintenance="project-exact"),
        lambda b: 2 * (b + 1) ** 2 * 8,
        "kernel matrix and its inverse",
        "2 x (budget + 1)^2",
    ),
    (dict(variant="project"), lambda b: 2 * (2 * b) ** 2 * 8, "kernel matrix and its inverse", "2 x (2 budget)^2"),
    (
        dict(maintenance="projectron"),
        lambda b: 2 * _pow2_above(b) ** 2 * 8,
        "kernel matrix and its inverse",
        "2 x p^2 (p: the smallest power of two > budget)",
    ),
    (
        dict(maintenance="projectron++"),
        lambda b: 2 * _pow2_above(b) ** 2 * 8,
        "kernel matrix and its inverse",
        "2 x p^2 (p: the smallest power of two > budget)",
    ),
]


def _learner(params, **more):
    if "variant" in params:
        return BudgetedPAClassifier(**params, **more)
    if params["maintenance"].startswith("projectron"):
        return KernelPerceptron(**params, **more)
    return BudgetedSGDClassifier(**params, **more)


@pytest.mark.parametrize("params,cache_bytes,what,formula", QUADRATIC, ids=[str(q[0]) for q in QUADRATIC])
def test_a_budget_whose_caches_do_not_fit_is_refused_before_allocating(monkeypatch, params, cache_bytes, what, formula):
    # B = 30,000 with merging or removal failed with a bare MemoryError('std::bad_alloc') from the
    # B x B kernel cache (7.2 GB); projection has two such matrices. Now the whole model is
    # estimated before anything is allocated, against what the process can get.
    monkeypatch.setattr(_memory, "_allocatable_bytes", lambda: (2 * GB, "a test limit"))
    X, y = data()
    est = _learner(params, budget=30000)
    with pytest.raises(MemoryError) as info:
        est.fit(X, y)
    msg = str(info.value)
    cache = cache_bytes(30000)
    store = _store(30000, 3, 1)
    total = cache + store
    assert msg.startswith(f"{type(est).__name__}: not enough memory for budget=30000 (3 features, 2 classes)")
    assert f"needs about {total / GB:.3g} GB once the budget is full" in msg
    assert "more than the 2 GB this process can allocate (a test limit)" in msg
    assert f"the {what}, {formula} float64 values: {cache / GB:.3g} GB" in msg
    assert (
        f"the support-vector store, (budget + 1) x (n_features + n_outputs + 3) float64 values: {store / GB:.3g} GB"
        in msg
    )
    # the fix, with the largest budget that fits
    fits = max(b for b in range(1, 30001) if cache_bytes(b) + _store(b, 3, 1) <= 2 * GB)
    assert f"The {what} grows with budget^2: use a budget of at most {fits}" in msg
    assert not hasattr(est, "_model")


@pytest.mark.parametrize("budget", [20, 31, 32])
@pytest.mark.parametrize("params", [q[0] for q in QUADRATIC if "project" in str(q[0])], ids=str)
def test_the_projection_estimate_is_the_capacity_the_learner_reaches(params, budget):
    # The projection's capacity (saved as "proj.capacity" / "projection.capacity") is part of
    # its arithmetic and stays as the learner grows it: the estimate follows it, it does not
    # assume budget + 1. Filled with random labels (every example a mistake candidate).
    from test_model_file_fields import parse

    rng = np.random.default_rng(1)
    X = rng.normal(size=(400, 2))
    y = rng.integers(0, 2, 400)
    extra = {"eta": 0.0} if "maintenance" in params and params["maintenance"].startswith("projectron") else {}
    est = _learner(params, budget=budget, gamma=2.0, **extra).fit(X, y)
    assert est.n_support_ == budget
    _, fields = parse(est._model.to_bytes())
    (cap,) = [int.from_bytes(raw[:8], "little") for name, _, _, raw in fields if name.endswith("capacity")]
    (entry,) = [e for e in est._memory_plan(budget, 2, 2) if e[1] == "kernel matrix and its inverse"]
    assert entry[0] == 2 * cap**2 * 8


def test_the_estimate_counts_every_machine_of_a_multiclass_twin_vector_machine(monkeypatch):
    monkeypatch.setattr(_memory, "_allocatable_bytes", lambda: (1e6, "a test limit"))
    X = np.random.default_rng(0).normal(size=(60, 4))
    y = np.arange(60) % 3
    with pytest.raises(MemoryError) as info:
        TwinVectorMachine(budget=20000).fit(X, y)
    msg = str(info.value)
    # per machine (3, one-vs-rest): the twins (budget + 1 rows of n_features + 3 values) and
    # the exact SVM's examples (2 per twin: n_features + 12 values each)
    twins = 3 * 20001 * (4 + 3) * 8
    svm = 3 * 2 * 20000 * (4 + 12) * 8
    assert f"the twin vectors, n_machines x (budget + 1) x (n_features + 3) float64 values: {twins / GB:.3g} GB" in msg
    assert (
        f"the exact SVMs' examples, n_machines x 2 budget x (n_features + 12) float64 values: {svm / GB:.3g} GB" in msg
    )
    assert "plus the exact SVMs' margin-set matrices" in msg


def test_a_budget_that_fits_is_not_refused(monkeypatch):
    monkeypatch.setattr(_memory, "_allocatable_bytes", lambda: (2 * GB, "a test limit"))
    X, y = data()
    assert BudgetedSGDClassifier(budget=10000, maintenance="merge").fit(X, y).n_seen_ == len(y)


def test_a_budget_beyond_any_machine_is_refused_without_a_limit_set():
    # 2 * 10^6 SVs: a 32 TB kernel cache; refused up front, before the 80 MB store is allocated
    X, y = data(d=1)
    est = BudgetedSGDClassifier(budget=2 * 10**6, maintenance="merge")
    with pytest.raises(MemoryError, match=r"not enough memory for budget=2000000 .* needs about 3.2e\+04 GB"):
        est.fit(X, y)
    assert not hasattr(est, "_model")


def test_a_bad_alloc_while_building_gets_the_estimate(monkeypatch):
    # Where the system's limit is unknown (or the estimate fits but the allocation fails
    # anyway) the core's bare std::bad_alloc is replaced by the same explanation. The B x B
    # cache is allocated with the model (it used to be allocated by the first example, whose
    # bad_alloc left a model with one SV in its store and none in its cache: every later step
    # failed with "out of sync").
    monkeypatch.setattr(_memory, "_allocatable_bytes", lambda: (None, None))
    X, y = data(d=1)
    est = BudgetedSGDClassifier(budget=2 * 10**6, maintenance="merge")
    with pytest.raises(
        MemoryError, match=r"^BudgetedSGDClassifier: not enough memory for budget=2000000 .*3.2e\+04 GB"
    ):
        est.fit(X, y)
    assert not hasattr(est, "_model")


class _FailingModel:
    """A core model whose learning calls raise MemoryError(message) (what pybind11 makes of a
    std::bad_alloc, or numpy's own); everything else is the real model's."""

    def __init__(self, model, message):
        self._model, self._message = model, message

    def __getattr__(self, name):
        return getattr(self._model, name)

    def partial_fit(self, *args):
        raise MemoryError(self._message)

    learn_one = partial_fit


def test_a_bad_alloc_while_learning_gets_the_estimate():
    # e.g. projection's kernel matrix and inverse, allocated when the store first overflows
    X, y = data()
    est = BudgetedSGDClassifier(budget=20, maintenance="project", gamma=1.0).fit(X, y)
    est._model = _FailingModel(est._model, "std::bad_alloc")
    for call in (lambda: est.partial_fit(X, y), lambda: est.learn_one(X[0], 1)):
        with pytest.raises(MemoryError) as info:
            call()
        assert str(info.value).startswith(
            "BudgetedSGDClassifier: not enough memory for budget=20 (3 features, 2 classes): the model needs about "
        )
        assert "the kernel matrix and its inverse, 2 x (budget + 1)^2 float64 values: 7.06e-06 GB" in str(info.value)
    # numpy's own MemoryError, and an unbudgeted model's, say what they say
    est._model = _FailingModel(est._model._model, "Unable to allocate 8 GiB")
    with pytest.raises(MemoryError, match="^Unable to allocate 8 GiB$"):
        est.partial_fit(X, y)
    free = BudgetedSGDClassifier(budget=None, gamma=1.0).fit(X, y)
    free._model = _FailingModel(free._model, "std::bad_alloc")
    with pytest.raises(MemoryError, match="^std::bad_alloc$"):
        free.learn_one(X[0], 1)


# ---------------------------------------------------------------------------- label messages


@pytest.mark.parametrize(
    "classes,shown",
    [
        ([1, "a"], "[1, 'a']"),
        (np.array([1, "a"], dtype=object), "[1, 'a']"),
        ([None, 1], "[None, 1]"),
        (np.array([None, 1], dtype=object), "[None, 1]"),
        ([1.5, "x", None], "[1.5, 'x', None]"),
    ],
)
def test_classes_of_mixed_types_are_named(classes, shown):
    # was TypeError: '<' not supported between instances of 'int' and 'str' (or 'NoneType'),
    # and classes=[1, 'a'] silently became ['1', 'a']
    X, y = data()
    with pytest.raises(
        TypeError, match=r"^classes must be all numbers \(int, float, bool\) or all str; got " + re.escape(shown)
    ):
        BudgetedSGDClassifier(budget=10).partial_fit(X, y, classes=classes)
    with pytest.raises(TypeError, match=r"^classes must be all numbers"):
        BudgetedSGDClassifier(budget=10).learn_one(X[0], 1, classes=classes)
    fitted = BudgetedSGDClassifier(budget=10).partial_fit(X, y, classes=[-1, 1])
    with pytest.raises(TypeError, match=r"^classes must be all numbers"):  # a later call's classes
        fitted.partial_fit(X, y, classes=classes)


@pytest.mark.parametrize(
    "y",
    [
        np.array([1, "a"] * 30, dtype=object),
        np.array([None, 1] * 30, dtype=object),
        np.array([1.0, None] * 30, dtype=object),
    ],
)
def test_fit_labels_of_mixed_types_are_named(y):
    # was scikit-learn's "Unknown label type: unknown ... regression target"
    X, _ = data()
    with pytest.raises(TypeError, match=r"^y must be all numbers \(int, float, bool\) or all str; got labels of types"):
        BudgetedSGDClassifier(budget=10).fit(X, y)


def test_labels_of_one_type_still_work():
    X, y = data()
    for labels in (np.where(y > 0, "p", "n").astype(object), [str(v) for v in y], y.astype(float), y > 0):
        est = BudgetedSGDClassifier(budget=10, random_state=0).fit(X, labels)
        assert len(est.classes_) == 2
    est = BudgetedSGDClassifier(budget=10).partial_fit(X, y, classes=[-1, 1.0])  # int and float: numbers
    assert est.classes_.tolist() == [-1, 1]


@pytest.mark.parametrize("cls", ESTIMATORS, ids=lambda c: c.__name__)
def test_one_class_message_shows_plain_values(cls):
    X, _ = data()
    y = np.ones(len(X), dtype=np.int64)
    with pytest.raises(ValueError, match=re.escape("needs at least 2 classes; got 1 class(es): [1]")):
        make(cls).fit(X, y)
    with pytest.raises(ValueError, match=re.escape("got 1 class(es): ['a']")):
        make(cls).partial_fit(X, np.array(["a"] * len(X)), classes=np.array(["a"]))


# --------------------------------------------------------------------------- kernel messages


def test_gamma_auto_points_to_scale():
    X, y = data()
    with pytest.raises(
        ValueError,
        match=r"^gamma must be a positive number or 'scale'; got 'auto'\. scikit-learn's 'auto' \(1 / n_features\)",
    ) as info:
        BudgetedSGDClassifier(gamma="auto").fit(X, y)
    assert "gamma=1 / n_features" in str(info.value)
    with pytest.raises(ValueError, match=r"^gamma must be a positive number or 'scale'; got -1"):
        BudgetedSGDClassifier(gamma=-1).fit(X, y)


@pytest.mark.parametrize(
    "est",
    [
        BudgetedSGDClassifier(kernel="poly", degree=300, gamma=1.0, maintenance="project"),
        BudgetedPAClassifier(kernel="poly", degree=300, gamma=1.0),
        IncrementalSVC(kernel="poly", degree=300, gamma=1.0),
        TwinVectorMachine(kernel="poly", degree=300, gamma=1.0),
    ],
    ids=lambda e: type(e).__name__,
)
def test_a_huge_polynomial_degree_is_blamed_not_the_data(est):
    # "X row 34 contains values too large ... rescale it" blamed ordinary data: with degree 300
    # the kernel's own bound is |x|^2 <= 1e300^(1/300) / gamma = 10.
    X, y = data()
    X = 3 * X
    sq = np.einsum("ij,ij->i", X, X)
    row = int(np.argmax(sq > 10.0))
    assert sq[row] > 10.0
    with pytest.raises(ValueError) as info:
        est.fit(X, y)
    msg = str(info.value)
    assert msg.startswith(f"X row {row} has squared norm {sq[row]:.4g}, too large for the polynomial kernel with ")
    assert "degree=300, gamma=1, coef0=0" in msg and "|x|^2 <= 10 " in msg
    assert msg.endswith("lower degree (or gamma, coef0) or scale X down")
    assert not hasattr(est, "_model")


def test_learn_one_of_a_too_large_row_names_the_degree():
    X, y = data()
    est = BudgetedPAClassifier(kernel="poly", degree=300, gamma=1.0).partial_fit(X[:1] * 0.1, y[:1], classes=[-1, 1])
    with pytest.raises(ValueError, match=r"^x has squared norm 3e\+04, too large for the polynomial kernel with"):
        est.learn_one(np.full(3, 100.0), 1)


def test_data_beyond_any_kernel_is_still_blamed_on_the_data():
    X, y = data()
    with pytest.raises(ValueError, match=r"^X row 0 contains values too large for the kernel's arithmetic.*rescale it"):
        BudgetedSGDClassifier(gamma=1.0).fit(X * 1e160, y)


def test_linear_pegasos_does_not_mention_a_kernel():
    X, y = data()
    with pytest.raises(ValueError) as info:
        LinearPegasosClassifier().fit(X * 1e160, y)
    msg = str(info.value)
    assert msg.startswith("X row 0 contains values too large for the model's arithmetic")
    assert "kernel" not in msg and "rescale it" in msg
    est = LinearPegasosClassifier().fit(X, y)
    with pytest.raises(ValueError, match=r"^x contains values too large for the model's arithmetic"):
        est.learn_one(X[0] * 1e160, 1)


# ------------------------------------------------------------------------ one-example messages


@pytest.mark.parametrize("cls", ESTIMATORS, ids=lambda c: c.__name__)
def test_learn_one_of_the_wrong_length_says_how_many_features(cls):
    X, y = data()
    est = make(cls).fit(X, y)
    with pytest.raises(ValueError, match=r"^x has 5 features, but the model was fitted with 3 \(n_features_in_\)$"):
        est.learn_one(np.zeros(5), 1)
    with pytest.raises(ValueError, match=r"^x has 5 features, but the model was fitted with 3"):
        est.predict_one(np.zeros(5))
    assert est.n_seen_ == len(y)


# ------------------------------------------------------------------------------ unlearn index


@pytest.mark.parametrize("method", ["unlearn", "forget", "set_sample_weight"])
@pytest.mark.parametrize("bad", [2**63, 2**64, 10**30, 60, -1])
def test_unlearn_index_out_of_range_is_named(method, bad):
    # 2**63 showed pybind11's "incompatible function arguments"
    X, y = data()
    est = IncrementalSVC().fit(X, y)
    args = (bad, 2.0) if method == "set_sample_weight" else (bad,)
    with pytest.raises(
        ValueError,
        match=rf"^example must be the number of a learned example, 0 <= example < 60 \(n_seen_\); got {bad}$",
    ):
        getattr(est, method)(*args)
    assert est.n_seen_ == 60


@pytest.mark.parametrize("bad", [True, 1.0, np.float64(2), "3", None])
def test_unlearn_index_must_be_an_int(bad):
    X, y = data()
    est = IncrementalSVC().fit(X, y)
    with pytest.raises(
        TypeError, match=rf"^example must be an int \(the number of a learned example\); got {re.escape(repr(bad))}$"
    ):
        est.unlearn(bad)


def test_unlearn_of_the_last_example_and_numpy_ints_work():
    X, y = data()
    est = IncrementalSVC(gamma=0.5).fit(X, y)
    ref = IncrementalSVC(gamma=0.5).fit(X[:59], y[:59])
    est.unlearn(np.int64(59))
    np.testing.assert_allclose(est.decision_function(X), ref.decision_function(X), atol=1e-9)
