"""Training and prediction over Dask collections: budgeted models mixed across workers.

A budgeted model is tiny (B support vectors) while its stream is huge, so only models travel:
``fit`` trains one copy of the current model per partition, where the partition lives, and
combines the copies (:func:`budgetkernel.combine`) into the next round's model: iterative
parameter mixing (McDonald, Hall & Mann 2010), the mixing step compressed back to the budget by
the learner's own maintenance (Kamp et al. 2019). ``predict`` / ``decision_function`` /
``score`` put a fitted model in the graph once and map it over the blocks.

This module imports dask (``pip install budgetkernel[dask]``); ``import budgetkernel`` does not.
Without a ``client``, ``fit`` runs on a ``LocalCluster`` with one worker process per core,
started and closed inside the call; with one, on that client's cluster (one machine or many).
"""

from __future__ import annotations

import contextlib
import numbers
import os
import pickle
import time
from concurrent.futures import CancelledError

import numpy as np
from sklearn.base import clone
from sklearn.utils import check_array
from sklearn.utils.validation import _get_feature_names, check_is_fitted, validate_data

try:
    import dask
    import dask.array as da
    from distributed import Client, LocalCluster, default_client
except ImportError as e:  # pragma: no cover - the extra is missing
    raise ImportError(
        f"budgetkernel.dask needs dask.distributed ({e}); install it with: pip install 'budgetkernel[dask]'"
    ) from e

from . import _combine
from ._base import OnlineClassifierMixin
from ._cascade import cascade_fit
from ._labels import class_set, same_class_set
from ._partition_stats import _block_stats, _gamma_of_all
from ._proba import _calibrates
from ._regressor import OnlineRegressorMixin
from .svm import IncrementalSVC

__all__ = ["decision_function", "fit", "predict", "score"]


