"""Budgeted Passive-Aggressive vs the budgeted perceptrons: the BPA paper's Table 1 columns.

Reproduces the Checkerboard and N-Checkerboard columns of Table 1 of Wang & Vucetic,
"Online Passive-Aggressive Algorithms on a Budget" (AISTATS 2010, section 5) on the streams
``budgetkernel.datasets`` generates, and puts the paper's number next to ours.

Protocol (default run):

* data: ``make_stream_and_test(name, 10_000, 10_000, random_state=seed)`` for ``name`` in
  ``checkerboard`` (4x4 cells on [0, 4)^2, clean) and ``noisy_checkerboard`` (15% of the
  training labels flipped); the 10,000-example test set is *clean* for both, as in the paper
  ("we used the noise-free Checkerboard as the test set");
* attributes standardised with ``StreamingStandardizer(n_warmup=1000)`` fitted on the first
  1,000 examples of the generated stream (before any shuffling); the same transform is applied
  to the validation stream and the test set;
* every algorithm of the table: Perceptron, PA (PA-I) and PA^R (ramp loss), unbudgeted;
  Stoptron, Random (random-removal budget perceptron), Forgetron, PA+Rand, BPA-S, BPA^R-S,
  BPA-NN, BPA^R-NN, Projectron++, BPA-P and BPA^R-P at B = 100 and B = 200; PA-type learners
  are PA-I (``pa_type=1``); one pass of ``partial_fit`` over the stream;
* 10 repetitions on random shuffles of the same 10,000-example training set (shuffle k:
  ``np.random.default_rng([seed, 100 + k]).permutation``; it also seeds the random removals);
  reported: mean +- std (ddof=1) of the test accuracy, and per run #SVs, the prequential
  mistake rate, labels used (ramp loss asks only for those inside the margin) and time;
* hyper-parameters, once per (algorithm, data set, budget), as the paper selected C and the
  RBF width per combination: the grid gamma in GAMMAS (RBF exp(-gamma ||x - x'||^2) on
  standardised data; a checkerboard cell is ~0.87 sd wide) x C in CS for the PA family (gamma
  only for the perceptrons), scored (``--tuning``) by
  - ``prequential`` (default, the issue's protocol): the prequential (test-then-train) error of
    one pass over the first N_TUNE = 2,000 examples of the training stream in generation
    order (noisy labels for N-Checkerboard);
  - ``validation``: the accuracy on a *validation stream* of 10,000 examples drawn from the
    training distribution with another seed (``random_state=seed + 1000``; noisy labels for
    N-Checkerboard, like the training stream) after a pass over the whole training set,
    averaged over 2 shuffles of it that are not among the 10 reported ones.
  The test set is never used for tuning. Ties go to the first grid point (smallest gamma, then
  smallest C);
* Projectron++: its sparsity parameter eta is set, as in the paper, "such that the number of
  SVs is equal to B at the end of training": for every run (tuning runs and reported runs)
  a bisection over log10(eta) in [-4, 0] (ETA_STEPS runs) finds the largest eta whose run
  ends with B SVs (the budget stays the cap; a prequential tuning run is the pass over the
  2,000-example prefix). Its gamma is tuned like the others';
* target (the issue): every algorithm within 1.5 points of the paper; cells off by more are
  flagged.

Second table (``--skip-large`` leaves it out): every learner at B = 100 on the
100,000-example streams of the same seed (their first 10,000 examples are the tuning set
above; the tuned hyper-parameters of the B = 100 / unbudgeted protocol are reused), one pass
in stream order, with test accuracy, prequential mistake rate, #SVs and training examples/s.
It also holds the issue's learners that Table 1 leaves out, the max-margin budget perceptron
(Crammer, Kandola & Singer) and the plain Projectron (eta as for Projectron++), tuned the
same way at B = 100. The unbudgeted learners run the whole stream (~2-10 s each here); ``--large-sv-cap N`` stops
them between chunks of 10,000 once they hold more than N SVs, and the table then says how
many examples they saw.
The Projectrons' eta is searched again on the 100,000-example stream.

Third table: training speed from Python (the estimators' ``partial_fit`` in chunks of
10,000) at B = 100 on the 2-D noisy checkerboard with gamma = 2, C = 1 (Projectron eta =
1e-3), the setting of bench/cpp/bench_pa.cpp, after a 20,000-example warm-up that fills the
store; 200,000 timed examples; for the run-time dispatched core (AVX2+FMA on this CPU) and
the portable baseline build (``BUDGETKERNEL_SIMD=baseline``, in a subprocess each), next to
the C++ numbers of bench/results/bench_cpp.json (and bench_cpp_portable.json) when present.
Target: BPA-S, BPA-NN, Random, Forgetron and Stoptron >= 1,000,000 examples/s.

Tuning and the 10 repetitions run in ``--jobs`` worker processes (default 2; one core each,
BLAS pinned to one thread); the speed table runs alone afterwards. ``--quick``: a smaller grid
(gamma in {2, 4, 8}, C in {0.3, 1, 3}), 3 repetitions, 1 tuning shuffle, 6 eta-search
steps, 30,000-example large streams and 50,000 timed examples: a smoke run, not the table.

    python bench/bench_bpa_table.py [--quick] [--seed 0] [--jobs 2] [--tuning prequential|validation]
                                    [--skip-large] [--skip-speed]
"""

