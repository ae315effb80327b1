"""budgetkernel.combine for TwinVectorMachine and ReservoirSVC (issue 28, part 1).

A retrained SVM is not sum_k w_k f_k, so the oracle here is the one the core documents
(TwinVectorMachine::combine_from): within the budget, every machine of the result is the exact
weighted SVM on the pooled twins (counts times w_k N / n_k; a binary model's twins go to its
class-1 machine as they are and to its class-0 machine with s+ and s- swapped; bitwise-equal
twins kept once, counts added), at C_t = C B / max(B, sum s), checked against IncrementalSVC
and scikit-learn's SVC with sample_weight. Over the budget: `budget` twins by the TVM's own
merging, the degradation the merges' distortion. ReservoirSVC pools its reservoirs as labelled
weight-1 examples and, over the budget, samples them as a merge of reservoir samples does.
The properties every combinable learner shares (a copy of one model, validated weights and
parameters, persistence, the counters of a base) are in tests/test_combine.py.
"""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.svm import SVC

import budgetkernel
from budgetkernel import IncrementalSVC, ReservoirSVC, TwinVectorMachine

GAMMA = 1.0


def _stream(n, n_classes, seed, labels=None):
    """Noisy 4x4 checkerboard on [-2, 2)^2; labels = the cell index mod n_classes (mapped)."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(-2.0, 2.0, size=(n, 2))
    y = (np.floor(X[:, 0] + 2).astype(int) + np.floor(X[:, 1] + 2).astype(int)) % n_classes
    flip = rng.uniform(size=n) < 0.2
    y[flip] = (y[flip] + 1) % n_classes
    if labels is not None:
        y = np.asarray(labels)[y]
    return X, y


def _tvm(budget=40, **kw):
    return TwinVectorMachine(budget=budget, gamma=GAMMA, **{"random_state": 0, **kw})


def _fit(est, n, n_classes, seed, labels=None):
    X, y = _stream(n, n_classes, seed, labels)
    return est.fit(X, y)


def _machine_twins(m, k):
    """(points, s+, s-) of machine k of a fitted TVM (rows of twin_vectors_ with weight there)."""
    Q, W = m.twin_vectors_, m.twin_weights_
    rows = (W[:, 2 * k] + W[:, 2 * k + 1]) > 0
    return Q[rows], W[rows, 2 * k], W[rows, 2 * k + 1]


def _n_machines(m):
    return 1 if len(m.classes_) == 2 else len(m.classes_)


def _pooled(models, weights, classes):
    """The pooled twins of every result machine by the documented rule (no base)."""
    w = np.asarray(weights, dtype=float)
    w = w / w.sum()
    n = np.array([m.n_seen_ for m in models], dtype=float)
    f = w * n.sum() / n
    f[np.abs(f - 1.0) <= 1e-12] = 1.0
    c = 1 if len(classes) == 2 else len(classes)
    pools = [[] for _ in range(c)]
    for k, m in enumerate(models):
        if w[k] == 0:  # a model of weight 0 adds nothing
            continue
        cmap = np.searchsorted(classes, m.classes_)
        for j in range(_n_machines(m)):
            Q, sp, sm = _machine_twins(m, j)
            sp, sm = f[k] * sp, f[k] * sm
            if c == 1:
                pools[0].append((Q, sp, sm))
            elif _n_machines(m) == 1:
                pools[cmap[1]].append((Q, sp, sm))
                pools[cmap[0]].append((Q, sm, sp))
            else:
                pools[cmap[j]].append((Q, sp, sm))
    out = []
    for parts in pools:
        Q = np.vstack([p[0] for p in parts]) if parts else np.zeros((0, 2))
        out.append((Q, np.concatenate([p[1] for p in parts]), np.concatenate([p[2] for p in parts])))
    return out


def _weighted_examples(Q, sp, sm):
    pos, neg = sp > 0, sm > 0
    X = np.vstack([Q[pos], Q[neg]])
    y = np.concatenate([np.ones(pos.sum(), int), np.zeros(neg.sum(), int)])
    return X, y, np.concatenate([sp[pos], sm[neg]])


def _oracle_decisions(Q, sp, sm, C, P):
    """Decision values on P of IncrementalSVC and of scikit-learn's SVC on the weighted twins."""
    X, y, sw = _weighted_examples(Q, sp, sm)
    exact = IncrementalSVC(C=C, gamma=GAMMA).fit(X, y, sample_weight=sw).decision_function(P)
    libsvm = SVC(C=C, gamma=GAMMA, tol=1e-10).fit(X, y, sample_weight=sw).decision_function(P)
    return exact, libsvm


