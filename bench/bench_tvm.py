"""Twin Vector Machine accuracy table (the TVM paper's Table 3) and the exact incremental SVM vs LIBSVM.

Wang & Vucetic, "Twin Vector Machines for Online Learning on a Budget" (SDM 2009), section 5,
on the streams we can generate (budgetkernel.datasets), RBF kernel, one pass:

* streams: ``checkerboard`` (4x4, clean), ``noisy_checkerboard`` (15% of the training labels
  flipped; clean test set, as in the paper), ``two_gaussians`` (the paper's "Gauss"; Bayes
  accuracy 0.804 here) and ``waveform`` made binary as in the paper: "class 1" negative, the
  other two positive. Our label k is UCI label 2 - k (datasets.waveform), so UCI class 1 is
  our label 1 (``waveform``); our labels 0 and 1 are mirror images of each other (h2 <-> h3
  under i -> 22 - i), so "0 vs rest" and "1 vs rest" are the same problem anyway (Bayes
  accuracy 0.917). If "class 1" means the first class (UCI label 0 = our label 2, the
  (h2, h3) class) the problem is harder (Bayes 0.900, closer to the paper's LIBSVM 87.9 /
  IDSVM 89.0): reported as ``waveform_uci0``. The Bayes accuracies are Monte Carlo estimates
  from the exact class densities;
* ``make_stream_and_test``: a 100,000-example training stream (chunks of 10,000) and an
  independent 10,000-example test set; features standardised with
  ``StreamingStandardizer(n_warmup=1000)`` (first 1,000 stream examples, then frozen);
* methods: ``TwinVectorMachine`` with the paper's defaults (m1 = 1, m2 = 2, input-space,
  one-sided merging, rejection eta = 0.2, C * sum of twin weights kept at C * B) for
  B in {20, 50, 100, 200, 500}; the paper's "Random" baseline ``ReservoirSVC`` (an exact SVM
  on a reservoir sample of B = 100 examples);
* hyper-parameters, per stream and method (TVM: tuned at B = 100 and used for every B, as
  the paper uses one setting for all budgets), on a *validation* stream drawn with another
  seed (base seed + 1000): train on its first 30,000 examples, score on a 5,000-example
  validation set of the same seed with the *noisy* labels for the noisy checkerboard (a
  user would not have clean labels); the test sets are never used for tuning. Grid:
  gamma = g * 2 / d with g in {0.5, 1, 2, 4, 8} (d = number of features: 2-D streams get
  gamma in 0.5..8, the 21-D waveform 0.048..0.76 -- the paper's RBF width delta = d / 2,
  i.e. gamma = 1 / d, is inside both ranges) x C in {1, 10, 100, 1000} (with fixed_C_total
  this is the C of the first B examples; the paper used C = 100). Ties: the first grid
  point (smaller gamma, then smaller C);
* "paper setting" (B = 100 only): C = 100 and the paper's kernel width: delta = 0.37 for the
  checkerboards (gamma = 1 / (2 delta) = 1.35), delta = d / 2 otherwise (gamma = 1 / d);
* repeated for ``--n-seeds`` seeds (default 3): seed s draws the train stream and test set.

Reported: mean +- std over seeds of the test accuracy; per run the chosen parameters,
examples/s (training only, one core), #twins, the fraction of examples Beneficial accepted
(counters_['labels'] / examples) and the accuracy every 10,000 examples.

Second part, the exact incremental SVM (``IncrementalSVC``, Cauwenberghs & Poggio) on
10,000 examples (one pass) against scikit-learn's ``SVC`` (LIBSVM) with the same kernel,
C and gamma on the same data, in the same run: fit times and their ratio, test accuracy of
both, #SVs, and the largest absolute difference of their decision values on the test set
(LIBSVM run with tol=1e-6 for that comparison; its default-tol time is reported too).

Targets (the project's issue): TVM B = 100 >= 97.5% checkerboard (paper 98.1), >= 96.5% noisy
checkerboard (97.1), >= 80.5% two Gaussians (81.1; our Bayes limit is 80.4%... see the
table), >= 87% waveform (87.7); accuracy rising with B; Random well below.

One core (BLAS/OpenMP pinned to one thread). ``--quick``: 1 seed, 20,000-example streams,
10,000-example validation streams, B in {20, 100}, 2,000 examples for the SVC comparison.

    python bench/bench_tvm.py [--quick] [--seed 0] [--n-seeds 3] [--streams checkerboard,...]
"""

