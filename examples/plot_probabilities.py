"""
Probabilities on a budget: a reliability diagram
================================================

Two ways to get class probabilities from a budgeted kernel model on a stream:

- **kernel logistic regression**, ``BudgetedSGDClassifier(loss="log")``: the same budgeted
  SGD steps as the SVM on the logistic loss, so its decision values are log-odds and
  ``predict_proba`` is their sigmoid;
- **online calibration**, ``BudgetedSGDClassifier(probability=True)`` (the hinge loss of the
  BSGD paper): a Platt-style map fitted, while the model learns, on the decision values each
  example got before it was learned (opt-in, as scikit-learn's ``SVC(probability=True)``).

A reliability diagram bins the test examples by their predicted P(y = +1) and plots each
bin's observed frequency of y = +1 against its mean prediction: a calibrated model sits on
the diagonal; below it for high predictions (and above it for low ones) it is
overconfident, the other way round underconfident.
"""

# %%
# One pass over a checkerboard stream
# -----------------------------------
# Both learners see the same 30,000 examples in chunks, at the same budget of 100 support
# vectors (merging), with the same kernel and regularisation.

import matplotlib.pyplot as plt
import numpy as np

from budgetkernel import BudgetedSGDClassifier, datasets

X, y = datasets.checkerboard(30_000, random_state=0)
X_test, y_test = datasets.checkerboard(10_000, random_state=1)

common = dict(budget=100, maintenance="merge", gamma=2.0, lam=1e-4, random_state=0)
models = {
    "kernel logistic regression (loss='log')": BudgetedSGDClassifier(loss="log", **common),
    "hinge BSGD, calibrated online (probability=True)": BudgetedSGDClassifier(probability=True, **common),
}
for model in models.values():
    for start in range(0, len(X), 5_000):
        model.partial_fit(X[start : start + 5_000], y[start : start + 5_000], classes=[-1, 1])

# %%
# Accuracy, log-loss and the reliability diagram
# ----------------------------------------------
# The log-loss rewards probabilities that are both sharp and right. The diagram uses 10
# equal-width bins of the predicted probability (bins with no test example are left out).


def reliability(p, positive, bins=10):
    edges = np.linspace(0.0, 1.0, bins + 1)
    which = np.clip(np.digitize(p, edges) - 1, 0, bins - 1)
    used = [b for b in range(bins) if (which == b).any()]
    return [p[which == b].mean() for b in used], [positive[which == b].mean() for b in used]


fig, ax = plt.subplots(figsize=(5.5, 5.0))
ax.plot([0, 1], [0, 1], color="0.6", ls="--", lw=1, label="perfectly calibrated")
for name, model in models.items():
    P = model.predict_proba(X_test)
    positive = (y_test == model.classes_[1]).astype(float)
    log_loss = -np.mean(np.log(np.clip(P[np.arange(len(y_test)), positive.astype(int)], 1e-300, 1.0)))
    accuracy = model.score(X_test, y_test)
    print(f"{name}: accuracy {accuracy:.4f}, log-loss {log_loss:.4f}")
    ax.plot(*reliability(P[:, 1], positive), marker="o", label=f"{name}\nlog-loss {log_loss:.3f}")
ax.set_xlabel("predicted P(y = +1)")
ax.set_ylabel("observed frequency of y = +1")
ax.set_xlim(0, 1)
ax.set_ylim(0, 1)
ax.legend(loc="upper left", fontsize=8)
ax.set_title("Checkerboard, B = 100")
fig.tight_layout()

# %%
# Kernel logistic regression's curve is a steep step across the diagonal: the examples it
# gives a probability of 0.2 or 0.3 are almost never +1, those at 0.7 or 0.8 almost always
# are. Its probabilities are *underconfident* (its regularised log-odds stay small), although
# its predictions are as accurate. The calibration rescales the SVM's decision values to the
# stream's own frequencies, so it is closer to the diagonal and has the lower log-loss here.
# The benchmark ``bench/bench_proba.py`` measures both on 100,000-example streams, also with
# lam and gamma chosen for each loss separately on a validation prefix of the stream.
#
# The calibration is off by default: it costs time per example and adds its window of
# prequential pairs to the model file. Without it a hinge model has no ``predict_proba``:

print(hasattr(BudgetedSGDClassifier(), "predict_proba"))
