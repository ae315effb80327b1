"""PrequentialSearch (issue 27) against the best configuration of its grid in hindsight.

Streams (features standardised with a StandardScaler fitted on the training part):

* synthetic, the papers' streams (``budgetkernel.datasets.make_stream_and_test``):
  checkerboard, noisy_checkerboard (clean test labels), two_gaussians, waveform; 20,000
  training examples in stream order and 5,000 independent test examples (``--n-train``);
* real, from what packages ship (no download): scikit-learn's breast_cancer, digits, wine,
  iris; river's Bananas, Phishing, ImageSegments and Shuttle (files inside the river wheel;
  skipped when river is not importable). A stratified 70/30 split, shuffled, repeated over
  ``--n-orders`` seeds (default 5; Shuttle, 49,097 examples, one) and averaged.

Per stream, learner (BSGD merge, BPA, KernelPerceptron, BOGD) and budget B in {100, 500}:

* oracle: every candidate of the grid the search uses (``default_grid(estimator, first
  chunk, n_expected=n_train)``, the same parameters and seeds as the search's candidates),
  trained alone on the whole training stream (one pass, ``partial_fit`` in chunks of 1,000),
  scored on the test set; the oracle is the best. ``edge`` says when its value of a numeric
  parameter is the smallest or largest of the grid; ``beyond edge +`` is what the oracle's
  config gains with that parameter one or two grid steps further out (the grid's own limit).
* search: ``PrequentialSearch(estimator, n_expected=n_train, n_jobs=1, random_state=0)`` over
  the same chunks; the test accuracy of ``best_estimator_`` and its gap to the oracle (points;
  positive = below); ``picked rank`` its pick's rank among the oracle's runs. ``t/1`` is the
  search's training time over the median time of one candidate alone (issue: <= 3x for 27
  candidates), ``t/mean`` over their mean (candidates of one grid can differ in cost: BPA's
  projection), ``after setup`` without the fixed cost of building the candidates, ``wall``
  with ``n_jobs=None``. Times are the median of ``--reps`` runs (3; 1 with --quick). A
  what-if: the oracle's accuracy for the pick's neighbour with one step weaker regularisation
  (does the last rung lean to strong regularisation, the prefix effect, by a fixed step?).
* variants that answer "why plain successive halving is not enough": ``naive`` (judge by the
  cumulative prequential error, first rung 1,000, eta 3: the issue's description),
  ``cumulative`` (cumulative error, default rungs), ``window-1000`` (window error, first rung
  1,000), ``late`` (window error, last rung at n/2 instead of n/4: costs ~4 fits) and the
  default (window error, last rung at n/4).
* defaults: the estimator with its default parameters (``gamma='scale'``, random_state=0)
  and with alternative values of the parameters a default could change (BSGD lam and
  average, BPA C, variant and averaged, the perceptron's maintenance, BOGD eta and lam), and
  the default and the best of these (LEADS) with gamma = 2 or 4 times 'scale'; gap to the
  oracle, across the suite the mean gap of each alternative, and per stream for the best.
* river: ``river.model_selection.SuccessiveHalvingClassifier`` over the same BSGD candidates
  (registered as river classifiers), fed one example at a time (predict_one + learn_one, its
  budget set so its rungs fall where the search's do), on the checkerboard training stream
  and Bananas; test accuracy of its ``best_model`` and its throughput against the search's in
  the same run, and, as the ceiling of that ratio, one model fed by predict_one + learn_one
  against the same model's partial_fit in chunks.

``--quick``: 3,000-example synthetic streams (two of them), one order of three real sets,
two learners, B = 100 only, no river throughput beyond 1,000 examples (< 1 min).

    python bench/tuning.py [--quick] [--seed 0] [--n-train 20000] [--n-orders 5] [--no-river]

About 11 minutes on a 2-core VM (river optional: in the bench extra).
"""

from __future__ import annotations

import _common  # noqa: F401  (first: pins the thread pools)

import sys
import time
from collections import Counter

import numpy as np
from sklearn.base import clone
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler

from budgetkernel import BOGDClassifier, BudgetedPAClassifier, BudgetedSGDClassifier, KernelPerceptron
from budgetkernel.datasets import make_stream_and_test
from budgetkernel.model_selection import PrequentialSearch
from budgetkernel.model_selection._grids import build_candidates

from _common import env_md, environment, md_table, parser, write_results