from __future__ import annotations

import _common  # noqa: F401  (first: pins the thread pools)

import itertools
import time

import numpy as np
from sklearn.svm import SVC

from budgetkernel import IncrementalSVC, ReservoirSVC, TwinVectorMachine, datasets
from budgetkernel.datasets._bayes import _waveform_log_likelihood
from budgetkernel.preprocessing import StreamingStandardizer

from _common import best_of, env_md, environment, fmt_rate, mark, md_table, parser, write_results

STREAMS = ("checkerboard", "noisy_checkerboard", "two_gaussians", "waveform", "waveform_uci0")
BUDGETS = (20, 50, 100, 200, 500)
G_GRID = (0.5, 1.0, 2.0, 4.0, 8.0)  # gamma = g * 2 / d
C_GRID = (1.0, 10.0, 100.0, 1000.0)
TARGETS = {"checkerboard": 0.975, "noisy_checkerboard": 0.965, "two_gaussians": 0.805, "waveform": 0.87,
           "waveform_uci0": 0.87}
PAPER = {  # Table 3 of the TVM paper: Random B=100, LIBSVM, IDSVM, TVM B = 20, 50, 100, 200, 500
    "checkerboard": (82.9, 99.8, 99.7, 75.0, 91.3, 98.1, 98.4, 99.0),
    "noisy_checkerboard": (72.9, 96.9, 95.8, 73.3, 91.4, 97.1, 97.7, 98.8),
    "two_gaussians": (78.7, 81.5, 80.7, 81.3, 81.3, 81.1, 81.4, 81.8),
    "waveform": (85.4, 87.9, 89.0, 86.9, 86.1, 87.7, 88.5, 88.8),
    "waveform_uci0": (85.4, 87.9, 89.0, 86.9, 86.1, 87.7, 88.5, 88.8),
}
N_TEST = 10_000
N_VAL_TEST = 5_000
CHUNK = 10_000
VAL_SEED_OFFSET = 1000
# The paper's negative waveform class: "class 1" read as UCI label 1 (= our label 2 - 1 = 1),
# or, for the stream "waveform_uci0", as the first class (UCI label 0 = our label 2).
WAVEFORM_NEGATIVE = {"waveform": 1, "waveform_uci0": 2}


def generator(name):
    return "waveform" if name.startswith("waveform") else name


def binarise(name, y):
    """Labels in {0, 1}: waveform as in the paper (one class negative, the others positive)."""
    if name in WAVEFORM_NEGATIVE:
        return (y != WAVEFORM_NEGATIVE[name]).astype(np.int64)
    return (y > 0).astype(np.int64)


def load_stream(name, n_train, seed, n_test=N_TEST, clean_test=True):
    """The standardised training stream (one array, in stream order) and test set."""
    train, (Xt, yt) = datasets.make_stream_and_test(generator(name), n_train, n_test, random_state=seed, chunk_size=CHUNK,
                                                    clean_test=clean_test)
    scaler = StreamingStandardizer(n_warmup=1000)
    parts = list(scaler.fit_transform_stream(train))
    X = np.ascontiguousarray(np.concatenate([p[0] for p in parts]))
    y = binarise(name, np.concatenate([p[1] for p in parts]))
    return X, y, np.ascontiguousarray(scaler.transform(Xt)), binarise(name, yt)


def waveform_binary_bayes(name, n=200_000, seed=0):
    """Monte Carlo Bayes accuracy of one waveform class vs the other two (exact class densities)."""
    X, y = datasets.waveform(n, random_state=seed)
    ll = _waveform_log_likelihood(X)  # (n, 3) log p(x | c); the classes are equiprobable
    c = WAVEFORM_NEGATIVE[name]
    a, b = (k for k in range(3) if k != c)
    pos = np.logaddexp(ll[:, a], ll[:, b])  # p(x, pos) = (p(x | a) + p(x | b)) / 3 vs p(x, neg) = p(x | c) / 3
    pred = (pos > ll[:, c]).astype(np.int64)
    return float(np.mean(pred == binarise(name, y)))


