"""Picks the compiled core: the AVX2+FMA build where the CPU has it, else the baseline.

Both modules are built from the same sources and read and write the same model files;
only the instruction set differs. Set ``BUDGETKERNEL_SIMD=baseline`` to force the
portable build (e.g. to compare the two).
"""

import os

from . import _core as _baseline

core = _baseline
if os.environ.get("BUDGETKERNEL_SIMD", "auto").lower() != "baseline" and _baseline.cpu_has_avx2_fma():
    try:
        from . import _core_avx2 as core
    except ImportError:  # a build without the AVX2 module (non-x86, or turned off)
        core = _baseline



class _CoreLearnerMixin:
    """The core learner class an estimator drives, named by the class's ``_core_name`` and
    looked up in the core selected above (an estimator driving several overrides
    ``_core_class``): what builds its learner, reads its model's bytes and combines models."""

    _core_name = None

    @classmethod
    def _core_class(cls):
        return getattr(core, cls._core_name)


__all__ = ["core"]
