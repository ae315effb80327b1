"""The exact SVM over partitions: the cascade SVM with its feedback loop.

Graf, Cosatto, Bottou, Dourdanovic & Vapnik, "Parallel Support Vector Machines: The Cascade
SVM" (NIPS 2004). Each partition trains one exact SVM (IncrementalSVC); their support-vector
sets are combined pairwise in a binary tree, each node training on the union of its
children's support vectors, down to one SVM. Examples that are not support vectors of a
subproblem are usually not support vectors of the whole problem either, but not always: the
feedback loop adds the root's support vectors to every first-layer partition and runs the
cascade again. Graf et al. show that the root's dual objective (their W, maximised; the
dual_objective of IncrementalSVC.machine_state is -W) rises strictly from pass to pass until
the global optimum, so the loop ends.

It ends here when the root's solution satisfies the Kuhn-Tucker conditions of the whole
problem: the root is optimal on the examples it was trained on, so it is the global optimum
as soon as every other example (alpha = 0) has y f(x) >= 1 - tol in every machine (the
conditions of the reserve set R; Graf et al.'s "the SV set stops changing" follows: another
pass would find the same optimum). That check runs on the workers, against the root
broadcast to them, so no data moves to the driver.

Multi-class IncrementalSVC is one-vs-rest, every machine trained on every example. A node's
support vectors are the union over its machines (alpha > 0 in some machine): each machine
still trains on a superset of its own support vectors, and the check covers every machine.

Every example gets a global row id (its block's offset plus its row) so that unions of
support-vector sets keep one copy of each example, and node training sets are sorted by id
(the result does not depend on the order in which tasks finish).

Feedback with a warm start, as Graf et al. suggest (the first layer starts from the last
layer's alphas): a feedback pass's first-layer SVM is a copy of the root (an optimum on its
training set U, which holds the root's support vectors) that then learns the rest of its
block, adding examples to an optimum as the exact incremental SVM does. Its problem is
block + U, a superset of Graf et al.'s block + support vectors, which keeps their argument
(every subproblem holds the last root's support vectors, so the root's objective cannot
fall). The block's examples are learned in the order of their margin y f(x) under the root
(ties by id): the few that violate the root's conditions go in while the machine is still
small, and most of the others (y f >= 1) are stored without any bookkeeping step.
"""

from __future__ import annotations

import pickle
import time
from typing import NamedTuple

import numpy as np

from ._labels import class_set
from ._partition_stats import _block_stats, _gamma_of_all

__all__ = ["cascade_fit"]


class _Rows(NamedTuple):
    """Examples by global row id (ids sorted ascending, X and y in the same order)."""

    ids: np.ndarray
    X: np.ndarray
    y: np.ndarray


class _Node(NamedTuple):
    """One trained SVM of the cascade: its estimator (None when it holds no example) and the
    global ids and labels of what it learned, in the order learned (the core's example keys
    are positions in that order). Never changed once made (a task may share it with others
    on its worker)."""

    est: object
    ids: np.ndarray
    y: np.ndarray


