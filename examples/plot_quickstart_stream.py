"""
A budgeted kernel SVM on a stream
=================================

Train BSGD with merging on a noisy checkerboard, 1,000 examples at a time, and watch the clean
test accuracy grow while the number of support vectors stays at the budget.
"""

import numpy as np

import budgetkernel

X, y = budgetkernel.datasets.noisy_checkerboard(20_000, random_state=0)
X_test, y_test = budgetkernel.datasets.noisy_checkerboard(5_000, random_state=1, clean=True)

clf = budgetkernel.BudgetedSGDClassifier(budget=100, gamma=2.0, lam=1e-3, random_state=0)
for start in range(0, len(X), 1_000):
    clf.partial_fit(X[start : start + 1_000], y[start : start + 1_000], classes=np.array([-1, 1]))
    if start % 5_000 == 4_000:
        print(f"{start + 1_000:>6} examples: accuracy {clf.score(X_test, y_test):.3f}, {clf.n_support_} SVs")