# ------------------------------------------------------------------------ fit
def fit(estimator, X, y, *, classes=None, client=None, sync_every=None, n_epochs=1, timeout=None):
    """Trains ``estimator`` on a Dask collection by iterative parameter mixing.

    In round r one task per partition (run where the partition lives), sent the current
    mixture, continues a copy of it on the partition's next ``sync_every`` rows and
    returns it; the copies are combined with weights = the examples each learned this round
    (``budgetkernel._combine.combine``, the mixture as their common base), and the result is the
    next round's mixture. The unit of mixing is the partition, not the worker, so the result
    depends on the partitioning only: the same partitions on 1 or 100 workers give the same
    model, and one partition gives what ``estimator.fit`` gives (byte for byte).

    An :class:`~budgetkernel.IncrementalSVC` is trained as a cascade instead (Graf et al.
    2004: partition SVMs combined in a tree, with feedback until the global optimum).
    Regressors mix the same way (their predictions averaged, the intercept too); the KRLS
    filters, which :func:`budgetkernel.combine` does not combine, are refused.

    With ``probability=True`` the mixture's calibration pools the prequential pairs (decision
    value, label) that the round's copies recorded, after the last mixture's own
    (``PlattCalibration::pooled``: the newest of each copy kept, the map refitted on them),
    as one stream's calibration keeps its newest pairs; one partition keeps its own.

    Parameters
    ----------
    estimator : budgetkernel estimator
        Unfitted: a fresh model is trained (``gamma='scale'`` resolved once, from all the data,
        as ``fit`` resolves it, and passed to every partition as that number: the result's
        ``gamma`` is the number). Fitted: training continues from it (its classes and gamma).
        The estimator itself is not changed. Its own ``n_epochs`` and ``shuffle`` are not used:
        each partition is learned in its order, ``n_epochs`` times.
    X : dask array of shape (n_samples, n_features), rows chunked (one column chunk), or dask
        DataFrame
    y : dask array of shape (n_samples,) or dask Series, partitioned like X (a dask array is
        rechunked to X's row chunks); labels, or a regressor's real targets
    classes : array-like, default=None
        A classifier's every label; None computes them from y (on the workers). Regressors
        take none.
    client : distributed.Client, default=None
        The cluster to use; None starts a LocalCluster (one worker process per core,
        ``os.cpu_count()``) for the call and closes it afterwards.
    sync_every : int, default=None
        Rows each partition learns per round; None is its whole partition (one round per
        epoch). A partition that has run out sits the remaining rounds of the epoch out.
    n_epochs : int, default=1
        Passes over the data.
    timeout : float, default=None
        Seconds that reading the partitions, and each round, may take before ``fit`` gives up
        with a RuntimeError (the cluster's tasks cancelled); None waits as long as the tasks
        run.

    Returns
    -------
    A new fitted estimator of the same class, with ``mixing_history_``: one dict per round
    (round, examples, bytes_sent = the mixture sent with each partition's task plus the
    returned models, degradation = the combine's weight degradation, train_s, serialise_s, combine_s,
    wall_s; the times are the slowest task's training and (de)serialisation, the driver's
    combine, and the round's wall time).

    Raises
    ------
    TypeError, ValueError
        Before any training: input that is not a Dask collection, misaligned X and y, several
        column chunks, bad ``sync_every`` / ``n_epochs`` / ``timeout``; a partition whose X is
        not what ``fit`` takes (NaN, complex values, ...), of another width than the others,
        with labels outside ``classes``, or columns other than a fitted estimator's
        ``feature_names_in_`` (the partition named).
    RuntimeError
        A partition's task failed (after one retry: the scheduler reruns the task of a worker
        that died elsewhere), its result could not be fetched, or ``timeout`` passed, naming
        the stage (round) and the partition; no partial model is returned.

    Examples
    --------
    Four partitions on an in-process cluster, mixed after each pass over them:

    >>> import dask.array as da
    >>> from distributed import Client
    >>> from budgetkernel import BudgetedSGDClassifier, datasets
    >>> from budgetkernel import dask as bk_dask
    >>> X, y = datasets.checkerboard(4000, random_state=0)
    >>> X_d, y_d = da.from_array(X, chunks=(1000, 2)), da.from_array(y, chunks=1000)
    >>> client = Client(processes=False, n_workers=1, threads_per_worker=1, dashboard_address=":0")
    >>> clf = bk_dask.fit(BudgetedSGDClassifier(budget=100, gamma=2.0, random_state=0), X_d, y_d,
    ...                   client=client, n_epochs=2)
    >>> type(clf).__name__, clf.n_support_, len(clf.mixing_history_)
    ('BudgetedSGDClassifier', 100, 2)
    >>> client.close()

    A regressor, mixed after each quarter of its partitions:

    >>> import numpy as np
    >>> from budgetkernel import BudgetedSGDRegressor
    >>> rng = np.random.default_rng(0)
    >>> Xr = rng.uniform(-1, 1, size=(4000, 2))
    >>> yr = np.sin(3 * Xr[:, 0]) + Xr[:, 1]
    >>> client = Client(processes=False, n_workers=1, threads_per_worker=1, dashboard_address=":0")
    >>> reg = bk_dask.fit(BudgetedSGDRegressor(budget=50, gamma=2.0), da.from_array(Xr, chunks=(1000, 2)),
    ...                   da.from_array(yr, chunks=1000), client=client, sync_every=250)
    >>> len(reg.mixing_history_), bool(reg.score(Xr, yr) > 0.8)
    (4, True)
    >>> client.close()
    """
    sync_every = _check_counts(sync_every, n_epochs)
    _check_estimator(estimator)
    if classes is not None and _is_regressor(estimator):
        raise ValueError(f"classes does not apply to {type(estimator).__name__}, a regressor")
    cascade = _is_cascade(estimator)
    if cascade and (sync_every is not None or n_epochs != 1):
        raise ValueError("sync_every and n_epochs do not apply to IncrementalSVC (trained as a cascade to the optimum)")
    timeout = _check_timeout(timeout)
    x_parts, y_parts = _partitions(X, y)
    fresh = "_model" not in estimator.__dict__
    names = _feature_names(X) if fresh else _checked_names(estimator, X)
    regressor = _is_regressor(estimator)
    with _client_or_local(client) as client:
        blocks = client.compute(
            [dask.delayed(_as_block)(xp, yp, i, regressor) for i, (xp, yp) in enumerate(zip(x_parts, y_parts))]
        )
        try:
            futures = client.map(_block_stats, blocks, labels=not regressor,
                                 moments=fresh and _scales(estimator), pure=False)
            stats = _results(client, futures, timeout, "reading the partitions")
            start, classes = _starting_model(estimator, classes, stats)
            if cascade:
                model = cascade_fit(start, blocks, client, classes)
            else:
                model = _mix(client, start, blocks, [s["n"] for s in stats], sync_every, n_epochs, classes, timeout)
        except (OSError, CancelledError) as e:  # the cluster's own failures (a lost connection, ...)
            raise RuntimeError(f"dask.fit: the cluster failed: {type(e).__name__}: {e}; no model is returned") from e
    if names is not None:  # as fit on a pandas DataFrame (predict then checks them)
        model.feature_names_in_ = names
    return model


