"""budgetkernel: online kernel learning on a fixed memory budget.

A kernel classifier learned from a stream keeps at most ``budget`` support vectors, so
memory and time per example stay constant however long the stream. The algorithms run
in a header-only C++ core; these estimators follow scikit-learn's conventions and add
``learn_one``/``predict_one`` for true streaming.
"""

from . import datasets
from ._base import load
from ._combine import combine
from ._native import core as _selected_core
from .passive_aggressive import BudgetedPAClassifier
from .pegasos import BudgetedSGDClassifier, LinearPegasosClassifier
from .pegasos_regressor import BudgetedSGDRegressor
from .pa_regressor import BudgetedPARegressor
from .kaf import KLMSRegressor, KRLSRegressor, SlidingWindowKRLSRegressor
from .perceptron import KernelPerceptron
from .bogd import BOGDClassifier
from .sparse_pa import SparsePAClassifier
from .svm import IncrementalSVC, ReservoirSVC, TwinVectorMachine

__version__ = _selected_core.__version__

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
    "combine",
    "datasets",
    "load",
    "__version__",
]
