"""The one registry of estimators that the cross-cutting tests run over (and the fixtures that
several test files share).

A new learner is tested everywhere (scikit-learn's checks, threads, model files, sparse input,
the river API, parameter validation, combine, ...) by adding its line to ``LEARNERS`` (a
classifier), ``REGRESSORS`` or ``OTHERS``; a new maintenance strategy or other variant worth
sweeping, by adding its line to ``VARIANTS`` (classifiers) or ``REGRESSOR_VARIANTS``.
tests/test_registry.py fails while a public estimator class has no line here.

A ``Case`` holds only the parameters that make it what it is (a maintenance rule, a loss,
``averaged=True``); each test adds the sizes it needs (``budget``, ``gamma``, ``n_epochs``,
...) through ``Case.make``, which passes a parameter only to a class that takes it.
"""

import _thread
import inspect
import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field

import pytest
from sklearn.base import RegressorMixin

from budgetkernel import (
    BOGDClassifier,
    BudgetedPAClassifier,
    BudgetedPARegressor,
    BudgetedSGDClassifier,
    BudgetedSGDRegressor,
    IncrementalSVC,
    KernelPerceptron,
    KLMSRegressor,
    KRLSRegressor,
    LinearPegasosClassifier,
    ReservoirSVC,
    SlidingWindowKRLSRegressor,
    SparsePAClassifier,
    TwinVectorMachine,
)
from budgetkernel.model_selection import PrequentialSearch


@dataclass(frozen=True)
class Case:
    """One estimator configuration of the registry."""

    id: str
    cls: type
    params: dict = field(default_factory=dict)
    # An exact SVM (the incremental solver of Cauwenberghs & Poggio and the learners built on
    # it): its kernel matrix inverse has limits of its own (tests/test_svm_scale_limits.py).
    exact_svm: bool = False
    # budgetkernel.combine takes its models (the exact SVM and the KRLS filters refuse).
    combinable: bool = True

    @property
    def regressor(self):
        return issubclass(self.cls, RegressorMixin)

    def accepts(self, name):
        return name in inspect.signature(self.cls).parameters

    def make(self, **common):
        """A fresh estimator: the test's ``common`` parameters that the class takes, with this
        case's own parameters on top."""
        return self.cls(**{**{k: v for k, v in common.items() if self.accepts(k)}, **self.params})

    def __repr__(self):
        return self.id


# Every estimator class once, in a configuration that learns well on a few hundred examples
# (SPA's default beta=20 keeps almost no SVs of a short stream).
LEARNERS = [
    Case("BudgetedSGDClassifier", BudgetedSGDClassifier),
    Case("LinearPegasosClassifier", LinearPegasosClassifier),
    Case("BudgetedPAClassifier", BudgetedPAClassifier, {"variant": "nn"}),
    Case("KernelPerceptron", KernelPerceptron),
    Case("SparsePAClassifier", SparsePAClassifier, {"beta": 2.0}),
    Case("BOGDClassifier", BOGDClassifier),
    Case("IncrementalSVC", IncrementalSVC, exact_svm=True, combinable=False),
    Case("TwinVectorMachine", TwinVectorMachine, exact_svm=True),
    Case("ReservoirSVC", ReservoirSVC, exact_svm=True),
]

# The other configurations the tests sweep: maintenance rules, losses and averaging, each a
# different code path (and model file layout) of its learner.
VARIANTS = [
    Case("bsgd-project", BudgetedSGDClassifier, {"maintenance": "project"}),
    Case("bsgd-project-exact", BudgetedSGDClassifier, {"maintenance": "project-exact"}),
    Case("bsgd-remove-smallest", BudgetedSGDClassifier, {"maintenance": "remove-smallest"}),
    Case("bsgd-average", BudgetedSGDClassifier, {"average": True}),
    Case("bsgd-merge-average", BudgetedSGDClassifier, {"maintenance": "merge", "average": True}),
    Case("pegasos-unbudgeted", BudgetedSGDClassifier, {"budget": None}),
    Case("bpa-project", BudgetedPAClassifier, {"variant": "project"}),
    Case("bpa-random", BudgetedPAClassifier, {"variant": "random"}),
    Case("bpa-random-averaged", BudgetedPAClassifier, {"variant": "random", "averaged": True}),
    Case("bpa-nn-averaged", BudgetedPAClassifier, {"variant": "nn", "averaged": True}),
    Case("bpa-nn-ramp", BudgetedPAClassifier, {"variant": "nn", "loss": "ramp"}),
    Case("bpa-nn-ramp-averaged", BudgetedPAClassifier, {"variant": "nn", "loss": "ramp", "averaged": True}),
    Case("bpa-project-ramp", BudgetedPAClassifier, {"variant": "project", "loss": "ramp"}),
    Case("bpa-ramp-simple", BudgetedPAClassifier, {"variant": "simple", "loss": "ramp"}),
    Case("pa-unbudgeted", BudgetedPAClassifier, {"budget": None, "pa_type": 0}),
    Case("forgetron", KernelPerceptron, {"maintenance": "forgetron"}),
    Case("projectron", KernelPerceptron, {"maintenance": "projectron"}),
    Case("projectron++", KernelPerceptron, {"maintenance": "projectron++"}),
    Case("max-margin", KernelPerceptron, {"maintenance": "max-margin"}),
    Case("perceptron-unbudgeted", KernelPerceptron, {"budget": None}),
    Case("spa-beta-20", SparsePAClassifier, {"beta": 20.0}),  # the default: fewer SVs
    Case("bogd-averaged", BOGDClassifier, {"averaged": True}),
    Case("bogd++-averaged", BOGDClassifier, {"sampling": "nonuniform", "averaged": True}),
]