def _check_against_oracle(out, pools, budget, C=1.0):
    P = np.random.default_rng(99).uniform(-2.5, 2.5, size=(300, 2))
    F = out.decision_function(P).reshape(len(P), -1)
    for k, (Q, sp, sm) in enumerate(pools):
        # the machine holds exactly the pooled twins, in pool order
        Qk, spk, smk = _machine_twins(out, k)
        np.testing.assert_array_equal(Qk, Q)
        np.testing.assert_allclose(spk, sp, rtol=1e-14, atol=0)
        np.testing.assert_allclose(smk, sm, rtol=1e-14, atol=0)
        Ct = C * budget / max(budget, sp.sum() + sm.sum())
        exact, libsvm = _oracle_decisions(Q, sp, sm, Ct, P)
        scale = max(1.0, np.abs(exact).max())
        np.testing.assert_allclose(F[:, k], exact, rtol=0, atol=1e-8 * scale)
        np.testing.assert_allclose(F[:, k], libsvm, rtol=0, atol=1e-5 * scale)


# ------------------------------------------------------------------ TwinVectorMachine


def test_binary_within_budget_is_the_exact_svm_on_the_pooled_twins():
    a = _fit(_tvm(), 120, 2, 1)
    b = _fit(_tvm(), 80, 2, 2)
    out = budgetkernel.combine([a, b], budget=200)
    assert isinstance(out, TwinVectorMachine) and out.budget == 200
    rep = out.combine_report_
    assert rep["union_size"] == len(a.twin_vectors_) + len(b.twin_vectors_)
    assert rep["reductions"] == 0 and rep["degradation"] == 0.0
    _check_against_oracle(out, _pooled([a, b], [a.n_seen_, b.n_seen_], out.classes_), 200)
    assert out.n_seen_ == 200


@pytest.mark.parametrize("weights", [[1.0, 3.0], [0.5, 0.5], [2.0, 0.0]])
def test_weights_scale_the_counts(weights):
    a = _fit(_tvm(), 100, 2, 3)
    b = _fit(_tvm(), 60, 2, 4)
    out = budgetkernel.combine([a, b], weights=weights, budget=100)
    _check_against_oracle(out, _pooled([a, b], weights, out.classes_), 100)


def test_different_class_sets_map_by_the_documented_rule():
    a = _fit(_tvm(), 90, 2, 5)  # classes {0, 1}
    b = _fit(_tvm(), 70, 2, 6, labels=[1, 2])  # classes {1, 2}
    c = _fit(_tvm(), 90, 3, 7)  # classes {0, 1, 2}
    out = budgetkernel.combine([a, b, c], budget=400)
    np.testing.assert_array_equal(out.classes_, [0, 1, 2])
    _check_against_oracle(out, _pooled([a, b, c], [m.n_seen_ for m in (a, b, c)], out.classes_), 400)
    # two binary models with disjoint classes: each machine learns from its class's model only
    d = _fit(_tvm(), 80, 2, 8, labels=[2, 3])
    out = budgetkernel.combine([a, d], budget=100)
    np.testing.assert_array_equal(out.classes_, [0, 1, 2, 3])
    _check_against_oracle(out, _pooled([a, d], [a.n_seen_, d.n_seen_], out.classes_), 100)


