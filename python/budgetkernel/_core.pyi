"""Type stub of the private compiled core (``_core`` and its AVX2 twin ``_core_avx2``)."""

from collections.abc import Sequence
from typing import Any, overload

import numpy as np
import numpy.typing as npt

__version__: str
simd: str

def cpu_has_avx2_fma() -> bool: ...
def load_model_info(data: bytes) -> dict[str, Any]: ...

# One chunk through many learners (many.cpp): models[i].partial_fit(X, y) for every i, on
# n_jobs threads with the GIL released; the same bytes as calling each in turn.
def partial_fit_many(
    models: Sequence[_Learner], X: npt.NDArray[np.float64], y: npt.NDArray[np.int32], n_jobs: int
) -> None: ...

class _Learner:
    n_features: int
    n_classes: int
    n_outputs: int
    counters: dict[str, float]
    metadata: bytes
    def partial_fit(
        self, X: npt.NDArray[np.float64], y: npt.NDArray[np.int32], record: bool = False
    ) -> npt.NDArray[np.int32] | None: ...
    # partial_fit's checks of a chunk (rows, label indices), learning nothing
    def check_chunk(self, X: npt.NDArray[np.float64], y: npt.NDArray[np.int32]) -> None: ...
    def decision_function(self, X: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]: ...
    def predict(self, X: npt.NDArray[np.float64]) -> npt.NDArray[np.int32]: ...
    def learn_one(self, x: npt.NDArray[np.float64], y: int) -> int: ...
    def decision_one(self, x: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]: ...
    def to_bytes(self) -> bytes: ...
    # Probabilities (learners/calibration.hpp): native for BSGD's logistic loss, otherwise the
    # online calibration, off unless probability is set before the first example.
    probability: bool
    has_probabilities: bool
    calibration: dict[str, Any]
    def predict_proba(self, X: npt.NDArray[np.float64], log: bool = False) -> npt.NDArray[np.float64]: ...
    def pool_calibration(self, parts: Sequence[_Learner], base: _Learner | None = None) -> None: ...

class _KernelExpansion(_Learner):
    n_support: int
    support_vectors: npt.NDArray[np.float64]
    coefficients: npt.NDArray[np.float64]
    support_ids: list[int]

# Parameters (params.hpp): each C++ Params struct as a class of the same name, built from
# keyword arguments named as its fields; enums are their names (choices[field] lists them).
class _Params:
    choices: dict[str, tuple[str, ...]]
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

# Each learner with Params P is built as L(n_features, n_classes, params: P) or
# L(n_features, n_classes, **fields of P); `params` is a copy of its P.

class KernelPegasos(_KernelExpansion):
    averaged_iterates: int
    predictor_coefficients: npt.NDArray[np.float64]
    scale: float
    norm2: float
    params: BSGDParams
    @overload
    def __init__(self, n_features: int, n_classes: int, params: BSGDParams) -> None: ...
    @overload
    def __init__(self, n_features: int, n_classes: int, **fields: Any) -> None: ...
    @staticmethod
    def from_bytes(data: bytes) -> KernelPegasos: ...

# Regressors (wrap_regression.cpp): real targets, one prediction per row.
class BSGDRegressorParams(_Params):
    lam: float
    t0: float
    budget: int
    maintenance: str
    loss: str
    epsilon: float
    fit_intercept: bool
    seed: int

class BSGDRegressor:
    n_features: int
    n_outputs: int
    counters: dict[str, float]
    metadata: bytes
    n_support: int
    support_vectors: npt.NDArray[np.float64]
    coefficients: npt.NDArray[np.float64]
    support_ids: list[int]
    intercept: float
    scale: float
    norm2: float
    params: BSGDRegressorParams
    @overload
    def __init__(self, n_features: int, params: BSGDRegressorParams) -> None: ...
    @overload
    def __init__(self, n_features: int, **fields: Any) -> None: ...
    def partial_fit(
        self, X: npt.NDArray[np.float64], y: npt.NDArray[np.float64], record: bool = False
    ) -> npt.NDArray[np.float64] | None: ...
    def check_chunk(self, X: npt.NDArray[np.float64], y: npt.NDArray[np.float64]) -> None: ...
    def predict(self, X: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]: ...
    def learn_one(self, x: npt.NDArray[np.float64], y: float) -> float: ...
    def predict_one(self, x: npt.NDArray[np.float64]) -> float: ...
    def to_bytes(self) -> bytes: ...
    @staticmethod
    def from_bytes(data: bytes) -> BSGDRegressor: ...

# PA regression (wrap_pa_regression.cpp, learners/pa_regressor.hpp), a regressor as BSGDRegressor.
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

class PARegressor:
    n_features: int
    n_outputs: int
    counters: dict[str, float]
    metadata: bytes
    n_support: int
    support_vectors: npt.NDArray[np.float64]
    coefficients: npt.NDArray[np.float64]
    support_ids: list[int]
    n_support_average: int
    average_expansion: tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]
    intercept: float
    expected_support: float
    last_objectives: list[float]
    last_removed: int
    params: PARegressorParams
    @overload
    def __init__(self, n_features: int, params: PARegressorParams) -> None: ...
    @overload
    def __init__(self, n_features: int, **fields: Any) -> None: ...
    def partial_fit(
        self, X: npt.NDArray[np.float64], y: npt.NDArray[np.float64], record: bool = False
    ) -> npt.NDArray[np.float64] | None: ...
    def check_chunk(self, X: npt.NDArray[np.float64], y: npt.NDArray[np.float64]) -> None: ...
    def predict(self, X: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]: ...
    def learn_one(self, x: npt.NDArray[np.float64], y: float) -> float: ...
    def predict_one(self, x: npt.NDArray[np.float64]) -> float: ...
    def to_bytes(self) -> bytes: ...
    @staticmethod
    def from_bytes(data: bytes) -> PARegressor: ...

