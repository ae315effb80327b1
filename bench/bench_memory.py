"""Peak memory of the streaming demo does not grow with the stream length.

Runs ``python -m budgetkernel demo --n N -q`` (noisy-checkerboard stream through BSGD merge,
B=100, chunks of 10,000, test set of 10,000) in a fresh subprocess for each N and reads that
child's peak resident set size from ``os.wait4`` (the kernel's ru_maxrss of exactly that
process, in KiB on Linux), alongside the demo's own "peak memory" line as a cross-check.
N = 10,000 (the interpreter + numpy + scikit-learn + the module baseline), 100,000 and
1,000,000 (and 3,000,000 unless --quick). Each N is run ``--repeats`` times (default 2) and
the largest peak kept.

Target: peak RSS at N=1,000,000 within 5% of N=100,000 (memory is O(B d + chunk), not O(N)).

    python bench/bench_memory.py [--quick] [--seed 0] [--repeats 2]
"""

from __future__ import annotations

import _common  # noqa: F401

import os
import re
import subprocess
import sys
import time
from pathlib import Path

from _common import env_md, environment, md_table, parser, write_results

TARGET = 0.05


def run_demo(n, seed):
    import budgetkernel

    pkg_parent = str(Path(budgetkernel.__file__).resolve().parent.parent)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([pkg_parent] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    cmd = [sys.executable, "-m", "budgetkernel", "demo", "--n", str(n), "--seed", str(seed), "-q"]
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    # wait4 reaps the child and returns its own rusage (not the max over all children).
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t0
    out, err = p.stdout.read(), p.stderr.read()
    p.stdout.close()
    p.stderr.close()
    p.returncode = os.waitstatus_to_exitcode(status)
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({p.returncode}):\n{out}\n{err}")
    maxrss_kib = ru.ru_maxrss / 1024.0 if sys.platform == "darwin" else float(ru.ru_maxrss)
    m = re.search(r"peak memory\s+([0-9.]+) MiB", out)
    acc = re.search(r"test accuracy\s+([0-9.]+)", out)
    eps = re.search(r"examples/s\s+([0-9,]+)", out)
    return {"n": n, "peak_rss_mib": maxrss_kib / 1024.0, "demo_reported_mib": float(m.group(1)) if m else None,
            "test_accuracy": float(acc.group(1)) if acc else None,
            "examples_per_second": float(eps.group(1).replace(",", "")) if eps else None,
            "wall_seconds": wall, "command": " ".join(["python"] + cmd[1:]), "stdout": out}


def main():
    p = parser(__doc__)
    p.add_argument("--repeats", type=int, default=2)
    args = p.parse_args()
    env = environment()
    sizes = [10_000, 100_000, 1_000_000] + ([] if args.quick else [3_000_000])
    results = []
    for n in sizes:
        reps = [run_demo(n, args.seed) for _ in range(args.repeats)]
        best = max(reps, key=lambda r: r["peak_rss_mib"])
        best["all_peaks_mib"] = [r["peak_rss_mib"] for r in reps]
        results.append(best)
        print(f"n={n:>9,}: peak RSS {best['peak_rss_mib']:.1f} MiB (runs: "
              f"{', '.join(f'{v:.1f}' for v in best['all_peaks_mib'])}), demo says {best['demo_reported_mib']} MiB, "
              f"{best['wall_seconds']:.1f}s", flush=True)
    by_n = {r["n"]: r for r in results}
    base = by_n[100_000]["peak_rss_mib"]
    rel = (by_n[1_000_000]["peak_rss_mib"] - base) / base
    rows = [[f"{r['n']:,}", f"{r['peak_rss_mib']:.1f}", f"{r['demo_reported_mib']:.1f}",
             f"{100 * (r['peak_rss_mib'] - base) / base:+.2f}%", f"{r['test_accuracy']:.4f}",
             f"{r['examples_per_second']:,.0f}", f"{r['wall_seconds']:.1f}"] for r in results]
    ok = rel < TARGET
    md = "\n".join([
        "# Peak memory of `python -m budgetkernel demo --n N -q` (B=100 merge)", "",
        md_table(["N", "peak RSS MiB (wait4)", "demo's own peak MiB", "vs N=100,000", "test acc", "train ex/s",
                  "wall s"], rows), "",
        f"Target: peak RSS at N=1,000,000 within {100 * TARGET:.0f}% of N=100,000: {100 * rel:+.2f}% -> "
        f"{'met' if ok else '**missed**'}. Max over {args.repeats} run(s) per N.", "", env_md(env)])
    for r in results:
        r.pop("stdout", None)
    write_results("bench_memory", {"protocol": __doc__, "env": env, "results": results,
                                   "relative_difference_1M_vs_100k": rel, "target": TARGET, "target_met": ok}, md, args)


if __name__ == "__main__":
    main()