def _feature_names(X):
    """The feature names fit would take from X's pandas partitions (None: not a DataFrame, or
    not all str)."""
    if not _is_frame(X):
        return None
    import pandas as pd

    return _get_feature_names(pd.DataFrame(columns=X.columns))


def _checked_names(estimator, X):
    """The fitted estimator's feature names, X's checked against them and its width against
    n_features_in_ as partial_fit checks a chunk (scikit-learn's messages: a DataFrame with
    other columns, or in another order, is refused). The mixture then travels without them
    (its partitions are arrays) and the result gets them back."""
    if _is_frame(X):
        validate_data(estimator, X._meta, reset=False, skip_check_array=True)  # the columns, no rows
    elif not np.isnan(X.shape[1]):  # (an unknown width is checked on the partitions: _starting_model)
        validate_data(estimator, np.empty((0, X.shape[1])), reset=False, skip_check_array=True)
    return getattr(estimator, "feature_names_in_", None)


def _check_timeout(timeout):
    if timeout is None:
        return None
    if isinstance(timeout, bool) or not isinstance(timeout, numbers.Real) or not timeout > 0 or timeout == np.inf:
        raise ValueError(f"timeout must be a positive number of seconds or None; got {timeout!r}")
    return float(timeout)


def _check_counts(sync_every, n_epochs):
    for name, value in (("sync_every", sync_every), ("n_epochs", n_epochs)):
        if value is None and name == "sync_every":
            continue
        if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
            raise ValueError(f"{name} must be a positive integer{' or None' if name == 'sync_every' else ''}; "
                             f"got {value!r}")
    return None if sync_every is None else int(sync_every)


def _check_estimator(estimator):
    if not isinstance(estimator, OnlineClassifierMixin) and not _is_regressor(estimator):
        raise TypeError(f"estimator must be a budgetkernel estimator; got {type(estimator).__name__}")
    # refused before any work (every round combines); the cascade's IncrementalSVC aside. A
    # core class without to_bytes stands for several cores (KLMSRegressor's): combine checks it.
    core = None if _is_cascade(estimator) else estimator._core_class()
    why = _combine._NOT_COMBINED.get(type(estimator).__name__)
    if why or (core is not None and hasattr(core, "to_bytes") and not hasattr(core, "combine")):
        raise TypeError(f"dask.fit mixes models with budgetkernel.combine, which does not combine "
                        f"{type(estimator).__name__}" + (f": {why}" if why else ""))


def _is_regressor(estimator):
    return isinstance(estimator, OnlineRegressorMixin)


