"""Type stub of the private compiled core (``_core`` and its AVX2 twin ``_core_avx2``)."""

from collections.abc import Sequence
from typing import Any, Generic, TypeVar, overload

import numpy as np
import numpy.typing as npt

__version__: str
simd: str

def cpu_has_avx2_fma() -> bool: ...
def load_model_info(data: bytes) -> dict[str, Any]: ...

# One chunk through many learners (many.cpp): models[i].partial_fit(X, y) for every i, on
# n_jobs threads with the GIL released; the same bytes as calling each in turn.
def partial_fit_many(
    models: Sequence[_Classifier], X: npt.NDArray[np.float64], y: npt.NDArray[np.int32], n_jobs: int
) -> None: ...

# Parameters (params.hpp): each C++ Params struct as a class of the same name, built from
# keyword arguments named as its fields; enums are their names (choices[field] lists them).
class _Params:
    @property
    def choices(self) -> dict[str, tuple[str, ...]]: ...
    kernel: str
    gamma: float
    degree: int
    coef0: float
    def __init__(self, **fields: Any) -> None: ...
    def validate(self) -> None: ...

class BSGDParams(_Params):
    lam: float
    loss: str
    budget: int
    maintenance: str
    seed: int
    average_start: int
    average_decay: float

class PAParams(_Params):
    C: float
    pa_type: int
    loss: str
    budget: int
    variant: str
    seed: int
    averaged: bool

class PerceptronParams(_Params):
    budget: int
    maintenance: str
    eta: float
    beta: float
    seed: int

class SPAParams(_Params):
    alpha: float
    beta: float
    eta: float
    averaged: bool
    seed: int

class BOGDParams(_Params):
    eta: float
    lam: float
    budget: int
    sampling: str
    max_coef: float
    averaged: bool
    seed: int

class IDSVMParams(_Params):
    C: float
    ridge: float

class TVMParams(_Params):
    budget: int
    C: float
    m1: float
    m2: float
    merge: str
    one_sided: bool
    rejection_eta: float
    fixed_C_total: bool
    random_baseline: bool
    seed: int
    ridge: float


class BSGDRegressorParams(_Params):
    lam: float
    t0: float
    budget: int
    maintenance: str
    loss: str
    epsilon: float
    fit_intercept: bool
    seed: int

class PARegressorParams(_Params):
    C: float
    pa_type: int
    epsilon: float
    budget: int
    variant: str
    sampling: bool
    alpha: float
    beta: float
    averaged: bool
    fit_intercept: bool
    seed: int

class KLMSParams(_Params):
    eta: float

class QKLMSParams(_Params):
    eta: float
    epsilon: float

class KRLSParams(_Params):
    nu: float
    lam: float
    budget: int

class SlidingKRLSParams(_Params):
    budget: int
    lam: float

# Stub-only bases (the bindings register each class on its own): what the classes share, so that
# it is written once. Read-only properties are properties here; stubtest (.ci/run) checks that
# every runtime name is here and that what is writable here is writable there.
_P = TypeVar("_P", bound=_Params)
_M = TypeVar("_M", bound=_Model)

class _Model:
    metadata: bytes
    @property
    def n_features(self) -> int: ...
    @property
    def n_outputs(self) -> int: ...
    @property
    def counters(self) -> dict[str, float]: ...
    def to_bytes(self) -> bytes: ...

class _Combinable:
    # The weighted average sum_k w_k f_k of models of this class (combine.hpp); returns the
    # model and its report. class_maps/n_classes place each classifier's classes in the union.
    @staticmethod
    def combine(
        models: Sequence[_M],
        weights: Sequence[float] = ...,
        budget: int = -1,
        class_maps: Sequence[Sequence[int]] = ...,
        n_classes: int = 0,
        base: _M | None = None,
    ) -> tuple[_M, dict[str, Any]]: ...

class _Expansion:
    @property
    def n_support(self) -> int: ...
    @property
    def support_vectors(self) -> npt.NDArray[np.float64]: ...
    @property
    def coefficients(self) -> npt.NDArray[np.float64]: ...
    @property
    def support_ids(self) -> list[int]: ...

class _AveragedExpansion(_Expansion):
    @property
    def n_support_average(self) -> int: ...
    @property
    def average_expansion(self) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]: ...

