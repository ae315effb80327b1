"""Probabilities on a budget: kernel logistic regression vs Platt-scaled BSGD (hinge).

On the checkerboard and the noisy checkerboard (15% of labels flipped), for B = 100 and 500,
one pass over a 100,000-example stream (chunks of 10,000 through ``partial_fit``), merging:

- ``BudgetedSGDClassifier(loss="log")``: budgeted kernel logistic regression, whose
  ``predict_proba`` is the sigmoid of its decision values;
- ``BudgetedSGDClassifier()`` (hinge, the BSGD paper), whose ``predict_proba`` is the online
  Platt calibration of its decision values (learned prequentially on the same stream).

Reported on a 20,000-example test set: accuracy (on clean labels for the noisy stream, the
papers' measure), log-loss, Brier score and expected calibration error (15 equal-width bins)
on test labels drawn like the stream's (noisy for the noisy checkerboard: the probabilities
estimate the stream's own P(y | x)), and the training time. The issue's targets: KLR's
accuracy within 0.5 point of hinge BSGD at the same B, and its log-loss below Platt-scaled
BSGD's. The reliability diagram (B = 100) is ``results/bench_proba.png``.

    python bench/bench_proba.py [--quick] [--seed 0]
"""

from __future__ import annotations

import _common  # noqa: F401

import time

import numpy as np
from _common import RESULTS, env_md, environment, md_table, parser, write_results

N_TRAIN, N_TEST, CHUNK = 100_000, 20_000, 10_000
BUDGETS = [100, 500]
# gamma and lam per stream: the checkerboard's as in the BSGD paper's tables
# (bench_bsgd_tables.py), the noisy one's as in bench_budget.py.
STREAMS = {"checkerboard": dict(gamma=2.0, lam=1e-4), "noisy_checkerboard": dict(gamma=4.0, lam=1e-3)}


def data(stream, n, seed, clean=False):
    from budgetkernel import datasets

    if stream == "checkerboard":
        return datasets.checkerboard(n, random_state=seed)
    return datasets.noisy_checkerboard(n, random_state=seed, clean=clean)


def log_loss(P, y01):
    p = np.clip(P[np.arange(len(y01)), y01], 1e-300, 1.0)
    return float(-np.mean(np.log(p)))


def reliability(p1, y01, bins=15):
    """(mean predicted, observed frequency, count) per equal-width bin of P(class 1), and the ECE."""
    edges = np.linspace(0.0, 1.0, bins + 1)
    idx = np.clip(np.digitize(p1, edges) - 1, 0, bins - 1)
    rows, ece = [], 0.0
    for b in range(bins):
        m = idx == b
        if m.any():
            conf, freq = float(p1[m].mean()), float(y01[m].mean())
            rows.append((conf, freq, int(m.sum())))
            ece += m.sum() / len(p1) * abs(conf - freq)
    return rows, float(ece)


def run_one(stream, loss, B, n, seed):
    from budgetkernel import BudgetedSGDClassifier

    X, y = data(stream, n, seed)
    clf = BudgetedSGDClassifier(loss=loss, budget=B, maintenance="merge", random_state=seed, **STREAMS[stream])
    t0 = time.perf_counter()
    for a in range(0, n, CHUNK):
        clf.partial_fit(X[a : a + CHUNK], y[a : a + CHUNK], classes=[-1, 1])
    seconds = time.perf_counter() - t0
    Xt, yt = data(stream, N_TEST, seed + 1000)  # labels as the stream draws them
    _, yc = data(stream, N_TEST, seed + 1000, clean=True)
    P = clf.predict_proba(Xt)
    y01 = (yt == clf.classes_[1]).astype(int)
    rel, ece = reliability(P[:, 1], y01)
    return dict(
        stream=stream, loss=loss, budget=B, seconds=seconds, accuracy=float(clf.score(Xt, yc)),
        log_loss=log_loss(P, y01), brier=float(np.mean((P[:, 1] - y01) ** 2)), ece=ece, reliability=rel,
        calibration_seen=clf._model.calibration["seen"],
    )


