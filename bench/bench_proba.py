"""Probabilities on a budget: kernel logistic regression vs Platt-scaled BSGD (hinge).

On the checkerboard and the noisy checkerboard (15% of labels flipped), for B = 100 and 500,
one pass over a 100,000-example stream (chunks of 10,000 through ``partial_fit``), merging:

- ``BudgetedSGDClassifier(loss="log")``: budgeted kernel logistic regression, whose
  ``predict_proba`` is the sigmoid of its decision values;
- ``BudgetedSGDClassifier(probability=True)`` (hinge, the BSGD paper), whose ``predict_proba``
  is the online Platt calibration of its decision values (learned prequentially on the same
  stream).

Two protocols for lam and gamma:

- ``fixed``: the same lam and gamma for both losses (the checkerboard's as in the BSGD paper's
  tables, the noisy one's as in bench_budget.py), tuned for the hinge loss;
- ``tuned``: each loss picks its own lam and gamma from the same grid (LAMS x GAMMAS), at the
  same B, by the log-loss on a validation prefix of the stream: trained on its first
  N_SELECT examples, scored on the next N_VALIDATE. The chosen pair then learns the whole
  stream. The logistic loss's log-odds shrink with lam, so a lam chosen for the hinge loss
  handicaps KLR's probabilities; this protocol gives each loss its own.

Reported on a 20,000-example test set: accuracy (on clean labels for the noisy stream, the
papers' measure), log-loss, Brier score and expected calibration error (15 equal-width bins)
on test labels drawn like the stream's (noisy for the noisy checkerboard: the probabilities
estimate the stream's own P(y | x)), and the training time. The issue's targets: KLR's
accuracy within 0.5 point of hinge BSGD at the same B, and its log-loss below Platt-scaled
BSGD's. The reliability diagrams (B = 100, both protocols) are ``results/bench_proba.png``.

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
# The tuned protocol's grid and validation prefix.
LAMS = [1e-3, 1e-4, 1e-5, 1e-6]
GAMMAS = [1.0, 2.0, 4.0, 8.0]
N_SELECT, N_VALIDATE = 20_000, 5_000
PROTOCOLS = ["fixed", "tuned"]


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


def make(loss, B, seed, params):
    from budgetkernel import BudgetedSGDClassifier

    # hinge: probability=True turns the online calibration on; 'log' has probabilities natively
    return BudgetedSGDClassifier(loss=loss, budget=B, maintenance="merge", random_state=seed,
                                 probability=loss == "hinge", **params)


def select(stream, loss, B, seed):
    """The tuned protocol: (lam, gamma) of the grid with the lowest validation log-loss, and
    the grid's validation log-losses."""
    X, y = data(stream, N_SELECT + N_VALIDATE, seed)  # the stream's prefix (same seed: same rows)
    Xv, yv = X[N_SELECT:], y[N_SELECT:]
    scores = []
    for lam in LAMS:
        for gamma in GAMMAS:
            clf = make(loss, B, seed, dict(lam=lam, gamma=gamma)).fit(X[:N_SELECT], y[:N_SELECT])
            scores.append((log_loss(clf.predict_proba(Xv), (yv == clf.classes_[1]).astype(int)), lam, gamma))
    best = min(scores)
    return dict(lam=best[1], gamma=best[2]), scores


def run_one(stream, loss, B, n, seed, protocol):
    X, y = data(stream, n, seed)
    if protocol == "fixed":
        params, grid = STREAMS[stream], None
    else:
        params, grid = select(stream, loss, B, seed)
    clf = make(loss, B, seed, params)
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
        stream=stream, loss=loss, budget=B, protocol=protocol, lam=params["lam"], gamma=params["gamma"],
        validation=grid, seconds=seconds, accuracy=float(clf.score(Xt, yc)),
        log_loss=log_loss(P, y01), brier=float(np.mean((P[:, 1] - y01) ** 2)), ece=ece, reliability=rel,
        calibration_seen=clf._model.calibration["seen"],
    )


