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

__all__ = ["core"]