def make(method, budget, C, gamma, seed):
    if method == "tvm":
        return TwinVectorMachine(budget=budget, C=C, gamma=gamma, random_state=seed)
    return ReservoirSVC(budget=budget, C=C, gamma=gamma, random_state=seed)


def run(method, X, y, Xt, yt, budget, C, gamma, seed, curve=True):
    clf = make(method, budget, C, gamma, seed)
    seconds, acc_curve = 0.0, []
    for i in range(0, len(y), CHUNK):
        t0 = time.perf_counter()
        clf.partial_fit(X[i:i + CHUNK], y[i:i + CHUNK], classes=[0, 1])
        seconds += time.perf_counter() - t0
        if curve or i + CHUNK >= len(y):
            acc_curve.append((min(i + CHUNK, len(y)), float(np.mean(clf.predict(Xt) == yt))))
    c = clf.counters_
    n_twins = int(np.asarray(clf._model.twin_points).shape[0])
    # 4.3 of the paper: C_t = C * B / max(B, sum of twin weights) (Random: C is fixed).
    final_C = C * budget / max(budget, float(np.sum(clf._model.twin_weights))) if method == "tvm" else C
    return {
        "test_accuracy": acc_curve[-1][1],
        "train_seconds": seconds,
        "examples_per_second": len(y) / seconds,
        "n_twins": n_twins,
        "n_support": int(clf.n_support_),
        "examples": c["examples"],
        "labels": c["labels"],
        "label_fraction": c["labels"] / c["examples"],
        "updates": c["updates"],
        "maintenance_steps": c["maintenance_steps"],
        "online_error": float(clf.online_error_),
        "final_C": final_C,
        "curve": acc_curve,
    }


def tune(method, name, n_val, base_seed, budget=100):
    """(C, gamma) with the best validation accuracy on a stream of another seed."""
    seed = base_seed + VAL_SEED_OFFSET
    X, y, Xv, yv = load_stream(name, n_val, seed, n_test=N_VAL_TEST, clean_test=False)
    d = X.shape[1]
    grid = []
    for g, C in itertools.product(G_GRID, C_GRID):
        gamma = g * 2.0 / d
        r = run(method, X, y, Xv, yv, budget, C, gamma, seed, curve=False)
        grid.append({"gamma": gamma, "C": C, "val_accuracy": r["test_accuracy"], "seconds": r["train_seconds"]})
    best = max(grid, key=lambda g: g["val_accuracy"])  # max keeps the first of ties
    return best["C"], best["gamma"], best["val_accuracy"], grid


def paper_gamma(name, d):
    delta = 0.37 if "checkerboard" in name else d / 2.0  # K(x, y) = exp(-||x - y||^2 / (2 delta))
    return 1.0 / (2.0 * delta)


