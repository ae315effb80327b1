"""
Decision boundaries of the learners on the checkerboard
=======================================================

Every learner gets the same noisy checkerboard stream (20,000 examples, 15% of the labels
flipped) and a budget of B = 100 support vectors, with the same Gaussian kernel. The panels
show where each model predicts +1 (red) and -1 (blue), its support vectors (black crosses),
and its accuracy on a clean test set, that is, how close it comes to the 4 x 4 board itself.

The learners differ in what they do once the budget is full: merge two SVs into one, project
an SV onto the others, remove one, or (the Twin Vector Machine) keep an exact SVM on B weighted
points. The exact, unbudgeted SVM (:class:`~budgetkernel.IncrementalSVC`) is shown for
reference on the first 2,000 examples only, since its cost grows with every example it keeps.
"""

# %%
# The data
# --------
# Inputs are uniform on [0, 4)^2. The training labels are noisy; the test labels are the
# clean board, so a perfect model scores 1.0 on it.

import matplotlib.pyplot as plt

import budgetkernel
from budgetkernel.plot import plot_decision_boundary

X, y = budgetkernel.datasets.noisy_checkerboard(20_000, random_state=0)
X_test, y_test = budgetkernel.datasets.noisy_checkerboard(5_000, random_state=1, clean=True)

# %%
# The learners
# ------------
# One kernel width for all (gamma = 4) so that the panels compare budget strategies, not
# kernels. ``random_state`` makes each run repeatable.

B, gamma = 100, 4.0
learners = {
    "BSGD, merge": budgetkernel.BudgetedSGDClassifier(
        budget=B, maintenance="merge", gamma=gamma, lam=1e-2, random_state=0
    ),
    "BSGD, projection": budgetkernel.BudgetedSGDClassifier(
        budget=B, maintenance="project", gamma=gamma, lam=1e-2, random_state=0
    ),
    "BSGD, random removal": budgetkernel.BudgetedSGDClassifier(
        budget=B, maintenance="remove-random", gamma=gamma, lam=1e-2, random_state=0
    ),
    "BPA-NN (ramp loss)": budgetkernel.BudgetedPAClassifier(
        budget=B, variant="nn", loss="ramp", C=0.3, gamma=gamma, random_state=0
    ),
    "Projectron++": budgetkernel.KernelPerceptron(budget=B, maintenance="projectron++", gamma=gamma, random_state=0),
    "SPA (expected B)": budgetkernel.SparsePAClassifier(target_svs=B, gamma=gamma, random_state=0),
    "Twin Vector Machine": budgetkernel.TwinVectorMachine(budget=B, C=1.0, gamma=gamma, random_state=0),
    "exact SVM, 2,000 examples": budgetkernel.IncrementalSVC(C=1.0, gamma=gamma),
}

for name, clf in learners.items():
    n = 2_000 if isinstance(clf, budgetkernel.IncrementalSVC) else len(X)
    clf.fit(X[:n], y[:n])
    print(f"{name:<28} {clf.n_support_:>5} SVs   clean test accuracy {clf.score(X_test, y_test):.3f}")

# %%
# The boundaries
# --------------
# :func:`budgetkernel.plot.plot_decision_boundary` evaluates ``decision_function`` on a grid
# and marks ``support_vectors_``.

fig, axes = plt.subplots(2, 4, figsize=(14, 7.4), sharex=True, sharey=True)
for ax, (name, clf) in zip(axes.ravel(), learners.items()):
    plot_decision_boundary(clf, ax=ax, resolution=200)
    ax.set_title(f"{name}\n{clf.n_support_} SVs, accuracy {clf.score(X_test, y_test):.3f}", fontsize=10)
    ax.get_legend().remove()
fig.tight_layout()
plt.show()

# %%
# What to read in it
# ------------------
# Merging and projection keep most of what the dropped SV contributed, so 100 SVs draw the
# whole board; so does BPA-NN, which spreads a removed SV's weight over its nearest
# neighbour and the new example. Random removal throws that contribution away and the board
# frays. Projectron++ updates on every mistake and margin error, noisy labels included. SPA
# never removes an SV: it admits an example as an SV with a probability that grows with its
# loss, so its budget holds in expectation only (``target_svs``). The exact SVM sees only a
# tenth of the stream and needs many more SVs, and its time and memory grow with every example
# it keeps. :doc:`/guide/choosing` compares the learners on more streams.
