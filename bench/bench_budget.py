"""What a budget buys and costs: accuracy, training speed and model size as B grows.

For B in 10 ... 1000, each learner makes one pass over a 100,000-example stream (chunks of
10,000, through ``partial_fit``) and is scored on a 10,000-example test set:

- noisy_checkerboard (d = 2, two classes, 15% of training labels flipped, clean test labels),
  gamma = 4, the value ``PrequentialSearch`` picks on this stream;
- waveform (d = 21, three classes, Bayes accuracy about 0.87), gamma = the median heuristic
  (``budgetkernel.model_selection.median_gamma``) on the first 1,000 examples.

Learners: BSGD with merging, projection and random removal (lam = 1e-4 / 1e-3), BPA-NN
(C = 0.1) and the self-tuned Forgetron. Reported per (stream, learner, B): test accuracy,
training examples/s (one core, best of ``--repeats`` passes) and the size of the saved model
file. The figure ``results/bench_budget.png`` is shown in the user guide (docs/guide/budget.md).

    python bench/bench_budget.py [--quick] [--seed 0] [--repeats 2]
"""

from __future__ import annotations

import _common  # noqa: F401

import os
import tempfile

import numpy as np
from _common import RESULTS, env_md, environment, md_table, nogc, parser, write_results

BUDGETS = [10, 20, 50, 100, 200, 500, 1000]
QUICK_BUDGETS = [10, 50, 200]


def learners(stream):
    from budgetkernel import BudgetedPAClassifier, BudgetedSGDClassifier, KernelPerceptron

    lam = 1e-3 if stream == "noisy_checkerboard" else 1e-4

    def bsgd(m):
        return lambda B, g, s: BudgetedSGDClassifier(budget=B, maintenance=m, gamma=g, lam=lam, random_state=s)

    return {
        "BSGD merge": bsgd("merge"),
        "BSGD project": bsgd("project"),
        "BSGD remove-random": bsgd("remove-random"),
        "BPA-NN": lambda B, g, s: BudgetedPAClassifier(budget=B, variant="nn", C=0.1, gamma=g, random_state=s),
        "Forgetron": lambda B, g, s: KernelPerceptron(budget=B, maintenance="forgetron", gamma=g, random_state=s),
    }


def data(stream, n, seed):
    from budgetkernel import datasets
    from budgetkernel.model_selection import median_gamma

    train, (X_test, y_test) = datasets.make_stream_and_test(stream, n, 10_000, random_state=seed)
    chunks = [(X, y) for X, y in train]
    gamma = 4.0 if stream == "noisy_checkerboard" else median_gamma(chunks[0][0][:1000])
    classes = np.unique(np.concatenate([y for _, y in chunks]))
    return chunks, X_test, y_test, float(gamma), classes


def run(make, make_args, chunks, classes, repeats):
    import time

    best, clf = float("inf"), None
    for _ in range(repeats):
        clf = make(*make_args)
        with nogc():
            t = time.perf_counter()
            for X, y in chunks:
                clf.partial_fit(X, y, classes=classes)
            best = min(best, time.perf_counter() - t)
    return best, clf


def model_bytes(clf):
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "m.bkm")
        clf.save(path)
        return os.path.getsize(path)


def plot(results, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    streams = sorted({r["stream"] for r in results})
    fig, axes = plt.subplots(2, len(streams), figsize=(5.2 * len(streams), 7), squeeze=False)
    for j, stream in enumerate(streams):
        rows = [r for r in results if r["stream"] == stream]
        for name in dict.fromkeys(r["learner"] for r in rows):
            mine = [r for r in rows if r["learner"] == name]
            B = [r["budget"] for r in mine]
            axes[0, j].plot(B, [100 * r["accuracy"] for r in mine], "o-", label=name)
            axes[1, j].plot(B, [r["examples_per_second"] for r in mine], "o-", label=name)
        axes[0, j].set(title=stream, ylabel="test accuracy (%)", xscale="log")
        axes[1, j].set(xlabel="budget B (support vectors)", ylabel="training examples/s", xscale="log",
                       yscale="log")
        for ax in axes[:, j]:
            ax.grid(alpha=0.3, which="both")
    axes[0, 0].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=90)


def main():
    p = parser(__doc__)
    p.add_argument("--repeats", type=int, default=2)
    args = p.parse_args()
    n = 20_000 if args.quick else 100_000
    budgets = QUICK_BUDGETS if args.quick else BUDGETS
    results = []
    for stream in ["noisy_checkerboard", "waveform"]:
        chunks, X_test, y_test, gamma, classes = data(stream, n, args.seed)
        for name, make in learners(stream).items():
            for B in budgets:
                seconds, clf = run(make, (B, gamma, args.seed), chunks, classes, args.repeats)
                results.append({"stream": stream, "learner": name, "budget": B, "gamma": gamma,
                                "accuracy": clf.score(X_test, y_test), "n_support": int(clf.n_support_),
                                "examples_per_second": n / seconds, "model_bytes": model_bytes(clf)})
                r = results[-1]
                print(f"{stream:>18} {name:>18} B={B:<5} acc {r['accuracy']:.4f} "
                      f"{r['examples_per_second']:>12,.0f} ex/s {r['model_bytes']:>9,} bytes", flush=True)
    env = environment()
    name = args.out or ("bench_budget" + ("_quick" if args.quick else ""))
    plot(results, RESULTS / f"{name}.png")
    md = [f"# Accuracy, speed and model size against the budget ({n:,}-example streams, one pass)", ""]
    for stream in dict.fromkeys(r["stream"] for r in results):
        rows = [r for r in results if r["stream"] == stream]
        md += [f"## {stream} (gamma = {rows[0]['gamma']:.4g})", "",
               md_table(["learner", "B", "test accuracy", "#SVs", "train examples/s", "model file bytes"],
                        [[r["learner"], r["budget"], f"{r['accuracy']:.4f}", r["n_support"],
                          f"{r['examples_per_second']:,.0f}", f"{r['model_bytes']:,}"] for r in rows]), ""]
    md.append(env_md(env))
    write_results("bench_budget", {"environment": env, "results": results}, "\n".join(md), args)


if __name__ == "__main__":
    main()