def _is_cascade(estimator):
    return isinstance(estimator, IncrementalSVC)


@contextlib.contextmanager
def _client_or_local(client):
    """The given client, or a LocalCluster of one single-threaded worker process per core,
    closed on the way out (the embedded default)."""
    if client is not None:
        if not isinstance(client, Client):
            raise TypeError(f"client must be a distributed.Client or None; got {type(client).__name__}")
        yield client
        return
    n = os.cpu_count() or 1
    with LocalCluster(n_workers=n, threads_per_worker=1, processes=True, dashboard_address=":0") as cluster:
        with Client(cluster, set_as_default=False) as local:  # the caller's default client stays theirs
            yield local


# ------------------------------------------------------------ the partitions
def _partitions(X, y):
    """The delayed partitions of X and y, one pair per row partition."""
    x_parts = _x_partitions(X)
    if isinstance(y, da.Array):
        if y.ndim != 1:
            raise ValueError(f"y must be 1-D; got a dask array of shape {y.shape}")
        if isinstance(X, da.Array):
            if not np.isnan(X.shape[0]) and not np.isnan(y.shape[0]) and X.shape[0] != y.shape[0]:
                raise ValueError(f"X and y have different lengths: {X.shape[0]} and {y.shape[0]}")
            if y.chunks[0] != X.chunks[0] and not any(np.isnan(X.chunks[0])):
                y = y.rechunk({0: X.chunks[0]})
        y_parts = list(y.to_delayed())
    elif _is_frame(y):
        if y.ndim != 1:
            raise ValueError("y must be a dask Series (one column); got a dask DataFrame")
        y_parts = list(y.to_delayed())
    else:
        raise TypeError(f"y must be a dask array or dask Series; got {type(y).__name__}")
    if len(x_parts) != len(y_parts):
        raise ValueError(
            f"y must be partitioned like X: X has {len(x_parts)} partitions, y {len(y_parts)} "
            "(repartition one of them, e.g. y = y.repartition(npartitions=X.npartitions))"
        )
    return x_parts, y_parts


def _x_partitions(X):
    if isinstance(X, da.Array):
        if X.ndim != 2:
            raise ValueError(f"X must be 2-D; got a dask array of shape {X.shape}")
        if len(X.chunks[1]) != 1:
            raise ValueError(
                f"X must have one chunk along the features (its rows are the partitions); got column chunks "
                f"{X.chunks[1]}: use X.rechunk({{1: -1}})"
            )
        return list(X.to_delayed()[:, 0])
    if _is_frame(X):
        if X.ndim != 2:
            raise ValueError("X must be a dask DataFrame (or a 2-D dask array); got a dask Series")
        return list(X.to_delayed())
    raise TypeError(f"X must be a dask array or dask DataFrame; got {type(X).__name__}")


def _is_frame(obj):
    """A dask DataFrame or Series (dask.dataframe imported only when the input is not an array)."""
    if isinstance(obj, da.Array) or not dask.is_dask_collection(obj):
        return False
    import dask.dataframe as dd

    return isinstance(obj, (dd.DataFrame, dd.Series))


def _as_block(X, y, index, regressor):
    """A partition as the tasks use it: (X float64 C-contiguous, y 1-D ndarray), checked as
    fit checks its X (scikit-learn's check_array: numbers, finite, no complex values) and a
    regressor's y (finite numbers); a ValueError names the partition."""
    try:
        X = check_array(X, dtype=np.float64, order="C", ensure_all_finite=True, ensure_min_samples=0,
                        input_name="X")
        y = y.to_numpy() if hasattr(y, "to_numpy") else np.asarray(y)
        if regressor:
            y = check_array(y, dtype=np.float64, ensure_2d=False, ensure_all_finite=True, ensure_min_samples=0,
                            input_name="y")
    except (TypeError, ValueError) as e:  # (the first line: check_array appends a complex X whole)
        raise ValueError(f"partition {index}: {str(e).splitlines()[0]}") from None
    if y.ndim != 1 or len(X) != len(y):
        raise ValueError(f"X and y have different lengths in partition {index}: {len(X)} and {y.shape}")
    return X, y