class _Classifier(_Model):
    @property
    def n_classes(self) -> int: ...
    def partial_fit(
        self, X: npt.NDArray[np.float64], y: npt.NDArray[np.int32], record: bool = False
    ) -> npt.NDArray[np.int32] | None: ...
    # partial_fit's checks of a chunk (rows, label indices), learning nothing
    def check_chunk(self, X: npt.NDArray[np.float64], y: npt.NDArray[np.int32]) -> None: ...
    def decision_function(self, X: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]: ...
    def predict(self, X: npt.NDArray[np.float64]) -> npt.NDArray[np.int32]: ...
    def learn_one(self, x: npt.NDArray[np.float64], y: int) -> int: ...
    def decision_one(self, x: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]: ...
    # Probabilities (learners/calibration.hpp): native for BSGD's logistic loss, otherwise the
    # online calibration, off unless probability is set before the first example.
    probability: bool
    @property
    def has_probabilities(self) -> bool: ...
    @property
    def calibration(self) -> dict[str, Any]: ...
    def predict_proba(self, X: npt.NDArray[np.float64], log: bool = False) -> npt.NDArray[np.float64]: ...
    def pool_calibration(self, parts: Sequence[_Classifier], base: _Classifier | None = None) -> None: ...

# Each learner with Params P is built as L(n_features, n_classes, params: P) or
# L(n_features, n_classes, **fields of P) (a regressor: without n_classes); `params` is a copy of its P.
class _ClassifierOf(_Classifier, Generic[_P]):
    @overload
    def __init__(self, n_features: int, n_classes: int, params: _P) -> None: ...
    @overload
    def __init__(self, n_features: int, n_classes: int, **fields: Any) -> None: ...
    @property
    def params(self) -> _P: ...

# Regressors (wrap_regression.cpp, wrap_pa_regression.cpp, wrap_kaf.cpp): real targets, one
# prediction per row.
class _RegressorOf(_Model, _Expansion, Generic[_P]):
    @overload
    def __init__(self, n_features: int, params: _P) -> None: ...
    @overload
    def __init__(self, n_features: int, **fields: Any) -> None: ...
    @property
    def params(self) -> _P: ...
    def partial_fit(
        self, X: npt.NDArray[np.float64], y: npt.NDArray[np.float64], record: bool = False
    ) -> npt.NDArray[np.float64] | None: ...
    def check_chunk(self, X: npt.NDArray[np.float64], y: npt.NDArray[np.float64]) -> None: ...
    def predict(self, X: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]: ...
    def learn_one(self, x: npt.NDArray[np.float64], y: float) -> float: ...
    def predict_one(self, x: npt.NDArray[np.float64]) -> float: ...

class KernelPegasos(_ClassifierOf[BSGDParams], _Expansion, _Combinable):
    @property
    def averaged_iterates(self) -> int: ...
    @property
    def predictor_coefficients(self) -> npt.NDArray[np.float64]: ...
    @property
    def scale(self) -> float: ...
    @property
    def norm2(self) -> float: ...
    @staticmethod
    def from_bytes(data: bytes) -> KernelPegasos: ...

class PassiveAggressive(_ClassifierOf[PAParams], _AveragedExpansion, _Combinable):
    def active_run(self, X: npt.NDArray[np.float64], start: int, pred: npt.NDArray[np.int32]) -> int: ...
    @staticmethod
    def from_bytes(data: bytes) -> PassiveAggressive: ...

class SparsePA(_ClassifierOf[SPAParams], _AveragedExpansion, _Combinable):
    @property
    def expected_support(self) -> float: ...
    @staticmethod
    def from_bytes(data: bytes) -> SparsePA: ...

class BOGD(_ClassifierOf[BOGDParams], _AveragedExpansion, _Combinable):
    def reseed(self, seed: int) -> None: ...
    @staticmethod
    def from_bytes(data: bytes) -> BOGD: ...

class KernelPerceptron(_ClassifierOf[PerceptronParams], _Expansion, _Combinable):
    @staticmethod
    def from_bytes(data: bytes) -> KernelPerceptron: ...

class LinearPegasos(_Classifier, _Combinable):
    @property
    def weights(self) -> npt.NDArray[np.float64]: ...
    @property
    def iterations(self) -> int: ...
    @property
    def lam(self) -> float: ...
    @property
    def batch_size(self) -> int: ...
    @property
    def pending(self) -> int: ...
    def __init__(self, n_features: int, n_classes: int, lam: float, batch_size: int) -> None: ...
    def flush(self) -> None: ...
    @staticmethod
    def from_bytes(data: bytes) -> LinearPegasos: ...