# Every regressor class once (KRLS without its optional dictionary cap, as by default).
REGRESSORS = [
    Case("BudgetedSGDRegressor", BudgetedSGDRegressor),
    Case("BudgetedPARegressor", BudgetedPARegressor),
    Case("KLMSRegressor", KLMSRegressor),
    Case("KRLSRegressor", KRLSRegressor, {"budget": None}, combinable=False),
    Case("SlidingWindowKRLSRegressor", SlidingWindowKRLSRegressor, combinable=False),
]

REGRESSOR_VARIANTS = [
    Case("bsgdr-huber", BudgetedSGDRegressor, {"loss": "huber", "epsilon": 0.05}),
    Case("bsgdr-project", BudgetedSGDRegressor, {"maintenance": "project"}),
    Case("bsgdr-squared-no-intercept", BudgetedSGDRegressor, {"loss": "squared", "fit_intercept": False}),
    Case("bpar-project-averaged", BudgetedPARegressor, {"variant": "project", "averaged": True}),
    Case("bpar-sampling", BudgetedPARegressor, {"sampling": True, "beta": 2.0}),
    Case("qklms", KLMSRegressor, {"epsilon": 0.2}),
    Case("krls-nu0", KRLSRegressor, {"budget": None, "nu": 0.0, "lam": 1e-2}, combinable=False),
]

# The estimators that are not learners of their own: the search over a learner's parameters.
OTHERS = [
    Case("PrequentialSearch", PrequentialSearch,
         {"estimator": BudgetedPAClassifier(budget=40, gamma=1.0), "param_grid": {"C": [0.5, 1.0]}},
         combinable=False),
]

REGISTRY = {case.id: case for case in LEARNERS + VARIANTS + REGRESSORS + REGRESSOR_VARIANTS + OTHERS}
assert len(REGISTRY) == len(LEARNERS + VARIANTS + REGRESSORS + REGRESSOR_VARIANTS + OTHERS), "ids must be unique"


def cases(*ids):
    """The registry's cases with these ids, in this order."""
    return [REGISTRY[i] for i in ids]


def combinable_cases():
    """Every learner configuration budgetkernel.combine takes, classifiers and regressors."""
    return [case for case in REGISTRY.values() if case.combinable]


def kernel_cases(case_list):
    """The cases whose class takes a kernel (all but the linear Pegasos)."""
    return [case for case in case_list if case.accepts("kernel")]


def online_kernel_cases(case_list):
    """The kernel learners with a gradient or PA step (not the exact SVMs)."""
    return [case for case in kernel_cases(case_list) if not case.exact_svm]


# Small sizes that keep a test fast and still reach each learner's budget on a few hundred rows
# (and linear Pegasos in mini-batches, its other code path).
SMALL = {"budget": 20, "gamma": 1.0, "batch_size": 3, "random_state": 0}


# scikit-learn's checks that cannot apply, with the reason. Nothing else may be skipped.
NOT_APPLICABLE = {
    # Array-API inputs (CuPy, torch, ...) need SCIPY_ARRAY_API and a namespace-generic
    # estimator; ours hands float64 numpy buffers to C++.
    "check_array_api_input": "array API: the core works on numpy float64 buffers",
}