# ------------------------------------------------------------ the first model
def _starting_model(estimator, classes, stats):
    """(round 0's mixture, classes): a copy of a fitted estimator, else an unfitted clone with
    gamma='scale' resolved from all the data. A regressor's classes are None."""
    if not sum(s["n"] for s in stats):
        raise ValueError("X has no rows")
    live = [(i, s) for i, s in enumerate(stats) if s["n"]]
    d = live[0][1]["d"]
    for i, s in live:
        if s["d"] != d:
            raise ValueError(f"partition {i} has {s['d']} features, partition {live[0][0]} {d}: the partitions "
                             "of X must have the same columns")
    if "_model" in estimator.__dict__:
        if estimator.n_features_in_ != d:
            raise ValueError(f"X has {d} features, but {type(estimator).__name__} was fitted with "
                             f"{estimator.n_features_in_}")
        if classes is not None:
            same_class_set(classes, estimator.classes_)
        start = pickle.loads(pickle.dumps(estimator))
        start.__dict__.pop("feature_names_in_", None)  # (fit puts them back: _checked_names)
        if not _is_regressor(estimator):
            _check_labels(stats, estimator.classes_)
        return start, getattr(estimator, "classes_", None)
    if _is_regressor(estimator):
        start, classes = clone(estimator), None
        if _scales(start):
            start.set_params(gamma=_gamma_of_all(stats))
        start._validate_params()
        return start, None
    if classes is None:
        classes = np.unique(np.concatenate([s["labels"] for s in stats if s["n"]]))
    classes = class_set(classes, type(estimator).__name__)
    _check_labels(stats, classes)
    start = clone(estimator)
    if _scales(start):
        start.set_params(gamma=_gamma_of_all(stats))
    start._validate_params()  # here, not as the same error from every partition's task
    return start, classes


def _check_labels(stats, classes):
    """Every partition's labels in classes (before any training), else a ValueError naming the
    partition and the labels."""
    for i, s in enumerate(stats):
        if s["n"]:
            try:
                unknown = np.setdiff1d(s["labels"], classes)
            except TypeError:  # labels of another kind than the classes (str among numbers, ...)
                unknown = s["labels"]
            if len(unknown):
                raise ValueError(f"partition {i} holds labels not in classes={classes.tolist()}: {unknown.tolist()}")


def _scales(estimator):
    """Whether the estimator's gamma is 'scale' (resolved from the data)."""
    gamma = estimator.get_params().get("gamma")
    return isinstance(gamma, str) and gamma == "scale"


# --------------------------------------------------------------------- mixing
def _mix(client, start, blocks, lengths, sync_every, n_epochs, classes, timeout):
    """The rounds of iterative parameter mixing; returns the last mixture with its history."""
    mixture, fitted, history = start, "_model" in start.__dict__, []
    for _ in range(n_epochs):
        offsets = [0] * len(blocks)
        while True:
            # each partition's next rows; one that ran out sits the rest of the epoch out
            spans = [(i, o, n if sync_every is None else min(n, o + sync_every))
                     for i, (o, n) in enumerate(zip(offsets, lengths)) if o < n]
            if not spans:
                break
            mixture, record = _round(client, len(history), mixture, fitted, blocks, spans, classes, timeout)
            fitted = True
            history.append(record)
            for i, _, stop in spans:
                offsets[i] = stop
    mixture.mixing_history_ = history
    return mixture


