"""
Training on Dask by parameter mixing
====================================

:func:`budgetkernel.dask.fit` trains one model per partition where the partition lives and
averages the models, round after round (iterative parameter mixing). Only models travel: a
budgeted model is at most B support vectors, however large its partition. The result depends
on the partitioning, not on the number of workers; with one partition it is ``fit`` itself.

This example runs a two-worker cluster inside this process. On a real cluster, pass a
``Client`` connected to it: the code is the same.
"""

import matplotlib.pyplot as plt
from distributed import Client, LocalCluster
from sklearn.base import clone

import budgetkernel as bk
import budgetkernel.dask as bkd
import dask.array as da

X, y = bk.datasets.noisy_checkerboard(80_000, random_state=0)
X_test, y_test = bk.datasets.noisy_checkerboard(10_000, random_state=1, clean=True)
estimator = bk.BudgetedSGDClassifier(budget=100, gamma=4.0, lam=1e-3, random_state=0)

cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None)
client = Client(cluster)

# %%
# Four partitions of 20,000 examples. ``sync_every`` sets how many rows each partition learns
# between two mixings: more rounds cost more communication and bring the copies closer.
Xd, yd = da.from_array(X, chunks=(20_000, 2)), da.from_array(y, chunks=20_000)
accuracy = {}
for sync_every in [20_000, 5_000, 1_000]:
    clf = bkd.fit(estimator, Xd, yd, client=client, sync_every=sync_every)
    accuracy[sync_every] = clf.score(X_test, y_test)
    print(f"sync_every={sync_every:>6}: {len(clf.mixing_history_):>2} rounds, "
          f"{clf.n_support_} SVs, test accuracy {accuracy[sync_every]:.3f}")

one_machine = clone(estimator).fit(X, y)
print(f"one model on the whole stream: test accuracy {one_machine.score(X_test, y_test):.3f}")

# %%
# Predicting is data-parallel too: :func:`budgetkernel.dask.predict` returns a Dask array
# computed where the blocks are.
labels = bkd.predict(clf, Xd)
print(type(labels).__name__, labels.shape, f"accuracy on the training stream {bkd.score(clf, Xd, yd):.3f}")

client.close()
cluster.close()

# %%
fig, ax = plt.subplots(figsize=(6, 3.5))
rounds = list(accuracy)
ax.bar([str(r) for r in rounds], [100 * accuracy[r] for r in rounds], color="tab:blue", label="4 partitions, mixed")
ax.axhline(100 * one_machine.score(X_test, y_test), color="k", ls="--", label="one model, whole stream")
ax.set(xlabel="sync_every (rows per partition per round)", ylabel="test accuracy (%)",
       ylim=(90, 100), title="Parameter mixing on Dask")
ax.legend(loc="lower right")
fig.tight_layout()