from __future__ import annotations

import _common  # noqa: F401  (first: pins the thread pools)

import json
import multiprocessing as mp
import os
import subprocess
import sys
import time
from functools import lru_cache

import numpy as np

from budgetkernel import BudgetedPAClassifier, KernelPerceptron, datasets
from budgetkernel.preprocessing import StreamingStandardizer

from _common import RESULTS, env_md, environment, fmt_rate, md_table, parser, write_results

STREAMS = ("checkerboard", "noisy_checkerboard")
STREAM_LABEL = {"checkerboard": "Checkerboard", "noisy_checkerboard": "N-Checkerboard"}
GAMMAS = (0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0)
CS = (0.1, 0.3, 1.0, 3.0, 10.0)
QUICK_GAMMAS = (2.0, 4.0, 8.0)
QUICK_CS = (0.3, 1.0, 3.0)
BUDGETS = (100, 200)
N_TRAIN = 10_000
N_TEST = 10_000
N_VAL = 10_000
N_TUNE = 2_000  # prequential tuning: the first examples of the training stream
N_LARGE = 100_000
CHUNK = 10_000
CLASSES = np.array([-1, 1])
ETA_STEPS = 8
TOLERANCE = 1.5  # points: the target distance to the paper
TUNING_TEXT = {"prequential": f"prequential error on the first {N_TUNE:,} training examples (the issue's protocol)",
               "validation": f"accuracy on a separate {N_VAL:,}-example validation stream"}
TUNING_SCORE = {"prequential": f"1 - prequential error on the first {N_TUNE:,} examples",
                "validation": "validation accuracy (mean over the tuning shuffles)"}

# key: (label, estimator, fixed parameters, tuned C?, budgeted?)
ALGORITHMS = {
    "perceptron": ("Pcptrn", "perceptron", {}, False, False),
    "pa": ("PA", "pa", {"loss": "hinge"}, True, False),
    "pa-r": ("PA^R", "pa", {"loss": "ramp"}, True, False),
    "stoptron": ("Stptrn", "perceptron", {"maintenance": "stop"}, False, True),
    "random": ("Rand", "perceptron", {"maintenance": "random"}, False, True),
    "forgetron": ("Fogtrn", "perceptron", {"maintenance": "forgetron"}, False, True),
    "pa-rand": ("PA+Rnd", "pa", {"variant": "random"}, True, True),
    "bpa-s": ("BPA-S", "pa", {"variant": "simple"}, True, True),
    "bpa-r-s": ("BPA^R-S", "pa", {"variant": "simple", "loss": "ramp"}, True, True),
    "bpa-nn": ("BPA-NN", "pa", {"variant": "nn"}, True, True),
    "bpa-r-nn": ("BPA^R-NN", "pa", {"variant": "nn", "loss": "ramp"}, True, True),
    "projectron++": ("Pjtrn++", "perceptron", {"maintenance": "projectron++"}, False, True),
    "bpa-p": ("BPA-P", "pa", {"variant": "project"}, True, True),
    "bpa-r-p": ("BPA^R-P", "pa", {"variant": "project", "loss": "ramp"}, True, True),
}
# Learners of the issue that the paper's Table 1 leaves out: tuned at B = 100 like the others,
# they join the long-stream table (and the speed table).
EXTRA = {
    "max-margin": ("MaxMrg", "perceptron", {"maintenance": "max-margin"}, False, True),
    "projectron": ("Pjtrn", "perceptron", {"maintenance": "projectron"}, False, True),
}
ETA_BY_BUDGET = ("projectron", "projectron++")  # eta set so that the run ends with B SVs


def spec(algo):
    return ALGORITHMS[algo] if algo in ALGORITHMS else EXTRA[algo]


UNBUDGETED = [k for k, a in ALGORITHMS.items() if not a[4]]
BUDGETED = [k for k, a in ALGORITHMS.items() if a[4]]

# Table 1 of the BPA paper: (data set, budget) -> algorithm -> accuracy %.
_ORDER_B = ["stoptron", "random", "forgetron", "pa-rand", "bpa-s", "bpa-r-s", "bpa-nn", "bpa-r-nn",
            "projectron++", "bpa-p", "bpa-r-p"]