def _round(client, r, mixture, fitted, blocks, spans, classes, timeout):
    """One round: a task per partition, each given the pickled mixture, then combine. Returns
    the new mixture and the round's record."""
    t0 = time.perf_counter()
    payload = pickle.dumps(mixture, protocol=pickle.HIGHEST_PROTOCOL)
    serialise = time.perf_counter() - t0
    # The mixture goes in each task (a few kB per SV), not scattered: a task that holds its
    # input is rerun wherever the scheduler puts it when a worker dies, where a broadcast
    # scatter waits for every worker to hold the copy and a lost scattered copy cannot be
    # recomputed.
    token = dask.base.tokenize(os.getpid(), time.time_ns(), r)
    futures = [
        client.submit(_train_round, payload, blocks[i], start, stop, classes,
                      key=f"budgetkernel-round-{r}-partition-{i}-{token}", retries=1, pure=False)
        for i, start, stop in spans
    ]
    results = _results(client, futures, timeout, f"round {r}", spans)
    t1 = time.perf_counter()
    models = [pickle.loads(res["model"]) for res in results]
    t2 = time.perf_counter()
    weights = [res["examples"] for res in results]
    # McDonald et al.'s mixing weights: the examples each copy learned this round; the mixture
    # is every copy's base, so the counters count each example once (combine's base=)
    base = mixture if fitted else None
    mixed = _combine.combine(models, weights=weights, base=base)
    if len(models) > 1 and _calibrates(mixed):  # (one model: combine's copy keeps its calibration)
        mixed._model.pool_calibration([m._model for m in models], None if base is None else base._model)
    t3 = time.perf_counter()
    record = dict(
        round=r,
        examples=int(sum(weights)),
        bytes_sent=len(payload) * len(spans) + sum(len(res["model"]) for res in results),
        degradation=float(mixed.combine_report_["degradation"]),
        train_s=max(res["train_s"] for res in results),
        serialise_s=serialise + (t2 - t1) + max(res["serialise_s"] for res in results),
        combine_s=t3 - t2,
        wall_s=t3 - t0,
    )
    return mixed, record


# Fetches of a result tried when the connection to its worker is lost (the scheduler
# recomputes a result whose worker died).
_FETCH_ATTEMPTS = 3


def _results(client, futures, timeout, stage, spans=None):
    """The futures' results in order. The waits are bounded by ``timeout`` (seconds for the
    whole stage; None: as long as the tasks run). A task that failed (after its retry; one
    whose worker died is rerun elsewhere by the scheduler), timed out, or whose result could
    not be fetched fails the fit with a RuntimeError naming the stage and the partition (never
    a mixture of the partitions that survived), the other tasks cancelled. Reading the
    partitions (``spans`` None) raises a partition's ValueError of bad input as it is."""
    deadline = None if timeout is None else time.monotonic() + timeout
    results = []
    for j, future in enumerate(futures):
        i, start, stop = spans[j] if spans is not None else (j, None, None)
        where = f"partition {i}" + ("" if start is None else f" (rows {start}:{stop})")
        for attempt in range(_FETCH_ATTEMPTS):
            left = None if deadline is None else max(deadline - time.monotonic(), 0.0)
            try:
                results.append(future.result(timeout=left))
                break
            except (Exception, CancelledError) as e:
                failure = e
            if isinstance(failure, TimeoutError) and future.status != "error":  # (distributed's is the builtin)
                client.cancel(futures)
                raise RuntimeError(f"dask.fit: {stage} timed out after {timeout} s waiting for {where}; "
                                   "no model is returned") from failure
            if future.status == "error" and spans is None and isinstance(failure, ValueError):
                client.cancel(futures)
                raise failure
            if future.status == "error" or not isinstance(failure, OSError) or attempt == _FETCH_ATTEMPTS - 1:
                client.cancel(futures)
                raise RuntimeError(f"dask.fit: {stage} failed in {where}: {type(failure).__name__}: {failure}; "
                                   "no model is returned") from failure
    return results