def cascade_fit(estimator, blocks, client, classes, *, tol=1e-8, max_passes=20):
    """The exact SVM of the data in ``blocks``, as a cascade with feedback over a Dask cluster.

    Parameters
    ----------
    estimator : IncrementalSVC
        Unfitted; its parameters are used (``gamma='scale'`` is resolved once, from all the
        data: 1 / (n_features * X.var())). ``n_epochs`` must be 1; ``shuffle`` is ignored
        (the optimum does not depend on the order).
    blocks : list of distributed.Future
        Each resolves to ``(X_i, y_i)``: X_i a 2-D float64 array, y_i its labels.
    client : distributed.Client
    classes : array-like
        Every label of the data.
    tol : float, default=1e-8
        An example outside the root's training set violates the global Kuhn-Tucker conditions
        when y f(x) < 1 - tol in some machine. The solver's own conditions hold to ~1e-12
        (it refuses a state off by 1e-6, svm/numerical_guard.hpp), and decision values are
        accurate to about that, so 1e-8 finds every example that would change the optimum by
        more than rounding; an example missed at that level changes the dual objective by
        ~tol^2.
    max_passes : int, default=20
        Feedback passes before giving up (RuntimeError; Graf et al. report a few).

    Returns
    -------
    IncrementalSVC
        A new estimator (``estimator`` is left unfitted): the machine one IncrementalSVC on
        all the data gives, up to the solver's tolerance. It is trained on the final support
        vectors in the order of their global ids (the root itself when it holds nothing else;
        with one block, the block's SVM: plain fit, bit for bit), so its ``n_seen_`` counts
        the examples it learned, not the data. ``support_ids_`` are the support vectors'
        global row ids (block offset + row), ``cascade_history_`` one record per pass (see
        :func:`_pass_record`).
    """
    cls, params = _checked_params(estimator)
    classes = class_set(classes, cls.__name__)
    if not blocks:
        raise ValueError("cascade_fit needs at least one block")
    offsets, gamma = _scan(client, blocks, classes, isinstance(estimator.gamma, str))
    if gamma is not None:
        params["gamma"] = gamma
    train = (cls, params, classes)
    history, root = [], None
    for p in range(max_passes):
        record = _pass_record(p)
        first = _first_layer(client, blocks, offsets, root, train, record)
        root = _tree(client, first, root, train, record)
        _check(client, blocks, offsets, root, classes, tol, record)
        history.append(record)
        if record["violators"] == 0:
            break
    else:
        raise RuntimeError(
            f"cascade_fit: the global Kuhn-Tucker conditions still fail on {history[-1]['violators']} examples "
            f"after {max_passes} passes (max_passes); the root's dual objective rises every pass, so more passes "
            "or a larger tol end it"
        )
    return _result(client, estimator, root, train, history, len(blocks))


def _checked_params(estimator):
    """The estimator's class and parameters, checked before anything is sent to the cluster."""
    if hasattr(estimator, "_model"):
        raise ValueError("cascade_fit needs an unfitted estimator (it returns a new fitted one)")
    if estimator.n_epochs != 1:
        raise ValueError(
            f"cascade_fit computes the SVM of the data (n_epochs=1); got n_epochs={estimator.n_epochs!r}"
        )
    estimator._validate_params()
    params = dict(estimator.get_params(deep=False), shuffle=False)
    return type(estimator), params


def _pass_record(p):
    """The history record of pass p (0-based): per cascade layer (first layer, then the tree
    down to the root; a node without a partner goes down a layer as it is) the examples each
    node learned (``layer_examples``), its support vectors (``layer_sizes``) and the layer's
    wall time in seconds (``layer_times``); the global KKT check's ``violators`` (examples
    outside the root's training set with y f(x) < 1 - tol), its largest 1 - y f(x)
    (``max_violation``) and wall time (``check_time``); the root's support vectors
    (``n_support``) and its machines' dual objectives (``dual_objective``, the minimised
    1/2 a'Qa - sum a of IncrementalSVC.machine_state: it never rises from pass to pass)."""
    return {"pass": p + 1, "layer_examples": [], "layer_sizes": [], "layer_times": []}


def _scan(client, blocks, classes, scale):
    """Row offsets of the blocks (checked: the same width, labels in ``classes``) and, when
    ``scale``, gamma='scale' of all the data as dask.fit resolves it (pooled moments; one
    block: _scale_gamma itself on its worker, so that the cascade of one block is plain fit
    bit for bit)."""
    stats = client.gather([client.submit(_block_stats, b, True, scale, pure=False) for b in blocks])
    sizes = np.array([s["n"] for s in stats], dtype=np.int64)
    dims = {s["d"] for s in stats}
    if len(dims) != 1:
        raise ValueError(f"the blocks have different numbers of features: {sorted(dims)}")
    if sizes.sum() == 0:
        raise ValueError("the blocks hold no example")
    labels = [s["labels"] for s in stats if s["n"]]  # (an empty block's labels may have any dtype)
    unknown = np.setdiff1d(np.concatenate(labels), classes)
    if len(unknown):
        raise ValueError(f"the blocks hold labels not in classes={classes.tolist()}: {unknown.tolist()}")
    offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
    return offsets, (float(_gamma_of_all(stats)) if scale else None)


# ----------------------------------------------------------------- the layers