PAPER = {
    ("checkerboard", None): {"perceptron": 96.3, "pa": 97.2, "pa-r": 97.5},
    ("checkerboard", 100): dict(zip(_ORDER_B, [87.3, 85.6, 86.1, 83.3, 90.0, 90.0, 94.0, 94.2, 95.4, 95.4, 95.2])),
    ("checkerboard", 200): dict(zip(_ORDER_B, [92.8, 90.3, 90.9, 87.0, 93.4, 93.9, 95.5, 95.2, 95.8, 95.9, 95.6])),
    ("noisy_checkerboard", None): {"perceptron": 83.4, "pa": 95.8, "pa-r": 96.2},
    ("noisy_checkerboard", 100): dict(zip(_ORDER_B, [75.4, 69.4, 68.2, 75.1, 87.4, 88.2, 90.2, 92.3, 88.1, 91.7,
                                                     94.1])),
    ("noisy_checkerboard", 200): dict(zip(_ORDER_B, [76.0, 74.5, 72.2, 78.3, 89.7, 90.8, 91.7, 93.3, 92.5, 92.8,
                                                     94.5])),
}
# The paper's std (same layout), for the report.
PAPER_STD = {
    ("checkerboard", None): {"perceptron": 0.6, "pa": 0.1, "pa-r": 0.1},
    ("checkerboard", 100): dict(zip(_ORDER_B, [0.9, 1.2, 1.0, 1.4, 0.8, 1.0, 1.2, 0.9, 0.7, 0.7, 0.8])),
    ("checkerboard", 200): dict(zip(_ORDER_B, [1.1, 1.3, 1.7, 1.3, 0.5, 0.6, 0.4, 0.5, 0.5, 0.6, 1.2])),
    ("noisy_checkerboard", None): {"perceptron": 0.7, "pa": 1.0, "pa-r": 0.8},
    ("noisy_checkerboard", 100): dict(zip(_ORDER_B, [4.3, 2.9, 3.5, 3.6, 0.7, 1.2, 1.3, 0.5, 0.7, 0.8, 0.9])),
    ("noisy_checkerboard", 200): dict(zip(_ORDER_B, [3.1, 2.1, 4.4, 1.8, 0.9, 0.8, 1.3, 0.6, 1.0, 0.7, 1.1])),
}

# Speed table: the setting of bench/cpp/bench_pa.cpp.
SPEED_GAMMA, SPEED_C, SPEED_ETA, SPEED_B = 2.0, 1.0, 1e-3, 100
SPEED_TARGET = 1e6
SPEED_TARGET_ALGOS = ("bpa-s", "bpa-nn", "random", "forgetron", "stoptron")
SPEED_ALGOS = ("bpa-s", "bpa-nn", "pa-rand", "bpa-r-nn", "stoptron", "random", "forgetron", "max-margin",
               "bpa-p", "projectron", "projectron++")
CPP_FAMILY = {"bpa-s": "pa_train/bpa-s", "bpa-nn": "pa_train/bpa-nn", "pa-rand": "pa_train/pa-rand",
              "bpa-r-nn": "pa_train/bpa-r-nn", "bpa-p": "pa_train/bpa-p", "stoptron": "perceptron_train/stoptron",
              "random": "perceptron_train/random", "forgetron": "perceptron_train/forgetron",
              "max-margin": "perceptron_train/max-margin", "projectron": "perceptron_train/projectron",
              "projectron++": "perceptron_train/projectron-pp"}


# ------------------------------------------------------------------------------ data
def _standardised(name, n_train, seed):
    train, (Xt, yt) = datasets.make_stream_and_test(name, n_train, N_TEST, random_state=seed, chunk_size=CHUNK)
    scaler = StreamingStandardizer(n_warmup=1000)
    parts = list(scaler.fit_transform_stream(train))
    X = np.ascontiguousarray(np.concatenate([p[0] for p in parts]))
    y = np.concatenate([p[1] for p in parts])
    # Validation: the training distribution (noisy labels for the noisy stream), another seed.
    val, _ = datasets.make_stream_and_test(name, N_VAL, 1, random_state=seed + 1000, chunk_size=N_VAL)
    Xv, yv = next(iter(val))
    return X, y, np.ascontiguousarray(scaler.transform(Xv)), yv, np.ascontiguousarray(scaler.transform(Xt)), yt


@lru_cache(maxsize=4)
def load(name, n_train, seed):
    """(X, y) training stream in generation order, validation (Xv, yv), clean test (Xt, yt)."""
    return _standardised(name, n_train, seed)


def shuffle(seed, k):
    return np.random.default_rng([seed, 100 + k]).permutation(N_TRAIN)


def tune_shuffle(seed, k):
    return np.random.default_rng([seed, 900 + k]).permutation(N_TRAIN)


