"""Training and prediction speed of Budgeted SGD from Python, one core, side by side.

Data: the 2-D noisy checkerboard stream (15% label noise), standardised with the statistics
of its first 1,000 examples; 10,000 warm-up examples + ``n`` timed examples (200,000; 50,000
with ``--quick``). Two hyper-parameter settings, both RBF at B=100:

* ``tuned``: gamma=8, lam=1e-2 -- what bench_bsgd_tables.py's prefix tuning picks for
  merging on this stream (2 of 3 seeds);
* ``demo``: the ``python -m budgetkernel demo`` defaults (budgetkernel.cli.DEMO_GAMMA/LAM).

The learning rate lam changes how many examples violate the margin (and so add an SV and
trigger a maintenance step): reported as upd/ex. Measurements (wall clock, ``perf_counter``,
garbage collector disabled inside timed loops, BLAS/OpenMP pinned to one thread):

(a) BSGD merge training throughput: after ``partial_fit`` on the 10,000 warm-up examples,
    ``partial_fit`` over the timed examples in chunks of 10,000 (examples/s).
(b) predict-only throughput of the same fitted model on the same timed examples
    (``decision_function`` in chunks of 10,000).
(c) Nystroem(n_components=100, same gamma, landmarks from the first 1,000 examples) +
    SGDClassifier(loss='hinge', alpha=1e-5, average=True): mini-batches of 1,000, each
    ``transform`` + ``partial_fit`` (warm-up on the first 10,000 examples untimed).
(d) the same as (a) for maintenance project, remove-random, remove-smallest.
    Ratios: BSGD merge / Nystroem (target >= 2), BSGD merge / predict-only (target >= 0.30),
    absolute BSGD merge (target >= 1,000,000 examples/s).
    (a), (b), (d) and the budgetkernel rows of (e) are measured twice: in this process
    (the SIMD build the package picks, ``budgetkernel._native.core.simd``) and in a child
    process with ``BUDGETKERNEL_SIMD=baseline`` (the portable build), one after the other.
(e) per-example latency of the true-streaming path: ``predict_one(x)`` + ``learn_one(x, y)``
    with ``x`` a 1-D float64 array, BSGD merge B=100 (tuned setting, warmed up on 10,000
    examples), averaged over 20,000 examples (5,000 with --quick); target <= 10 us. Also
    each call alone, the raw core binding, and dict input. Compared with scikit-learn's
    SGDClassifier (hinge; ``predict`` + ``partial_fit`` on one example, raw 2-D features, and
    with a Nystroem(100) transform) and, if installed, river (RBFSampler(100) + hinge
    LogisticRegression pipeline, and a bare PAClassifier), all on dict/1-row input as their
    APIs take it. Mean and median/p99 per example (per-iteration perf_counter_ns).
(f) cost per training example vs B in {50, 100, 200, 400, 800} for merge, remove-random and
    project, at gamma=16, lam=1e-3 (a setting where every budget fills; at gamma=8
    projection folds numerically dependent SVs and plateaus at ~780 SVs for B=800): warm
    up until the budget is full (at most 20,000 examples) plus 5,000 examples, then
    ``partial_fit`` in chunks of 1,000 until >= 1 s (0.25 s --quick) or 50,000 examples;
    predict-only time of the same model on the same examples; maintenance-step cost
    estimated as (train - predict time) / #maintenance steps. Log-log slopes of time vs B by
    least squares over all B and over B >= 100. Expected: ~1 for merge/removal (O(B d) rows),
    projection's maintenance ~2 (O(B^2)), per-example cost in between.

    python bench/bench_speed.py [--quick] [--seed 0] [--no-baseline]
"""

from __future__ import annotations

import _common  # noqa: F401  (first: pins the thread pools)

import json
import sys
import time
import warnings

import numpy as np

from _common import baseline_child, env_md, environment, fmt_rate, md_table, nogc, parser, write_results