def _first_layer(client, blocks, offsets, root, train, record):
    """Pass 1: one SVM per block, on its worker. A feedback pass: the last root, copied to
    each block's worker, learns that block (warm start, see the module comment). Returns
    the first layer's node futures."""
    t = time.perf_counter()
    if root is None:
        first = [client.submit(_train_block, b, int(o), train, pure=False) for b, o in zip(blocks, offsets)]
    else:
        first = [client.submit(_warm_block, b, int(o), root, train, pure=False) for b, o in zip(blocks, offsets)]
    _layer_done(client, first, record, t)
    return first


def _tree(client, nodes, last_root, train, record):
    """Combines the nodes' support vectors pairwise (an odd one out goes down a layer as it
    is) until one SVM, the root, is left; returns its future. In a feedback pass each node
    starts from the last root (warm start, as the first layer)."""
    while len(nodes) > 1:
        t = time.perf_counter()
        rows = [client.submit(_support_rows, n, pure=False) for n in nodes]
        pairs = [client.submit(_train_union, rows[i], rows[i + 1], last_root, train, pure=False)
                 for i in range(0, len(nodes) - 1, 2)]
        nodes = pairs + nodes[len(pairs) * 2:]
        _layer_done(client, nodes, record, t)
    return nodes[0]


def _layer_done(client, nodes, record, t):
    """Waits for a layer, then records its nodes' examples and support vectors and its time."""
    sizes = client.gather([client.submit(_node_sizes, n, pure=False) for n in nodes])
    record["layer_times"].append(time.perf_counter() - t)
    record["layer_examples"].append([s[0] for s in sizes])
    record["layer_sizes"].append([s[1] for s in sizes])


def _check(client, blocks, offsets, root, classes, tol, record):
    """The global KKT check on the workers (root broadcast to each block's task)."""
    t = time.perf_counter()
    found = client.gather([client.submit(_violations, b, int(o), root, classes, tol, pure=False)
                           for b, o in zip(blocks, offsets)])
    record["check_time"] = time.perf_counter() - t
    record["violators"] = int(sum(f[0] for f in found))
    record["max_violation"] = float(max(f[1] for f in found))
    record["n_support"] = record["layer_sizes"][-1][0]
    record["dual_objective"] = client.submit(_dual_objectives, root, pure=False).result()
    if record["n_support"] == 0 and record["violators"]:
        raise ValueError(
            "cascade_fit: no SVM of the cascade has a support vector to pass on, since no partition holds more "
            "than one class; shuffle the data across the partitions"
        )


def _result(client, estimator, root, train, history, n_blocks):
    """The returned estimator: the root when it learned nothing but support vectors, else a
    fresh SVM on them; estimator's own parameters (gamma as given), the cascade's records."""
    est, support_ids = client.submit(_final_node, root, train, n_blocks, pure=False).result()
    # the parameters as given (gamma_ holds the value resolved from all the data): trained
    # with them, so no pending change (OnlineClassifierMixin._built_params)
    est.gamma, est.shuffle = estimator.gamma, estimator.shuffle
    est._built_params = est.get_params(deep=False)
    est._params_changed = False
    est.support_ids_ = support_ids
    est.cascade_history_ = history
    return est


# ------------------------------------------------------- tasks on the workers


def _train(train, rows):
    """A fresh SVM learning ``rows`` (sorted by id); no estimator for no rows."""
    cls, params, classes = train
    if len(rows.ids) == 0:
        return _Node(None, rows.ids, rows.y)
    est = cls(**params).partial_fit(rows.X, rows.y, classes=classes)
    return _Node(est, rows.ids.copy(), np.asarray(rows.y).copy())


def _train_block(block, offset, train):
    X, y = block
    X = np.ascontiguousarray(X, dtype=np.float64)
    return _train(train, _Rows(np.arange(offset, offset + len(X), dtype=np.int64), X, np.asarray(y)))


def _warm_block(block, offset, root, train):
    """The root's SVM after learning the block's examples it does not hold (_warm)."""
    X, y = block
    X = np.ascontiguousarray(X, dtype=np.float64)
    rows = _Rows(np.arange(offset, offset + len(X), dtype=np.int64), X, np.asarray(y))
    return _warm(root, rows, train)


