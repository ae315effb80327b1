"""
Embedding a model in a C++ program
==================================

A model trained in Python is saved to a file that the C++ library reads: the same
versioned binary format on both sides, so a C++ program can predict (or keep training)
without Python. This example trains and saves a model, shows a C++ program that loads it,
and, when a C++ compiler is at hand, compiles that program against the library's headers and
checks that C++ predicts what Python predicted.

The C++ library is header-only; it needs a C++17 compiler and Eigen (the repository ships
one in ``third_party/eigen``). See :doc:`/cpp/embedding` for ``find_package`` and the CMake
route.
"""

# %%
# Train and save in Python
# ------------------------
# ``save`` writes the model file; :func:`budgetkernel.load` reads it back into an estimator
# that predicts (and resumes training) exactly as the one saved.

import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import numpy as np

import budgetkernel

X, y = budgetkernel.datasets.noisy_checkerboard(5_000, random_state=0)
clf = budgetkernel.BudgetedSGDClassifier(budget=50, maintenance="merge", gamma=1.0, lam=1e-4, random_state=0)
clf.fit(X, y)

workdir = tempfile.TemporaryDirectory()
model_path = Path(workdir.name) / "model.bkm"
clf.save(model_path)
print(f"saved {model_path.name}: {model_path.stat().st_size:,} bytes, {clf.n_support_} SVs")

X_new, _ = budgetkernel.datasets.noisy_checkerboard(200, random_state=1)
decision = clf.decision_function(X_new)
reloaded = budgetkernel.load(model_path)
print("Python reloads it with identical decision values:", np.array_equal(reloaded.decision_function(X_new), decision))

# %%
# The reference file for C++
# --------------------------
# The C++ program below reads a text file with one example per line: its features, then the
# decision value Python computed for it, written with 17 significant digits so that every
# double reads back exactly.

reference_path = Path(workdir.name) / "reference.txt"
np.savetxt(reference_path, np.column_stack([X_new, decision]), fmt="%.17g")

# %%
# The C++ program
# ---------------
# ``examples/embed/main.cpp`` loads the model with ``budgetkernel::load_model``, computes the
# decision values of the reference rows with ``Model::decision_function`` and reports the
# largest difference from Python's; it exits with status 0 when that is at most 1e-12.
#
# .. literalinclude:: ../../examples/embed/main.cpp
#    :language: cpp

# %%
# Compile it and run it
# ---------------------
# One translation unit, compiled directly against the repository's headers (no CMake, no
# installation). The repository is found from this script's location; sphinx-gallery runs
# the examples from their own directory, ``examples/``. The compiler is ``$CXX`` or the first
# of ``c++``, ``g++``, ``clang++`` on the ``PATH``.

try:
    examples_dir = Path(__file__).resolve().parent
except NameError:  # sphinx-gallery defines no __file__; it runs the example in examples/
    examples_dir = Path.cwd()
root = examples_dir.parent
source = root / "examples" / "embed" / "main.cpp"
header = root / "cpp" / "include" / "budgetkernel" / "budgetkernel.hpp"
compiler = next(
    (found for name in [os.environ.get("CXX"), "c++", "g++", "clang++"] if name and (found := shutil.which(name))),
    None,
)

if not source.is_file() or not header.is_file():
    print(f"the repository's C++ sources are not under {root}: compile step skipped")
elif compiler is None:
    print("no C++ compiler found ($CXX, c++, g++, clang++): compile step skipped")
else:
    program = Path(workdir.name) / "embed"
    # Run from the repository root, so that the paths in the command are the ones to type.
    flags = ["-std=c++17", "-O1", "-Icpp/include", "-Ithird_party/eigen", "examples/embed/main.cpp"]
    print("$", Path(compiler).name, *flags, "-o embed")
    start = time.perf_counter()
    build = subprocess.run(
        [compiler, *flags, "-o", str(program)], cwd=root, capture_output=True, text=True, check=False
    )
    if build.returncode != 0:
        raise RuntimeError(f"{compiler} failed to compile main.cpp:\n{build.stderr[-3000:]}")
    print(f"compiled in {time.perf_counter() - start:.0f} s (on the machine that built these docs)")
    run = subprocess.run(
        [str(program), str(model_path), str(reference_path)], capture_output=True, text=True, check=False
    )
    print(f"$ ./embed model.bkm reference.txt\n{run.stdout}{run.stderr}exit status {run.returncode}")
    if run.returncode != 0:
        raise RuntimeError("C++ did not predict what Python did (see its output above)")

workdir.cleanup()

# %%
# What the check means
# --------------------
# C++ computes the same decision values as Python from the same file, to within rounding.
# Where the CPU has AVX2 and FMA, Python uses a build of the core compiled for them (set
# ``BUDGETKERNEL_SIMD=baseline`` for the portable one), and fused multiply-adds round
# differently from the plain ``-O1`` build above.
#
# In a real project, build with optimisation (Release): the library is header-only, so it
# runs at the speed of the flags it is compiled with. The same file format goes the other
# way too: a model a C++ program trained and saved loads in Python with
# :func:`budgetkernel.load`.