TUNED = (8.0, 1e-2)
# (f) uses a setting in which every budget up to 800 fills: at gamma=8 projection folds
# numerically dependent SVs and plateaus at ~780 SVs for B=800.
COST_SETTING = (16.0, 1e-3)
CHUNK = 10_000
N_WARM = 10_000
BUDGETS = (50, 100, 200, 400, 800)


def load(n, seed):
    from budgetkernel import datasets
    from budgetkernel.preprocessing import StreamingStandardizer

    X, y = datasets.noisy_checkerboard(N_WARM + n, random_state=seed)
    sc = StreamingStandardizer(n_warmup=1000).partial_fit(X[:1000])
    return np.ascontiguousarray(sc.transform(X)), y


def settings():
    from budgetkernel.cli import DEMO_GAMMA, DEMO_LAM

    return {"tuned": TUNED, "demo": (float(DEMO_GAMMA), float(DEMO_LAM))}


# -------------------------------------------------------------- budgetkernel part
def train_rate(X, y, maintenance, gamma, lam, seed, budget=100):
    from budgetkernel import BudgetedSGDClassifier

    clf = BudgetedSGDClassifier(budget=budget, maintenance=maintenance, gamma=gamma, lam=lam, random_state=seed)
    clf.partial_fit(X[:N_WARM], y[:N_WARM], classes=[-1, 1])
    c0 = clf.counters_
    secs = 0.0
    with nogc():
        for i in range(N_WARM, len(y), CHUNK):
            t0 = time.perf_counter()
            clf.partial_fit(X[i:i + CHUNK], y[i:i + CHUNK])
            secs += time.perf_counter() - t0
    c1 = clf.counters_
    n = len(y) - N_WARM
    return clf, {"examples_per_second": n / secs, "seconds": secs, "examples": n,
                 "updates_per_example": (c1["updates"] - c0["updates"]) / n,
                 "maintenance_per_example": (c1["maintenance_steps"] - c0["maintenance_steps"]) / n}


def predict_rate(clf, X):
    secs = 0.0
    with nogc():
        for i in range(N_WARM, len(X), CHUNK):
            t0 = time.perf_counter()
            clf.decision_function(X[i:i + CHUNK])
            secs += time.perf_counter() - t0
    n = len(X) - N_WARM
    return {"examples_per_second": n / secs, "seconds": secs, "examples": n}


def per_example(fn, n):
    """Runs fn(i) for i < n; mean (from the total) and median / p99 (per call), in us."""
    ts = np.empty(n, dtype=np.int64)
    pc = time.perf_counter_ns
    with nogc():
        t_all = pc()
        for i in range(n):
            t0 = pc()
            fn(i)
            ts[i] = pc() - t0
        total = pc() - t_all
    return {"mean_us": total / n / 1e3, "median_us": float(np.median(ts)) / 1e3,
            "p99_us": float(np.percentile(ts, 99)) / 1e3, "n": n}


def bk_latency(X, y, seed, n):
    from budgetkernel import BudgetedSGDClassifier

    gamma, lam = TUNED
    clf = BudgetedSGDClassifier(budget=100, maintenance="merge", gamma=gamma, lam=lam, random_state=seed)
    clf.partial_fit(X[:N_WARM], y[:N_WARM], classes=[-1, 1])
    Xs = X[N_WARM:N_WARM + n]
    rows = [Xs[i] for i in range(n)]  # 1-D C-contiguous float64 views
    ys = y[N_WARM:N_WARM + n].tolist()
    dicts = [{"x0": float(r[0]), "x1": float(r[1])} for r in rows]
    out = {}

    def both(i):
        clf.predict_one(rows[i])
        clf.learn_one(rows[i], ys[i])

    out["predict_one + learn_one"] = per_example(both, n)
    out["learn_one"] = per_example(lambda i: clf.learn_one(rows[i], ys[i]), n)
    out["predict_one"] = per_example(lambda i: clf.predict_one(rows[i]), n)
    core = clf._model
    yi = [0 if v == -1 else 1 for v in ys]

    def raw(i):
        core.decision_one(rows[i])
        core.learn_one(rows[i], yi[i])

    out["core decision_one + learn_one (binding, no label mapping)"] = per_example(raw, n)
    dclf = BudgetedSGDClassifier(budget=100, maintenance="merge", gamma=gamma, lam=lam, random_state=seed)
    for i in range(N_WARM):  # warm-up through the dict path only (it fixes the feature order)
        dclf.learn_one({"x0": float(X[i, 0]), "x1": float(X[i, 1])}, int(y[i]), classes=[-1, 1])

    def dboth(i):
        dclf.predict_one(dicts[i])
        dclf.learn_one(dicts[i], ys[i])

    out["predict_one + learn_one, dict input"] = per_example(dboth, n)
    return out


