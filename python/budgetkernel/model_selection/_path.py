"""IncrementalSVC searched over C along its exact regularisation path, not re-trained per C.

The exact SVM's solution for a C depends only on the examples learned, not on the path that
led there, and ``set_C`` moves a trained machine to another C exactly (Cauwenberghs & Poggio's
regularisation-parameter perturbation). So the candidates that differ only in C share one
model (a group): for each piece of the stream, the model visits every surviving C of its group
and predicts the piece there (the SVM of the examples before the piece, at that C: the
candidate's prequential predictions, made for the whole piece at once), then learns the piece
at the group's best C and is handed to that candidate. One model per group instead of one per
C, and the groups' cost is that of the path moves, no peer has this.

The groups run one after another in the calling thread (each core call releases the GIL, and
Ctrl-C reaches it): a group's C values share one model, and there are few groups.
"""

from __future__ import annotations

__all__ = ["groups", "run"]


def groups(estimator, params):
    """Candidate indices grouped by every parameter but C, for an IncrementalSVC whose grid
    varies C; None otherwise (every candidate its own model)."""
    if type(estimator).__name__ != "IncrementalSVC" or len({p.get("C") for p in params}) < 2:
        return None
    out = {}
    for i, p in enumerate(params):
        key = tuple(sorted((k, repr(v)) for k, v in p.items() if k != "C"))
        out.setdefault(key, []).append(i)
    return list(out.values())


# A piece is predicted in blocks of at most 1/8 of the examples seen before it (at least 16):
# a block's predictions come from the SVM of the examples before the block, and a stale one
# (the whole first chunk predicted by an empty model) ranks nothing. The path moves this costs
# grow with the logarithm of the stream, not with its length.
_BLOCK_FRACTION = 8
_MIN_BLOCK = 16


def run(search, X, yi):
    """One piece through every group with survivors, in blocks; returns the rows learned."""
    alive = set(search._alive)
    learned = start = 0
    while start < len(yi):
        stop = min(len(yi), start + max(_MIN_BLOCK, (search._position + learned) // _BLOCK_FRACTION))
        rows = 0
        for group in search._groups:
            members = sorted((i for i in group if i in alive), key=lambda i: search.candidates_[i].C)
            if members:
                rows = max(rows, _run_group(search, group, members, X[start:stop], yi[start:stop]))
        learned += rows
        start = stop
    return learned


def _run_group(search, group, members, X, yi):
    cands = search.candidates_
    holder = next(i for i in group if "_model" in cands[i].__dict__)
    model = cands[holder]._model
    examples = model.counters["examples"]
    try:
        for i in members:
            model.set_C(float(cands[i].C))
            wrong = int((model.predict(X) != yi).sum())
            search._seen[i] += len(yi)
            search._wrong[i] += wrong
        best = members[0] if len(members) == 1 else min(members, key=lambda i: (search._errors([i])[0], i))
        model.set_C(float(cands[best].C))
        model.partial_fit(X, yi)
    finally:
        # Also after Ctrl-C, which can land between a set_C that ended and the next line: the
        # model goes to the candidate whose C it is at, read from the model itself.
        at = next(i for i in group if float(cands[i].C) == model.params.C)
        if at != holder:
            cands[at].__dict__["_model"] = model
            del cands[holder].__dict__["_model"]
    return model.counters["examples"] - examples