CHUNK = 1000
LONG_SET = 10_000  # a real set at least this long is run in one order only (its test set is large)
SYNTHETIC = ("checkerboard", "noisy_checkerboard", "two_gaussians", "waveform")
SKLEARN_SETS = ("breast_cancer", "digits", "wine", "iris")
RIVER_SETS = ("bananas", "phishing", "image_segments", "shuttle")
LEARNERS = {
    "bsgd": BudgetedSGDClassifier,
    "bpa": BudgetedPAClassifier,
    "perceptron": KernelPerceptron,
    "bogd": BOGDClassifier,
}
# Alternative defaults per learner ("1/n": lam = 1 / n_train, i.e. C = 1 for the stream).
ALTERNATIVES = {
    "bsgd": [{"lam": lam, "average": a} for a in (False, True) for lam in (1e-2, 1e-3, 1e-4, 1e-5, "1/n")],
    "bpa": [{"C": C, "variant": v, "averaged": a} for a in (False, True) for v in ("simple", "nn", "project")
            for C in (0.1, 1.0, 10.0)],
    "perceptron": [{"maintenance": m} for m in ("random", "max-margin", "projectron++")]
    + [{"maintenance": "projectron++", "eta": e} for e in (0.01, 0.3)],
    "bogd": [{"eta": e, "lam": lam} for e in (0.1, 0.5, 2.5) for lam in (1e-1, 1e-2, 1e-3)],
}
# The best alternative of each learner in a first full run, also tried with a narrower kernel:
# gamma = k * 'scale' (k / (n_features * X.var()), what gamma='scale' gives times k).
LEADS = {"bsgd": {"lam": 1e-3, "average": True}, "bpa": {"C": 10.0, "variant": "nn", "averaged": True},
         "perceptron": {"maintenance": "projectron++"}, "bogd": {"eta": 2.5, "lam": 1e-3}}
for _name, _alts in ALTERNATIVES.items():
    _alts += [{"gamma": f"{k}*scale"} for k in (2, 4)] + [{**LEADS[_name], "gamma": f"{k}*scale"} for k in (2, 4)]