def measure_bk(n, seed, n_lat):
    from budgetkernel._native import core

    X, y = load(n, seed)
    res = {"simd": core.simd, "settings": {}}
    for sname, (gamma, lam) in settings().items():
        s = {"gamma": gamma, "lam": lam}
        clf, s["merge"] = train_rate(X, y, "merge", gamma, lam, seed)
        s["predict"] = predict_rate(clf, X)
        for m in ("project", "remove-random", "remove-smallest"):
            _, s[m] = train_rate(X, y, m, gamma, lam, seed)
        res["settings"][sname] = s
        print(f"  [{core.simd}] {sname}: merge {fmt_rate(s['merge']['examples_per_second'])}/s, "
              f"predict {fmt_rate(s['predict']['examples_per_second'])}/s", file=sys.stderr, flush=True)
    res["latency"] = bk_latency(X, y, seed, n_lat)
    return res


# ---------------------------------------------------------------- other libraries
def nystroem_rate(X, y, gamma, seed):
    from sklearn.kernel_approximation import Nystroem
    from sklearn.linear_model import SGDClassifier

    feat = Nystroem(kernel="rbf", gamma=gamma, n_components=100, random_state=seed).fit(X[:1000])
    clf = SGDClassifier(loss="hinge", alpha=1e-5, average=True, random_state=seed)
    for i in range(0, N_WARM, 1000):
        clf.partial_fit(feat.transform(X[i:i + 1000]), y[i:i + 1000], classes=[-1, 1])
    secs = 0.0
    with nogc():
        for i in range(N_WARM, len(y), 1000):
            t0 = time.perf_counter()
            clf.partial_fit(feat.transform(X[i:i + 1000]), y[i:i + 1000])
            secs += time.perf_counter() - t0
    n = len(y) - N_WARM
    return {"examples_per_second": n / secs, "seconds": secs, "examples": n}


