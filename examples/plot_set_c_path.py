"""
The regularisation path of the exact SVM with ``set_C``
========================================================

:class:`~budgetkernel.IncrementalSVC` keeps the exact soft-margin SVM at its optimum as
examples arrive. :meth:`~budgetkernel.IncrementalSVC.set_C` moves that optimum to a new C by
the same adiabatic increments (Cauwenberghs & Poggio, NIPS 2000; Diehl & Cauwenberghs, IJCNN
2003) instead of training again.

Along the path each training example is in one of three sets: a margin SV (0 < alpha < C, on
the margin), an error SV (alpha = C, inside the margin or misclassified), or a reserve
example (alpha = 0, outside the margin, not an SV). This example follows the three sets, the
test accuracy and a few dual coefficients along C, and checks some points of the path
against scikit-learn's :class:`~sklearn.svm.SVC` (LIBSVM) trained from scratch.
"""

# %%
# Fit once, then move along C
# ---------------------------
# 1,000 noisy-checkerboard examples, the Gaussian kernel with gamma = 4. ``machine_state``
# returns the solver's state: each stored example's ``alpha`` and ``set`` (0 margin, 1 error,
# 2 reserve) and the largest violation of the optimality (KKT) conditions.

import time

import matplotlib.pyplot as plt
import numpy as np
from sklearn.svm import SVC

import budgetkernel

X, y = budgetkernel.datasets.noisy_checkerboard(1_000, random_state=0)
X_test, y_test = budgetkernel.datasets.noisy_checkerboard(5_000, random_state=1, clean=True)

Cs = np.geomspace(0.1, 1000, 41)
start = time.perf_counter()
svm = budgetkernel.IncrementalSVC(C=Cs[0], gamma=4.0).fit(X, y)
fit_seconds = time.perf_counter() - start

n_sets, accuracy, alpha, worst_kkt, path_seconds = [], [], [], 0.0, 0.0
for C in Cs:
    start = time.perf_counter()
    svm.set_C(C)
    path_seconds += time.perf_counter() - start
    state = svm.machine_state()
    n_sets.append(np.bincount(state["set"], minlength=3))
    alpha.append(state["alpha"] / C)
    worst_kkt = max(worst_kkt, state["kkt_violation"])
    accuracy.append(svm.score(X_test, y_test))
n_sets, alpha = np.array(n_sets), np.array(alpha)

start = time.perf_counter()
budgetkernel.IncrementalSVC(C=Cs[-1], gamma=4.0).fit(X, y)
refit_seconds = time.perf_counter() - start

print(f"the {len(Cs)} set_C steps from C = {Cs[0]:g} to {Cs[-1]:g}: {path_seconds:.3f} s in all")
print(f"one fit from scratch: {fit_seconds:.3f} s at C = {Cs[0]:g}, {refit_seconds:.3f} s at C = {Cs[-1]:g}")
print("(seconds on the machine that built these docs)")
print(f"largest KKT violation along the path: {worst_kkt:.1e}")
best = int(np.argmax(accuracy))
print(f"best clean test accuracy {accuracy[best]:.3f} at C = {Cs[best]:.3g}")

# %%
# The same path by LIBSVM
# -----------------------
# At a few C values, scikit-learn's SVC is trained from scratch on the same data and kernel.
# The support vectors must be the same examples and the decision values nearly equal.
# LIBSVM's solution is close to the optimum, not at it: it stops once its optimality gap is
# below ``tol`` (here 1e-8) and keeps the kernel matrix in single precision, so a small
# difference remains, larger at larger C (larger coefficients). The incremental solver
# keeps the KKT conditions to rounding error (the largest violation printed above).

for C in [0.1, 1.0, 10.0, 100.0]:
    svm.set_C(C)
    reference = SVC(C=C, gamma=4.0, tol=1e-8).fit(X, y)
    same_svs = np.array_equal(np.sort(reference.support_), np.flatnonzero(svm.machine_state()["alpha"] > 0))
    diff = np.abs(reference.decision_function(X_test) - svm.decision_function(X_test)).max()
    print(
        f"C = {C:>5}: {svm.n_support_} SVs (SVC: {reference.n_support_.sum()}, same examples: {same_svs}), "
        f"max |decision difference| {diff:.1e}"
    )

# %%
# The path
# --------
# Left: how many examples are margin SVs, error SVs and reserve. Middle: the test accuracy.
# Right: alpha / C of six examples that are margin SVs at the best C (dotted line); it moves
# between 0 (reserve) and 1 (error SV), and an example is a margin SV while it is strictly
# in between.

fig, (ax_sets, ax_acc, ax_alpha) = plt.subplots(1, 3, figsize=(14, 4.2))
for k, label in enumerate(["margin SVs", "error SVs", "reserve (not SVs)"]):
    ax_sets.plot(Cs, n_sets[:, k], label=label)
ax_sets.set(xscale="log", xlabel="C", ylabel="examples", title="the three sets")
ax_sets.legend()
ax_acc.plot(Cs, accuracy, "o-", ms=3)
ax_acc.set(xscale="log", xlabel="C", ylabel="clean test accuracy", title="accuracy")
on_margin = np.flatnonzero((alpha[best] > 0) & (alpha[best] < 1))
shown = on_margin[:: max(1, len(on_margin) // 6)][:6]
ax_alpha.plot(Cs, alpha[:, shown])
ax_alpha.axvline(Cs[best], color="k", ls=":", lw=1)
ax_alpha.set(xscale="log", xlabel="C", ylabel="alpha / C", title="dual coefficients of 6 examples")
for ax in (ax_sets, ax_acc, ax_alpha):
    ax.grid(True, alpha=0.3)
fig.tight_layout()
plt.show()

# %%
# Reading it
# ----------
# A small C lets most examples sit inside the margin as error SVs: a smooth boundary, many
# SVs. As C grows, examples leave the error set for the margin or the reserve, the model
# has fewer SVs and fits the training labels more closely, and on noisy labels that
# eventually costs test accuracy. ``set_C`` makes such a sweep cheap enough to choose C by
# looking at the whole path; the chosen C then stays in the model, which keeps learning
# from new examples with ``partial_fit`` and can forget old ones with ``unlearn`` (see
# :doc:`/guide/exact_svm`).
