"""Synthetic data streams and the reference accuracies of their Bayes classifiers.

This package reproduces the synthetic benchmarks used in the budgeted online
kernel learning literature and provides the small amount of plumbing needed to
feed real data sets to the learners chunk by chunk:

* :func:`checkerboard`, :func:`noisy_checkerboard`, :func:`two_gaussians` and
  :func:`waveform` draw finite samples; :func:`gaussian_classes` draws a multi-class,
  optionally high-dimensional mixture of Gaussian clusters (the speed benchmarks of many
  classes and many features);
* :func:`mackey_glass` integrates the Mackey-Glass chaotic time series and
  :func:`embed_series` turns a 1-D series into the ``(X, y)`` pairs of one-step
  prediction (the benchmark of the kernel adaptive filters);
* :func:`stream` yields the same distributions as a (possibly infinite) stream
  of ``(X, y)`` chunks and :func:`make_stream_and_test` pairs a training stream
  with an independent test set;
* :func:`two_gaussians_bayes_accuracy` and :func:`waveform_bayes_accuracy`
  give the reference accuracy of the Bayes-optimal classifier;
* the LIBSVM text format is read and written by :mod:`budgetkernel.io`, and
  :mod:`budgetkernel.preprocessing` standardises a stream.

The generators are in ``_synthetic.py`` (:func:`gaussian_classes` in ``_classes.py``, the
time series in ``_series.py``), their seeding and blocks in ``_sampling.py``, the Bayes
accuracies (their mathematics) in ``_bayes.py``.

Reproducibility
---------------
Every random function takes ``random_state`` (``None``, an ``int``, a
:class:`numpy.random.SeedSequence` or a :class:`numpy.random.Generator`); the
global NumPy random state is never used.  Samples are generated in fixed
internal blocks of 4096 examples (``_BLOCK_SIZE``); block ``k`` uses its own
generator seeded from the child ``k`` of the root :class:`~numpy.random.SeedSequence`.
Consequently

* a stream is a deterministic function of the seed (and of the generator's
  parameters) only: ``chunk_size`` merely regroups the same examples;
* a sized draw is a prefix of a longer draw with the same seed, e.g.
  ``checkerboard(100, random_state=0)`` is the first 100 examples of
  ``stream('checkerboard', random_state=0)``.

An integer seed or a ``SeedSequence`` therefore always reproduces the same
data.  A ``Generator`` is consumed (four 64-bit integers are drawn from it to
build the root seed), so repeated calls with the same ``Generator`` object give
different, but still reproducible, data.  ``None`` draws fresh OS entropy.

The same bits on every CPU
~~~~~~~~~~~~~~~~~~~~~~~~~~
With a given NumPy version, every generator here returns the same bits for a given seed on
every x86-64 and aarch64 CPU, whatever SIMD instructions it has.  The random numbers are exact
functions of the bit generator: the seeding is integer hashing, ``Generator.random`` scales a
53-bit integer by ``2**-53`` and ``Generator.integers`` is integer arithmetic, and a standard
normal draw is one product of the ziggurat method (see the exception below).  The arithmetic on
them uses only ``+ - * /`` and ``sqrt``, each rounded once by IEEE 754, in sums and products of
a fixed order: no ``np.power`` or other transcendental function on arrays (NumPy dispatches
them to SIMD code that differs between AVX-512, AVX2 and older CPUs, and libm's differ between
C libraries), no ``@`` or ``numpy.linalg`` (BLAS and LAPACK kernels differ per CPU), and no
expression a compiler could contract into a fused multiply-add.  This matters most for
:func:`mackey_glass`: the series is chaotic, so a difference in the last bit of one step grows
into a different series.

The exception: a standard normal draw in the far tail (``|z| > 3.65``, about 1 in 4,000
draws) is computed with libm's ``log1p``, and the wedge test of the ziggurat with libm's
``exp``.  libm's last bit is its own (glibc picks FMA variants of both on CPUs that have FMA,
and ``log1p`` then differs for a few inputs in ten thousand), so such a draw can differ by an
ulp on another C library or on an x86-64 CPU without FMA: rarely (10 million draws, about
2,600 of them in the tail, were bit-identical with glibc 2.36's FMA variants turned off), and
it never feeds back into a recurrence (the noise of :func:`mackey_glass` is added after the
integration).  ``tests/test_datasets_portable.py`` pins a digest of every generator's output,
and CI runs it a second time with NumPy's SIMD dispatch narrowed to the baseline instructions.

The reference accuracies :func:`two_gaussians_bayes_accuracy` and
:func:`waveform_bayes_accuracy` are integrals of ``exp`` and ``erfc`` and are not bit-exact:
they agree across CPUs to about 1e-12.

Only NumPy and the standard library are required.
"""

from ._bayes import two_gaussians_bayes_accuracy, waveform_bayes_accuracy
from ._classes import gaussian_classes
from ._series import embed_series, mackey_glass
from ._synthetic import (
    STREAM_NAMES,
    WAVEFORM_BASE_WAVES,
    WAVEFORM_CLASS_WAVES,
    checkerboard,
    make_stream_and_test,
    noisy_checkerboard,
    stream,
    two_gaussians,
    waveform,
)

__all__ = [
    "checkerboard",
    "noisy_checkerboard",
    "two_gaussians",
    "two_gaussians_bayes_accuracy",
    "waveform",
    "waveform_bayes_accuracy",
    "WAVEFORM_BASE_WAVES",
    "WAVEFORM_CLASS_WAVES",
    "gaussian_classes",
    "mackey_glass",
    "embed_series",
    "STREAM_NAMES",
    "stream",
    "make_stream_and_test",
]