def test_over_budget_one_merge_degrades_by_the_best_pairs_distortion():
    kw = dict(rejection_eta=None, m2=1e300, one_sided=False)  # every overflow merges
    a = _fit(_tvm(budget=30, **kw), 150, 2, 9)
    b = _fit(_tvm(budget=30, **kw), 150, 2, 10)
    (Q, sp, sm), = _pooled([a, b], [1, 1], a.classes_)
    s = sp + sm
    d2 = ((Q[:, None, :] - Q[None, :, :]) ** 2).sum(-1)
    dist = np.outer(s, s) * d2 / (s[:, None] + s[None, :])
    np.fill_diagonal(dist, np.inf)
    n = len(Q)
    out = budgetkernel.combine([a, b], budget=n - 1)
    rep = out.combine_report_
    assert len(out.twin_vectors_) == n - 1 and rep["reductions"] == 1
    assert rep["degradation"] == pytest.approx(dist.min(), rel=1e-12)
    out = budgetkernel.combine([a, b])  # the models' own budget
    assert len(out.twin_vectors_) == 30
    assert rep["degradation"] > 0 and out.combine_report_["reductions"] == n - 30
    assert out.twin_weights_.sum() == pytest.approx(s.sum(), rel=1e-12)  # merging keeps the counts


def test_over_budget_multiclass_default_tvm_holds_at_most_budget_twins_per_machine():
    a = _fit(_tvm(budget=20), 300, 3, 11)
    b = _fit(_tvm(budget=20), 300, 3, 12)
    out = budgetkernel.combine([a, b])
    W = out.twin_weights_
    for k in range(3):
        assert ((W[:, 2 * k] + W[:, 2 * k + 1]) > 0).sum() == 20
    assert out.combine_report_["reductions"] > 0 and out.combine_report_["degradation"] > 0
    assert out.score(*_stream(500, 3, 13)) > 0.4


# ------------------------------------------------------------------ ReservoirSVC


def _reservoir(m):
    """[(point bytes, label)] of a fitted ReservoirSVC's reservoir, in slot order."""
    Q, W = m._model.twin_points, m._model.twin_weights
    c = _n_machines(m)
    n = len(Q) // c
    Q = Q[:n]
    if c == 1:
        labels = m.classes_[(W[:n, 0] > 0).astype(int)]
    else:
        pos = np.stack([W[k * n:(k + 1) * n, 2 * k] for k in range(c)], axis=1)
        labels = m.classes_[pos.argmax(1)]
    return [(q.tobytes(), lab) for q, lab in zip(Q, labels.tolist())]


def test_reservoir_within_budget_is_the_svm_on_the_pooled_examples():
    a = _fit(ReservoirSVC(budget=40, gamma=GAMMA, random_state=1), 300, 2, 50)
    b = _fit(ReservoirSVC(budget=40, gamma=GAMMA, random_state=2), 500, 2, 51, labels=[1, 2])
    out = budgetkernel.combine([a, b], budget=80)
    assert out.combine_report_["union_size"] == 80 and out.combine_report_["reductions"] == 0
    pooled = _reservoir(a) + _reservoir(b)
    assert _reservoir(out) == pooled
    X = np.array([np.frombuffer(p, dtype=np.float64) for p, _ in pooled])
    y = np.array([lab for _, lab in pooled])
    P = np.random.default_rng(3).uniform(-2.5, 2.5, size=(200, 2))
    want = IncrementalSVC(C=1.0, gamma=GAMMA).fit(X, y).decision_function(P)
    np.testing.assert_allclose(out.decision_function(P), want, rtol=0, atol=1e-8)


def test_reservoir_over_budget_samples_the_streams_in_proportion():
    from_a = 0
    runs = 30
    for r in range(runs):
        a = _fit(ReservoirSVC(budget=20, gamma=GAMMA, random_state=r), 300, 2, 100 + r)
        b = _fit(ReservoirSVC(budget=20, gamma=GAMMA, random_state=1000 + r), 100, 2, 5000 + r)
        out = budgetkernel.combine([a, b])
        rep = out.combine_report_
        assert out._model.n_twins == 20 and rep["reductions"] == 20 and rep["degradation"] == 0.0
        ra, rb = set(_reservoir(a)), set(_reservoir(b))
        kept = _reservoir(out)
        assert all(e in ra or e in rb for e in kept)
        from_a += sum(e in ra for e in kept)
    # a uniform sample of the union of the streams: 3/4 from a (sd about 0.016 here)
    assert 0.68 < from_a / (20 * runs) < 0.82
