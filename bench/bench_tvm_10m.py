"""Twin Vector Machine on 10 million noisy-checkerboard examples in constant memory (TVM paper, Figure 2).

Wang & Vucetic (SDM 2009), section 5.3: TVM with B = 100 and an RBF kernel on a stream of
10^7 N-Checkerboard examples (4x4 checkerboard, 15% of the labels flipped), accuracy on the
clean checkerboard (paper: 98.7% at N = 10^7) and runtime (linear or sublinear in N) as the
stream grows.

* the stream comes from ``datasets.make_stream_and_test('noisy_checkerboard', N, 10_000)``
  in chunks of 100,000 (drawn on demand, never held whole), standardised with
  ``StreamingStandardizer(n_warmup=1000)``; the 10,000-example test set is clean;
* ``TwinVectorMachine(budget=100)`` with the paper's defaults (m1 = 1, m2 = 2, input-space
  one-sided merging, rejection eta = 0.2, C * sum of twin weights = C * B) and by default the
  paper's C = 100 and kernel width delta = 0.37 (gamma = 1 / (2 delta) = 1.351) (``--C`` and
  ``--gamma`` to change them, e.g. to what bench_tvm.py's validation chose);
* at log-spaced checkpoints (1, 2, 5 x 10^k, and every 10^6 beyond 10^6): test accuracy,
  cumulative training time (partial_fit only; data generation and evaluation excluded) and
  wall time, the fraction of examples Beneficial accepted so far, and the process's current
  and peak resident memory (VmRSS / VmHWM from /proc/self/status) -- constant memory means
  the RSS stops growing once the model and the chunk buffers exist;
* the plot bench/results/bench_tvm_10m.png: test accuracy and training time vs examples.

One core. ``--n`` sets the stream length (default 10^7); ``--quick``: 10^5.

    python bench/bench_tvm_10m.py [--quick] [--n 10000000] [--seed 0] [--C 100] [--gamma 1.351]
"""

from __future__ import annotations

import _common  # first: pins the thread pools

import time

import numpy as np

from budgetkernel import TwinVectorMachine, datasets
from budgetkernel.preprocessing import StreamingStandardizer

from _common import env_md, environment, fmt_rate, md_table, parser, write_results

CHUNK = 100_000
N_TEST = 10_000
PAPER_DELTA = 0.37