def _train_round(payload, block, start, stop, classes):
    """A partition's task: a copy of the mixture it was sent (unpickled: its own model) learns
    rows start:stop and is returned pickled, with the examples it learned and its timings."""
    t0 = time.perf_counter()
    est = pickle.loads(payload)
    t1 = time.perf_counter()
    X, y = block
    fitted = "_model" in est.__dict__
    before = est.n_seen_ if fitted else 0
    if classes is None:  # a regressor, or a fitted classifier (its classes known)
        est.partial_fit(X[start:stop], y[start:stop])
    else:
        est.partial_fit(X[start:stop], y[start:stop], classes=None if fitted else classes)
    t2 = time.perf_counter()
    out = pickle.dumps(est, protocol=pickle.HIGHEST_PROTOCOL)
    t3 = time.perf_counter()
    return {"model": out, "examples": est.n_seen_ - before, "train_s": t2 - t1, "serialise_s": (t1 - t0) + (t3 - t2)}


# ----------------------------------------------------------------- prediction
def predict(estimator, X):
    """Predicted labels (a regressor's predicted values) of a dask array (a dask array of shape
    (n_samples,)) or DataFrame (a dask Series, the partitions' index). The fitted model is
    one node of the graph, which every block reads.

    Examples
    --------
    Without a client, dask's local scheduler runs the blocks:

    >>> import dask.array as da
    >>> from budgetkernel import BudgetedSGDClassifier, datasets
    >>> from budgetkernel import dask as bk_dask
    >>> X, y = datasets.checkerboard(2000, random_state=0)
    >>> clf = BudgetedSGDClassifier(budget=50, gamma=2.0, random_state=0).fit(X, y)
    >>> labels = bk_dask.predict(clf, da.from_array(X, chunks=(500, 2)))
    >>> labels.shape, bool((labels.compute() == clf.predict(X)).all())
    ((2000,), True)
    """
    model = _shared(estimator)
    dtype = np.dtype(np.float64) if _is_regressor(estimator) else estimator.classes_.dtype
    if isinstance(X, da.Array):
        _x_partitions(X)
        return X.map_blocks(_predict_block, model, drop_axis=1, dtype=dtype, meta=np.empty((0,), dtype))
    _x_partitions(X)
    import pandas as pd

    return X.map_partitions(_predict_frame, model, meta=pd.Series(dtype=dtype))


def decision_function(estimator, X):
    """Decision values of a dask array or DataFrame: shape (n_samples,) for two classes,
    (n_samples, n_classes) otherwise (a dask array; for a DataFrame a dask Series / DataFrame
    whose columns are the classes as str).

    Examples
    --------
    >>> import dask.array as da
    >>> from budgetkernel import BudgetedSGDClassifier, datasets
    >>> from budgetkernel import dask as bk_dask
    >>> X, y = datasets.waveform(2000, random_state=0)
    >>> clf = BudgetedSGDClassifier(budget=50, random_state=0).fit(X, y)
    >>> values = bk_dask.decision_function(clf, da.from_array(X, chunks=(500, 21)))
    >>> values.shape, bool((values.compute() == clf.decision_function(X)).all())
    ((2000, 3), True)
    """
    if _is_regressor(estimator):
        raise TypeError(f"{type(estimator).__name__} is a regressor: it has no decision_function (use predict)")
    model = _shared(estimator)
    k = len(estimator.classes_)
    _x_partitions(X)
    if isinstance(X, da.Array):
        if k == 2:
            return X.map_blocks(_decide_block, model, drop_axis=1, dtype=np.float64, meta=np.empty((0,)))
        return X.map_blocks(_decide_block, model, chunks=(X.chunks[0], (k,)), dtype=np.float64,
                            meta=np.empty((0, 0)))
    import pandas as pd

    meta = pd.Series(dtype=np.float64) if k == 2 else pd.DataFrame(
        {str(c): pd.Series(dtype=np.float64) for c in estimator.classes_})
    return X.map_partitions(_decide_frame, model, meta=meta)