def _train_union(a, b, last_root, train):
    """An SVM on the union of two support-vector sets: fresh, or the last root's SVM learning
    the rows it does not hold (_warm)."""
    ids, first = np.unique(np.concatenate([a.ids, b.ids]), return_index=True)
    # (an empty set's X has no width: left out, it adds no row that `first` could index)
    X = np.concatenate([r.X for r in (a, b) if len(r.ids)])[first] if len(ids) else np.zeros((0, 0))
    rows = _Rows(ids, np.ascontiguousarray(X), np.concatenate([a.y, b.y])[first])
    return _train(train, rows) if last_root is None else _warm(last_root, rows, train)


def _warm(root, rows, train):
    """A copy of the root's SVM (pickled and rebuilt: other tasks on this worker read it)
    after learning the rows it does not hold, in the order of their margin under it (ties by
    id): the few that violate its conditions go in while the machine is small, and most of
    the others (y f >= 1) are stored without a bookkeeping step."""
    if root.est is None:  # no SVM anywhere yet: the rows on their own
        return _train(train, rows)
    new = np.flatnonzero(~np.isin(rows.ids, root.ids))
    est = pickle.loads(pickle.dumps(root.est))
    if len(new) == 0:
        return _Node(est, root.ids, root.y)
    order = new[np.lexsort((rows.ids[new], _margins(est, rows.X[new], rows.y[new], train[2])))]
    est.partial_fit(rows.X[order], rows.y[order])
    return _Node(est, np.concatenate([root.ids, rows.ids[order]]), np.concatenate([root.y, rows.y[order]]))


def _support_mask(node):
    """Stored examples (in the order learned) with alpha > 0 in some machine."""
    states = _machine_states(node.est)
    keys = states[0]["key"]
    mask = np.zeros(len(node.ids), dtype=bool)
    for s in states:
        mask[keys[s["alpha"] > 0.0]] = True
    return mask, keys, states[0]["X"]


def _support_rows(node):
    """The node's support vectors as _Rows (sorted by global id)."""
    if node.est is None:
        return _Rows(node.ids[:0], np.zeros((0, 0)), node.y[:0])
    mask, keys, X = _support_mask(node)
    rows = np.flatnonzero(mask[keys])  # rows of the stored matrix, whose keys are positions learned
    ids, y = node.ids[keys[rows]], node.y[keys[rows]]
    order = np.argsort(ids, kind="stable")
    return _Rows(ids[order], np.ascontiguousarray(X[rows][order]), y[order])


def _node_sizes(node):
    if node.est is None:
        return 0, 0
    return len(node.ids), int(_support_mask(node)[0].sum())


def _violations(block, offset, root, classes, tol):
    """(number, largest) of the global KKT violations in a block: examples outside the root's
    training set (alpha = 0 there) with y_k f_k(x) < 1 - tol in some machine k."""
    X, y = block
    ids = np.arange(offset, offset + len(X), dtype=np.int64)
    outside = ~np.isin(ids, root.ids)
    if not outside.any():
        return 0, 0.0
    X, y = np.ascontiguousarray(X, dtype=np.float64)[outside], np.asarray(y)[outside]
    if root.est is None:
        return int(outside.sum()), 1.0
    gap = 1.0 - _margins(root.est, X, y, classes)
    return int(np.sum(gap > tol)), float(max(gap.max(), 0.0))


def _dual_objectives(node):
    return [] if node.est is None else [s["dual_objective"] for s in _machine_states(node.est)]


def _machine_states(est):
    """machine_state of every binary machine (one, or one per class: one-vs-rest)."""
    return [est.machine_state(k) for k in range(1 if len(est.classes_) == 2 else len(est.classes_))]


def _margins(est, X, y, classes):
    """min over the machines k of y_k f_k(x) (y_k = +1 for class k, else -1; binary: one
    machine, +1 for classes[1])."""
    f = est.decision_function(X)
    if len(classes) == 2:
        return np.where(y == classes[1], 1.0, -1.0) * f
    return (np.where(y[:, None] == classes[None, :], 1.0, -1.0) * f).min(axis=1)


def _final_node(root, train, n_blocks):
    """The result's SVM and its support vectors' ids: the root when it learned nothing but
    support vectors, or when it is the one block's SVM (plain fit on all the data); else a
    fresh SVM on its support vectors (in id order)."""
    rows = _support_rows(root)
    if root.est is not None and (n_blocks == 1 or len(rows.ids) == len(root.ids)):
        return root.est, rows.ids
    return _train(train, rows).est, rows.ids