def plot(results, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    streams = list(STREAMS)
    fig, axes = plt.subplots(len(PROTOCOLS), len(streams), figsize=(5.2 * len(streams), 4.6 * len(PROTOCOLS)),
                             squeeze=False)
    for (protocol, stream), ax in zip([(p, s) for p in PROTOCOLS for s in streams], axes.ravel()):
        ax.plot([0, 1], [0, 1], color="0.6", lw=1, ls="--", label="perfect calibration")
        for r in results:
            if (r["stream"], r["budget"], r["protocol"]) != (stream, BUDGETS[0], protocol):
                continue
            conf, freq, _ = zip(*r["reliability"])
            name = "KLR (loss='log')" if r["loss"] == "log" else "BSGD hinge + online Platt"
            ax.plot(conf, freq, marker="o", ms=4, label=f"{name}: log-loss {r['log_loss']:.3f}, ECE {r['ece']:.3f}")
        ax.set_title(f"{stream}, B = {BUDGETS[0]}, {protocol} lam / gamma")
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
    for protocol in PROTOCOLS:
        for stream in STREAMS:
            for B in BUDGETS:
                for loss in ("hinge", "log"):
                    r = run_one(stream, loss, B, N_TRAIN, args.seed, protocol)
                    results.append(r)
                    print(f"{protocol:5s} {stream:20s} B={B:4d} {loss:5s} lam {r['lam']:g} gamma {r['gamma']:g} "
                          f"acc {r['accuracy']:.4f} log-loss {r['log_loss']:.4f} ECE {r['ece']:.4f} "
                          f"{r['seconds']:.1f}s", flush=True)
    name = "bench_proba" + ("_quick" if args.quick else "")
    plot(results, RESULTS / f"{name}.png")
    rows, verdicts = [], {p: [] for p in PROTOCOLS}
    for protocol in PROTOCOLS:
        for stream in STREAMS:
            for B in BUDGETS:
                h, k = (next(r for r in results if (r["protocol"], r["stream"], r["budget"], r["loss"])
                             == (protocol, stream, B, loss)) for loss in ("hinge", "log"))
                acc_ok = k["accuracy"] >= h["accuracy"] - 0.005
                ll_ok = k["log_loss"] < h["log_loss"]
                verdicts[protocol].append(acc_ok and ll_ok)
                rows.append([protocol, stream, B, f"{h['lam']:g} / {h['gamma']:g}", f"{k['lam']:g} / {k['gamma']:g}",
                             f"{h['accuracy']:.4f}", f"{k['accuracy']:.4f}", "yes" if acc_ok else "NO",
                             f"{h['log_loss']:.4f}", f"{k['log_loss']:.4f}", "yes" if ll_ok else "NO",
                             f"{h['ece']:.4f}", f"{k['ece']:.4f}", f"{h['brier']:.4f}", f"{k['brier']:.4f}",
                             f"{h['seconds']:.1f}", f"{k['seconds']:.1f}"])
    env = environment()
    md = "\n\n".join([
        "# Probabilities: kernel logistic regression vs Platt-scaled BSGD",
        f"{N_TRAIN:,} training examples (one pass, chunks of {CHUNK:,}), {N_TEST:,} test examples, merging, "
        f"seed {args.seed}. Accuracy on clean test labels; log-loss, ECE (15 bins) and Brier on test labels drawn "
        "like the stream's. Targets: KLR accuracy within 0.5 point of hinge BSGD; KLR log-loss below "
        "Platt-scaled BSGD. Protocol `fixed`: both losses with the hinge loss's lam / gamma; `tuned`: each loss "
        f"picks its own lam in {LAMS} and gamma in {GAMMAS} by the log-loss on the stream's examples "
        f"{N_SELECT:,}..{N_SELECT + N_VALIDATE:,} after learning its first {N_SELECT:,}.",
        md_table(["protocol", "stream", "B", "lam / gamma hinge", "lam / gamma KLR", "acc hinge", "acc KLR", "within 0.5 pt", "log-loss Platt", "log-loss KLR",
                  "KLR lower", "ECE Platt", "ECE KLR", "Brier Platt", "Brier KLR", "s hinge", "s KLR"], rows),
        "All targets met: " + ", ".join(f"{p} {'yes' if all(v) else 'NO'}" for p, v in verdicts.items()) + ".",
        f"Reliability diagrams (B = {BUDGETS[0]}): `{name}.png`.",
        env_md(env),
    ])
    write_results(name, dict(results=results, environment=env), md)


if __name__ == "__main__":
    main()
