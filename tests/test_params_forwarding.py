"""A parameter's range and default are written once, in the core's Params struct (C++), and the
estimators forward them (issue 26): their messages are the core's validate() messages with the
value as the user wrote it, and their defaults are the core's, or listed below with the reason.
"""

import math

import pytest

import budgetkernel as bk
from budgetkernel._native import core as _core
from budgetkernel._validation import _real
from conftest import LEARNERS

# Defaults that differ on purpose, by field of the core's Params, with the reason.
_BUDGETED = "the estimator is budgeted by default (budget=100); the core's 0 is no budget"
EXCEPTIONS = {
    bk.BudgetedSGDClassifier: {"budget": _BUDGETED},
    bk.BudgetedPAClassifier: {"budget": _BUDGETED},
    bk.KernelPerceptron: {"budget": _BUDGETED},
    bk.BOGDClassifier: {
        "budget": _BUDGETED,
        # on a budget each discard multiplies the survivors by about B / (B - 1); lam > 0 keeps
        # them from growing. The core's default is the paper's unregularised kernel OGD.
        "lam": "the budgeted default needs lam > 0 (0.01); the core's 0.0 is plain kernel OGD",
    },
    # SPA's averaged classifier has the same SVs as the last one (no extra memory), so the
    # estimator predicts with it by default; the core's default is the paper's last iterate
    bk.SparsePAClassifier: {"averaged": "SPA-avg by default (same SVs); the core's default is SPA-last"},
    bk.ReservoirSVC: {
        # the reservoir mode of the TVM core: these are fixed, not the TVM's defaults
        "rejection_eta": "reservoir mode: Rejection off (-1)",
        "fixed_C_total": "reservoir mode: off",
        "random_baseline": "reservoir mode: on",
    },
}

CASES = [
    (bk.BudgetedSGDClassifier, _core.BSGDParams),
    (bk.BudgetedPAClassifier, _core.PAParams),
    (bk.KernelPerceptron, _core.PerceptronParams),
    (bk.SparsePAClassifier, _core.SPAParams),
    (bk.BOGDClassifier, _core.BOGDParams),
    (bk.IncrementalSVC, _core.IDSVMParams),
    (bk.TwinVectorMachine, _core.TVMParams),
    (bk.ReservoirSVC, _core.TVMParams),
]


def _default_fields(est):
    """The core Params fields of a default estimator, through its own translation
    (_core_fields, the mapping _make_core uses). gamma='scale' is Python's (resolved from
    the first chunk): the core's default gamma stands for it."""
    gamma = _core.BSGDParams().gamma
    if isinstance(est, bk.SparsePAClassifier):
        return est._core_fields(gamma, _real(est.beta))
    return est._core_fields(gamma)


def test_every_estimator_with_a_params_struct_is_covered():
    # bk.LinearPegasosClassifier's core takes (lam, batch_size) and has no Params struct
    assert {cls for cls, _ in CASES} | {bk.LinearPegasosClassifier} == {case.cls for case in LEARNERS}


@pytest.mark.parametrize("cls, params_cls", CASES, ids=lambda c: getattr(c, "__name__", ""))
def test_defaults_are_the_cores(cls, params_cls):
    fields = _default_fields(cls())
    core = params_cls()
    exceptions = EXCEPTIONS.get(cls, {})
    assert set(exceptions) <= set(fields)
    for name, value in fields.items():
        if name in exceptions:  # still a real difference (else the exception is stale)
            assert value != getattr(core, name), f"{cls.__name__}.{name}: {exceptions[name]} no longer differs"
        else:
            theirs = getattr(core, name)
            assert value == theirs, f"{cls.__name__}: default {name}={value!r}, the core's {theirs!r}"


def test_linear_pegasos_keeps_the_papers_lam():
    # BSGD's default lam (1e-3, with averaging) was measured against tuned settings on the
    # benchmark streams (bench/tuning.py); the linear baseline keeps the Pegasos paper's 1e-4.
    assert bk.LinearPegasosClassifier().lam == 1e-4
    assert _core.BSGDParams().lam == bk.BudgetedSGDClassifier().lam == 1e-3