class IncrementalSVC(_ClassifierOf[IDSVMParams]):
    @property
    def n_support(self) -> int: ...
    def partial_fit_weighted(
        self, X: npt.NDArray[np.float64], y: npt.NDArray[np.int32], sample_weight: npt.NDArray[np.float64]
    ) -> None: ...
    def unlearn(self, example: int) -> None: ...
    def set_C(self, C: float) -> None: ...
    def set_weight(self, example: int, weight: float) -> None: ...
    def expansion(self) -> dict[str, Any]: ...
    def machine_state(self, k: int) -> dict[str, Any]: ...
    @staticmethod
    def from_bytes(data: bytes) -> IncrementalSVC: ...

class TwinVectorMachine(_ClassifierOf[TVMParams], _Combinable):
    @property
    def n_twins(self) -> int: ...
    @property
    def twin_points(self) -> npt.NDArray[np.float64]: ...
    @property
    def twin_weights(self) -> npt.NDArray[np.float64]: ...
    def expansion(self) -> dict[str, Any]: ...
    @staticmethod
    def from_bytes(data: bytes) -> TwinVectorMachine: ...

class BSGDRegressor(_RegressorOf[BSGDRegressorParams], _Combinable):
    @property
    def intercept(self) -> float: ...
    @property
    def scale(self) -> float: ...
    @property
    def norm2(self) -> float: ...
    @staticmethod
    def from_bytes(data: bytes) -> BSGDRegressor: ...

# PA regression (learners/pa_regressor.hpp)
class PARegressor(_RegressorOf[PARegressorParams], _AveragedExpansion, _Combinable):
    @property
    def intercept(self) -> float: ...
    @property
    def expected_support(self) -> float: ...
    @property
    def last_objectives(self) -> list[float]: ...
    @property
    def last_removed(self) -> int: ...
    @staticmethod
    def from_bytes(data: bytes) -> PARegressor: ...

# The kernel adaptive filters (learners/kaf.hpp), without an intercept; steps counts the updates.
class KLMS(_RegressorOf[KLMSParams], _Combinable):
    @property
    def steps(self) -> int: ...
    @staticmethod
    def from_bytes(data: bytes) -> KLMS: ...

class QKLMS(_RegressorOf[QKLMSParams], _Combinable):
    @property
    def steps(self) -> int: ...
    @staticmethod
    def from_bytes(data: bytes) -> QKLMS: ...

class KRLS(_RegressorOf[KRLSParams]):
    @property
    def steps(self) -> int: ...
    @staticmethod
    def from_bytes(data: bytes) -> KRLS: ...

class SlidingWindowKRLS(_RegressorOf[SlidingKRLSParams]):
    @property
    def steps(self) -> int: ...
    @staticmethod
    def from_bytes(data: bytes) -> SlidingWindowKRLS: ...

# The LIBSVM reader (wrap_libsvm.cpp, cpp/include/budgetkernel/libsvm.hpp); used by
# budgetkernel.datasets.iter_svmlight / load_svmlight.
LIBSVM_NEED_INPUT: int
LIBSVM_END: int
LIBSVM_REJECTED: int
LIBSVM_FULL: int

class LibsvmPass:
    @property
    def rows(self) -> int: ...
    @property
    def status(self) -> str: ...
    @property
    def line_number(self) -> int: ...
    @property
    def line_text(self) -> bytes: ...
    @property
    def summary(self) -> dict[str, Any]: ...
    def __init__(
        self,
        reading: bool,
        n_features: int = -1,
        offset: int = 1,
        integer_labels: bool = False,
        label_int_min: int = ...,
        label_int_max: int = ...,
        label_max: float = ...,
        value_max: float = ...,
        one_based: bool = False,
    ) -> None: ...
    def feed(self, data: bytes) -> None: ...
    def finish(self) -> None: ...
    def scan(self) -> int: ...
    def read(self, max_rows: int) -> int: ...
    def accept_row(
        self, label: float, label_int: int, label_is_int: bool, indices: list[int], values: list[float]
    ) -> None: ...
    def take(
        self,
        X: npt.NDArray[np.floating[Any]] | None,
        y_float: npt.NDArray[np.float64] | None,
        y_int: npt.NDArray[np.int64] | None,
        y_is_int: npt.NDArray[np.uint8] | None,
        lines: npt.NDArray[np.int64] | None,
    ) -> None: ...
