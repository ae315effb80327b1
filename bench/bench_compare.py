"""Budgeted SGD against what users would pick instead: LIBSVM (SVC) and Nystroem + SGD.

Streams: ``noisy_checkerboard`` (15% label noise, clean test) and ``two_gaussians``
(Bayes accuracy 0.804): 100,000 training examples in stream order, an independent
10,000-example test set, features standardised on the first 1,000 examples (as
bench_bsgd_tables.py; 30,000 examples with ``--quick``).

* BSGD merge at B=100 and B=500: one pass of ``partial_fit`` (chunks of 10,000); gamma and
  lam chosen by prequential error on the first 10,000 examples (the grid of
  bench_bsgd_tables.py).
* ``sklearn.svm.SVC(kernel='rbf')`` (LIBSVM, the batch SVM) trained on a 20,000-example
  prefix of the stream (10,000 with --quick): batch training is superlinear in n, and the
  model keeps ~half the examples as SVs on these noisy streams; C in {0.1, 1, 10, 100} x
  gamma in {0.5, 2, 8, 32}, chosen by training on the first 5,000 examples and validating
  on examples 5,000-10,000 (the same tuning prefix).
* Nystroem(n_components=B, landmarks from the first 1,000 examples) +
  SGDClassifier(loss='hinge', average=True): one pass in mini-batches of 1,000
  (transform + partial_fit), gamma and alpha by prequential error on the prefix.

Columns: test accuracy, training seconds (the final fit only; tuning time is listed
separately), #SVs / components, and prediction time of the 10,000 test examples. One core
(BLAS/OpenMP pinned to one thread), one seed (``--seed``; ``--n-seeds`` for more).
``--quick``: 30,000-example streams, SVC on 10,000 examples with a 2 x 2 grid.

    python bench/bench_compare.py [--quick] [--seed 0]
"""

from __future__ import annotations

import _common  # noqa: F401  (first: pins the thread pools)

import itertools
import time

import numpy as np
from sklearn.svm import SVC

from bench_bsgd_tables import CLASSES, bsgd, load_stream, nystroem, sgd, tune_bsgd, tune_nystroem
from _common import env_md, environment, md_table, parser, write_results

STREAMS = ("noisy_checkerboard", "two_gaussians")
SVC_C = (0.1, 1.0, 10.0, 100.0)
SVC_GAMMA = (0.5, 2.0, 8.0, 32.0)


def predict_seconds(fn, Xt):
    t0 = time.perf_counter()
    fn(Xt)
    return time.perf_counter() - t0


