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

The model is always held by a surviving member of its group, the one whose C it is at
(``best_index_`` picks among the holders): after each block, also when Ctrl-C or a failing
example stopped it, it goes to the candidate of the C it is at, and a rung that keeps some of
a group but not its holder moves it to the best kept one (``hand_over``). Each member is
credited with the rows the model learned of a block, its predictions of those rows, and no
more: a block stopped early leaves every member of the group at the model's own count.
"""

from __future__ import annotations

__all__ = ["groups", "hand_over", "holder", "run"]


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


def run(search, X, yi, indices):
    """One piece through every group with members among ``indices``, in blocks."""
    alive = set(indices)
    start = 0
    while start < len(yi):
        stop = min(len(yi), start + max(_MIN_BLOCK, (search._position + start) // _BLOCK_FRACTION))
        for group in search._groups:
            members = sorted((i for i in group if i in alive), key=lambda i: search.candidates_[i].C)
            if members:
                _run_group(search, group, members, X[start:stop], yi[start:stop])
        start = stop


def holder(cands, group):
    """The candidate of ``group`` that holds its model."""
    return next(i for i in group if "_model" in cands[i].__dict__)


def _run_group(search, group, members, X, yi):
    cands = search.candidates_
    h = holder(cands, group)
    model = cands[h]._model
    examples = model.counters["examples"]
    wrong = {}  # member -> its mistakes on the block, predicted at its C before the block is learned
    try:
        for i in members:
            model.set_C(float(cands[i].C))
            wrong[i] = model.predict(X) != yi
        block = {i: (len(yi), int(w.sum())) for i, w in wrong.items()}
        best = members[0] if len(members) == 1 else min(members, key=lambda i: (search._errors([i], block)[0], i))
        model.set_C(float(cands[best].C))
        model.partial_fit(X, yi)
    finally:
        # Also after Ctrl-C or a failing example: each member that predicted the block is
        # credited with the rows learned (none if the stop came before partial_fit), and the
        # model goes to the candidate whose C it is at (set_C undoes itself when stopped),
        # read from the model itself.
        learned = model.counters["examples"] - examples
        for i, w in wrong.items():
            search._seen[i] += learned
            search._wrong[i] += int(w[:learned].sum())
        C = model.params.C
        _move(cands, model, h, next(i for i in [*members, h] if float(cands[i].C) == C))


def _move(cands, model, frm, to):
    if to != frm:
        cands[to].__dict__["_model"] = model
        del cands[frm].__dict__["_model"]


def hand_over(search, kept):
    """At a rung: each group whose holder is not among ``kept`` (best first) but some of whose
    members are gives its model to the best of them, moved to its C first (exactly; a stopped
    set_C leaves the model as it was, with its holder, and the rung to be taken again)."""
    cands = search.candidates_
    for group in search._groups:
        h = holder(cands, group)
        members = [i for i in kept if i in group]
        if members and h not in members:
            model = cands[h]._model
            model.set_C(float(cands[members[0]].C))
            _move(cands, model, h, members[0])