def score(estimator, X, y):
    """Accuracy on (X, y), dask collections partitioned alike, as a float (the estimator's own
    ``score``: correct predictions counted per partition, summed exactly). For a regressor, its
    own ``score``: R^2 = 1 - SSE / SST, the partitions' squared errors summed and their target
    moments pooled (Chan, Golub & LeVeque), as scikit-learn's ``r2_score`` up to rounding.

    Examples
    --------
    >>> import dask.array as da
    >>> from budgetkernel import BudgetedSGDClassifier, datasets
    >>> from budgetkernel import dask as bk_dask
    >>> X, y = datasets.checkerboard(2000, random_state=0)
    >>> clf = BudgetedSGDClassifier(budget=50, gamma=2.0, random_state=0).fit(X, y)
    >>> X_test, y_test = datasets.checkerboard(1000, random_state=1)
    >>> accuracy = bk_dask.score(clf, da.from_array(X_test, chunks=250), da.from_array(y_test, chunks=250))
    >>> accuracy == clf.score(X_test, y_test)
    True
    """
    model = _shared(estimator)
    x_parts, y_parts = _partitions(X, y)
    if _is_regressor(estimator):
        return _r2(dask.compute(*[dask.delayed(_squares)(model, xp, yp) for xp, yp in zip(x_parts, y_parts)]))
    counts = dask.compute(*[dask.delayed(_correct)(model, xp, yp) for xp, yp in zip(x_parts, y_parts)])
    n = sum(c[1] for c in counts)
    if not n:
        raise ValueError("X has no rows")
    return sum(c[0] for c in counts) / n


def _shared(estimator):
    """The fitted estimator as one node of the graph, which every block's task reads. Not
    scattered: the scheduler moves a graph node to the workers that need it as any other
    dependency, and computes it again when the worker holding it dies, where a broadcast
    scatter waits for every worker to hold its copy and a lost copy cannot be made again."""
    check_is_fitted(estimator, "_model")
    return dask.delayed(estimator, pure=True, traverse=False)


def _predict_block(X, model):
    return model.predict(X)


def _decide_block(X, model):
    return model.decision_function(X)


def _predict_frame(X, model):
    import pandas as pd

    return pd.Series(model.predict(X), index=X.index)


def _decide_frame(X, model):
    import pandas as pd

    d = model.decision_function(X)
    if d.ndim == 1:
        return pd.Series(d, index=X.index)
    return pd.DataFrame(d, index=X.index, columns=[str(c) for c in model.classes_])


def _correct(model, X, y):
    y = y.to_numpy() if hasattr(y, "to_numpy") else np.asarray(y)
    return int(np.count_nonzero(model.predict(X) == y)), len(y)


def _squares(model, X, y):
    """A partition's (n, mean of y, sum of (y - mean)^2, sum of (y - prediction)^2)."""
    y = np.asarray(y.to_numpy() if hasattr(y, "to_numpy") else y, dtype=np.float64)
    if not len(y):
        return 0, 0.0, 0.0, 0.0
    mean = float(y.mean())
    return len(y), mean, float(((y - mean) ** 2).sum()), float(((y - model.predict(X)) ** 2).sum())


def _r2(parts):
    """R^2 from the partitions' _squares; a constant target scores 1 if predicted exactly, else 0
    (scikit-learn's r2_score)."""
    live = [p for p in parts if p[0]]
    if not live:
        raise ValueError("X has no rows")
    n = np.array([p[0] for p in live], dtype=np.float64)
    means = np.array([p[1] for p in live])
    mean = float(n @ means) / n.sum()
    sst = sum(p[2] for p in live) + float(n @ (means - mean) ** 2)
    sse = sum(p[3] for p in live)
    if sst == 0.0:
        return 1.0 if sse == 0.0 else 0.0
    return 1.0 - sse / sst
