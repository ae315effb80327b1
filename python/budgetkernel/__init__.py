"""budgetkernel: online kernel learning on a fixed memory budget.

A kernel classifier learned from a stream keeps at most ``budget`` support vectors, so
memory and time per example stay constant however long the stream. The algorithms run
in a header-only C++ core; these estimators follow scikit-learn's conventions and add
``learn_one``/``predict_one`` for true streaming.
"""

from __future__ import annotations

import importlib

from ._native import core as _selected_core

__version__ = _selected_core.__version__

# Each public name and the module that defines it, imported on first use (PEP 562): the
# estimators import scikit-learn (seconds), which `import budgetkernel` alone, and the
# command line's --version and --help, do not need.
_PUBLIC = {
    "BOGDClassifier": ".bogd",
    "BudgetedPAClassifier": ".passive_aggressive",
    "BudgetedPARegressor": ".pa_regressor",
    "BudgetedSGDClassifier": ".pegasos",
    "BudgetedSGDRegressor": ".pegasos_regressor",
    "IncrementalSVC": ".svm",
    "KLMSRegressor": ".kaf",
    "KRLSRegressor": ".kaf",
    "KernelPerceptron": ".perceptron",
    "LinearPegasosClassifier": ".pegasos",
    "ReservoirSVC": ".svm",
    "SlidingWindowKRLSRegressor": ".kaf",
    "SparsePAClassifier": ".sparse_pa",
    "TwinVectorMachine": ".svm",
    "combine": "._combine",
    "load": "._persistence",
}
_SUBPACKAGES = ("datasets",)

__all__ = [
    "BOGDClassifier",
    "BudgetedPAClassifier",
    "BudgetedPARegressor",
    "BudgetedSGDClassifier",
    "BudgetedSGDRegressor",
    "IncrementalSVC",
    "KLMSRegressor",
    "KRLSRegressor",
    "KernelPerceptron",
    "LinearPegasosClassifier",
    "ReservoirSVC",
    "SlidingWindowKRLSRegressor",
    "SparsePAClassifier",
    "TwinVectorMachine",
    "__version__",
    "combine",
    "datasets",
    "load",
]
assert set(__all__) == {*_PUBLIC, *_SUBPACKAGES, "__version__"}, "__all__ and the lazy table must agree"

TYPE_CHECKING = False  # as typing's (mypy and pyright know the name), without importing typing
if TYPE_CHECKING:  # what static analysis and IDEs see: the same names, imported eagerly
    from . import datasets
    from ._combine import combine
    from ._persistence import load
    from .bogd import BOGDClassifier
    from .kaf import KLMSRegressor, KRLSRegressor, SlidingWindowKRLSRegressor
    from .pa_regressor import BudgetedPARegressor
    from .passive_aggressive import BudgetedPAClassifier
    from .pegasos import BudgetedSGDClassifier, LinearPegasosClassifier
    from .pegasos_regressor import BudgetedSGDRegressor
    from .perceptron import KernelPerceptron
    from .sparse_pa import SparsePAClassifier
    from .svm import IncrementalSVC, ReservoirSVC, TwinVectorMachine


def __getattr__(name):
    if name in _SUBPACKAGES:
        value = importlib.import_module(f".{name}", __name__)
    elif name in _PUBLIC:
        value = getattr(importlib.import_module(_PUBLIC[name], __name__), name)
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value  # later look-ups skip __getattr__
    return value


def __dir__():
    return sorted(set(globals()) | set(__all__))
