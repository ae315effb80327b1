"""Type stub of the AVX2+FMA build of the core: the same API as ``_core``."""

from ._core import *  # noqa: F403
from ._core import __version__ as __version__
from ._core import simd as simd
