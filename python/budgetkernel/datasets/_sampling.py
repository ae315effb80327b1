"""The sampling machinery every generator of :mod:`budgetkernel.datasets` shares: the root
seed, one generator per block of examples, the blocks of a draw, and the check of a count
argument (``n_samples``, ``chunk_size``; :mod:`budgetkernel.io`'s ``n_features`` too).

See :mod:`budgetkernel.datasets` for the reproducibility contract these functions keep.
"""

from __future__ import annotations

import numbers

import numpy as np

# Number of examples generated from one sub-seed.  Part of the reproducibility
# contract: changing it changes every generated data set.
_BLOCK_SIZE = 4096


def _as_seed_sequence(random_state):
    """Convert ``random_state`` to a root :class:`numpy.random.SeedSequence`."""
    if random_state is None:
        return np.random.SeedSequence()
    if isinstance(random_state, np.random.SeedSequence):
        return random_state
    if isinstance(random_state, np.random.Generator):
        entropy = random_state.integers(0, 2**63, size=4, dtype=np.int64)
        return np.random.SeedSequence([int(e) for e in entropy])
    if isinstance(random_state, (bool, np.bool_)):
        raise TypeError("random_state must be None, an int, a SeedSequence or a "
                        "numpy.random.Generator, got a bool")
    if isinstance(random_state, numbers.Integral):
        seed = int(random_state)
        if seed < 0:
            raise ValueError(f"random_state must be a non-negative integer, got {seed}")
        return np.random.SeedSequence(seed)
    raise TypeError("random_state must be None, an int, a SeedSequence or a "
                    f"numpy.random.Generator, got {type(random_state).__name__}")


def _child(ss, *keys):
    """Deterministic child of ``ss`` (same as ``ss.spawn`` would give for ``keys``)."""
    return np.random.SeedSequence(entropy=ss.entropy,
                                  spawn_key=tuple(ss.spawn_key) + tuple(keys),
                                  pool_size=ss.pool_size)


def _block_rng(ss, k):
    return np.random.default_rng(_child(ss, k))


def _iter_blocks(block_fn, params, ss, n_samples):
    """Yield the blocks of a stream, the last one truncated to ``n_samples``."""
    produced = 0
    k = 0
    while n_samples is None or produced < n_samples:
        X, y = block_fn(_block_rng(ss, k), _BLOCK_SIZE, **params)
        k += 1
        if n_samples is not None and produced + _BLOCK_SIZE > n_samples:
            m = n_samples - produced
            X, y = X[:m], y[:m]
        produced += X.shape[0]
        yield X, y


def _draw(block_fn, params, ss, n_samples):
    blocks = list(_iter_blocks(block_fn, params, ss, n_samples))
    if not blocks:
        X, y = block_fn(_block_rng(ss, 0), 0, **params)
        return X, y
    if len(blocks) == 1:
        return np.ascontiguousarray(blocks[0][0]), blocks[0][1].copy()
    return (np.concatenate([b[0] for b in blocks]),
            np.concatenate([b[1] for b in blocks]))


def _check_n_samples(n_samples, name="n_samples", allow_none=False):
    if n_samples is None and allow_none:
        return None
    if isinstance(n_samples, (bool, np.bool_)) or not isinstance(n_samples, numbers.Integral):
        raise TypeError(f"{name} must be a non-negative integer"
                        + (" or None" if allow_none else "")
                        + f", got {n_samples!r}")
    n_samples = int(n_samples)
    if n_samples < 0:
        raise ValueError(f"{name} must be non-negative, got {n_samples}")
    return n_samples