# ------------------------------------------------------------------------ learners
def make(algo, budget, gamma, C=1.0, eta=0.1, random_state=0):
    _, est, fixed, _, budgeted = spec(algo)
    b = budget if budgeted else None
    if est == "pa":
        return BudgetedPAClassifier(budget=b, pa_type=1, C=C, gamma=gamma, random_state=random_state, **fixed)
    if est == "perceptron":
        extra = {"eta": eta} if fixed.get("maintenance", "").startswith("projectron") else {}
        if b is None:
            fixed = {}
        return KernelPerceptron(budget=b, gamma=gamma, random_state=random_state, **fixed, **extra)
    raise ValueError(algo)


def fit_stream(clf, X, y, max_sv=None):
    """One pass of partial_fit in chunks; returns (seconds, examples seen)."""
    seconds, seen = 0.0, 0
    for i in range(0, len(y), CHUNK):
        t0 = time.perf_counter()
        clf.partial_fit(X[i:i + CHUNK], y[i:i + CHUNK], classes=CLASSES)
        seconds += time.perf_counter() - t0
        seen = min(i + CHUNK, len(y))
        if max_sv is not None and clf.n_support_ > max_sv:
            break
    return seconds, seen


def eta_for_budget(algo, X, y, budget, gamma, random_state, steps):
    """Projectron(++): the largest eta (log-bisection in [1e-4, 1]) whose run ends with B SVs.

    Returns (eta, fitted estimator of that eta, number of runs)."""
    def run(eta):
        clf = make(algo, budget, gamma, eta=eta, random_state=random_state)
        fit_stream(clf, X, y)
        return clf

    lo, hi = -4.0, 0.0
    clf_lo = run(10.0 ** lo)
    runs = 1
    if clf_lo.n_support_ < budget:  # even a tiny eta does not fill the store: keep it
        return 10.0 ** lo, clf_lo, runs
    clf_hi = run(10.0 ** hi)
    runs += 1
    if clf_hi.n_support_ >= budget:
        return 10.0 ** hi, clf_hi, runs
    for _ in range(steps):
        mid = 0.5 * (lo + hi)
        clf = run(10.0 ** mid)
        runs += 1
        if clf.n_support_ >= budget:
            lo, clf_lo = mid, clf
        else:
            hi = mid
    return 10.0 ** lo, clf_lo, runs


def train_eval(algo, budget, gamma, C, X, y, Xe, ye, random_state, eta_steps, max_sv=None):
    """One run: train on (X, y) in order, score on (Xe, ye) (accuracy None without them)."""
    eta = None
    t0 = time.perf_counter()
    if algo in ETA_BY_BUDGET:
        eta, clf, runs = eta_for_budget(algo, X, y, budget, gamma, random_state, eta_steps)
        seconds, seen = None, len(y)
    else:
        clf = make(algo, budget, gamma, C, random_state=random_state)
        seconds, seen = fit_stream(clf, X, y, max_sv)
        runs = 1
    wall = time.perf_counter() - t0
    c = clf.counters_
    accuracy = None if Xe is None else float(np.mean(clf.predict(Xe) == ye))
    return {"accuracy": accuracy, "n_support": int(clf.n_support_),
            "online_error": float(clf.online_error_), "labels": int(c.get("labels", c["examples"])),
            "updates": int(c["updates"]), "examples": int(seen), "train_seconds": seconds, "wall_seconds": wall,
            "eta": eta, "eta_runs": runs}


# -------------------------------------------------------------------------- tasks
def grid_for(algo, cfg):
    gammas = cfg["gammas"]
    return [(g, c) for g in gammas for c in cfg["cs"]] if spec(algo)[3] else [(g, None) for g in gammas]


def task_tune(args):
    """Tuning score of every grid point: 1 - the prequential error on the first N_TUNE examples
    (``--tuning prequential``) or the validation accuracy, mean over the tuning shuffles."""
    algo, name, budget, cfg = args
    t0 = time.perf_counter()
    X, y, Xv, yv, _, _ = load(name, N_TRAIN, cfg["seed"])
    grid = []
    for gamma, C in grid_for(algo, cfg):
        C1 = C if C is not None else 1.0
        if cfg["tuning"] == "prequential":
            r = train_eval(algo, budget, gamma, C1, X[:N_TUNE], y[:N_TUNE], None, None, 1000, cfg["eta_steps"])
            scores, etas = [1.0 - r["online_error"]], [r["eta"]]
        else:
            scores, etas = [], []
            for k in range(cfg["tune_shuffles"]):
                p = tune_shuffle(cfg["seed"], k)
                r = train_eval(algo, budget, gamma, C1, X[p], y[p], Xv, yv, 1000 + k, cfg["eta_steps"])
                scores.append(r["accuracy"])
                etas.append(r["eta"])
        grid.append({"gamma": gamma, "C": C, "tuning_score": float(np.mean(scores)), "eta": etas})
    best = max(grid, key=lambda g: g["tuning_score"])  # max keeps the first of ties
    return {"algo": algo, "stream": name, "budget": budget, "gamma": best["gamma"], "C": best["C"],
            "tuning_score": best["tuning_score"], "grid": grid, "seconds": time.perf_counter() - t0}