def main():
    p = parser(__doc__)
    p.add_argument("--n-seeds", type=int, default=1)
    args = p.parse_args()
    n_train = 30_000 if args.quick else 100_000
    n_tune = 10_000
    n_svc = 10_000 if args.quick else 20_000
    env = environment()
    rows_out, runs = [], []
    t_start = time.perf_counter()
    for s in range(args.n_seeds):
        seed = args.seed + s
        for name in STREAMS:
            X, y, Xt, yt = load_stream(name, n_train, seed)
            Xp, yp = X[:n_tune], y[:n_tune]
            for B in (100, 500):
                t0 = time.perf_counter()
                gamma, lam, _, _ = tune_bsgd(Xp, yp, B, "merge", seed)
                tune_s = time.perf_counter() - t0
                clf = bsgd(B, "merge", gamma, lam, seed)
                t0 = time.perf_counter()
                for i in range(0, len(y), 10_000):
                    clf.partial_fit(X[i:i + 10_000], y[i:i + 10_000], classes=CLASSES)
                fit_s = time.perf_counter() - t0
                acc = float(np.mean(clf.predict(Xt) == yt))
                runs.append({"stream": name, "seed": seed, "method": f"BSGD merge B={B}", "test_accuracy": acc,
                             "train_seconds": fit_s, "tune_seconds": tune_s, "size": int(clf.n_support_),
                             "predict_seconds": predict_seconds(clf.decision_function, Xt),
                             "trained_on": len(y), "params": {"gamma": gamma, "lam": lam}})
                print(f"[{time.perf_counter() - t_start:5.0f}s] {name} BSGD B={B}: {acc:.4f}", flush=True)

                t0 = time.perf_counter()
                g, a, _, _ = tune_nystroem(Xp, yp, seed, n_components=B)
                tune_s = time.perf_counter() - t0
                t0 = time.perf_counter()
                feat = nystroem(X[:1000], g, seed, B)
                lin = sgd(a, seed)
                for i in range(0, len(y), 1000):
                    lin.partial_fit(feat.transform(X[i:i + 1000]), y[i:i + 1000], classes=CLASSES)
                fit_s = time.perf_counter() - t0
                acc = float(np.mean(lin.predict(feat.transform(Xt)) == yt))
                runs.append({"stream": name, "seed": seed, "method": f"Nystroem({B})+SGD", "test_accuracy": acc,
                             "train_seconds": fit_s, "tune_seconds": tune_s, "size": B,
                             "predict_seconds": predict_seconds(
                                 lambda Z, lin=lin, feat=feat: lin.decision_function(feat.transform(Z)), Xt),
                             "trained_on": len(y), "params": {"gamma": g, "alpha": a}})
                print(f"[{time.perf_counter() - t_start:5.0f}s] {name} Nystroem({B}): {acc:.4f}", flush=True)

            # SVC on a prefix; C/gamma by a holdout split of the tuning prefix.
            t0 = time.perf_counter()
            best = None
            grid = itertools.product((1.0, 10.0), (2.0, 8.0)) if args.quick else itertools.product(SVC_C, SVC_GAMMA)
            for C, g in grid:
                m = SVC(kernel="rbf", C=C, gamma=g).fit(X[:5000], y[:5000])
                va = float(np.mean(m.predict(X[5000:n_tune]) == y[5000:n_tune]))
                if best is None or va > best[0]:
                    best = (va, C, g)
            tune_s = time.perf_counter() - t0
            _, C, g = best
            t0 = time.perf_counter()
            svc = SVC(kernel="rbf", C=C, gamma=g).fit(X[:n_svc], y[:n_svc])
            fit_s = time.perf_counter() - t0
            acc = float(np.mean(svc.predict(Xt) == yt))
            runs.append({"stream": name, "seed": seed, "method": f"SVC (LIBSVM), first {n_svc // 1000}k",
                         "test_accuracy": acc, "train_seconds": fit_s, "tune_seconds": tune_s,
                         "size": int(svc.n_support_.sum()),
                         "predict_seconds": predict_seconds(svc.decision_function, Xt),
                         "trained_on": n_svc, "params": {"C": C, "gamma": g}})
            print(f"[{time.perf_counter() - t_start:5.0f}s] {name} SVC: {acc:.4f} ({fit_s:.1f}s)", flush=True)

    methods = list(dict.fromkeys(r["method"] for r in runs))
    for name in STREAMS:
        for m in methods:
            rs = [r for r in runs if r["stream"] == name and r["method"] == m]
            acc = np.array([r["test_accuracy"] for r in rs])
            par = "; ".join(", ".join(f"{k}={v:g}" for k, v in r["params"].items()) for r in rs)
            rows_out.append([name, m, f"{100 * acc.mean():.2f}" + (f" ± {100 * acc.std(ddof=1):.2f}" if len(acc) > 1
                                                                   else ""),
                             f"{np.mean([r['train_seconds'] for r in rs]):.2f}",
                             f"{np.mean([r['tune_seconds'] for r in rs]):.1f}",
                             f"{np.mean([r['size'] for r in rs]):.0f}",
                             f"{1e3 * np.mean([r['predict_seconds'] for r in rs]):.1f}",
                             f"{rs[0]['trained_on']:,}", par])
    md = "\n".join([
        f"# BSGD vs SVC vs Nystroem+SGD ({n_train:,}-example streams, one pass; {args.n_seeds} seed(s))", "",
        "Test accuracy on an independent 10,000-example test set (clean labels for the noisy checkerboard). "
        "Train s: the final fit (BSGD / Nystroem: the whole one-pass stream; SVC: its prefix). "
        "Predict ms: decision values of the 10,000 test examples. One core.", "",
        md_table(["stream", "method", "test acc %", "train s", "tuning s", "#SV / components", "predict ms (10k)",
                  "examples trained on", "chosen"], rows_out, ["l", "l", "r", "r", "r", "r", "r", "r", "l"]), "",
        env_md(env)])
    write_results("bench_compare", {"protocol": __doc__, "env": env, "runs": runs}, md, args)


if __name__ == "__main__":
    main()