# Invalid values and the core's message each gets, with the value as written appended.
MESSAGES = [
    (bk.BudgetedSGDClassifier, dict(lam=0.0), r"^lam must be a finite number >= 1e-30; got 0\.0$"),
    (bk.BudgetedSGDClassifier, dict(lam="1e-3"), r"^lam must be a finite number >= 1e-30; got '1e-3'$"),
    (bk.BudgetedSGDClassifier, dict(average_decay=-1.0), r"^average_decay must be a non-negative finite .*; got -1\.0$"),
    (bk.BudgetedSGDClassifier, dict(average_decay=True), r"^average_decay must be a non-negative finite .*; got True$"),
    (bk.LinearPegasosClassifier, dict(lam=-1), r"^lam must be a finite number >= 1e-30; got -1$"),
    (bk.BOGDClassifier, dict(eta=0), r"^eta must be a positive finite number; got 0$"),
    (bk.BOGDClassifier, dict(lam=None), r"^lam must be a non-negative finite number; got None$"),
    (bk.BOGDClassifier, dict(eta=10.0, lam=0.2), r"^eta \* lam must be < 1 \(.*\); got eta=10\.0, lam=0\.2$"),
    (bk.BOGDClassifier, dict(max_coef=-1.0), r"^max_coef must be positive .*; got -1\.0$"),
    (bk.BudgetedPAClassifier, dict(C=float("inf")), r"^C must be a positive finite number; got inf$"),
    (bk.BudgetedPAClassifier, dict(pa_type=3), r"^pa_type must be 0 \(hard margin\), 1 \(PA-I\) or 2 \(PA-II\); got 3$"),
    (bk.BudgetedPAClassifier, dict(pa_type=1.0), r"^pa_type must be 0 .*; got 1\.0$"),
    (bk.BudgetedPAClassifier, dict(pa_type=2**40), r"^pa_type must be 0 .*; got 1099511627776$"),
    (bk.KernelPerceptron, dict(eta=-0.1), r"^eta must be a non-negative finite number; got -0\.1$"),
    (bk.KernelPerceptron, dict(beta=float("nan")), r"^beta must be a non-negative finite number; got nan$"),
    (bk.SparsePAClassifier, dict(alpha=0.0), r"^alpha must be a positive finite number; got 0\.0$"),
    (bk.SparsePAClassifier, dict(beta=0.5), r"^beta must be a finite number >= alpha; got beta=0\.5, alpha=1\.0$"),
    (bk.SparsePAClassifier, dict(beta=float("inf"), target_svs=5), r"^beta must be a finite number >= alpha"),
    (bk.SparsePAClassifier, dict(eta=[1.0]), r"^eta must be a positive finite number; got \[1\.0\]$"),
    (bk.IncrementalSVC, dict(C=0.0), r"^C must be a positive finite number; got 0\.0$"),
    (bk.IncrementalSVC, dict(ridge=-1e-6), r"^ridge must be a non-negative finite number; got -1e-06$"),
    (bk.TwinVectorMachine, dict(m1=-1.0), r"^m1 must be a non-negative finite number; got -1\.0$"),
    (bk.TwinVectorMachine, dict(m1=2.0, m2=1.0), r"^m2 must be greater than m1 \(a buffer zone.*; got m2=1\.0, m1=2\.0$"),
    (bk.ReservoirSVC, dict(C=-1), r"^C must be a positive finite number; got -1$"),
    (bk.BudgetedSGDClassifier, dict(kernel="linear", maintenance="merge"),
     r"^maintenance='merge' needs the Gaussian \(rbf\) kernel: .*; got maintenance='merge', kernel='linear'$"),
    (bk.BudgetedSGDClassifier, dict(kernel="poly", degree=10, coef0=1e31, maintenance="project"),
     r"^kernel: \|coef0\|\^degree must be at most 1e300 .*; got kernel='poly', coef0=1e\+31, degree=10$"),
]


@pytest.mark.parametrize("cls, params, message", MESSAGES, ids=lambda v: getattr(v, "__name__", None))
def test_the_core_range_message_names_the_value_as_written(cls, params, message):
    est = cls(**params)
    with pytest.raises(ValueError, match=message):
        est._validate_params()


def test_ranges_the_core_defines_are_the_ranges():
    # values the core accepts (documented in its Params) are accepted: TVM's m1 = 0, BOGD's
    # max_coef = inf (as None: no bound)
    bk.TwinVectorMachine(m1=0.0)._validate_params()
    bk.BOGDClassifier(max_coef=math.inf)._validate_params()
    # but not the core's m2 = +inf (never remove), which the estimator does not offer (a file
    # written by C++ with it does not load: tests/test_cpp_written_files.py)
    with pytest.raises(ValueError, match=r"^m2 must be a finite number greater than m1; got inf$"):
        bk.TwinVectorMachine(m2=math.inf)._validate_params()