def task_final(args):
    """The reported repetitions with the tuned hyper-parameters."""
    algo, name, budget, gamma, C, cfg = args
    X, y, _, _, Xt, yt = load(name, N_TRAIN, cfg["seed"])
    runs = []
    for k in range(cfg["n_shuffles"]):
        p = shuffle(cfg["seed"], k)
        r = train_eval(algo, budget, gamma, C if C is not None else 1.0, X[p], y[p], Xt, yt, k, cfg["eta_steps"])
        r["shuffle"] = k
        runs.append(r)
    return {"algo": algo, "stream": name, "budget": budget, "gamma": gamma, "C": C, "runs": runs}


def task_large(args):
    """One pass over the long stream (stream order), B = 100 or unbudgeted (with an SV cap)."""
    algo, name, gamma, C, cfg = args
    X, y, _, _, Xt, yt = load(name, cfg["n_large"], cfg["seed"])
    budgeted = spec(algo)[4]
    r = train_eval(algo, 100, gamma, C if C is not None else 1.0, X, y, Xt, yt, 0, cfg["eta_steps"],
                   max_sv=None if budgeted else cfg["large_sv_cap"])
    if algo in ETA_BY_BUDGET:  # time one run at the chosen eta (the search ran several)
        clf = make(algo, 100, gamma, eta=r["eta"], random_state=0)
        r["train_seconds"], _ = fit_stream(clf, X, y)
    r.update(algo=algo, stream=name, gamma=gamma, C=C, n_stream=len(y))
    return r


def _cost(algo, budget):
    """Rough relative cost, to start the slow tasks first."""
    if algo in ETA_BY_BUDGET:
        return 50
    if not spec(algo)[4]:
        return 40
    if algo in ("bpa-p", "bpa-r-p"):
        return 10 + (budget or 0) / 20
    return 1


def run_pool(fn, tasks, jobs):
    if jobs <= 1:
        return [fn(t) for t in tasks]
    with mp.get_context("fork").Pool(jobs) as pool:
        return pool.map(fn, tasks, chunksize=1)


# --------------------------------------------------------------------------- speed
def speed_measure(n_timed, warmup=20_000):
    """Examples/s of partial_fit (chunks of 10,000) at the bench_pa.cpp setting, this process's core."""
    from budgetkernel._native import core

    n = warmup + n_timed
    X, y, _, _, _, _ = _standardised("noisy_checkerboard", n, 12345)
    out = {"simd": getattr(core, "simd", "?"), "rows": {}}
    for algo in SPEED_ALGOS:
        gamma = 16.0 if algo in ("bpa-p", "projectron", "projectron++") else SPEED_GAMMA
        clf = make(algo, SPEED_B, gamma, SPEED_C, eta=SPEED_ETA, random_state=7)
        fit_stream(clf, X[:warmup], y[:warmup])
        c0 = clf.counters_
        secs, _ = fit_stream(clf, X[warmup:], y[warmup:])
        c1 = clf.counters_
        out["rows"][algo] = {"examples_per_second": n_timed / secs, "gamma": gamma,
                             "upd_per_example": (c1["updates"] - c0["updates"]) / n_timed,
                             "maint_per_example": (c1["maintenance_steps"] - c0["maintenance_steps"]) / n_timed
                             if "maintenance_steps" in c1 else None,
                             "n_support": int(clf.n_support_)}
    return out


def speed_subprocess(simd, n_timed):
    env = dict(os.environ, BUDGETKERNEL_SIMD=simd)
    cmd = [sys.executable, os.path.abspath(__file__), "--speed-json", str(n_timed)]
    res = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True)
    return json.loads(res.stdout.strip().splitlines()[-1])


def cpp_numbers():
    """B = 100 examples/s of bench_pa's *_train families, from the run_cpp_bench results."""
    out = {}
    for label, fname in (("C++ avx2", "bench_cpp.json"), ("C++ portable", "bench_cpp_portable.json")):
        path = RESULTS / fname
        if not path.exists():
            continue
        try:
            summary = json.loads(path.read_text())["summary"]
        except (ValueError, KeyError):
            continue
        col = {}
        for algo, fam in CPP_FAMILY.items():
            s = summary.get(fam)
            if s and SPEED_B in s["B"] and s.get("items_per_second"):
                col[algo] = s["items_per_second"][s["B"].index(SPEED_B)]
        if col:
            out[label] = col
    return out