def other_latency(X, y, seed, n):
    from sklearn.kernel_approximation import Nystroem
    from sklearn.linear_model import SGDClassifier

    gamma = TUNED[0]
    out = {}
    Xs = X[N_WARM:N_WARM + n]
    ys = y[N_WARM:N_WARM + n]
    rows = [Xs[i:i + 1] for i in range(n)]  # 1 x 2 arrays, as scikit-learn takes them
    ylist = [ys[i:i + 1] for i in range(n)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sgd = SGDClassifier(loss="hinge", alpha=1e-5, random_state=seed).partial_fit(X[:N_WARM], y[:N_WARM],
                                                                                      classes=[-1, 1])

        def sk(i):
            sgd.predict(rows[i])
            sgd.partial_fit(rows[i], ylist[i])

        out["sklearn SGDClassifier (linear, 2 features): predict + partial_fit"] = per_example(sk, n)
        feat = Nystroem(kernel="rbf", gamma=gamma, n_components=100, random_state=seed).fit(X[:1000])
        sgd2 = SGDClassifier(loss="hinge", alpha=1e-5, random_state=seed).partial_fit(
            feat.transform(X[:N_WARM]), y[:N_WARM], classes=[-1, 1])

        def skn(i):
            z = feat.transform(rows[i])
            sgd2.predict(z)
            sgd2.partial_fit(z, ylist[i])

        out["sklearn Nystroem(100) + SGDClassifier: transform + predict + partial_fit"] = per_example(skn, n)
    try:
        import river
        from river import compose, feature_extraction, linear_model, optim
    except ImportError:
        out["river"] = None
        return out, None
    dicts = [{"x0": float(r[0, 0]), "x1": float(r[0, 1])} for r in rows]
    yb = [bool(v > 0) for v in ys]
    warm = [({"x0": float(a), "x1": float(b)}, bool(t > 0)) for (a, b), t in zip(X[:N_WARM], y[:N_WARM])]
    models = {
        "river RBFSampler(100) + LogisticRegression(hinge) pipeline: predict_one + learn_one": compose.Pipeline(
            feature_extraction.RBFSampler(gamma=gamma, n_components=100, seed=seed),
            linear_model.LogisticRegression(loss=optim.losses.Hinge())),
        "river PAClassifier (linear): predict_one + learn_one": linear_model.PAClassifier(),
    }
    for name, model in models.items():
        for xd, t in warm[:2000]:
            model.learn_one(xd, t)

        def rv(i, model=model):
            model.predict_one(dicts[i])
            model.learn_one(dicts[i], yb[i])

        out[name] = per_example(rv, n)
    return out, river.__version__


# ------------------------------------------------------------------ (f): cost vs B
def cost_vs_budget(X, y, seed, t_min, n_max):
    from budgetkernel import BudgetedSGDClassifier

    gamma, lam = COST_SETTING
    rows = []
    for m in ("merge", "remove-random", "project"):
        for B in BUDGETS:
            clf = BudgetedSGDClassifier(budget=B, maintenance=m, gamma=gamma, lam=lam, random_state=seed)
            i, after = 0, -1
            first = True
            while after < 5000 and not (after < 0 and i >= 20_000):  # give up waiting for a full store at 20k
                clf.partial_fit(X[i:i + 1000], y[i:i + 1000], classes=[-1, 1] if first else None)
                first = False
                i += 1000
                if after >= 0:
                    after += 1000
                elif clf.n_support_ >= B:
                    after = 0
            c0 = clf.counters_
            start, secs = i, 0.0
            with nogc():
                while secs < t_min and i - start < n_max and i + 1000 <= len(y):
                    t0 = time.perf_counter()
                    clf.partial_fit(X[i:i + 1000], y[i:i + 1000])
                    secs += time.perf_counter() - t0
                    i += 1000
                t0 = time.perf_counter()
                for j in range(start, i, 1000):
                    clf.decision_function(X[j:j + 1000])
                psecs = time.perf_counter() - t0
            c1 = clf.counters_
            n = i - start
            nm = c1["maintenance_steps"] - c0["maintenance_steps"]
            r = {"maintenance": m, "budget": B, "n_support": int(clf.n_support_), "examples": n,
                 "train_us": 1e6 * secs / n,
                 "predict_us": 1e6 * psecs / n, "maintenance_per_example": nm / n,
                 "maintenance_step_us": 1e6 * (secs - psecs) / nm if nm else float("nan")}
            rows.append(r)
            print(f"  (f) {m:14s} B={B:<4d} train {r['train_us']:8.2f} us/ex  predict {r['predict_us']:6.2f} us/ex  "
                  f"maint/ex {r['maintenance_per_example']:.2f}  ~{r['maintenance_step_us']:8.2f} us/step",
                  file=sys.stderr, flush=True)
    slopes = {}
    for m in ("merge", "remove-random", "project"):
        rs = [r for r in rows if r["maintenance"] == m]
        lb = np.log([r["budget"] for r in rs])
        for what in ("train_us", "predict_us", "maintenance_step_us"):
            v = np.array([r[what] for r in rs])
            ok = v > 0
            s_all = float(np.polyfit(lb[ok], np.log(v[ok]), 1)[0]) if ok.sum() >= 2 else float("nan")
            big = ok & (lb >= np.log(100))
            s_big = float(np.polyfit(lb[big], np.log(v[big]), 1)[0]) if big.sum() >= 2 else float("nan")
            slopes[f"{m}/{what}"] = {"all": s_all, "B>=100": s_big}
    return rows, slopes


# -------------------------------------------------------------------------- main
def main():
    p = parser(__doc__)
    p.add_argument("--no-baseline", action="store_true", help="skip the BUDGETKERNEL_SIMD=baseline child run")
    p.add_argument("--child", action="store_true", help=argparse_suppress())
    args = p.parse_args()
    n = 50_000 if args.quick else 200_000
    n_lat = 5_000 if args.quick else 20_000
    if args.child:  # the baseline-SIMD measurement, printed as JSON for the parent
        print(json.dumps(measure_bk(n, args.seed, n_lat)))
        return
    env = environment()
    print(f"budgetkernel SIMD build in this process: {env['simd']}", flush=True)
    runs = {env["simd"]: measure_bk(n, args.seed, n_lat)}
    if not args.no_baseline:
        runs.update(baseline_child(__file__, args))
    X, y = load(n, args.seed)
    nys = {s: nystroem_rate(X, y, g, args.seed) for s, (g, _) in settings().items()}
    lat, river_version = other_latency(X, y, args.seed, n_lat)
    print("cost vs B ...", flush=True)
    rows_f, slopes = cost_vs_budget(X, y, args.seed, 0.25 if args.quick else 1.0, 50_000)
    data = {"protocol": __doc__, "env": env, "n_timed": n, "n_warmup": N_WARM, "settings": settings(),
            "budgetkernel": runs, "nystroem_sgd": nys, "latency_others": lat, "river": river_version,
            "cost_vs_budget": rows_f, "cost_setting": COST_SETTING, "slopes": slopes}
    data["targets"] = targets(runs, nys, env["simd"])
    write_results("bench_speed", data, markdown(data, n), args)


def argparse_suppress():
    import argparse

    return argparse.SUPPRESS


def targets(runs, nys, simd):
    r = runs[simd]["settings"]
    out = {}
    for s in r:
        merge = r[s]["merge"]["examples_per_second"]
        out[s] = {
            "bsgd_over_nystroem": merge / nys[s]["examples_per_second"],
            "bsgd_over_predict": merge / r[s]["predict"]["examples_per_second"],
            "bsgd_examples_per_second": merge,
        }
    lat = runs[simd]["latency"]["predict_one + learn_one"]["mean_us"]
    out["latency_us"] = lat
    return out


def markdown(d, n):
    simds = list(d["budgetkernel"])
    sets = d["settings"]
    out = [f"# Speed (one core; {n:,} timed examples of the standardised 2-D noisy checkerboard, B=100)", ""]
    hdr = ["method"] + [f"{s} (γ={g:g}, λ={lam:g}) [{simd.split(' ')[0]}]" for s, (g, lam) in sets.items()
                        for simd in simds]
    rows = []
    for key, label in (("merge", "(a) BSGD merge, train"), ("predict", "(b) same model, predict only"),
                       ("project", "(d) BSGD project, train"), ("remove-random", "(d) BSGD remove-random, train"),
                       ("remove-smallest", "(d) BSGD remove-smallest, train")):
        row = [label]
        for s in sets:
            for simd in simds:
                v = d["budgetkernel"][simd]["settings"][s][key]
                extra = f" ({v['updates_per_example']:.2f} upd/ex)" if "updates_per_example" in v else ""
                row.append(f"{fmt_rate(v['examples_per_second'])}/s{extra}")
        rows.append(row)
    row = ["(c) Nystroem(100)+SGDClassifier(hinge), batches of 1,000"]
    for s in sets:
        for simd in simds:
            row.append(f"{fmt_rate(d['nystroem_sgd'][s]['examples_per_second'])}/s" if simd == simds[0] else "(same)")
    rows.append(row)
    out += ["Examples per second (upd/ex: fraction of examples that added an SV, i.e. ran a maintenance step). "
            "Columns: hyper-parameter setting and SIMD build (the package's choice, then "
            "BUDGETKERNEL_SIMD=baseline in a subprocess).", "", md_table(hdr, rows), ""]

    t = d["targets"]
    trows = []
    for s in sets:
        a = t[s]
        trows += [[s, "BSGD merge / Nystroem+SGD", ">= 2", f"{a['bsgd_over_nystroem']:.2f}",
                   "met" if a["bsgd_over_nystroem"] >= 2 else "**missed**"],
                  [s, "BSGD merge / predict-only", ">= 0.30", f"{a['bsgd_over_predict']:.2f}",
                   "met" if a["bsgd_over_predict"] >= 0.30 else "**missed**"],
                  [s, "BSGD merge examples/s", ">= 1,000,000", f"{a['bsgd_examples_per_second']:,.0f}",
                   "met" if a["bsgd_examples_per_second"] >= 1e6 else "**missed**"]]
    trows.append(["tuned", "predict_one + learn_one latency", "<= 10 us", f"{t['latency_us']:.2f} us",
                  "met" if t["latency_us"] <= 10 else "**missed**"])
    out += [f"## Targets ({simds[0]} build)", "", md_table(["setting", "what", "target", "measured", ""], trows,
                                                           ["l", "l", "r", "r", "l"]), ""]

    lrows = []
    for simd in simds:
        for k, v in d["budgetkernel"][simd]["latency"].items():
            lrows.append([f"budgetkernel [{simd.split(' ')[0]}]: {k}", f"{v['mean_us']:.2f}", f"{v['median_us']:.2f}",
                          f"{v['p99_us']:.2f}"])
    for k, v in d["latency_others"].items():
        if v is None:
            lrows.append([k + " (not installed)", "-", "-", "-"])
        else:
            lrows.append([k, f"{v['mean_us']:.2f}", f"{v['median_us']:.2f}", f"{v['p99_us']:.2f}"])
    g, lam = sets["tuned"]
    out += [f"## (e) Per-example latency from Python (B=100 merge, γ={g:g}, λ={lam:g}; µs per example)", "",
            f"river {d['river']}." if d["river"] else "river not installed.", "",
            md_table(["what", "mean", "median", "p99"], lrows), ""]

    frows = [[r["maintenance"], r["budget"], r["n_support"], f"{r['train_us']:.2f}", f"{r['predict_us']:.2f}",
              f"{r['maintenance_per_example']:.2f}", f"{r['maintenance_step_us']:.2f}", r["examples"]]
             for r in d["cost_vs_budget"]]
    srows = []
    for m in ("merge", "remove-random", "project"):
        sl = d["slopes"]
        srows.append([m] + [f"{sl[f'{m}/{w}']['all']:.2f} / {sl[f'{m}/{w}']['B>=100']:.2f}"
                            for w in ("train_us", "predict_us", "maintenance_step_us")])
    gf, lf = d["cost_setting"]
    out += [f"## (f) Cost per example vs B (γ={gf:g}, λ={lf:g}, {simds[0]} build)", "",
            "maintenance step ≈ (train − predict time) / #maintenance steps (includes adding the SV).", "",
            md_table(["maintenance", "B", "#SV", "train µs/ex", "predict µs/ex", "maint/ex", "µs per maintenance step",
                      "timed examples"], frows), "",
            "Log-log slopes of time vs B (all B / B ≥ 100); expected ~1 for merge and removal, ~2 for "
            "projection's maintenance step.", "",
            md_table(["maintenance", "train per example", "predict per example", "maintenance step"], srows), "",
            env_md(d["env"])]
    return "\n".join(out)


if __name__ == "__main__":
    main()
