"""
Training from a LIBSVM file in chunks
=====================================

A data set larger than memory can still train a budgeted model: read it in chunks, give
each chunk to ``partial_fit``, and drop it. The model never holds more than B support
vectors, so memory stays flat however long the file is.

:func:`budgetkernel.io.iter_svmlight` reads a LIBSVM / svmlight text file (plain or gzip) in
chunks of ``chunk_size`` rows, parsed by the C++ core. This example writes such a file, trains
from it chunk by chunk, and measures the memory the Python side holds while doing so.
"""

# %%
# Write a LIBSVM file
# -------------------
# 60,000 examples of Breiman's waveform problem (21 features, 3 classes), generated and
# written 5,000 at a time with :func:`budgetkernel.io.dump_svmlight`, so that the whole
# data set never sits in memory here either. The file goes to a temporary directory.

import tempfile
import tracemalloc
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np

import budgetkernel
from budgetkernel.io import dump_svmlight, iter_svmlight, load_svmlight
from budgetkernel.plot import plot_accuracy_curve

n, n_features = 60_000, 21
workdir = tempfile.TemporaryDirectory()
path = Path(workdir.name) / "waveform.svm"
with open(path, "w") as f:
    for X_chunk, y_chunk in budgetkernel.datasets.stream("waveform", n, chunk_size=5_000, random_state=0):
        dump_svmlight(X_chunk, y_chunk, f)
print(f"wrote {path.name}: {n:,} examples, {path.stat().st_size / 2**20:.1f} MiB of text")
with open(path) as f:
    print("its first line:", f.readline()[:80], "...")

# %%
# Train chunk by chunk
# --------------------
# Given the number of features, the index base and the label type, ``iter_svmlight`` reads
# the file in a single pass (without them it makes a first pass to find them). Each chunk
# goes to ``partial_fit``; ``classes`` names every label of the stream up front.
#
# :mod:`tracemalloc` records the memory allocated through Python, NumPy arrays included,
# after each chunk and at its peak. The C++ side (the reader's 1 MiB block and the model's B
# support vectors) is outside it, and fixed in size too.

clf = budgetkernel.BudgetedSGDClassifier(budget=100, random_state=0)
chunks = iter_svmlight(path, chunk_size=2_000, n_features=n_features, zero_based=False, label_dtype=np.int64)
seen, held, peak = [], [], []
tracemalloc.start()
for X_chunk, y_chunk in chunks:
    clf.partial_fit(X_chunk, y_chunk, classes=[0, 1, 2])
    current, highest = tracemalloc.get_traced_memory()
    seen.append(clf.counters_["examples"])
    held.append(current / 2**20)
    peak.append(highest / 2**20)
tracemalloc.stop()

X_test, y_test = budgetkernel.datasets.waveform(5_000, random_state=1)
print(f"trained on {seen[-1]:,} examples in {len(seen)} chunks: {clf.n_support_} SVs")
print(f"online error {clf.online_error_:.3f}, test accuracy {clf.score(X_test, y_test):.3f}")
print(f"Python-side memory while streaming: peak {max(peak):.2f} MiB")

# %%
# For comparison: the whole file at once
# --------------------------------------
# :func:`budgetkernel.io.load_svmlight` reads the file into one array, which is fine while
# it fits in memory.

tracemalloc.start()
X_all, y_all = load_svmlight(path)
whole_peak = tracemalloc.get_traced_memory()[1] / 2**20
tracemalloc.stop()
print(f"load_svmlight of the whole file: peak {whole_peak:.2f} MiB, the array alone {X_all.nbytes / 2**20:.2f} MiB")
del X_all, y_all
workdir.cleanup()

# %%
# Memory and accuracy along the file
# ----------------------------------

fig, (ax_mem, ax_acc) = plt.subplots(1, 2, figsize=(12, 4.4))
seen = np.array(seen)
ax_mem.plot(seen, peak, label="streaming: peak so far")
ax_mem.plot(seen, held, label="streaming: held after each chunk")
ax_mem.plot(seen, seen * n_features * 8 / 2**20, "--", label="the examples read so far, as one array")
ax_mem.axhline(whole_peak, color="k", ls=":", label="load_svmlight of the whole file (peak)")
ax_mem.set(xlabel="examples read", ylabel="MiB allocated through Python", title="memory")
ax_mem.grid(True, alpha=0.3)
ax_mem.legend(loc="upper left", bbox_to_anchor=(0.0, 0.93), fontsize=8)
plot_accuracy_curve([clf], ax=ax_acc, labels=["BSGD merge, B = 100"])
ax_acc.set_xscale("linear")  # as the memory panel
ax_acc.set_title("prequential accuracy")
fig.tight_layout()
plt.show()

# %%
# The same from the command line
# ------------------------------
# The command-line tool trains from a LIBSVM file in chunks the same way, without writing
# any Python::
#
#     python -m budgetkernel train waveform.svm -o model.bkm --budget 100 --chunk-size 2000
#
# and the C++ library has the same reader (``budgetkernel/libsvm.hpp``) for programs that
# train or predict without Python. See :doc:`/guide/cli` and :doc:`/guide/streaming`.