def plot(results, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    streams = list(STREAMS)
    fig, axes = plt.subplots(1, len(streams), figsize=(5.2 * len(streams), 4.6))
    for ax, stream in zip(np.atleast_1d(axes), streams):
        ax.plot([0, 1], [0, 1], color="0.6", lw=1, ls="--", label="perfect calibration")
        for r in results:
            if r["stream"] != stream or r["budget"] != BUDGETS[0]:
                continue
            conf, freq, _ = zip(*r["reliability"])
            name = "KLR (loss='log')" if r["loss"] == "log" else "BSGD hinge + online Platt"
            ax.plot(conf, freq, marker="o", ms=4, label=f"{name}: log-loss {r['log_loss']:.3f}, ECE {r['ece']:.3f}")
        ax.set_title(f"{stream}, B = {BUDGETS[0]}")
        ax.set_xlabel("predicted P(y = +1)")
        ax.set_ylabel("observed frequency of y = +1")
        ax.set_xlim(0, 1)
        ax.set_ylim(0, 1)
        ax.legend(loc="upper left", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main():
    args = parser(__doc__).parse_args()
    global N_TRAIN, N_TEST, BUDGETS
    if args.quick:
        N_TRAIN, N_TEST, BUDGETS = 10_000, 5_000, [100]
    results = []
    for stream in STREAMS:
        for B in BUDGETS:
            for loss in ("hinge", "log"):
                r = run_one(stream, loss, B, N_TRAIN, args.seed)
                results.append(r)
                print(f"{stream:20s} B={B:4d} {loss:5s} acc {r['accuracy']:.4f} log-loss {r['log_loss']:.4f} "
                      f"ECE {r['ece']:.4f} {r['seconds']:.1f}s", flush=True)
    name = "bench_proba" + ("_quick" if args.quick else "")
    plot(results, RESULTS / f"{name}.png")
    rows, verdicts = [], []
    for stream in STREAMS:
        for B in BUDGETS:
            h, k = (next(r for r in results if (r["stream"], r["budget"], r["loss"]) == (stream, B, loss))
                    for loss in ("hinge", "log"))
            acc_ok = k["accuracy"] >= h["accuracy"] - 0.005
            ll_ok = k["log_loss"] < h["log_loss"]
            verdicts.append(acc_ok and ll_ok)
            rows.append([stream, B, f"{h['accuracy']:.4f}", f"{k['accuracy']:.4f}", "yes" if acc_ok else "NO",
                         f"{h['log_loss']:.4f}", f"{k['log_loss']:.4f}", "yes" if ll_ok else "NO",
                         f"{h['ece']:.4f}", f"{k['ece']:.4f}", f"{h['brier']:.4f}", f"{k['brier']:.4f}",
                         f"{h['seconds']:.1f}", f"{k['seconds']:.1f}"])
    env = environment()
    md = "\n\n".join([
        "# Probabilities: kernel logistic regression vs Platt-scaled BSGD",
        f"{N_TRAIN:,} training examples (one pass, chunks of {CHUNK:,}), {N_TEST:,} test examples, merging, "
        f"seed {args.seed}. Accuracy on clean test labels; log-loss, ECE (15 bins) and Brier on test labels drawn "
        "like the stream's. Targets: KLR accuracy within 0.5 point of hinge BSGD; KLR log-loss below "
        "Platt-scaled BSGD.",
        md_table(["stream", "B", "acc hinge", "acc KLR", "within 0.5 pt", "log-loss Platt", "log-loss KLR",
                  "KLR lower", "ECE Platt", "ECE KLR", "Brier Platt", "Brier KLR", "s hinge", "s KLR"], rows),
        f"All targets met: {'yes' if all(verdicts) else 'NO'}.",
        f"Reliability diagram (B = {BUDGETS[0]}): `{name}.png`.",
        env_md(env),
    ])
    write_results(name, dict(results=results, environment=env), md)


if __name__ == "__main__":
    main()