def memory():
    """Current and peak resident set size of this process in MiB (Linux /proc)."""
    out = {}
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(("VmRSS:", "VmHWM:")):
                    key, val = line.split(":")
                    out["rss_mib" if key == "VmRSS" else "peak_rss_mib"] = int(val.split()[0]) / 1024.0
    except OSError:
        import resource

        out["peak_rss_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    return out


def checkpoints(n):
    pts = set()
    k = 100
    while k <= n:
        for m in (1, 2, 5):
            if m * k <= n:
                pts.add(m * k)
        k *= 10
    pts.update(range(1_000_000, n + 1, 1_000_000))
    pts.add(n)
    return sorted(pts)


def main():
    p = parser(__doc__)
    p.add_argument("--n", type=int, default=None, help="stream length (default 10^7; 10^5 with --quick)")
    p.add_argument("--C", type=float, default=100.0, help="C of the first B examples (default: the paper's 100)")
    p.add_argument("--gamma", type=float, default=1.0 / (2.0 * PAPER_DELTA),
                   help="RBF gamma (default: the paper's width delta = 0.37, gamma = 1.351)")
    p.add_argument("--budget", type=int, default=100)
    args = p.parse_args()
    n = args.n or (100_000 if args.quick else 10_000_000)
    env = environment()
    mem_start = memory()

    train, (Xt, yt) = datasets.make_stream_and_test("noisy_checkerboard", n, N_TEST, random_state=args.seed,
                                                    chunk_size=CHUNK)
    scaler = StreamingStandardizer(n_warmup=1000)
    stream = scaler.fit_transform_stream(train)
    clf = TwinVectorMachine(budget=args.budget, C=args.C, gamma=args.gamma, random_state=args.seed)
    yt = (yt > 0).astype(np.int64)
    Xt_std = None

    pts = checkpoints(n)
    curve = []
    seen, train_s, t_wall0 = 0, 0.0, time.perf_counter()
    mem_first = None
    for X, y in stream:
        if Xt_std is None:
            Xt_std = np.ascontiguousarray(scaler.transform(Xt))  # the statistics are frozen by now
        y = (y > 0).astype(np.int64)
        i = 0
        while i < len(y):
            nxt = next(p_ for p_ in pts if p_ > seen)
            j = min(len(y), i + (nxt - seen))
            t0 = time.perf_counter()
            clf.partial_fit(X[i:j], y[i:j], classes=[0, 1])
            train_s += time.perf_counter() - t0
            seen += j - i
            i = j
            if seen == nxt:
                acc = float(np.mean(clf.predict(Xt_std) == yt))
                c = clf.counters_
                m = memory()
                if mem_first is None and seen >= CHUNK:
                    mem_first = m
                w = np.asarray(clf.twin_weights_)
                curve.append({"examples": seen, "test_accuracy": acc, "train_seconds": train_s,
                              "wall_seconds": time.perf_counter() - t_wall0, "labels": c["labels"],
                              "label_fraction": c["labels"] / c["examples"], "updates": c["updates"],
                              "maintenance_steps": c["maintenance_steps"], "n_twins": int(w.shape[0]),
                              "total_twin_weight": float(w.sum()), **m})
                print(f"{seen:>10,d} examples  acc {acc:.4f}  train {train_s:8.1f}s  "
                      f"({fmt_rate(seen / train_s)} ex/s)  labels {c['labels'] / c['examples']:.4f}  "
                      f"RSS {m.get('rss_mib', float('nan')):.1f} MiB (peak {m.get('peak_rss_mib', float('nan')):.1f})",
                      flush=True)
    mem_end = memory()

    # Log-log slope of training time vs examples over the last two decades (1 = linear).
    e = np.array([c["examples"] for c in curve], dtype=float)
    t = np.array([c["train_seconds"] for c in curve])
    sel = e >= max(e[-1] / 100.0, 1000.0)
    slope = float(np.polyfit(np.log(e[sel]), np.log(t[sel]), 1)[0]) if sel.sum() >= 2 else float("nan")

    name = args.out or ("bench_tvm_10m" + ("_quick" if args.quick else ""))
    data = {"protocol": __doc__, "env": env, "n": n, "budget": args.budget, "C": args.C, "gamma": args.gamma,
            "seed": args.seed, "chunk": CHUNK, "memory_start": mem_start, "memory_after_first_chunk": mem_first,
            "memory_end": mem_end, "time_slope_last_two_decades": slope, "curve": curve,
            "final_test_accuracy": curve[-1]["test_accuracy"], "train_seconds": train_s,
            "wall_seconds": time.perf_counter() - t_wall0}
    rows = [[f"{c['examples']:,}", f"{100 * c['test_accuracy']:.2f}", f"{c['train_seconds']:.1f}",
             fmt_rate(c["examples"] / c["train_seconds"]) if c["train_seconds"] > 0 else "-",
             f"{c['label_fraction']:.4f}", f"{c['labels']:,}", f"{c['rss_mib']:.1f}", f"{c['peak_rss_mib']:.1f}"]
            for c in curve]
    md = "\n".join([
        f"# TVM (B = {args.budget}) on {n:,} noisy-checkerboard examples (TVM paper, Figure 2)", "",
        f"One pass, chunks of {CHUNK:,} generated on demand; clean 10,000-example test set; C = {args.C:g} "
        f"(C * sum of twin weights kept at C * B), RBF gamma = {args.gamma:.4g}; TVM defaults. Train s = "
        f"cumulative partial_fit time (generation and evaluation excluded), one core of a shared 2-core machine. "
        f"Paper: 98.7% at 10^7.", "",
        f"**Final test accuracy {100 * curve[-1]['test_accuracy']:.2f}%**, {train_s:.0f} s of training "
        f"({fmt_rate(n / train_s)} examples/s overall); log-log slope of training time vs examples over the "
        f"last two decades: {slope:.2f} (1 = linear). Memory (VmRSS / peak VmHWM): start "
        f"{mem_start.get('rss_mib', float('nan')):.1f} / {mem_start.get('peak_rss_mib', float('nan')):.1f} MiB "
        f"(before the data), after the first {CHUNK:,}-example chunk "
        f"{(mem_first or {}).get('rss_mib', float('nan')):.1f} / {(mem_first or {}).get('peak_rss_mib', float('nan')):.1f} MiB, "
        f"end {mem_end.get('rss_mib', float('nan')):.1f} / {mem_end.get('peak_rss_mib', float('nan')):.1f} MiB.", "",
        md_table(["examples", "test acc %", "train s", "examples/s", "labels/ex", "labels", "RSS MiB", "peak MiB"],
                 rows), "", env_md(env)])
    write_results(name, data, md)
    plot(curve, name, args, n)


def plot(curve, name, args, n):
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return
    e = np.array([c["examples"] for c in curve], dtype=float)
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(10, 4))
    a1.semilogx(e, [100 * c["test_accuracy"] for c in curve], marker=".")
    a1.axhline(98.7, color="gray", ls="--", lw=0.8, label="paper, 10^7: 98.7%")
    a1.set_xlabel("training examples")
    a1.set_ylabel("clean test accuracy %")
    a1.set_title(f"TVM B={args.budget}, noisy checkerboard")
    a1.grid(alpha=0.3)
    a1.legend()
    t = np.array([c["train_seconds"] for c in curve])
    ok = t > 0
    a2.loglog(e[ok], t[ok], marker=".", label="TVM training time")
    ref = t[ok][-1] * e[ok] / e[ok][-1]
    a2.loglog(e[ok], ref, color="gray", ls="--", lw=0.8, label="linear (through the last point)")
    a2.set_xlabel("training examples")
    a2.set_ylabel("seconds (cumulative)")
    a2.set_title("runtime")
    a2.grid(alpha=0.3, which="both")
    a2.legend()
    fig.tight_layout()
    path = _common.RESULTS / f"{name}.png"
    fig.savefig(path, dpi=90)
    print(f"wrote {path.relative_to(_common.HERE.parent)}")


if __name__ == "__main__":
    main()
