"""
Prequential error curves on one stream
======================================

Prequential evaluation (test-then-train) predicts each example of a stream before learning
it. The running mistake rate it gives uses every example for both testing and training, needs
no held-out set, and shows how fast a learner converges. The learners here predict each
example inside the C++ loop that learns it, so the curve costs nothing extra.

Six learners, all with a budget of 100 SVs, read the same 50,000-example noisy checkerboard
stream through :func:`budgetkernel.stream.evaluate_prequential`. 15% of the stream's labels
are flipped, so even the best possible classifier makes a mistake on 15% of it: that floor is
drawn as a dashed line.
"""

# %%
# The stream
# ----------
# The chunks grow geometrically, so that the curve has points spread evenly on a log scale
# (one point per chunk). The test set is independent of the stream and has clean labels.

import matplotlib.pyplot as plt
import numpy as np

import budgetkernel
from budgetkernel.stream import evaluate_prequential

n = 50_000
X, y = budgetkernel.datasets.noisy_checkerboard(n, random_state=0)
X_test, y_test = budgetkernel.datasets.noisy_checkerboard(5_000, random_state=1, clean=True)
bounds = np.unique(np.geomspace(100, n, 30).astype(int))
bounds = np.concatenate([[0], bounds])


def chunks():
    for lo, hi in zip(bounds[:-1], bounds[1:]):
        yield X[lo:hi], y[lo:hi]


# %%
# The learners
# ------------

B, gamma = 100, 4.0
learners = {
    "BSGD, merge": budgetkernel.BudgetedSGDClassifier(
        budget=B, maintenance="merge", gamma=gamma, lam=1e-2, random_state=0
    ),
    "BSGD, random removal": budgetkernel.BudgetedSGDClassifier(
        budget=B, maintenance="remove-random", gamma=gamma, lam=1e-2, random_state=0
    ),
    "BPA-NN (ramp loss)": budgetkernel.BudgetedPAClassifier(
        budget=B, variant="nn", loss="ramp", C=0.3, gamma=gamma, random_state=0
    ),
    "Forgetron": budgetkernel.KernelPerceptron(budget=B, maintenance="forgetron", gamma=gamma, random_state=0),
    "SPA (expected B)": budgetkernel.SparsePAClassifier(target_svs=B, stream_length=n, gamma=gamma, random_state=0),
    "Twin Vector Machine": budgetkernel.TwinVectorMachine(budget=B, C=1.0, gamma=gamma, random_state=0),
}

# %%
# Test, then train
# ----------------
# ``evaluate_prequential`` feeds the chunks to ``partial_fit`` and returns the curve (examples
# seen, prequential accuracy so far), the online error over the whole stream and, given a
# test set, the final model's test accuracy.

results = {}
for name, clf in learners.items():
    results[name] = evaluate_prequential(clf, chunks(), classes=[-1, 1], test=(X_test, y_test))
    r = results[name]
    print(
        f"{name:<22} online error {r['online_error']:.3f}   "
        f"clean test accuracy {r['test_accuracy']:.3f}   {r['n_support']} SVs"
    )

# %%
# The curves
# ----------

fig, ax = plt.subplots(figsize=(8, 5))
for name, r in results.items():
    seen, accuracy = np.array(r["curve"]).T
    ax.plot(seen, 1 - accuracy, label=name)
ax.axhline(0.15, color="k", ls="--", lw=1, label="label noise (best possible)")
ax.set(xscale="log", xlabel="examples seen", ylabel="prequential error (mistakes so far / examples)")
ax.set_ylim(0, 0.6)
ax.grid(True, alpha=0.3)
ax.legend(loc="upper right", fontsize=9)
fig.tight_layout()
plt.show()

# %%
# Reading the curves
# ------------------
# The prequential error is cumulative: the mistakes of the first examples weigh on it to the
# end, so it approaches the floor slowly even when the current model is good (the clean test
# accuracy says how good). What the curves compare is the speed of learning. BSGD with
# merging, BPA-NN and the Twin Vector Machine keep most of what a dropped SV contributed and
# pull away from the others within the first thousand examples; random removal and the
# Forgetron flatten early, as each new SV pushes an informative one out. SPA, told that the
# stream holds 50,000 examples, admits SVs at the rate that gives about 100 over the whole
# stream (``target_svs``), so it starts with almost none and learns late.
#
# :doc:`/guide/streaming` covers ``partial_fit``, ``learn_one`` and prequential evaluation.