# The kernel adaptive filters (learners/kaf.hpp), regressors as BSGDRegressor, without an intercept.
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

class _Filter:
    n_features: int
    n_outputs: int
    counters: dict[str, float]
    metadata: bytes
    n_support: int
    support_vectors: npt.NDArray[np.float64]
    coefficients: npt.NDArray[np.float64]
    support_ids: list[int]
    steps: int
    def __init__(self, n_features: int, params: Any = ..., **fields: Any) -> None: ...
    def partial_fit(
        self, X: npt.NDArray[np.float64], y: npt.NDArray[np.float64], record: bool = False
    ) -> npt.NDArray[np.float64] | None: ...
    def check_chunk(self, X: npt.NDArray[np.float64], y: npt.NDArray[np.float64]) -> None: ...
    def predict(self, X: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]: ...
    def learn_one(self, x: npt.NDArray[np.float64], y: float) -> float: ...
    def predict_one(self, x: npt.NDArray[np.float64]) -> float: ...
    def to_bytes(self) -> bytes: ...

class KLMS(_Filter):
    params: KLMSParams
    @staticmethod
    def from_bytes(data: bytes) -> KLMS: ...

class QKLMS(_Filter):
    params: QKLMSParams
    @staticmethod
    def from_bytes(data: bytes) -> QKLMS: ...

class KRLS(_Filter):
    params: KRLSParams
    @staticmethod
    def from_bytes(data: bytes) -> KRLS: ...

class SlidingWindowKRLS(_Filter):
    params: SlidingKRLSParams
    @staticmethod
    def from_bytes(data: bytes) -> SlidingWindowKRLS: ...

class LinearPegasos(_Learner):
    weights: npt.NDArray[np.float64]
    iterations: int
    lam: float
    batch_size: int
    pending: int
    def __init__(self, n_features: int, n_classes: int, lam: float, batch_size: int) -> None: ...
    def flush(self) -> None: ...
    @staticmethod
    def from_bytes(data: bytes) -> LinearPegasos: ...

class PassiveAggressive(_KernelExpansion):
    params: PAParams
    @overload
    def __init__(self, n_features: int, n_classes: int, params: PAParams) -> None: ...
    @overload
    def __init__(self, n_features: int, n_classes: int, **fields: Any) -> None: ...
    n_support_average: int
    average_expansion: tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]
    def active_run(self, X: npt.NDArray[np.float64], start: int, pred: npt.NDArray[np.int32]) -> int: ...
    @staticmethod
    def from_bytes(data: bytes) -> PassiveAggressive: ...

class SparsePA(_KernelExpansion):
    params: SPAParams
    expected_support: float
    n_support_average: int
    average_expansion: tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]
    @overload
    def __init__(self, n_features: int, n_classes: int, params: SPAParams) -> None: ...
    @overload
    def __init__(self, n_features: int, n_classes: int, **fields: Any) -> None: ...
    @staticmethod
    def from_bytes(data: bytes) -> SparsePA: ...

class BOGD(_KernelExpansion):
    params: BOGDParams
    n_support_average: int
    average_expansion: tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]
    @overload
    def __init__(self, n_features: int, n_classes: int, params: BOGDParams) -> None: ...
    @overload
    def __init__(self, n_features: int, n_classes: int, **fields: Any) -> None: ...
    def reseed(self, seed: int) -> None: ...
    @staticmethod
    def from_bytes(data: bytes) -> BOGD: ...

class KernelPerceptron(_KernelExpansion):
    params: PerceptronParams
    @overload
    def __init__(self, n_features: int, n_classes: int, params: PerceptronParams) -> None: ...
    @overload
    def __init__(self, n_features: int, n_classes: int, **fields: Any) -> None: ...
    @staticmethod
    def from_bytes(data: bytes) -> KernelPerceptron: ...

class IncrementalSVC(_Learner):
    n_support: int
    params: IDSVMParams
    @overload
    def __init__(self, n_features: int, n_classes: int, params: IDSVMParams) -> None: ...
    @overload
    def __init__(self, n_features: int, n_classes: int, **fields: Any) -> None: ...
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

class TwinVectorMachine(_Learner):
    n_twins: int
    params: TVMParams
    twin_points: npt.NDArray[np.float64]
    twin_weights: npt.NDArray[np.float64]
    @overload
    def __init__(self, n_features: int, n_classes: int, params: TVMParams) -> None: ...
    @overload
    def __init__(self, n_features: int, n_classes: int, **fields: Any) -> None: ...
    def expansion(self) -> dict[str, Any]: ...
    @staticmethod
    def from_bytes(data: bytes) -> TwinVectorMachine: ...

# The LIBSVM reader (wrap_libsvm.cpp, cpp/include/budgetkernel/libsvm.hpp); used by
# budgetkernel.datasets.iter_svmlight / load_svmlight.
LIBSVM_NEED_INPUT: int
LIBSVM_END: int
LIBSVM_REJECTED: int
LIBSVM_FULL: int

class LibsvmPass:
    rows: int
    status: str
    line_number: int
    line_text: bytes
    summary: dict[str, Any]
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