def sklearn_check_results(est):
    """(skipped, failed) of scikit-learn's check_estimator(est): the names of the checks it
    skipped, and (name, exception) of those that failed."""
    from sklearn.utils.estimator_checks import check_estimator

    skipped, failed = [], []

    def record(*, estimator, check_name, exception, status, expected_to_fail, expected_to_fail_reason):
        if status == "skipped":
            skipped.append(check_name)
        elif status == "failed":
            failed.append((check_name, exception))

    check_estimator(est, on_skip=None, on_fail=None, callback=record)
    return skipped, failed


@pytest.fixture(params=LEARNERS, ids=repr)
def estimator(request):
    """A fresh estimator of every class, with small valid parameters (``SMALL``)."""
    return request.param.make(**SMALL)


@pytest.fixture(params=kernel_cases(LEARNERS), ids=repr)
def kernel_estimator(request):
    """A fresh estimator of every kernel learner, with ``SMALL`` parameters."""
    return request.param.make(**SMALL)


def write_svmlight_pair(directory, n_train, n_test, noisy=True, suffix=".svm"):
    """A 4x4 checkerboard training set of n_train rows (with label noise when noisy) and a clean
    test set of n_test, written to directory/train<suffix> and test<suffix>: the CLI tests'
    files. Returns (directory, X, y, Xt, yt)."""
    from budgetkernel import datasets, io

    X, y = (datasets.noisy_checkerboard if noisy else datasets.checkerboard)(n_train, random_state=0)
    Xt, yt = datasets.checkerboard(n_test, random_state=1)
    io.dump_svmlight(X, y, directory / f"train{suffix}")
    io.dump_svmlight(Xt, yt, directory / f"test{suffix}")
    return directory, X, y, Xt, yt


@pytest.fixture(scope="session")
def packages_import_budgetkernel_loads():
    """The top-level packages in sys.modules of a fresh interpreter after ``import budgetkernel``
    (one process for the tests that check what the import pulls in)."""
    code = "import sys, budgetkernel; print(' '.join(sorted({m.split('.')[0] for m in sys.modules})))"
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True, timeout=120)
    return set(out.stdout.split())


# ----------------------------------------------------------------------------- pipes


@pytest.fixture()
def pipe_fed_with():
    """``feed(*parts) -> (path, thread)``: the ``/dev/fd`` path of the read end of
    a pipe that a thread writes ``parts`` (bytes) to, one write each.

    Unlike a named pipe, opening it never waits for a writer, so a reader that
    wrongly reads it twice fails the test instead of hanging it.
    """
    read_fds = []

    def feed(*parts):
        r, w = os.pipe()
        read_fds.append(r)

        def write():
            try:
                with open(w, "wb") as fh:
                    for part in parts:
                        fh.write(part)
                        fh.flush()
                        time.sleep(0.02)  # let the reader see the parts separately
            except BrokenPipeError:  # the test ended without reading everything
                pass

        thread = threading.Thread(target=write, daemon=True)
        thread.start()
        return f"/dev/fd/{r}", thread

    yield feed
    for r in read_fds:
        os.close(r)


# ----------------------------------------------------------------------------- threads and Ctrl-C


def interrupted(call, delay=0.3):
    """Runs call() with a simulated Ctrl-C after ``delay`` seconds. Should the call end first
    (which would mean it cannot be interrupted), the test waits for the interrupt in a sleep,
    so that it cannot land in pytest's own code, and the callers' checks that the call stopped
    part-way fail. Nothing here asserts a time: the callers count the rows learned.

    Python's own SIGINT handler is installed for the call: a process that a shell without job
    control starts in the background (``pytest &`` in a script) inherits SIGINT ignored, and
    then interrupt_main does nothing. Seen 2026-11-28: the exact SVM's fit of 100,000 examples
    ran on for 20 minutes, its poll calling PyErr_CheckSignals with the handler SIG_IGN."""
    old = signal.signal(signal.SIGINT, signal.default_int_handler)
    timer = threading.Timer(delay, _thread.interrupt_main)
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            call()
            time.sleep(60)
    finally:
        timer.cancel()
        timer.join()
        signal.signal(signal.SIGINT, old)


class Started:
    """Array-like that sets ``event`` when it is converted: the call it is given to then goes
    straight into its chunk (no sleep that a loaded machine could outrun)."""

    def __init__(self, a):
        self.a, self.shape, self.event = a, a.shape, threading.Event()

    def __len__(self):
        return len(self.a)

    def __array__(self, dtype=None, copy=None):
        self.event.set()
        return self.a if dtype is None else self.a.astype(dtype)
