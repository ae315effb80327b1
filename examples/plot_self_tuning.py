"""
Self-tuning gamma and lam in one pass
=====================================

:class:`~budgetkernel.model_selection.PrequentialSearch` runs a grid of candidates side by side
on the stream. Each candidate predicts an example before learning it, so its mistakes are an
honest estimate of its error; at each *rung* the worse two thirds are dropped, and the
survivors keep learning. One pass, no held-out set, no replay.
"""

import matplotlib.pyplot as plt

import budgetkernel as bk
from budgetkernel.model_selection import PrequentialSearch

n = 60_000
train, (X_test, y_test) = bk.datasets.make_stream_and_test(
    "noisy_checkerboard", n, 10_000, random_state=0, chunk_size=5_000
)
search = PrequentialSearch(bk.BudgetedSGDClassifier(budget=100, random_state=0), n_expected=n, n_jobs=1)
for X, y in train:
    search.partial_fit(X, y, classes=[-1, 1])

print(f"{len(search.candidates_)} candidates, rungs at {search.rungs_} examples")
print(f"chosen: gamma = {search.best_params_['gamma']:.3g}, lam = {search.best_params_['lam']:.3g}")
print(f"tuned test accuracy: {search.score(X_test, y_test):.3f}")

# %%
# The same learner with its defaults (``gamma="scale"``, ``lam=1e-3``) on the same stream: the
# default γ is a scale for standardised features, several times too small for the
# checkerboard's unit cells.
default = bk.BudgetedSGDClassifier(budget=100, random_state=0)
for X, y in bk.datasets.make_stream_and_test("noisy_checkerboard", n, 10_000, random_state=0, chunk_size=5_000)[0]:
    default.partial_fit(X, y, classes=[-1, 1])
print(f"default gamma = {default.gamma_:.3g}: test accuracy {default.score(X_test, y_test):.3f}")

# %%
# Each candidate's prequential error over each rung's window: the survivors are the lines
# that reach the right-hand side.
res = search.results_
fig, ax = plt.subplots(figsize=(7, 4.2))
edges = search.rungs_
for params, errors in zip(res["params"], res["rung_errors"]):
    xs = edges[: len(errors)]
    label = f"γ={params['gamma']:.2g}, λ={params['lam']:.2g}" if len(errors) == len(edges) else None
    ax.plot(xs, errors, "o-", alpha=0.9 if label else 0.3, label=label)
ax.set(xscale="log", xlabel="examples seen (rung)", ylabel="prequential error in the window",
       title="Successive halving on the stream")
ax.legend(fontsize=8)
fig.tight_layout()

# %%
# The whole table, as ``summary()`` prints it.
print(search.summary())
