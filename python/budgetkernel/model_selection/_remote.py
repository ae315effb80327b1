"""PrequentialSearch with ``client=``: the candidates spread over the workers of a Dask cluster.

The search itself (marks, rungs, halving) stays in the calling process; only the learning moves.
Each piece of the stream between two marks or rungs goes to every worker group at once: the
survivors are split into one group per worker thread, each group's candidates travel to a
worker with the piece (a scattered chunk, or a partition of a Dask collection, which every
worker reads where Dask put it: the data never passes through the calling process) and come
back having learned it, with ``partial_fit_many`` on the worker. Each candidate's model is the
same, bit for bit, as in a local search: it learns the same examples in the same order, and
pieces end at the same marks and rungs. dask is imported here only, so ``import budgetkernel``
never imports it.
"""

from __future__ import annotations

import re

import numpy as np

from .._labels import encode
from .._native import core as _core
from . import _regression

__all__ = ["check_client", "fit_collection", "is_collection", "run_scattered"]


def check_client(client):
    """The client, checked to be a dask.distributed Client (None: no distribution)."""
    if client is None:
        return None
    try:
        from distributed import Client
    except ImportError:  # pragma: no cover - the dask extra is not installed
        raise ImportError("client= needs dask.distributed: pip install 'budgetkernel[dask]'") from None
    if not isinstance(client, Client):
        raise TypeError(f"client must be a dask.distributed.Client, got {type(client).__name__}")
    return client


def is_collection(X):
    """Whether X is a Dask collection (told without importing dask)."""
    return type(X).__module__.split(".")[0] in ("dask", "dask_expr")


def _learn_piece(cands, X, y, start, stop, encoded, offset=0):
    """On a worker: candidates of one group learn rows start:stop of (X, y); returns them. A
    partition (``offset``: the stream row of its first row) is validated whole with its
    first piece, by every candidate, before any learns of it; its bad row is named by its
    row in the stream."""
    regression = _regression.is_regression(cands[0])
    if not encoded:
        try:
            X, y = cands[0]._chunk_data(X, y) if regression else cands[0]._chunk_data(X, y, None)
            if not regression:
                y = encode(y, cands[0].classes_, cands[0]._label_index)
            X = np.ascontiguousarray(X, dtype=np.float64)
            y = np.ascontiguousarray(y, dtype=np.float64 if regression else np.int32)
            if start == 0:
                for c in cands:
                    c._model.check_chunk(X, y)
        except ValueError as e:
            raise ValueError(f"the partition of stream rows {offset} to {offset + len(y) - 1}: {_in_stream(e, offset)}") from None
    X, y = X[start:stop], y[start:stop]
    if regression:  # float64 targets, one candidate after another
        _regression.fit_piece(cands, X, y, 1)
    else:
        _core.partial_fit_many([c._model for c in cands], np.ascontiguousarray(X, dtype=np.float64),
                               np.ascontiguousarray(y, dtype=np.int32), 1)
    return cands


def _in_stream(error, offset):
    """The core's message of a rejected row ("X row i", "target y[i]"), i of a partition
    counted in the stream instead."""
    shift = lambda m: f"{m.group(1)}{int(m.group(2)) + offset}{m.group(3)}"
    return re.sub(r"(\bX row |\btarget y\[)(\d+)(\]?)", shift, str(error))


def run_piece(search, X, y, start, stop, encoded, indices, offset=0):
    """The candidates ``indices`` learn rows start:stop of (X, y) (futures or arrays) on the
    workers; returns them in that order, as they came back."""
    client = search.client
    cands = [search.candidates_[i] for i in indices]
    n_groups = max(1, min(len(cands), sum(client.nthreads().values())))
    groups = np.array_split(np.arange(len(cands)), n_groups)
    futures = [
        client.submit(_learn_piece, [cands[j] for j in g], X, y, start, stop, encoded, offset, pure=False)
        for g in groups
    ]
    back = client.gather(futures)  # raises (and changes nothing) when a group failed
    return [c for group in back for c in group]


def run_scattered(search, X, yi, indices):
    """A validated, encoded chunk piece of the calling process, sent once to the workers."""
    client = search.client
    Xf, yf = client.scatter([np.ascontiguousarray(X), np.ascontiguousarray(yi)])  # yi: labels or targets
    return run_piece(search, Xf, yf, 0, len(yi), True, indices)


def fit_collection(search, X, y):
    """fit over Dask collections: the candidates are built from 500 evenly spaced rows (the
    rows the default grid's median heuristic reads of a whole array, so the grid is the local
    fit's), then every partition, in order, is split at the marks and rungs and learned by the
    survivors on the workers. The stream is read once per epoch (n_epochs); shuffle is not
    supported (the partitions are read in order)."""
    import dask
    import dask.array as da

    X, y = _as_arrays(X, y)
    n = X.shape[0]
    if getattr(search.estimator, "shuffle", False):
        raise ValueError("PrequentialSearch with a client reads Dask partitions in order: set shuffle=False")
    rows = np.linspace(0, n - 1, min(n, 500)).astype(int)
    if _regression.is_regression(search.estimator):  # no classes to collect
        (sample_X, sample_y), classes = dask.compute(X[rows], y[rows]), None
    else:
        sample_X, sample_y, classes = dask.compute(X[rows], y[rows], da.unique(y))
    epochs = getattr(search.estimator, "n_epochs", 1)
    search._start(sample_X, sample_y, classes, search.n_expected or n * epochs)
    if search._groups is not None:
        raise ValueError("the IncrementalSVC search along C runs locally: fit it with NumPy data")
    client = search.client
    fxs = client.compute(list(X.to_delayed().ravel()))  # the partitions, computed where Dask likes
    fys = client.compute(list(y.to_delayed().ravel()))
    for _ in range(epochs):
        offset = 0
        for fx, fy, m in zip(fxs, fys, X.chunks[0]):
            search._split(int(m), lambda a, b, fx=fx, fy=fy, o=offset: _learn(search, fx, fy, a, b, o))
            offset += int(m)


def _learn(search, fx, fy, start, stop, offset):
    """Rows start:stop of a partition (its first at stream row ``offset``) through the survivors."""
    alive = list(search._alive)
    search._account(alive, run_piece(search, fx, fy, start, stop, False, alive, offset))
    search._advance(alive)


def _as_arrays(X, y):
    """Dask arrays (row chunks, one column chunk, known lengths) from arrays or dataframes."""
    import dask.array as da
    import dask.dataframe as dd

    if isinstance(X, dd.DataFrame):
        X = X.to_dask_array(lengths=True)
    if isinstance(y, (dd.Series, dd.DataFrame)):
        y = y.to_dask_array(lengths=True)
    if not isinstance(X, da.Array) or not isinstance(y, da.Array):
        raise TypeError("fit with a client takes Dask arrays or dataframes (or NumPy data through partial_fit)")
    if X.ndim != 2 or y.ndim != 1 or any(np.isnan(X.chunks[0])) or len(X.chunks[1]) != 1:
        raise ValueError("X must be a 2-D Dask array of known row chunks and one column chunk, y 1-D")
    if X.shape[0] != y.shape[0]:
        raise ValueError(f"X has {X.shape[0]} rows, y {y.shape[0]}")
    return X, y.rechunk((X.chunks[0],))