VARIANTS = {  # name -> PrequentialSearch keywords (n_train -> dict)
    "default": lambda n: {},
    "naive": lambda n: {"judge": "cumulative", "first_rung": 1000},
    "cumulative": lambda n: {"judge": "cumulative"},
    "early": lambda n: {"first_rung": max(200, n // 36)},  # the last rung at n/4 without the 1000 floor
    "late": lambda n: {"first_rung": max(100, n // 18)},
}


# ------------------------------------------------------------------ data
def synthetic(name, n_train, n_test, seed):
    stream, (Xte, yte) = make_stream_and_test(name, n_train, n_test, random_state=seed)
    parts = list(stream)
    Xtr, ytr = np.vstack([p[0] for p in parts]), np.concatenate([p[1] for p in parts])
    return Xtr, ytr, Xte, yte


def _river_dataset(name):
    try:
        from river import datasets
    except ImportError:
        return None
    cls = {"bananas": "Bananas", "phishing": "Phishing", "image_segments": "ImageSegments",
           "shuttle": "Shuttle"}[name]
    rows = list(getattr(datasets, cls)())
    keys = list(rows[0][0])
    X = np.array([[float(x.get(k, 0.0)) for k in keys] for x, _ in rows])
    y = np.array([yy for _, yy in rows])
    return X, y


def real(name):
    """(X, y) of a bundled data set, or None when its package is missing."""
    if name in SKLEARN_SETS:
        from sklearn import datasets

        return getattr(datasets, f"load_{name}")(return_X_y=True)
    return _river_dataset(name)


def standardise(Xtr, Xte):
    sc = StandardScaler().fit(Xtr)
    return sc.transform(Xtr), sc.transform(Xte)


def streams(args):
    """Yields (name, kind, order, Xtr, ytr, Xte, yte): standardised, training part in stream order."""
    synth = SYNTHETIC[:2] if args.quick else SYNTHETIC
    for s in synth:
        Xtr, ytr, Xte, yte = synthetic(s, args.n_train, args.n_test, args.seed)
        Xtr, Xte = standardise(Xtr, Xte)
        yield (s, "synthetic", 0, Xtr, ytr, Xte, yte)
    reals = ("breast_cancer", "wine", "bananas") if args.quick else SKLEARN_SETS + RIVER_SETS
    for r in reals:
        data = real(r)
        if data is None:
            print(f"{r}: skipped (river not importable)", file=sys.stderr)
            continue
        X, y = data
        for o in range(args.n_orders if len(y) < LONG_SET else 1):
            Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.3, stratify=y, shuffle=True,
                                                  random_state=args.seed + o)
            Xtr, Xte = standardise(Xtr, Xte)
            yield (r, "real", o, Xtr, ytr, Xte, yte)


# --------------------------------------------------------------- training
def stream_fit(est, Xtr, ytr, classes):
    """One pass of partial_fit in chunks of CHUNK; returns (est, seconds)."""
    t0 = time.perf_counter()
    for i in range(0, len(ytr), CHUNK):
        est.partial_fit(Xtr[i:i + CHUNK], ytr[i:i + CHUNK], classes=classes)
    return est, time.perf_counter() - t0


def accuracy(est, Xte, yte):
    return 100.0 * float(np.mean(est.predict(Xte) == yte))


def search(est, Xtr, ytr, classes, n_jobs=1, **kw):
    s = PrequentialSearch(est, n_expected=len(ytr), n_jobs=n_jobs, random_state=0, **kw)
    return stream_fit(s, Xtr, ytr, classes)


def edges(params, grid):
    """Which numeric parameters of ``params`` sit at the smallest or largest value of ``grid``."""
    out = []
    for k, vals in grid.items():
        nums = [v for v in vals if isinstance(v, (int, float)) and not isinstance(v, bool)]
        if len(nums) < 2 or k not in params:
            continue
        if params[k] == min(nums):
            out.append(f"{k}=min")
        elif params[k] == max(nums):
            out.append(f"{k}=max")
    return out


def grid_of(search_):
    """The search's grid: parameter -> the values its candidates take."""
    params = search_.candidate_params_
    return {k: sorted({p[k] for p in params}, key=lambda v: (isinstance(v, str), v)) for k in params[0]}


def oracle(search_, Xtr, ytr, Xte, yte, classes):
    """Every candidate of the search (same parameters and seed) trained alone: (accuracy, seconds)."""
    out = []
    for c in search_.candidates_:
        m, t = stream_fit(clone(c), Xtr, ytr, classes)
        out.append((accuracy(m, Xte, yte), t))
    return out


def beyond_edge(search_, best, Xtr, ytr, Xte, yte, classes):
    """The oracle's config with each parameter that sits at an edge of the grid pushed one and
    two grid steps further out (same seed): the best such accuracy and its change, or None."""
    params, grid = search_.candidate_params_[best], grid_of(search_)
    found = None
    for e in edges(params, grid):
        k, side = e.split("=")
        vals = grid[k]
        step = vals[-1] / vals[-2] if side == "max" else vals[0] / vals[1]
        for j in (1, 2):
            try:  # a value past the edge may be invalid (BOGD: eta * lam >= 1)
                m, _ = stream_fit(clone(search_.candidates_[best]).set_params(**{k: params[k] * step**j}),
                                  Xtr, ytr, classes)
            except ValueError:
                continue
            acc = accuracy(m, Xte, yte)
            if found is None or acc > found["acc"]:
                found = {"acc": acc, "param": k, "value": params[k] * step**j}
    return found


def weaker_neighbour(search_, picked, accs):
    """Accuracy of the search's pick with its regularisation one grid step weaker (lam smaller,
    C larger; the other parameters the same), from the oracle's runs; None without such a step.
    A what-if: the search cannot switch, but it says whether the last rung's ranking leans to
    strong regularisation (the prefix effect) by a fixed step."""
    params = search_.candidate_params_
    p = params[picked]
    for key, weaker in (("lam", -1), ("C", +1)):
        if key not in p:
            continue
        vals = sorted({q[key] for q in params})
        j = vals.index(p[key]) + weaker
        if not 0 <= j < len(vals):
            return accs[picked]  # already the weakest: stays
        want = {**p, key: vals[j]}
        return next(accs[i] for i, q in enumerate(params) if q == want)
    return None


def timed_search(est, Xtr, ytr, classes, reps):
    """The default search run ``reps`` times: (search, median seconds, median setup seconds,
    seconds with n_jobs=None). Setup is the fixed cost of building the candidates (grid, clones,
    checks, models) that a short stream does not amortise: _start on the first chunk alone (a
    private call, bench only)."""
    times, setups = [], []
    for _ in range(reps):
        s, t = search(est, Xtr, ytr, classes)
        times.append(t)
        t0 = time.perf_counter()
        PrequentialSearch(est, n_expected=len(ytr), n_jobs=1, random_state=0)._start(
            Xtr[:CHUNK], ytr[:CHUNK], classes, len(ytr))
        setups.append(time.perf_counter() - t0)
    _, wall = search(est, Xtr, ytr, classes, n_jobs=None)
    return s, float(np.median(times)), float(np.median(setups)), wall


def default_search(est, Xtr, ytr, Xte, yte, classes, reps):
    """The default search against its oracle, with times and diagnostics."""
    s, t, setup, wall = timed_search(est, Xtr, ytr, classes, reps)
    orc = oracle(s, Xtr, ytr, Xte, yte, classes)
    accs = [a for a, _ in orc]
    best, picked = int(np.argmax(accs)), s.best_index_
    one = float(np.median([t for _, t in orc]))
    beyond = beyond_edge(s, best, Xtr, ytr, Xte, yte, classes)
    res, acc = s.results_, accuracy(s, Xte, yte)
    return {
        "n_candidates": len(accs), "rungs": list(s.rungs_), "grid": grid_of(s),
        "oracle_acc": accs[best], "oracle_params": s.candidate_params_[best],
        "oracle_edge": edges(s.candidate_params_[best], grid_of(s)), "oracle_accs": accs,
        "beyond_edge": beyond, "beyond_gain": max(0.0, beyond["acc"] - accs[best]) if beyond else 0.0,
        "oracle_dropped_at": res["dropped_at"][best], "oracle_search_rank": res["rank"][best],
        "oracle_rung_errors": res["rung_errors"][best], "picked_rung_errors": res["rung_errors"][picked],
        "search_acc": acc, "search_params": s.best_params_, "gap": accs[best] - acc,
        "search_equals_alone": acc == accs[picked],
        "picked_oracle_rank": 1 + sum(a > accs[picked] for a in accs),
        "weaker_acc": weaker_neighbour(s, picked, accs), "dropped_at": res["dropped_at"],
        "t_search": t, "t_one": one, "ratio": t / one, "ratio_mean": t / float(np.mean([t for _, t in orc])), "wall_ratio": wall / one, "t_setup": setup,
        "ratio_after_setup": (t - setup) / one,
    }


def variants(est, Xtr, ytr, Xte, yte, classes, base):
    """The search's variants (VARIANTS but the default), against the default's oracle."""
    out = {}
    for name, kw in VARIANTS.items():
        if name == "default":
            continue
        s, t = search(est, Xtr, ytr, classes, **kw(len(ytr)))
        acc = accuracy(s, Xte, yte)
        out[name] = {"acc": acc, "gap": base["oracle_acc"] - acc, "ratio": t / base["t_one"],
                     "params": s.best_params_, "rungs": list(s.rungs_)}
    return out


def defaults(learner, B, Xtr, ytr, Xte, yte, classes, oracle_acc):
    """The default-constructed estimator and ALTERNATIVES: accuracy and gap to the oracle."""
    out = []
    for alt in [None] + ALTERNATIVES[learner]:
        kw = {k: resolve(v, Xtr) for k, v in (alt or {}).items()}
        m, _ = stream_fit(LEARNERS[learner](budget=B, random_state=0, **kw), Xtr, ytr, classes)
        acc = accuracy(m, Xte, yte)
        out.append({"alt": "default" if alt is None else alt_name(alt), "acc": acc, "gap": oracle_acc - acc})
    return out


def resolve(v, Xtr):
    """An alternative's value: "1/n" -> 1 / n_train, "k*scale" -> k times gamma='scale'."""
    if v == "1/n":
        return 1.0 / len(Xtr)
    if isinstance(v, str) and v.endswith("*scale"):
        return float(v.split("*")[0]) / (Xtr.shape[1] * Xtr.var())
    return v


def alt_name(alt):
    return ", ".join(f"{k}={v}" for k, v in alt.items())


def cell(learner, B, Xtr, ytr, Xte, yte, reps):
    classes = np.unique(ytr)
    est = LEARNERS[learner](budget=B)
    r = default_search(est, Xtr, ytr, Xte, yte, classes, reps)
    r["variants"] = variants(est, Xtr, ytr, Xte, yte, classes, r)
    r["defaults"] = defaults(learner, B, Xtr, ytr, Xte, yte, classes, r["oracle_acc"])
    return r


# ------------------------------------------------------------------ river
def river_run(name, Xtr, ytr, Xte, yte, B):
    """river's SuccessiveHalvingClassifier over the search's BSGD candidates, one example at a
    time, against the search on the same (bool-labelled) stream."""
    import math

    from river import base, metrics, model_selection

    pos = np.unique(ytr)[-1]
    ytr, yte = ytr == pos, yte == pos  # bool labels: learn_one needs no classes
    est = BudgetedSGDClassifier(budget=B)
    base.Classifier.register(type(est))
    s, t_ours = search(est, Xtr, ytr, np.array([False, True]))
    models = [clone(c) for c in s.candidates_]
    # river's rung for s survivors falls at budget / (s * ceil(log_eta(n))): its last (3
    # survivors, eta 3) where the search's last rung is.
    k = math.ceil(math.log(len(models), 3))
    sh = model_selection.SuccessiveHalvingClassifier(models, metrics.Accuracy(), budget=3 * k * s.rungs_[-1], eta=3)
    rows = [dict(enumerate(x)) for x in Xtr.tolist()]
    t0 = time.perf_counter()
    for x, yy in zip(rows, ytr.tolist()):
        sh.learn_one(x, yy)
    t_river = time.perf_counter() - t0
    river_acc = 100.0 * float(np.mean(sh.best_model.predict(Xte) == yte))
    n = len(ytr)
    # The ceiling of the speed-up: one model (the search's pick), one example at a time from
    # Python against partial_fit in chunks; successive halving makes the same updates in both.
    one = clone(s.best_estimator_)
    t0 = time.perf_counter()
    for x, yy in zip(rows, ytr.tolist()):
        one.predict_one(x)
        one.learn_one(x, yy)
    t_loop = time.perf_counter() - t0
    _, t_chunk = stream_fit(clone(s.best_estimator_), Xtr, ytr, np.array([False, True]))
    return {"stream": name, "B": B, "n_train": n, "n_candidates": len(models), "search_rungs": list(s.rungs_),
            "search_acc": accuracy(s, Xte, yte), "search_params": s.best_params_,
            "river_acc": river_acc, "river_params": sh.best_model.get_params(),
            "search_rate": n / t_ours, "river_rate": n / t_river, "speedup": t_river / t_ours,
            "one_model_loop_rate": n / t_loop, "one_model_chunk_rate": n / t_chunk, "one_model_speedup": t_loop / t_chunk}


def river_suite(args):
    try:
        import river
    except ImportError:
        return None, []
    n = 1000 if args.quick else args.n_train
    out = []
    Xtr, ytr, Xte, yte = synthetic("checkerboard", n, args.n_test, args.seed)
    out.append(river_run("checkerboard", *standardise_pair(Xtr, ytr, Xte, yte), B=100))
    if not args.quick:
        X, y = real("bananas")
        Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.3, stratify=y, random_state=args.seed)
        out.append(river_run("bananas", *standardise_pair(Xtr, ytr, Xte, yte), B=100))
    return river.__version__, out


def long_timing(args):
    """The time bound on long streams (where a search's fixed cost is amortised): the default
    search over a checkerboard stream of --n-long examples against each of its 27 candidates
    alone (median), one core, and its wall time with every core."""
    n = 20_000 if args.quick else args.n_long
    Xtr, ytr, Xte, yte = standardise_pair(*synthetic("checkerboard", n, args.n_test, args.seed))
    classes = np.unique(ytr)
    rows = []
    for learner in ("bsgd", "bpa"):
        est = LEARNERS[learner](budget=100, random_state=0)
        s, t_search = search(est, Xtr, ytr, classes)
        alone = [stream_fit(c, Xtr, ytr, classes) for c in build_candidates(est, s.candidate_params_)]
        t_one = float(np.median([t for _, t in alone]))
        _, wall = search(est, Xtr, ytr, classes, n_jobs=None)
        rows.append({"learner": learner, "n": n, "search_s": t_search, "one_median_s": t_one,
                     "ratio": t_search / t_one, "wall_ratio": wall / t_one, "search_acc": accuracy(s, Xte, yte),
                     "oracle_acc": max(accuracy(e, Xte, yte) for e, _ in alone)})
        print(f"long {learner}: search {t_search:.2f}s one {t_one:.3f}s ratio {rows[-1]['ratio']:.2f} "
              f"wall {rows[-1]['wall_ratio']:.2f}", file=sys.stderr, flush=True)
    return rows


def long_table(rows):
    return md_table(["learner", "n train", "search s (1 core)", "one candidate s (median)", "t/1", "wall/1 (all cores)",
                     "oracle %", "search %"],
                    [[r["learner"], r["n"], f"{r['search_s']:.2f}", f"{r['one_median_s']:.3f}", f"{r['ratio']:.2f}",
                      f"{r['wall_ratio']:.2f}", f"{r['oracle_acc']:.2f}", f"{r['search_acc']:.2f}"] for r in rows])


def standardise_pair(Xtr, ytr, Xte, yte):
    Xtr, Xte = standardise(Xtr, Xte)
    return Xtr, ytr, Xte, yte


# ------------------------------------------------------------------ tables
def groups(records):
    """records grouped by (stream, learner, B) in run order: the orders of a real set together."""
    out = {}
    for r in records:
        out.setdefault((r["stream"], r["learner"], r["B"]), []).append(r)
    return out


def mean(rs, f):
    return float(np.mean([f(r) for r in rs]))


def search_table(records):
    rows = []
    for (stream, learner, B), rs in groups(records).items():
        counts = Counter(e for r in rs for e in r["oracle_edge"])
        edge = [f"{e} {c}/{len(rs)}" if len(rs) > 1 else e for e, c in sorted(counts.items())]
        rows.append([stream, rs[0]["n_train"], rs[0]["n_test"], learner, B, f"{mean(rs, lambda r: r['oracle_acc']):.2f}",
                     f"{mean(rs, lambda r: r['search_acc']):.2f}", f"{mean(rs, lambda r: r['gap']):.2f}",
                     f"{mean(rs, lambda r: r['picked_oracle_rank']):.1f}", ", ".join(edge) or "-",
                     f"{mean(rs, lambda r: r['beyond_gain']):.2f}" if edge else "-",
                     f"{mean(rs, lambda r: r['ratio']):.2f}", f"{mean(rs, lambda r: r['ratio_mean']):.2f}",
                     f"{mean(rs, lambda r: r['ratio_after_setup']):.2f}",
                     f"{mean(rs, lambda r: r['wall_ratio']):.2f}"])
    return md_table(["stream", "n train", "n test", "learner", "B", "oracle %", "search %", "gap", "picked rank",
                     "oracle at grid edge", "beyond edge +", "t/1", "t/mean", "t/1 after setup", "wall/1 (n_jobs=None)"], rows,
                    ["l", "r", "r", "l", "r", "r", "r", "r", "r", "l", "r", "r", "r", "r", "r"])


def variant_gaps(rs, v):
    return mean(rs, lambda r: r["gap"] if v == "default" else r["variants"][v]["gap"])


def variant_summary(records, long_n):
    cells = list(groups(records).values())
    rows = []
    for v in VARIANTS:
        gaps = np.array([variant_gaps(rs, v) for rs in cells])
        ratio = [mean(rs, lambda r, v=v: r["ratio"] if v == "default" else r["variants"][v]["ratio"])
                 for rs in cells if rs[0]["n_train"] >= long_n]
        rows.append([v, f"{gaps.mean():.2f}", f"{np.median(gaps):.2f}", f"{gaps.max():.2f}",
                     f"{int((gaps <= 0.3).sum())}/{len(gaps)}", f"{int((gaps <= 1.0).sum())}/{len(gaps)}",
                     f"{np.median(ratio):.2f}" if ratio else "-"])
    return md_table(["variant", "mean gap", "median gap", "max gap", "cells <= 0.3", "cells <= 1",
                     f"median t/1 (n >= {long_n})"], rows)


def variant_by(records, key):
    """Mean gap of each variant per stream (key='stream') or per learner and B."""
    by = {}
    for (stream, learner, B), rs in groups(records).items():
        k = stream if key == "stream" else f"{learner} B={B}"
        by.setdefault(k, []).append(rs)
    rows = [[k] + [f"{np.mean([variant_gaps(rs, v) for rs in cells]):.2f}" for v in VARIANTS]
            for k, cells in by.items()]
    return md_table([key] + list(VARIANTS), rows)


def weaker_table(records):
    """The what-if of weaker_neighbour, per learner and B: mean gap of the pick and of its
    one-step-weaker neighbour, and the cells each has within 0.3 / 1 point."""
    rows = []
    for key in dict.fromkeys((r["learner"], r["B"]) for r in records):
        cells = [rs for (s, lr, B), rs in groups(records).items() if (lr, B) == key]
        if cells[0][0]["weaker_acc"] is None:
            continue
        g = np.array([mean(rs, lambda r: r["gap"]) for rs in cells])
        w = np.array([mean(rs, lambda r: r["oracle_acc"] - r["weaker_acc"]) for rs in cells])
        rows.append([f"{key[0]} B={key[1]}", f"{g.mean():.2f}", f"{w.mean():.2f}",
                     f"{int((g <= 0.3).sum())} / {int((w <= 0.3).sum())}", f"{int((g <= 1).sum())} / {int((w <= 1).sum())}",
                     f"{int((w < g - 1e-9).sum())} / {int((w > g + 1e-9).sum())}"])
    return md_table(["learner", "gap of the pick", "gap, one step weaker", "cells <= 0.3 (pick / weaker)",
                     "cells <= 1", "weaker better / worse"], rows)


def defaults_detail(records, learner, top=3):
    """Gap per stream and B of the default and the ``top`` alternatives with the least mean gap."""
    cells = {k: rs for k, rs in groups(records).items() if k[1] == learner}
    names = [d["alt"] for d in next(iter(cells.values()))[0]["defaults"]]
    means = {j: np.mean([mean(rs, lambda r, j=j: r["defaults"][j]["gap"]) for rs in cells.values()])
             for j in range(len(names))}
    cols = [0] + sorted((j for j in means if j > 0 and names[j] != names[0]), key=means.get)[:top]
    rows = [[s, B] + [f"{mean(rs, lambda r, j=j: r['defaults'][j]['gap']):.2f}" for j in cols]
            for (s, _, B), rs in cells.items()]
    return md_table(["stream", "B"] + [names[j] for j in cols], rows)


def defaults_table(records, learner):
    cells = [rs for (s, lr, B), rs in groups(records).items() if lr == learner]
    names = [d["alt"] for d in cells[0][0]["defaults"]]
    rows = []
    for j, name in enumerate(names):
        g = np.array([mean(rs, lambda r, j=j: r["defaults"][j]["gap"]) for rs in cells])
        synth = [gg for gg, rs in zip(g, cells) if rs[0]["kind"] == "synthetic"]
        realg = [gg for gg, rs in zip(g, cells) if rs[0]["kind"] == "real"]
        rows.append([f"**{name}**" if name == "default" else name, f"{g.mean():.2f}", f"{np.median(g):.2f}",
                     f"{g.max():.2f}", f"{int((g > 2).sum())}/{len(g)}",
                     f"{np.mean(synth):.2f}" if synth else "-", f"{np.mean(realg):.2f}" if realg else "-"])
    rows.sort(key=lambda r: float(r[1]))
    return md_table([f"{learner}: parameters", "mean gap", "median", "max", "cells > 2", "synthetic", "real"], rows)


def defaults_by_stream(records):
    by, cols = {}, []
    for (stream, learner, B), rs in groups(records).items():
        col = f"{learner} B={B}"
        cols += [col] if col not in cols else []
        g = mean(rs, lambda r: r["defaults"][0]["gap"])
        by.setdefault(stream, {})[col] = f"**{g:.2f}**" if g > 2 else f"{g:.2f}"
    return md_table(["stream"] + cols, [[s] + [d.get(c, "-") for c in cols] for s, d in by.items()])


def river_table(rows):
    return md_table(["stream", "n train", "B", "search %", "river SH %", "search ex/s", "river SH ex/s", "speed-up",
                     "one model: learn_one loop / partial_fit"],
                    [[r["stream"], r["n_train"], r["B"], f"{r['search_acc']:.2f}", f"{r['river_acc']:.2f}",
                      f"{r['search_rate']:.0f}", f"{r['river_rate']:.0f}", f"{r['speedup']:.1f}x",
                      f"{r['one_model_loop_rate']:.0f} / {r['one_model_chunk_rate']:.0f} ex/s "
                      f"({r['one_model_speedup']:.1f}x)"] for r in rows])


# -------------------------------------------------------------------- main
def run_suite(args):
    learners = ("bsgd", "bpa") if args.quick else tuple(LEARNERS)
    budgets = (100,) if args.quick else (100, 500)
    records = []
    for name, kind, order, Xtr, ytr, Xte, yte in streams(args):
        for learner in learners:
            for B in budgets:
                t0 = time.perf_counter()
                r = cell(learner, B, Xtr, ytr, Xte, yte, args.reps)
                records.append({"stream": name, "kind": kind, "order": order, "learner": learner, "B": B,
                                "n_train": len(ytr), "n_test": len(yte), "n_features": Xtr.shape[1],
                                "n_classes": len(np.unique(ytr)), **r})
                print(f"{name:18s} o{order} {learner:10s} B={B:3d} oracle {r['oracle_acc']:6.2f} search "
                      f"{r['search_acc']:6.2f} gap {r['gap']:5.2f} naive {r['variants']['naive']['gap']:5.2f} "
                      f"t/1 {r['ratio']:5.2f} default {r['defaults'][0]['gap']:5.2f} "
                      f"({time.perf_counter() - t0:.1f}s)", file=sys.stderr, flush=True)
    return records


def markdown(records, river_version, river_rows, env, args, seconds, long_rows):
    long_n = 5000
    parts = [
        f"# PrequentialSearch vs the best of its grid in hindsight ({seconds:.0f} s)", "",
        "gap = oracle - search, test accuracy points (mean over the orders of a real set); picked rank = "
        "the oracle rank of the search's pick (1 = the oracle's config); t/1 = search training time / median "
        "time of one candidate alone, one core; after setup = without the time to build the candidates "
        "(grid, clones, models) on the first chunk.", "",
        "## Search (default: window judge, last rung at n/4) vs oracle", "", search_table(records), "",
        "## Time on a long stream (the fixed cost of building 27 candidates amortised)", "",
        long_table(long_rows), "",
        "## Variants: which choice closes the gap", "", variant_summary(records, long_n), "",
        "Mean gap per stream (over learners and B):", "", variant_by(records, "stream"), "",
        "Mean gap per learner and B (over streams):", "", variant_by(records, "learner"), "",
        "What if the search took its pick's neighbour with one grid step weaker regularisation (lam / "
        "sqrt(10) for BSGD, C x 10 for BPA; the oracle's run of that candidate)?", "", weaker_table(records), "",
        "## Defaults of the estimators (gamma='scale', random_state=0) vs the oracle", "",
        "Gap of the default-constructed estimator (bold: more than 2 points below the oracle):", "",
        defaults_by_stream(records), "",
    ]
    for learner in dict.fromkeys(r["learner"] for r in records):
        parts += [defaults_table(records, learner), "", f"{learner}: gap per stream of the default and the best "
                  "three alternatives:", "", defaults_detail(records, learner), ""]
    if river_rows:
        parts += [f"## river {river_version} SuccessiveHalvingClassifier (same BSGD candidates, one example at a "
                  "time; its rungs where the search's are)", "", river_table(river_rows), ""]
    else:
        parts += ["river is not installed: no river rows.", ""]
    parts.append(env_md(env))
    return "\n".join(parts)


def main():
    p = parser(__doc__)
    p.add_argument("--n-train", type=int, default=None, help="synthetic training examples (20000; 3000 --quick)")
    p.add_argument("--n-test", type=int, default=None, help="synthetic test examples (5000; 1000 --quick)")
    p.add_argument("--n-orders", type=int, default=None, help="orders of each small real set (5; 1 --quick)")
    p.add_argument("--reps", type=int, default=None, help="timed runs of the default search (3; 1 --quick)")
    p.add_argument("--no-river", action="store_true", help="skip the river comparison")
    p.add_argument("--n-long", type=int, default=200_000, help="the long stream of the time bound (20000 --quick)")
    args = p.parse_args()
    q = args.quick
    args.n_train = args.n_train or (3000 if q else 20000)
    args.n_test = args.n_test or (1000 if q else 5000)
    args.n_orders = args.n_orders or (1 if q else 5)
    args.reps = args.reps or (1 if q else 3)
    env = environment()
    t0 = time.perf_counter()
    records = run_suite(args)
    long_rows = long_timing(args)
    river_version, river_rows = (None, []) if args.no_river else river_suite(args)
    seconds = time.perf_counter() - t0
    md = markdown(records, river_version, river_rows, env, args, seconds, long_rows)
    write_results("tuning", {"protocol": __doc__, "env": env, "seconds": seconds, **compact(records),
                             "river_version": river_version, "river": river_rows, "long": long_rows}, md, args)


def compact(records):
    """The records for the JSON file: each one's defaults as accuracies only, in the order of
    ``alternatives[learner]`` (the gap is oracle_acc - accuracy)."""
    names, out = {}, []
    for r in records:
        names.setdefault(r["learner"], [d["alt"] for d in r["defaults"]])
        out.append({**r, "defaults": [d["acc"] for d in r["defaults"]]})
    return {"alternatives": names, "records": out}


if __name__ == "__main__":
    main()