# ------------------------------------------------------------------------ reporting
def _agg(vals):
    a = np.asarray(vals, dtype=float)
    return float(a.mean()), float(a.std(ddof=1)) if len(a) > 1 else 0.0


def summarise(tuned, finals, large, speed, cfg, env):
    tuned_by = {(t["algo"], t["stream"], t["budget"]): t for t in tuned}
    summary = {}
    for f in finals:
        accs = [100 * r["accuracy"] for r in f["runs"]]
        m, s = _agg(accs)
        key = (f["algo"], f["stream"], f["budget"])
        paper = PAPER[(f["stream"], f["budget"])][f["algo"]]
        summary[key] = {"mean": m, "std": s, "per_shuffle": accs, "paper": paper,
                        "paper_std": PAPER_STD[(f["stream"], f["budget"])][f["algo"]], "diff": m - paper,
                        "flag": abs(m - paper) > TOLERANCE,
                        "n_support": _agg([r["n_support"] for r in f["runs"]])[0],
                        "online_error": _agg([r["online_error"] for r in f["runs"]])[0],
                        "labels": _agg([r["labels"] for r in f["runs"]])[0],
                        "train_seconds": _agg([r["wall_seconds"] for r in f["runs"]])[0],
                        "eta": [r["eta"] for r in f["runs"]] if f["algo"] == "projectron++" else None,
                        "gamma": f["gamma"], "C": f["C"], "tuning_score": tuned_by[key]["tuning_score"]}

    def cell(algo, name, budget):
        s = summary.get((algo, name, budget))
        if s is None:
            return ["-", "-", "-"]
        mark = " ⚠" if s["flag"] else ""
        return [f"{s['mean']:.1f} ± {s['std']:.1f}", f"{s['paper']:.1f} ± {s['paper_std']:.1f}",
                f"{s['diff']:+.1f}{mark}"]

    rows = []
    sections = [(None, UNBUDGETED)] + [(B, BUDGETED) for B in cfg["budgets"]]
    for budget, algos in sections:
        for algo in algos:
            rows.append([("unbudgeted" if budget is None else f"B={budget}"), ALGORITHMS[algo][0]]
                        + [c for name in cfg["streams"] for c in cell(algo, name, budget)])
    headers = ["budget", "algorithm"] + [h for name in cfg["streams"] for h in
                                         (f"{STREAM_LABEL[name]} ours", "paper", "Δ")]
    flagged = [(k, v) for k, v in summary.items() if v["flag"]]
    out = [f"# BPA paper, Table 1: Checkerboard and N-Checkerboard (test accuracy %, mean ± std over "
           f"{cfg['n_shuffles']} shuffles)", "",
           f"{N_TRAIN:,}-example training stream (seed {cfg['seed']}), shuffled {cfg['n_shuffles']} times, one pass; "
           f"clean {N_TEST:,}-example test set; standardised on the first 1,000 generated examples. Hyper-parameters "
           f"per (algorithm, data set, budget) by {TUNING_TEXT[cfg['tuning']]} "
           f"(γ ∈ {list(cfg['gammas'])}, C ∈ {list(cfg['cs'])} for the PA family). Protocol: the script's docstring. "
           f"Δ = ours − paper; ⚠ = more than {TOLERANCE} points off (the issue's target).", "",
           md_table(headers, rows, ["l", "l"] + ["r"] * (len(headers) - 2)), "",
           f"**Within {TOLERANCE} points of the paper: {len(summary) - len(flagged)} of {len(summary)} cells.** "
           f"Off by more: " + (", ".join(
               f"{ALGORITHMS[a][0]} {STREAM_LABEL[n]} {'unbudgeted' if b is None else f'B={b}'} "
               f"({v['diff']:+.1f})" for (a, n, b), v in sorted(flagged, key=lambda kv: -abs(kv[1]["diff"])))
                                                        or "none") + ".", ""]

    drows = []
    order = {a: i for i, a in enumerate(UNBUDGETED + BUDGETED)}
    for (algo, name, budget), s in sorted(summary.items(), key=lambda kv: (
            cfg["streams"].index(kv[0][1]), kv[0][2] or 0, order[kv[0][0]])):
        eta = ""
        if s["eta"]:
            eta = f"η ∈ [{min(s['eta']):.3g}, {max(s['eta']):.3g}]"
        drows.append([STREAM_LABEL[name], "-" if budget is None else budget, ALGORITHMS[algo][0], f"{s['gamma']:g}",
                      "-" if s["C"] is None else f"{s['C']:g}", f"{100 * s['tuning_score']:.2f}",
                      f"{s['n_support']:.0f}", f"{100 * s['online_error']:.1f}", f"{s['labels']:.0f}",
                      f"{s['train_seconds']:.2f}", eta])
    out += ["## Chosen hyper-parameters and details", "",
            f"tuning = {TUNING_SCORE[cfg['tuning']]} of the chosen point (noisy labels for "
            "N-Checkerboard, so at most ~85%); #SV, prequential mistakes (on the training stream, noisy labels "
            "included), labels asked for (the ramp loss needs only those with |f(x)| ≤ 1) and seconds per run "
            "(Projectron++: the whole η search) are means over the shuffles.", "",
            md_table(["data", "B", "algorithm", "γ", "C", "tuning %", "#SV", "preq. err %", "labels", "s/run",
                      "Projectron++ η"], drows, ["l", "r", "l", "r", "r", "r", "r", "r", "r", "r", "l"]), ""]

    if large:
        lrows = []
        for r in large:
            budgeted = spec(r["algo"])[4]
            seen = r["examples"]
            note = "" if seen == r["n_stream"] else f"stopped at {seen:,} (> {cfg['large_sv_cap']:,} SVs)"
            if r["eta"] is not None:
                note = f"η = {r['eta']:.3g}"
            lrows.append([STREAM_LABEL[r["stream"]], spec(r["algo"])[0], "100" if budgeted else "-",
                          f"{r['gamma']:g}", "-" if r["C"] is None else f"{r['C']:g}",
                          f"{100 * r['accuracy']:.2f}", f"{100 * r['online_error']:.2f}", f"{r['n_support']:,}",
                          fmt_rate(seen / r["train_seconds"]), f"{seen:,}", note])
        out += [f"## One pass over {cfg['n_large']:,} examples (B = 100)", "",
                f"Same seed; the first {N_TRAIN:,} examples are the tuning set above and the hyper-parameters are "
                f"the B = 100 (unbudgeted: the unbudgeted) choices of that protocol. Stream order, chunks of "
                f"{CHUNK:,}; examples/s = training only, one core (run next to a second worker process)."
                + (f" Unbudgeted learners stop once they hold more than {cfg['large_sv_cap']:,} SVs."
                   if cfg["large_sv_cap"] else " Unbudgeted learners: the whole stream, no cap."), "",
                md_table(["data", "algorithm", "B", "γ", "C", "test acc %", "preq. err %", "#SV", "examples/s",
                          "examples", ""], lrows, ["l", "l", "r", "r", "r", "r", "r", "r", "r", "r", "l"]), ""]

    if speed:
        cpp = cpp_numbers()
        cols = [("Python " + s["simd"], s["rows"]) for s in speed]
        headers = ["learner", "γ", "upd/ex"] + [c for c, _ in cols] + list(cpp) + ["target"]
        srows = []
        for algo in SPEED_ALGOS:
            first = cols[0][1][algo]
            cells = [fmt_rate(rows[algo]["examples_per_second"]) for _, rows in cols]
            cells += [fmt_rate(cpp[c].get(algo, float("nan"))) for c in cpp]
            tgt = ""
            if algo in SPEED_TARGET_ALGOS:
                vals = [rows[algo]["examples_per_second"] for _, rows in cols] + [cpp[c][algo] for c in cpp
                                                                                   if algo in cpp[c]]
                tgt = " / ".join("met" if v >= SPEED_TARGET else f"**missed** ({v / SPEED_TARGET:.2f}x)"
                                 for v in vals)
            name = spec(algo)[0]
            srows.append([name, f"{first['gamma']:g}", f"{first['upd_per_example']:.2f}", *cells, tgt])
        out += ["## Training speed at B = 100 (examples/s, one core)", "",
                f"2-D noisy checkerboard, γ = {SPEED_GAMMA:g} (BPA-P and the Projectrons γ = 16, as in bench_pa.cpp), "
                f"C = {SPEED_C:g}, Projectron η = {SPEED_ETA:g}; `partial_fit` in chunks of {CHUNK:,} after a "
                f"20,000-example warm-up (store full); {cfg['n_speed']:,} timed examples. upd/ex = fraction of the "
                "timed examples that changed the model. C++: `partial_fit` over chunks of 1,000 from "
                "bench/results/bench_cpp*.json (bench_pa, median of its repetitions), when present. Target: "
                "≥ 1,000,000 examples/s for BPA-S, BPA-NN, Random, Forgetron, Stoptron (per column).", "",
                md_table(headers, srows), ""]
    out.append(env_md(env))
    return summary, "\n".join(out)