# ------------------------------------------------------------ IncrementalSVC vs SVC
def svc_compare(name, n, seed):
    X, y, Xt, yt = load_stream(name, n, seed)
    d = X.shape[1]
    C, gamma = 100.0, paper_gamma(name, d)  # the paper's IDSVM / LIBSVM setting
    ridge, failed_at = 0.0, None
    t0 = time.perf_counter()
    try:
        inc = IncrementalSVC(C=C, gamma=gamma).fit(X, y)
    except RuntimeError as e:
        # A numerical breakdown of the exact SVM (K numerically rank-deficient: 10^4 points in
        # 2-D at C = 100); the remedy its message names is a small ridge, i.e. the SVM on K + ridge I.
        failed_at = str(e).split(" of the chunk")[0]
        ridge = 1e-6
        print(f"IncrementalSVC {name}: {failed_at} broke down with ridge 0; refitting with ridge {ridge:g}", flush=True)
        t0 = time.perf_counter()
        inc = IncrementalSVC(C=C, gamma=gamma, ridge=ridge).fit(X, y)
    t_inc = time.perf_counter() - t0
    t0 = time.perf_counter()
    ref = SVC(C=C, gamma=gamma, tol=1e-6).fit(X, y)
    t_ref = time.perf_counter() - t0
    t0 = time.perf_counter()
    ref_default = SVC(C=C, gamma=gamma).fit(X, y)
    t_ref_default = time.perf_counter() - t0
    di, dr, dd = inc.decision_function(Xt), ref.decision_function(Xt), ref_default.decision_function(Xt)
    # Scoring the test set: both read their support vectors only (best of 3, after the first call,
    # which also gathers IncrementalSVC's support vectors once).
    t_pred_inc, _ = best_of(lambda: inc.decision_function(Xt))
    t_pred_ref, _ = best_of(lambda: ref.decision_function(Xt))
    return {
        "stream": name, "n_train": n, "seed": seed, "C": C, "gamma": gamma, "ridge": ridge,
        "failed_without_ridge": failed_at,
        "incremental_seconds": t_inc, "svc_seconds": t_ref, "svc_default_tol_seconds": t_ref_default,
        "ratio": t_inc / t_ref, "ratio_default_tol": t_inc / t_ref_default,
        "incremental_predict_seconds": t_pred_inc, "svc_predict_seconds": t_pred_ref,
        "incremental_accuracy": float(np.mean(inc.predict(Xt) == yt)),
        "svc_accuracy": float(np.mean(ref.predict(Xt) == yt)),
        "incremental_n_support": int(inc.n_support_), "svc_n_support": int(ref.n_support_.sum()),
        "max_abs_decision_diff": float(np.max(np.abs(di - dr))),
        "max_abs_decision_diff_default_tol": float(np.max(np.abs(di - dd))),
        "decision_scale": float(np.max(np.abs(dr))),
        "sign_agreement": float(np.mean(np.sign(di) == np.sign(dr))),
        "bias_diff": float(abs(np.ravel(inc.intercept_)[0] - ref.intercept_[0])),
    }


