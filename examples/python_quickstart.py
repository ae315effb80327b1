"""Stream a noisy checkerboard through a budgeted kernel SVM (BSGD), chunk by chunk.

    python examples/python_quickstart.py

The training stream has 15% label noise; accuracy is measured on clean labels, so 1.0 is
the best possible (the Bayes rule scores 0.85 on the noisy labels).
"""

import numpy as np

import budgetkernel

X_stream, y_stream = budgetkernel.datasets.noisy_checkerboard(20_000, random_state=0)
X_test, y_test = budgetkernel.datasets.noisy_checkerboard(5_000, random_state=1, clean=True)

clf = budgetkernel.BudgetedSGDClassifier(
    budget=100, maintenance="merge", kernel="rbf", gamma=2.0, lam=1e-3, random_state=0
)
classes = np.array([-1, 1])
chunk = 1_000
for start in range(0, len(X_stream), chunk):  # the stream arrives 1,000 examples at a time
    clf.partial_fit(X_stream[start : start + chunk], y_stream[start : start + chunk], classes=classes)
    if (start // chunk) % 5 == 4:
        print(f"after {start + chunk:>6} examples: clean test accuracy {clf.score(X_test, y_test):.3f}")

print(f"{clf.n_support_} support vectors (budget {clf.budget}), accuracy {clf.score(X_test, y_test):.3f}")