# ---------------------------------------------------------------------------- main
def main():
    p = parser(__doc__)
    p.add_argument("--jobs", type=int, default=2, help="worker processes for tuning and repetitions (default 2)")
    p.add_argument("--n-shuffles", type=int, default=None, help="reported repetitions (default 10; 3 with --quick)")
    p.add_argument("--streams", default=",".join(STREAMS), help="comma-separated subset of " + ",".join(STREAMS))
    p.add_argument("--budgets", default="100,200", help="comma-separated budgets (default 100,200)")
    p.add_argument("--tuning", choices=("prequential", "validation"), default="prequential",
                   help="hyper-parameter score (default prequential: the issue's protocol; see the docstring)")
    p.add_argument("--skip-large", action="store_true", help="leave out the 100,000-example table")
    p.add_argument("--skip-speed", action="store_true", help="leave out the speed table")
    p.add_argument("--large-sv-cap", type=int, default=None,
                   help="unbudgeted learners stop on the long stream past this many SVs (default: no cap)")
    p.add_argument("--speed-json", type=int, default=None, help=argparse_suppress())
    args = p.parse_args()
    if args.speed_json is not None:  # internal: one speed measurement in this process
        print(json.dumps(speed_measure(args.speed_json)))
        return
    quick = args.quick
    cfg = {"seed": args.seed, "tuning": args.tuning, "gammas": QUICK_GAMMAS if quick else GAMMAS,
           "cs": QUICK_CS if quick else CS,
           "tune_shuffles": 1 if quick else 2, "n_shuffles": args.n_shuffles or (3 if quick else 10),
           "eta_steps": 6 if quick else ETA_STEPS, "streams": [s for s in args.streams.split(",") if s],
           "budgets": [int(b) for b in args.budgets.split(",") if b],
           "n_large": 30_000 if quick else N_LARGE, "large_sv_cap": args.large_sv_cap,
           "n_speed": 50_000 if quick else 200_000}
    env = environment()
    t_start = time.perf_counter()

    def log(msg):
        print(f"[{time.perf_counter() - t_start:6.0f}s] {msg}", flush=True)

    configs = [(a, n, None) for n in cfg["streams"] for a in UNBUDGETED]
    configs += [(a, n, B) for n in cfg["streams"] for B in cfg["budgets"] for a in BUDGETED]
    if not args.skip_large:  # the long-stream table's extra learners, at its B = 100
        configs += [(a, n, 100) for n in cfg["streams"] for a in EXTRA]
    configs.sort(key=lambda c: -_cost(c[0], c[2]))
    log(f"tuning {len(configs)} (algorithm, data set, budget) combinations with {args.jobs} worker(s)")
    tuned = run_pool(task_tune, [(a, n, B, cfg) for a, n, B in configs], args.jobs)
    for t in tuned:
        log(f"tuned {t['algo']:13s} {t['stream']:18s} B={t['budget']}: gamma={t['gamma']:g} C={t['C']} "
            f"score {t['tuning_score']:.4f} ({t['seconds']:.0f}s)")
    log("reported repetitions")
    finals = run_pool(task_final, [(t["algo"], t["stream"], t["budget"], t["gamma"], t["C"], cfg) for t in tuned
                                   if t["algo"] in ALGORITHMS], args.jobs)
    for f in finals:
        accs = [r["accuracy"] for r in f["runs"]]
        log(f"{f['algo']:13s} {f['stream']:18s} B={f['budget']}: test acc {100 * np.mean(accs):.2f} "
            f"± {100 * np.std(accs, ddof=1) if len(accs) > 1 else 0:.2f}")

    large = []
    if not args.skip_large:
        tuned_by = {(t["algo"], t["stream"], t["budget"]): t for t in tuned}
        ltasks = []
        for n in cfg["streams"]:
            for a in UNBUDGETED + BUDGETED + list(EXTRA):
                t = tuned_by.get((a, n, None if a in UNBUDGETED else 100))
                if t is not None:
                    ltasks.append((a, n, t["gamma"], t["C"], cfg))
        ltasks.sort(key=lambda t: -_cost(t[0], 100))
        log(f"{cfg['n_large']:,}-example streams")
        large = run_pool(task_large, ltasks, args.jobs)
        order = {a: i for i, a in enumerate(UNBUDGETED + BUDGETED + list(EXTRA))}
        large.sort(key=lambda r: (cfg["streams"].index(r["stream"]), order[r["algo"]]))

    speed = []
    if not args.skip_speed:
        for simd in ("auto", "baseline"):
            log(f"speed, BUDGETKERNEL_SIMD={simd}")
            speed.append(speed_subprocess(simd, cfg["n_speed"]))

    summary, md = summarise(tuned, finals, large, speed, cfg, env)
    data = {"protocol": __doc__, "env": env, "config": cfg, "paper": {f"{k[0]}@{k[1]}": v for k, v in PAPER.items()},
            "summary": {f"{a}/{n}/{b}": v for (a, n, b), v in summary.items()}, "tuning": tuned, "runs": finals,
            "large": large, "speed": speed, "cpp_speed": cpp_numbers() if speed else {},
            "wall_seconds": time.perf_counter() - t_start}
    log("done")
    write_results("bench_bpa_table", data, md, args)


def argparse_suppress():
    import argparse

    return argparse.SUPPRESS


if __name__ == "__main__":
    main()