# ------------------------------------------------------------------------- driver
def main():
    p = parser(__doc__)
    p.add_argument("--n-seeds", type=int, default=None, help="repetitions (default 3; 1 with --quick)")
    p.add_argument("--streams", default=",".join(STREAMS), help="comma-separated subset of " + ",".join(STREAMS))
    p.add_argument("--svc-n", type=int, default=None, help="examples for the IncrementalSVC vs SVC comparison")
    p.add_argument("--cpp-json", default=None,
                   help="only summarise this Google Benchmark JSON of bench/cpp/bench_tvm.cpp into "
                        "bench/results/bench_tvm_cpp.{json,md} (log-log slopes vs B)")
    p.add_argument("--svc-only", action="store_true",
                   help="only the IncrementalSVC vs SVC comparison, into bench/results/bench_tvm_svc.{json,md}")
    args = p.parse_args()
    if args.cpp_json:
        return summarise_cpp(args.cpp_json, args)
    quick = args.quick
    n_seeds = args.n_seeds or (1 if quick else 3)
    n_train = 20_000 if quick else 100_000
    n_val = 10_000 if quick else 30_000
    svc_n = args.svc_n or (2_000 if quick else 10_000)
    budgets = (20, 100) if quick else BUDGETS
    streams = [s for s in args.streams.split(",") if s]
    env = environment()
    t_start = time.perf_counter()

    def log(msg):
        print(f"[{time.perf_counter() - t_start:6.0f}s] {msg}", flush=True)

    svc_streams = [s for s in ("checkerboard", "noisy_checkerboard", "two_gaussians") if s in streams]
    if args.svc_only:
        svc_runs = [svc_compare(name, svc_n, args.seed) for name in svc_streams]
        data = {"protocol": __doc__, "env": env, "svc_comparison": svc_runs,
                "wall_seconds": time.perf_counter() - t_start}
        write_results("bench_tvm_svc", data, "\n".join([*svc_md(svc_runs), env_md(env)]), args)
        return None

    bayes = {"two_gaussians": datasets.two_gaussians_bayes_accuracy(), "checkerboard": 1.0,
             "noisy_checkerboard": 1.0}
    for name in WAVEFORM_NEGATIVE:
        if name in streams:
            bayes[name] = waveform_binary_bayes(name)
            log(f"{name} (our class {WAVEFORM_NEGATIVE[name]} vs rest) Bayes accuracy ~ {bayes[name]:.4f}")

    chosen = {}
    for name in streams:
        for method in ("tvm", "random"):
            t0 = time.perf_counter()
            C, gamma, vacc, grid = tune(method, name, n_val, args.seed)
            chosen[(name, method)] = {"C": C, "gamma": gamma, "val_accuracy": vacc, "grid": grid,
                                      "tune_seconds": time.perf_counter() - t0}
            log(f"tuned {name:18s} {method:6s} C={C:g} gamma={gamma:.4g} validation acc {vacc:.4f}")

    runs = []
    for s in range(n_seeds):
        seed = args.seed + s
        for name in streams:
            X, y, Xt, yt = load_stream(name, n_train, seed)
            d = X.shape[1]
            jobs = [("tvm", B, "tuned") for B in budgets] + [("random", 100, "tuned"), ("tvm", 100, "paper"),
                                                               ("random", 100, "paper")]
            for method, B, protocol in jobs:
                if protocol == "tuned":
                    C, gamma = chosen[(name, method)]["C"], chosen[(name, method)]["gamma"]
                else:
                    C, gamma = 100.0, paper_gamma(name, d)
                r = run(method, X, y, Xt, yt, B, C, gamma, seed)
                r.update(stream=name, seed=seed, method=method, budget=B, protocol=protocol, C=C, gamma=gamma)
                runs.append(r)
                log(f"seed {seed} {name:18s} {method:6s} B={B:<4d} {protocol:6s} C={C:<6g} gamma={gamma:<7.4g} "
                    f"test acc {r['test_accuracy']:.4f}  {fmt_rate(r['examples_per_second'])} ex/s  "
                    f"labels {r['label_fraction']:.3f}  twins {r['n_twins']}")

    svc_runs = []
    for name in svc_streams:
        r = svc_compare(name, svc_n, args.seed)
        svc_runs.append(r)
        log(f"IncrementalSVC vs SVC {name}: {r['incremental_seconds']:.2f}s vs {r['svc_seconds']:.2f}s, "
            f"acc {r['incremental_accuracy']:.4f} / {r['svc_accuracy']:.4f}, "
            f"max |f_inc - f_svc| {r['max_abs_decision_diff']:.2e}")

    summary, md = summarise(runs, svc_runs, chosen, streams, budgets, bayes, n_seeds, n_train, n_val, env)
    data = {"protocol": __doc__, "env": env, "n_train": n_train, "n_test": N_TEST, "n_val": n_val,
            "n_val_test": N_VAL_TEST, "seeds": [args.seed + s for s in range(n_seeds)],
            "validation_seed": args.seed + VAL_SEED_OFFSET, "grid": {"gamma_times_d_over_2": G_GRID, "C": C_GRID},
            "bayes": bayes, "chosen": {f"{k[0]}/{k[1]}": v for k, v in chosen.items()}, "summary": summary,
            "runs": runs, "svc_comparison": svc_runs, "paper_table3": PAPER,
            "wall_seconds": time.perf_counter() - t_start}
    write_results("bench_tvm", data, md, args)


def _slope(x, y, sel):
    """Least-squares slope of log y against log x over the selected points."""
    return float(np.polyfit(np.log(x[sel]), np.log(y[sel]), 1)[0]) if sel.sum() >= 2 else float("nan")


