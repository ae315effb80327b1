"""
Unlearning examples from the exact SVM
======================================

:meth:`budgetkernel.IncrementalSVC.unlearn` removes a learned example from the exact SVM by
decremental steps that keep every optimality (KKT) condition (Cauwenberghs & Poggio, NIPS
2000). The result is the SVM that would have been trained without that example, not an
approximation of it: this example checks that against a model trained from scratch on the
remaining data, first for one example, then for every example in one square of the board.

Removing data from a trained model on request (a user who withdraws consent, a mislabelled
batch, a sensor that turned out faulty) then costs a few cheap steps instead of a new fit.
"""

# %%
# Train the exact SVM
# -------------------
# 600 noisy-checkerboard examples. Examples are numbered 0, 1, 2, ... in the order learned;
# ``unlearn`` takes that number.

import time

import matplotlib.pyplot as plt
import numpy as np

import budgetkernel
from budgetkernel.plot import plot_decision_boundary

X, y = budgetkernel.datasets.noisy_checkerboard(600, random_state=0)
_, y_clean = budgetkernel.datasets.noisy_checkerboard(600, random_state=0, clean=True)  # same X
params = dict(C=10.0, gamma=4.0)
svm = budgetkernel.IncrementalSVC(**params).fit(X, y)
print(f"trained on {svm.n_seen_} examples: {svm.n_support_} SVs")

# Decision values are compared on a grid over the whole input square.
g = np.linspace(0, 4, 150)
grid = np.column_stack([np.repeat(g, len(g)), np.tile(g, len(g))])
before = svm.decision_function(grid)


def max_difference(model, keep):
    """Largest |decision value| difference between ``model`` and a fresh fit on X[keep],
    the fresh model, and the seconds its fit took."""
    start = time.perf_counter()
    fresh = budgetkernel.IncrementalSVC(**params).fit(X[keep], y[keep])
    seconds = time.perf_counter() - start
    return np.abs(model.decision_function(grid) - fresh.decision_function(grid)).max(), fresh, seconds


# %%
# Forget one example
# ------------------
# A mislabelled example (one whose label the noise flipped) that the SVM holds as an error
# SV, that is, with the largest coefficient it allows (alpha = C).

square = np.flatnonzero((X[:, 0] >= 1) & (X[:, 0] < 2) & (X[:, 1] >= 2) & (X[:, 1] < 3))
error_svs = np.flatnonzero(svm.machine_state()["set"] == 1)
first = int(np.setdiff1d(error_svs[y[error_svs] != y_clean[error_svs]], square)[0])
svm.unlearn(first)
keep = np.setdiff1d(np.arange(len(X)), [first])
diff, fresh, _ = max_difference(svm, keep)
print(f"unlearned example {first} (label {y[first]:+d} at {np.round(X[first], 2)})")
print(f"  max |unlearned - trained without it| = {diff:.1e}  ({svm.n_support_} SVs, fresh fit {fresh.n_support_})")

# %%
# Forget a whole square
# ---------------------
# Every example in the square [1, 2) x [2, 3) is unlearned, one after the other. With its
# examples gone the model has nothing left to say about that square, and the boundary
# around it changes: the figure shows it.

start = time.perf_counter()
for i in square:
    svm.unlearn(int(i))
unlearn_seconds = time.perf_counter() - start
keep = np.setdiff1d(np.arange(len(X)), np.union1d(square, [first]))
diff, fresh, refit_seconds = max_difference(svm, keep)
print(f"unlearned the {len(square)} examples of the square as well: {len(keep)} examples remain")
print(f"  max |unlearned - trained without them| = {diff:.1e}  ({svm.n_support_} SVs, fresh fit {fresh.n_support_})")
print(f"  largest KKT violation after unlearning: {svm.machine_state()['kkt_violation']:.1e}")
print(f"  decision values moved by up to {np.abs(svm.decision_function(grid) - before).max():.2f}")
print(
    f"  unlearning them took {unlearn_seconds:.3f} s, training on the {len(keep)} from scratch "
    f"{refit_seconds:.3f} s (on the machine that built these docs)"
)

# %%
# Before and after
# ----------------
# The model before unlearning, and after; the forgotten examples are circled.

original = budgetkernel.IncrementalSVC(**params).fit(X, y)
fig, axes = plt.subplots(1, 3, figsize=(14, 4.8))
for ax, model, title in [(axes[0], original, "trained on all 600"), (axes[1], svm, "after unlearn")]:
    plot_decision_boundary(model, ax=ax, resolution=150)
    ax.scatter(*X[np.union1d(square, [first])].T, s=60, facecolors="none", edgecolors="g", label="forgotten")
    ax.set_title(f"{title}: {model.n_support_} SVs")
    ax.legend(loc="upper right", fontsize=8)
change = (svm.decision_function(grid) - before).reshape(len(g), len(g)).T
limit = np.abs(change).max()
image = axes[2].imshow(change, origin="lower", extent=(0, 4, 0, 4), cmap="PiYG", vmin=-limit, vmax=limit)
axes[2].set_title("change of the decision value")
fig.colorbar(image, ax=axes[2], shrink=0.8)
fig.tight_layout()
plt.show()

# %%
# What it costs
# -------------
# Each ``unlearn`` is a sequence of small steps over the stored examples, like learning one
# example, so forgetting a few examples costs far less than training again (the times
# above). The exact SVM keeps every example it learned (that is what makes exact unlearning
# possible), so its memory grows with the data: this is for data sets of thousands to tens
# of thousands of examples, not endless streams. The budgeted learners cannot unlearn
# exactly: a merged or projected SV no longer holds one example apart from the others.
# :doc:`/guide/exact_svm` describes the exact SVM's other operations.
