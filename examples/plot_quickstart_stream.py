"""
A budgeted kernel SVM on a stream
=================================

Train BSGD with merging on a noisy checkerboard, 1,000 examples at a time, and watch the clean
test accuracy grow while the number of support vectors stays at the budget.
"""

# %%
# Learn the stream chunk by chunk
# -------------------------------
# ``partial_fit`` learns one chunk and returns; ``classes`` names every label the stream
# will have. The model keeps at most ``budget`` support vectors: when a new one would exceed
# it, the SV with the smallest coefficient is merged with the partner that changes the model
# least.

import matplotlib.pyplot as plt
import numpy as np

import budgetkernel

X, y = budgetkernel.datasets.noisy_checkerboard(20_000, random_state=0)
X_test, y_test = budgetkernel.datasets.noisy_checkerboard(5_000, random_state=1, clean=True)

clf = budgetkernel.BudgetedSGDClassifier(budget=100, gamma=2.0, lam=1e-3, random_state=0)
seen, accuracy, n_support = [], [], []
for start in range(0, len(X), 1_000):
    clf.partial_fit(X[start : start + 1_000], y[start : start + 1_000], classes=np.array([-1, 1]))
    seen.append(start + 1_000)
    accuracy.append(clf.score(X_test, y_test))
    n_support.append(clf.n_support_)
    if start % 5_000 == 4_000:
        print(f"{start + 1_000:>6} examples: accuracy {accuracy[-1]:.3f}, {clf.n_support_} SVs")

# %%
# Accuracy grows, the model does not
# ----------------------------------

fig, ax = plt.subplots(figsize=(7, 4))
ax.plot(seen, accuracy, "o-", label="clean test accuracy")
ax.set(xlabel="examples learned", ylabel="clean test accuracy")
ax.grid(True, alpha=0.3)
ax_svs = ax.twinx()
ax_svs.plot(seen, n_support, "s--", color="tab:orange", label="support vectors")
ax_svs.set(ylabel="support vectors", ylim=(0, 1.2 * clf.budget))
fig.legend(loc="lower right", bbox_to_anchor=(0.85, 0.2))
fig.tight_layout()
plt.show()

# %%
# Keep going
# ----------
# The same model keeps learning from later chunks, or one example at a time with
# ``learn_one``; ``clf.save(path)`` writes it to a file that resumes training exactly and
# loads in C++ too (:doc:`/guide/persistence`).