def summarise_cpp(path, args):
    """Time per iteration vs B of bench_tvm.cpp's families and their log-log slopes."""
    import json

    with open(path) as f:
        gb = json.load(f)
    fams = {}
    for b in gb["benchmarks"]:
        if b.get("run_type") == "aggregate" and b.get("aggregate_name") != "median":
            continue
        name = b.get("run_name", b["name"])
        if "/B:" not in name:
            continue
        fam, B = name.split("/B:")
        scale = {"ns": 1e-3, "us": 1.0, "ms": 1e3, "s": 1e6}[b.get("time_unit", "us")]
        fams.setdefault(fam, []).append({"B": int(B), "us": b["real_time"] * scale,
                                          **{k: b[k] for k in ("changed", "merge", "accept_rate", "accepted",
                                                               "twins", "items_per_second") if k in b}})
    out, rows, slopes = {"env": gb.get("context"), "families": fams}, [], {}
    for fam, pts in fams.items():
        pts.sort(key=lambda r: r["B"])
        B = np.array([r["B"] for r in pts], float)
        t = np.array([r["us"] for r in pts])
        per_change = np.array([r["us"] / r["changed"] if r.get("changed") else np.nan for r in pts])
        allB, big = np.ones(len(B), bool), B >= 100
        slopes[fam] = {"all": _slope(B, t, allB), "B>=100": _slope(B, t, big),
                       "per_change_all": _slope(B, per_change, allB & np.isfinite(per_change)),
                       "per_change_B>=100": _slope(B, per_change, big & np.isfinite(per_change))}
        for r in pts:
            extra = "; ".join(f"{k}={r[k]:.3g}" for k in ("changed", "merge", "accept_rate", "accepted", "twins")
                              if k in r)
            rows.append([fam, r["B"], f"{r['us']:.2f}", fmt_rate(r.get("items_per_second", float("nan"))), extra])
    out["slopes"] = slopes
    srows = [[fam, f"{s['all']:.2f}", f"{s['B>=100']:.2f}", f"{s['per_change_all']:.2f}",
              f"{s['per_change_B>=100']:.2f}"] for fam, s in slopes.items()]
    ctx = gb.get("context", {})
    md = "\n".join([
        "# TVM per-update cost vs budget (bench/cpp/bench_tvm.cpp, Google Benchmark)", "",
        "tvm_update = one step() on an example Beneficial accepts (full budget, 2-D noisy checkerboard, paper "
        "setting C = 100, gamma = 1.351); tvm_train = partial_fit over 1,000 stream examples. Median of the "
        f"repetitions; one core of a shared 2-core machine ({ctx.get('host_name', '?')}, "
        f"{ctx.get('num_cpus', '?')} CPUs, {ctx.get('date', '')}). See the header comment of the .cpp.", "",
        md_table(["family", "B", "µs / iteration", "items/s", "counters"], rows, ["l", "r", "r", "r", "l"]), "",
        "Log-log slope of time vs B (least squares; 2 = quadratic); per change = time / changed, the cost of an "
        "update that changed the twin set.", "",
        md_table(["family", "slope, all B", "slope, B >= 100", "per change, all B", "per change, B >= 100"], srows),
        ""])
    write_results("bench_tvm_cpp", out, md, None)


def _agg(vals):
    a = np.asarray(vals, dtype=float)
    return float(a.mean()), float(a.std(ddof=1)) if len(a) > 1 else 0.0


def svc_md(svc_runs):
    """The IncrementalSVC vs SVC table (markdown lines)."""
    srows = [[r["stream"], f"{r['n_train']:,}", f"{r['C']:g}", f"{r['gamma']:.4g}", f"{r.get('ridge', 0.0):g}",
              f"{r['incremental_seconds']:.2f}", f"{r['svc_seconds']:.2f}", f"{r['svc_default_tol_seconds']:.2f}",
              f"{r['ratio']:.1f}", f"{r['incremental_predict_seconds']:.3f} / {r['svc_predict_seconds']:.3f}",
              f"{100 * r['incremental_accuracy']:.2f}", f"{100 * r['svc_accuracy']:.2f}",
              f"{r['incremental_n_support']} / {r['svc_n_support']}", f"{r['max_abs_decision_diff']:.1e}",
              f"{r['max_abs_decision_diff_default_tol']:.1e}", f"{r['decision_scale']:.3g}"] for r in svc_runs]
    return ["## Exact incremental SVM (IncrementalSVC, one pass) vs scikit-learn SVC (LIBSVM)", "",
            "Same data, RBF kernel, C and gamma (the paper's IDSVM/LIBSVM setting), same run, one core. "
            "SVC fitted with tol=1e-6 (decision values compared against it) and with its default tol=1e-3 "
            "(time only). predict s = decision_function on the 10,000 test examples (best of 3; SVC: the "
            "tol=1e-6 fit). max abs Δf = largest absolute difference of the decision values on them; "
            "max abs f gives their scale. ridge > 0: the exact machine (ridge 0) broke down on "
            "this numerically rank-deficient kernel matrix and was refitted on K + ridge I (its error's remedy; "
            "SVC still solves the plain problem).", "",
            md_table(["stream", "n", "C", "gamma", "ridge", "IncrementalSVC s", "SVC s (tol 1e-6)", "SVC s (default)",
                      "time ratio", "predict s inc / SVC", "inc acc %", "SVC acc %", "#SV inc / SVC",
                      "max abs Δf (tol 1e-6)", "max abs Δf (default tol)", "max abs f"], srows), ""]


