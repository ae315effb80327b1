"""The generators of budgetkernel.datasets give the same bits on every CPU for a given seed
(the contract in the datasets module's docstring).

The digests below are the contract itself, not a measurement of one machine: they were
recorded, and found identical, with NumPy's SIMD dispatch as the CPU allows (AVX-512), with it
narrowed to the baseline (``NPY_DISABLE_CPU_FEATURES``, as CI's second pass sets it), with
OpenBLAS's kernels forced to older CPUs (``OPENBLAS_CORETYPE=Haswell``, ``Prescott``) and with
glibc's FMA variants of libm disabled (``GLIBC_TUNABLES=glibc.cpu.hwcaps=-AVX2,-FMA``).  A
digest that fails here on some machine is a generator whose bits depend on the CPU (or a NumPy
release that changed its random streams): fix the generator, do not re-record the digest.
"""

import hashlib

import numpy as np
import pytest

from budgetkernel import datasets as ds

CASES = {
    "mackey_glass": (lambda: ds.mackey_glass(3000), "419b88fb3096b95b"),
    "mackey_glass_mg17_noisy": (
        lambda: ds.mackey_glass(500, tau=17, delta_t=0.5, transient=0.0, x0=None, noise=0.04, random_state=3),
        "8942753b6fbb3b9b",
    ),
    "checkerboard": (lambda: ds.checkerboard(5000, noise=0.1, random_state=0), "683eccd4462254c2"),
    "two_gaussians": (lambda: ds.two_gaussians(5000, random_state=1), "27be2dddd605cb3c"),
    "waveform": (lambda: ds.waveform(5000, random_state=2), "698c3e8fd3c71e92"),
    "gaussian_classes": (lambda: ds.gaussian_classes(5000, n_features=64, random_state=3), "95f9ea5abc175d23"),
    "gaussian_classes_784": (
        lambda: ds.gaussian_classes(500, n_features=784, n_informative=30, layout_seed=2, random_state=4),
        "c7190df61513346b",
    ),
}


def _digest(out):
    h = hashlib.sha256()
    for a in out if isinstance(out, tuple) else (out,):
        h.update(np.ascontiguousarray(a).tobytes())
    return h.hexdigest()[:16]


@pytest.mark.parametrize("name", sorted(CASES))
def test_generator_bits_do_not_depend_on_the_cpu(name):
    draw, expected = CASES[name]
    assert _digest(draw()) == expected