def summarise(runs, svc_runs, chosen, streams, budgets, bayes, n_seeds, n_train, n_val, env):
    summary = {}
    for r in runs:
        key = f"{r['method']}@{r['budget']}/{r['protocol']}"
        summary.setdefault(r["stream"], {}).setdefault(key, []).append(r)
    for dct in summary.values():
        for key, rs in dct.items():
            m, s = _agg([r["test_accuracy"] for r in rs])
            dct[key] = {"method": rs[0]["method"], "budget": rs[0]["budget"], "protocol": rs[0]["protocol"],
                        "C": rs[0]["C"], "gamma": rs[0]["gamma"],
                        "test_accuracy_mean": m, "test_accuracy_std": s,
                        "test_accuracy_per_seed": [r["test_accuracy"] for r in rs],
                        "examples_per_second_mean": _agg([r["examples_per_second"] for r in rs])[0],
                        "train_seconds_mean": _agg([r["train_seconds"] for r in rs])[0],
                        "n_twins_mean": _agg([r["n_twins"] for r in rs])[0],
                        "label_fraction_mean": _agg([r["label_fraction"] for r in rs])[0],
                        "maintenance_fraction_mean": _agg([r["maintenance_steps"] / r["examples"] for r in rs])[0],
                        "update_fraction_mean": _agg([r["updates"] / r["examples"] for r in rs])[0],
                        "final_C_mean": _agg([r["final_C"] for r in rs if r["final_C"] is not None] or [0.0])[0]}

    def cell(name, key):
        s = summary.get(name, {}).get(key)
        if s is None:
            return "-"
        return f"{100 * s['test_accuracy_mean']:.2f} ± {100 * s['test_accuracy_std']:.2f}"

    headers = ["stream", "Random B=100"] + [f"TVM B={B}" for B in budgets] + ["Bayes"]
    rows, prow = [], []
    for name in streams:
        rows.append([name, cell(name, "random@100/tuned")] + [cell(name, f"tvm@{B}/tuned") for B in budgets]
                    + [f"{100 * bayes[name]:.1f}"])
        pv = PAPER[name]
        pb = dict(zip(BUDGETS, pv[3:]))
        prow.append([f"*paper: {name}*", f"*{pv[0]}*"] + [f"*{pb[B]}*" for B in budgets]
                    + [f"*LIBSVM {pv[1]}, IDSVM {pv[2]}*"])
    out = [f"# Twin Vector Machine accuracy (TVM paper Table 3 protocol; test accuracy %, mean ± std over "
           f"{n_seeds} seed(s))", "",
           f"{n_train:,}-example stream, one pass; 10,000-example test set (clean for the noisy checkerboard); "
           f"features standardised on the first 1,000 examples; RBF kernel; TVM defaults m1 = 1, m2 = 2, "
           f"input-space one-sided merging, rejection eta = 0.2, C * sum(s) kept at C * B. C and gamma chosen "
           f"per stream and method on a validation stream of another seed ({n_val:,} examples, 5,000 validation "
           f"examples), TVM at B = 100 and used for every B. Paper rows (italic) from its Table 3 (its own data "
           f"sets of the same name). Timings from a shared 2-core machine, one core.", "",
           md_table(headers, [r for pair in zip(rows, prow) for r in pair]), ""]

    crows = []
    for name in streams:
        for method in ("tvm", "random"):
            ch = chosen[(name, method)]
            crows.append([name, "TVM (all B)" if method == "tvm" else "Random", f"{ch['C']:g}", f"{ch['gamma']:.4g}",
                          f"{100 * ch['val_accuracy']:.2f}"])
    out += ["## Chosen parameters (validation stream)", "",
            md_table(["stream", "method", "C", "gamma", "validation acc %"], crows), ""]

    prows = []
    for name in streams:
        sm = summary.get(name, {})
        for method in ("tvm", "random"):
            s = sm.get(f"{method}@100/paper")
            if s:
                prows.append([name, "TVM B=100" if method == "tvm" else "Random B=100", f"{s['gamma']:.4g}",
                              cell(name, f"{method}@100/paper")])
    out += ["## Paper setting (C = 100, the paper's RBF width: delta = 0.37 on the checkerboards, d/2 "
            "otherwise)", "", md_table(["stream", "method", "gamma", "test acc %"], prows), ""]

    trows = []
    for name in streams:
        sm = summary.get(name, {})
        t = sm.get("tvm@100/tuned")
        if t is None:
            continue
        a = t["test_accuracy_mean"]
        trows.append([name, "TVM B=100 accuracy", f">= {100 * TARGETS[name]:.1f}", f"{100 * a:.2f}",
                      mark(a >= TARGETS[name])])
        accs = [sm[f"tvm@{B}/tuned"]["test_accuracy_mean"] for B in budgets if f"tvm@{B}/tuned" in sm]
        rising = all(b >= a_ - 0.002 for a_, b in zip(accs, accs[1:]))
        trows.append([name, "TVM rises with B (B=" + "/".join(map(str, budgets)) + ")", "non-decreasing (±0.2)",
                      " / ".join(f"{100 * v:.1f}" for v in accs), mark(rising)])
        rnd = sm.get("random@100/tuned")
        if rnd is not None:
            gap = a - rnd["test_accuracy_mean"]
            trows.append([name, "TVM B=100 - Random B=100 (points)", "> 2 (well below)", f"{100 * gap:+.2f}",
                          mark(gap > 0.02)])
    out += ["## Targets", "", md_table(["stream", "what", "target", "measured", ""], trows,
                                       ["l", "l", "r", "r", "l"]), ""]

    drows = []
    for name in streams:
        for key, s in summary.get(name, {}).items():
            drows.append([name, key.replace("@", " B=").replace("/", ", "),
                          ", ".join(f"{100 * v:.2f}" for v in s["test_accuracy_per_seed"]),
                          f"{s['C']:g}", f"{s['gamma']:.4g}", fmt_rate(s["examples_per_second_mean"]),
                          f"{s['train_seconds_mean']:.2f}", f"{s['n_twins_mean']:.0f}",
                          f"{s['label_fraction_mean']:.4f}", f"{s['update_fraction_mean']:.4f}",
                          f"{s['maintenance_fraction_mean']:.4f}",
                          f"{s['final_C_mean']:.3g}"])
    out += ["## Details", "",
            "examples/s and train s: training only (partial_fit in chunks of 10,000), one core; labels/ex = "
            "counters_['labels'] / examples (the fraction Beneficial accepted; Random: the reservoir's "
            "replacements); upd/ex = examples that changed the twin set; maint/ex = examples that overflowed "
            "a full budget and were placed by removal or merge (a beneficial example whose merges were all "
            "rejected counts in labels/ex only); final C = the machine's C after the pass (C * B / sum of twin weights).", "",
            md_table(["stream", "method", "test acc % per seed", "C", "gamma", "examples/s", "train s", "#twins",
                      "labels/ex", "upd/ex", "maint/ex", "final C"], drows,
                     ["l", "l", "r", "r", "r", "r", "r", "r", "r", "r", "r", "r"]), ""]

    if svc_runs:
        out += svc_md(svc_runs)
    out.append(env_md(env))
    return summary, "\n".join(out)


if __name__ == "__main__":
    main()
