"""Runs the C++ Google Benchmark executables and summarises them (log-log slopes vs B).

Runs ``bench_kernel_row``, ``bench_bsgd`` and ``bench_pa`` from a CMake build directory configured with
``-DBUDGETKERNEL_BUILD_BENCHMARKS=ON`` (default ``/tmp/bk-bench``; see bench/README.md),
reads their JSON output and writes bench/results/bench_cpp.{json,md}:

* per benchmark family (e.g. ``bsgd_train/merge``, ``maintenance/project``): time per
  iteration for each B, items/s and the benchmark's counters;
* the log-log slope of time per iteration vs B by least squares, over all B and over
  B >= 100 (1 = linear, 2 = quadratic), next to Google Benchmark's own ``Complexity(oAuto)``
  fit (big-O and RMS).

What one iteration is: ``kernel_row+scores``: one kernel row + scores of one query;
``bsgd_train``: ``partial_fit`` over 1,000 examples of the 2-D noisy checkerboard with a full
store; ``maintenance``: one SV push + ``on_push`` + ``reduce`` on a full store (see the
header comment of bench/cpp/bench_bsgd.cpp); ``pa_train`` / ``perceptron_train``:
``partial_fit`` of the Passive-Aggressive learners and the budgeted perceptrons over 1,000
examples with a full store; ``pa_update`` / ``perceptron_update``: one example that updates
(inside the margin, wrong label) on a copy of the warmed learner (see the header comment of
bench/cpp/bench_pa.cpp).

For the ``*_train`` families the per-example time mixes examples with and without an update,
so the summary also fits the slope of the time per *update* (time per example / upd/ex), and
checks the issue's speed target: BPA-S, BPA-NN, Random, Forgetron and Stoptron at B = 100
train at >= 1,000,000 examples/s (one core; the target is for the default portable build, so
run this on a build without ``-mavx2 -mfma`` as well, e.g. with ``--out bench_cpp_portable``).

``--only bench_multiclass`` (not part of the default run) runs bench/cpp/bench_multiclass.cpp,
issue 29's per-step costs, and writes bench_cpp_multiclass.{json,md} with the issue's checks,
each a table with pass/fail:

* one merge step (push + on_push + Merging::reduce on a full store, see the header comment of
  bench_multiclass.cpp) with c = 10 and 26 coefficient columns against the binary store (c = 1)
  at the same (d, B): target ratio <= 2; with the partner search alone (merge_smallest +
  merge_partner) and its share of the step;
* the RBF kernel row at d >= 64 as learning computes it (the row a chunk loop is learning,
  from the store's blocks, with one SV given a new point per row: learn_row_u1) in GFLOP/s
  (2 B d flops per row) as a fraction of one core's FMA peak measured in the same run
  (``fma_peak/*``: FMA chains on registers) for the vector width the build uses (256-bit
  AVX2+FMA for a ``-mavx2 -mfma`` build): target >= 50%; the row of one query alone, the dot
  products alone, a block of 64 rows (dots_rows) and learning's row without changes for
  comparison, and the AVX-512 peak where the CPU has it (the library does not use AVX-512).

Times there are CPU times (Google Benchmark's rate counters), less disturbed than wall time
on a shared machine.

Each benchmark runs ``--repetitions`` times (default 3) and the median is reported: the
machine is shared, and a single run can be disturbed. ``--quick``: one repetition, a short
minimum time per benchmark and only B <= 200 for the projection, BPA-P and the Projectrons.
``--only bench_pa`` runs a subset of the executables (comma-separated) and, unless ``--out``
names the result, writes bench_cpp_<subset>.{json,md}, so that the full run's file stays whole
(bench_bpa_table.py reads the PA numbers from it).

    python bench/run_cpp_bench.py [--quick] [--build-dir /tmp/bk-bench] [--only bench_pa]
    python bench/run_cpp_bench.py --build-dir /tmp/bk-bench --only bench_multiclass
"""

from __future__ import annotations

import _common  # noqa: F401

import json
import os
import re
import subprocess
import tempfile
from collections import defaultdict
from pathlib import Path

import numpy as np

from _common import md_table, parser, write_results

EXECUTABLES = ("bench_kernel_row", "bench_bsgd", "bench_pa")
# Run only when named by --only (the default run and its bench_cpp.* stay as they were).
EXTRA_EXECUTABLES = ("bench_multiclass",)
# Result names other than bench_cpp_<executables>.
OUT_NAMES = {("bench_multiclass",): "bench_cpp_multiclass"}
# --quick: skip the O(B^2) learners' largest budgets; bench_multiclass: B = 100 only.
QUICK_FILTERS = {
    "bench_bsgd": "-project/B:(400|800)$",
    "bench_pa": "-/(bpa-p|projectron|projectron-pp)/B:(400|800)$",
    "bench_multiclass": "-/B:500$",
}
# Issue 29's targets: multi-class merge step <= 2x the binary one at the same (d, B); the
# kernel row at d >= 64 at >= 50% of one core's FMA peak.
MERGE_RATIO_TARGET = 2.0
PEAK_FRACTION_TARGET = 0.5
# fma_peak variant of each vector width (the kernel rows' simd_bits counter).
ROW_KINDS = ("kernel_row", "dots", "dots_rows64", "learn_row", "learn_row_u1")
PEAK_BY_BITS = {128: "fma_peak/sse2-128-muladd", 256: "fma_peak/avx2-256", 512: "fma_peak/avx512-512"}
# The speed target: these learners at B = 100 train at >= 1M examples/s on 2-D data.
SPEED_TARGET = 1e6
SPEED_TARGET_B = 100
SPEED_TARGET_FAMILIES = ("pa_train/bpa-s", "pa_train/bpa-nn", "perceptron_train/random",
                         "perceptron_train/forgetron", "perceptron_train/stoptron")


def run(exe, quick, repetitions, extra_filter=None):
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as f:
        out = f.name
    cmd = [str(exe), f"--benchmark_out={out}", "--benchmark_out_format=json",
           f"--benchmark_min_time={0.05 if quick else 0.5}"]
    if repetitions > 1:
        cmd += [f"--benchmark_repetitions={repetitions}", "--benchmark_report_aggregates_only=true"]
    if extra_filter:
        cmd.append(f"--benchmark_filter={extra_filter}")
    print("$", " ".join(cmd), flush=True)
    subprocess.run(cmd, check=True)
    with open(out) as f:
        data = json.load(f)
    os.unlink(out)
    return data


def family_and_b(name):
    m = re.match(r"(.*)/B:(\d+)$", name)
    return (m.group(1), int(m.group(2))) if m else (None, None)


def slope(bs, ts, min_b=0):
    sel = [(b, t) for b, t in zip(bs, ts) if b >= min_b and t > 0]
    if len(sel) < 2:
        return float("nan")
    b, t = map(np.array, zip(*sel))
    return float(np.polyfit(np.log(b), np.log(t), 1)[0])


def main():
    p = parser(__doc__)
    p.add_argument("--build-dir", default=os.environ.get("BK_BENCH_BUILD", "/tmp/bk-bench"))
    p.add_argument("--repetitions", type=int, default=3,
                   help="repetitions per benchmark; the median is reported (default 3; 1 with --quick)")
    p.add_argument("--only", default=None,
                   help="comma-separated subset of the executables " + ",".join(EXECUTABLES + EXTRA_EXECUTABLES)
                   + " (default: " + ",".join(EXECUTABLES) + ")")
    args = p.parse_args()
    bdir = Path(args.build_dir) / "bench"
    exes = EXECUTABLES
    if args.only:
        exes = tuple(e for e in args.only.split(",") if e)
        unknown = [e for e in exes if e not in EXECUTABLES + EXTRA_EXECUTABLES]
        if unknown:
            raise SystemExit(f"--only: unknown executable(s) {unknown}; "
                             f"choose from {list(EXECUTABLES + EXTRA_EXECUTABLES)}")
    results = {"context": None, "benchmarks": []}
    for exe in exes:
        path = bdir / exe
        if not path.exists():
            raise SystemExit(f"{path} not found: configure and build with -DBUDGETKERNEL_BUILD_BENCHMARKS=ON "
                             "(see bench/README.md)")
        flt = QUICK_FILTERS.get(exe) if args.quick else None
        d = run(path, args.quick, 1 if args.quick else args.repetitions, flt)
        results["context"] = d["context"]
        results["benchmarks"] += d["benchmarks"]

    fam = defaultdict(list)
    bigo = {}
    for b in results["benchmarks"]:
        if b.get("run_type") == "aggregate" and b.get("aggregate_name") == "median":
            pass  # with --repetitions: the median of the repetitions stands for the run
        elif b.get("run_type") == "aggregate":
            base = b["name"].rsplit("_", 1)[0]
            if b.get("aggregate_name") == "BigO":
                bigo.setdefault(base, {})["big_o"] = b.get("big_o")
                bigo[base]["coef"] = b.get("real_coefficient")
            elif b.get("aggregate_name") == "RMS":
                bigo.setdefault(base, {})["rms"] = b.get("rms")
            continue
        f, B = family_and_b(b["run_name"] if "run_name" in b else b["name"])
        if f is not None:
            fam[f].append((B, b))

    skip = {"name", "family_index", "per_family_instance_index", "run_name", "run_type", "repetitions",
            "repetition_index", "threads", "iterations", "real_time", "cpu_time", "time_unit", "items_per_second"}
    rows, srows, summary = [], [], {}
    for f, lst in fam.items():
        lst.sort(key=lambda x: x[0])
        bs = [B for B, _ in lst]
        ts = [b["real_time"] for _, b in lst]
        unit = lst[0][1]["time_unit"]
        for B, b in lst:
            counters = ", ".join(f"{k}={v:.3g}" for k, v in b.items() if k not in skip and isinstance(v, (int, float)))
            ips = b.get("items_per_second")
            rows.append([f, B, f"{b['real_time']:.4g} {unit}", f"{b['cpu_time']:.4g} {unit}",
                         f"{ips:,.0f}" if ips else "-", counters])
        s_all, s_big = slope(bs, ts), slope(bs, ts, 100)
        g = bigo.get(f, {})
        summary[f] = {"B": bs, "time_per_iteration": ts, "time_unit": unit, "slope_all": s_all, "slope_B>=100": s_big,
                      "gbench_big_o": g.get("big_o"), "gbench_rms": g.get("rms"),
                      "items_per_second": [b.get("items_per_second") for _, b in lst]}
        if len(bs) >= 2:  # a slope needs two budgets (bench_multiclass --quick has one)
            srows.append([f, f"{s_all:.2f}", f"{s_big:.2f}", g.get("big_o", "-"),
                          f"{100 * g['rms']:.0f}%" if g.get("rms") is not None else "-"])
        # *_train of bench_pa: also the time per update (time per example / upd/ex), whose
        # slope is the update cost's, free of the learner's changing update rate.
        if f.split("/")[0] in ("pa_train", "perceptron_train"):
            ipss = [b.get("items_per_second") or float("nan") for _, b in lst]
            # An update step = an example that changed the model or ran a budget step (BPA-S/NN
            # may run the budget step and then discard or fold the example: upd/ex < maint/ex).
            upd = [max(b.get("upd/ex", 0.0), b.get("maint/ex", 0.0)) for _, b in lst]
            tpu = [1e6 / (r * u) if u > 0 and r == r else float("nan")  # noqa: PLR0124 - r == r: not NaN
                   for r, u in zip(ipss, upd)]
            summary[f]["us_per_update"] = tpu
            summary[f]["upd_per_example"] = upd
            summary[f]["slope_per_update_all"] = slope(bs, tpu)
            summary[f]["slope_per_update_B>=100"] = slope(bs, tpu, 100)
    ctx = results["context"] or {}
    mc_md, checks = multiclass_section(results["benchmarks"]) if "bench_multiclass" in exes else ([], None)
    md = "\n".join(["# C++ micro-benchmarks (Google Benchmark)", ""] + mc_md
                   + (["## Slopes against B", ""] if mc_md else []) + [
        "Log-log slope of the time per iteration vs the budget B (least squares): 1 = O(B), 2 = O(B²). "
        "Google Benchmark's own fit (Complexity(oAuto)) alongside.", "",
        md_table(["benchmark", "slope (all B)", "slope (B ≥ 100)", "GB big-O fit", "GB RMS"], srows), "",
    ] + pa_section(summary) + [
        "## All runs", "",
        md_table(["benchmark", "B", "time / iteration", "CPU time / iteration", "items/s", "counters"], rows,
                 ["l", "r", "r", "r", "r", "l"]), "",
        f"_{ctx.get('date', '')}, `python bench/run_cpp_bench.py{' --quick' if args.quick else ''}"
        f"{' --only ' + args.only if args.only else ''}` "
        f"(median of {1 if args.quick else args.repetitions} repetition(s)) "
        f"(build dir {args.build_dir}); {ctx.get('num_cpus', '?')} CPUs at {ctx.get('mhz_per_cpu', '?')} MHz; "
        f"load average at the start {', '.join(f'{x:.2f}' for x in ctx.get('load_avg', [])) or '?'}; "
        f"Google Benchmark library build type: {ctx.get('library_build_type', '?')} (ours: see the build dir's "
        f"CMAKE_BUILD_TYPE / CMAKE_CXX_FLAGS)._"])
    cache = Path(args.build_dir) / "CMakeCache.txt"
    flags = {}
    if cache.exists():
        for line in cache.read_text().splitlines():
            for key in ("CMAKE_BUILD_TYPE", "CMAKE_CXX_FLAGS", "BUDGETKERNEL_NATIVE", "CMAKE_CXX_COMPILER"):
                if line.startswith(key + ":"):
                    flags[key] = line.split("=", 1)[1]
        md += f"\n\n_Build: {', '.join(f'{k}={v}' for k, v in flags.items())}._"
    keep = ("name", "run_name", "aggregate_name", "iterations", "real_time", "cpu_time", "time_unit",
            "items_per_second", "big_o", "rms")
    runs = [{k: v for k, v in b.items() if k in keep or (k not in skip and isinstance(v, (int, float))
                                                             and k not in ("family_index", "per_family_instance_index",
                                                                           "repetitions", "threads"))}
            for b in results["benchmarks"] if b.get("aggregate_name") not in ("mean", "stddev", "cv")]
    name = "bench_cpp" if exes == EXECUTABLES else OUT_NAMES.get(exes, "bench_cpp_" + "_".join(exes))
    data = {"summary": summary, "build": flags, "context": ctx, "runs": runs}
    if checks is not None:
        data["issue29_checks"] = checks
    write_results(name, data, md, args)


def _fmt_rate(x):
    if x is None or x != x:  # noqa: PLR0124 - NaN test
        return "-"
    return f"{x / 1e6:.2f}M" if x >= 1e6 else f"{x / 1e3:.0f}k" if x >= 1e3 else f"{x:.0f}"


def pa_section(summary):
    """Markdown for bench_pa: examples/s and time per update vs B, slopes, the 1M ex/s target."""
    train = [f for f in summary if f.split("/")[0] in ("pa_train", "perceptron_train")]
    if not train:
        return []
    all_b = sorted({B for f in train for B in summary[f]["B"]})
    rows = []
    for f in train:
        s = summary[f]
        by_b = dict(zip(s["B"], zip(s["items_per_second"], s.get("upd_per_example", [None] * len(s["B"])),
                                    s.get("us_per_update", [None] * len(s["B"])))))
        cells = []
        for B in all_b:
            if B not in by_b:
                cells.append("")
                continue
            ips, upd, tpu = by_b[B]
            cells.append(f"{_fmt_rate(ips)} ({upd:.2f}; {tpu:.3g} µs)" if upd else f"{_fmt_rate(ips)} (0 upd)")
        rows.append([f.split("/", 1)[1], *cells, f"{s['slope_B>=100']:.2f} / {s.get('slope_per_update_B>=100', float('nan')):.2f}"])
    upd_rows = []
    for f in summary:
        if f.split("/")[0] not in ("pa_update", "perceptron_update"):
            continue
        s = summary[f]
        by_b = dict(zip(s["B"], s["time_per_iteration"]))
        unit = s["time_unit"]
        scale = {"ns": 1e-3, "us": 1.0, "ms": 1e3}.get(unit, 1.0)
        upd_rows.append([f.split("/", 1)[1]] + [f"{by_b[B] * scale:.3g}" if B in by_b else "" for B in all_b]
                        + [f"{s['slope_all']:.2f}", f"{s['slope_B>=100']:.2f}"])
    trows = []
    for f in SPEED_TARGET_FAMILIES:
        s = summary.get(f)
        if s is None or SPEED_TARGET_B not in s["B"]:
            continue
        ips = s["items_per_second"][s["B"].index(SPEED_TARGET_B)]
        ok = ips is not None and ips >= SPEED_TARGET
        trows.append([f.split("/", 1)[1], _fmt_rate(ips), f"{ips / SPEED_TARGET:.2f}x" if ips else "-",
                      "met" if ok else "**missed**"])
    out = ["## Passive-Aggressive and perceptron learners (bench_pa)", "",
           "2-D noisy checkerboard, full store, RBF γ=2 (BPA-P and the Projectrons: γ=16, so that B=800 "
           "fills), C=1 (PA-I), Projectron η=1e-3. Training: examples/s of `partial_fit` (in brackets: the "
           "fraction of examples that updated or ran a budget step, and the time per such step = time per "
           "example / that fraction, an upper bound of the update cost since it carries the scoring of the "
           "examples without one). Slopes: log-log, B ≥ 100, of the time per example / per update step.", "",
           md_table(["learner"] + [f"B={B}" for B in all_b] + ["slope ex / upd"], rows), ""]
    if upd_rows:
        out += ["One updating example alone (a stream example the warmed learner misclassifies inside its margin, "
                "|f| ≤ 0.9; `learn_one` on a copy of the learner; the Stoptron only scores), µs:", "",
                md_table(["learner"] + [f"B={B}" for B in all_b] + ["slope (all B)", "slope (B ≥ 100)"], upd_rows),
                ""]
    if trows:
        out += [f"Speed target: ≥ 1,000,000 examples/s at B = {SPEED_TARGET_B} (one core):", "",
                md_table(["learner", "examples/s", "of target", ""], trows, ["l", "r", "r", "l"]), ""]
    return out


def medians(benchmarks):
    """{run name: the median aggregate (or the single run)} of Google Benchmark's output."""
    out = {}
    for b in benchmarks:
        if b.get("run_type") == "aggregate" and b.get("aggregate_name") != "median":
            continue
        out[b.get("run_name", b["name"])] = b
    return out


def _verdict(ok):
    return "pass" if ok else "**FAIL**"


def merge_check(runs):
    """Rows and records of the merge-step check: c = 10, 26 against c = 1 at each (d, B)."""
    cells = sorted({(int(m.group(2)), int(m.group(3))) for n in runs
                    if (m := re.match(r"merge_step/c:(\d+)/d:(\d+)/B:(\d+)$", n))}, key=lambda t: (t[1], t[0]))
    rows, where, recs = [], [], []
    for d, B in cells:
        def get(fam, c, key, d=d, B=B):
            r = runs.get(f"{fam}/c:{c}/d:{d}/B:{B}")
            return r.get(key) if r else None
        base = get("merge_step", 1, "ns/step")
        rec = {"d": d, "B": B, "ns_per_step": {}, "ns_per_search": {}, "ratio": {}}
        cells_md = [f"{base:,.0f}" if base else "-"]
        ok = base is not None
        for c in (1, 10, 26):
            t, srch = get("merge_step", c, "ns/step"), get("merge_search", c, "ns/search")
            rec["ns_per_step"][c], rec["ns_per_search"][c] = t, srch
            if t is not None:
                where.append([c, d, B, f"{t:,.0f}", f"{srch:,.0f}" if srch else "-",
                              f"{srch / t:.0%}" if srch else "-", f"{get('merge_step', c, 'm_new/step'):.2f}",
                              f"{get('merge_step', c, 'untouched'):.2f}"])
            if c == 1:
                continue
            ratio = t / base if t and base else None
            rec["ratio"][c] = ratio
            ok = ok and ratio is not None and ratio <= MERGE_RATIO_TARGET
            cells_md += [f"{t:,.0f}" if t else "-", f"{ratio:.2f}x" if ratio else "-"]
        rec["pass"] = ok
        recs.append(rec)
        rows.append([d, B, *cells_md, _verdict(ok)])
    return rows, where, recs


def row_check(runs):
    """Rows and records of the kernel-row check, and the peaks table."""
    peaks = {n: r.get("GFLOP/s") for n, r in runs.items() if n.startswith("fma_peak/")}
    cells = sorted({(int(m.group(1)), int(m.group(2))) for n in runs
                    if (m := re.match(r"kernel_row/d:(\d+)/B:(\d+)$", n))})
    rows, recs = [], []
    for d, B in cells:
        kr = runs[f"kernel_row/d:{d}/B:{B}"]
        peak_name = PEAK_BY_BITS.get(int(kr.get("simd_bits", 0)))
        peak, p512 = peaks.get(peak_name), peaks.get(PEAK_BY_BITS[512])
        g = {k: (runs.get(f"{k}/d:{d}/B:{B}") or {}).get("GFLOP/s") for k in ROW_KINDS}
        # The check is on the row learning computes (learn_row_u1: from the chunk's blocks,
        # with one new SV per row to patch), the single-query row shown beside it.
        frac = g["learn_row_u1"] / peak if peak and g["learn_row_u1"] else None
        ok = frac is not None and frac >= PEAK_FRACTION_TARGET
        recs.append({"d": d, "B": B, "gflops": g, "peak": peak_name, "peak_gflops": peak, "fraction_of_peak": frac,
                     "pass": ok})
        pct = [f"{v / peak:.0%}" if v and peak else "-" for v in g.values()]
        rows.append([d, B, *(f"{v:.1f}" if v else "-" for v in g.values()), *pct,
                     f"{g['learn_row_u1'] / p512:.0%}" if p512 and g["learn_row_u1"] else "-", _verdict(ok)])
    prow = [[n.split("/", 1)[1], f"{v:.1f}"] for n, v in sorted(peaks.items()) if v]
    return rows, recs, prow, peaks


def multiclass_section(benchmarks):
    """Markdown and JSON records of issue 29's checks from bench_multiclass's runs."""
    runs = medians(benchmarks)
    rows, where, mrecs = merge_check(runs)
    krows, krecs, prow, peaks = row_check(runs)
    out = ["## Issue 29: multi-class merge step and kernel-row rate (bench_multiclass)", "",
           "Clustered stream (3 Gaussian clusters per class), RBF γ = 1/d, BSGDParams' defaults (λ = 1e-3), "
           "one merge step = push + on_push + Merging::reduce on a full store without norm tracking (KernelPegasos' "
           "steady state), replayed from a warmed BSGD run. c = 1: the binary store (the 10-class points, label "
           "class mod 2). CPU time per step, median of the repetitions.", "",
           f"### Merge step: c-class / binary at the same (d, B) (target ≤ {MERGE_RATIO_TARGET:g}x)", "",
           md_table(["d", "B", "c=1 ns", "c=10 ns", "c=10 / c=1", "c=26 ns", "c=26 / c=1", "check"], rows), "",
           "Where the step's time goes: the partner search alone (merge_smallest + merge_partner on the row "
           "Merging::reduce searches) and its share of the step; m_new = fraction of steps whose smallest SV was the "
           "new one (otherwise the step computes x_m's kernel row, O(B d)); untouched = fraction of the store never "
           "merged (tied at the smallest ‖α‖, the oldest of them is merged first).", "",
           md_table(["c", "d", "B", "step ns", "search ns", "search share", "m_new", "untouched"], where), "",
           f"### Kernel row at d ≥ 64: GFLOP/s against one core's FMA peak (target ≥ {PEAK_FRACTION_TARGET:.0%})", "",
           "2 B d flops per row (the exp not counted, its time is). Peak: the build's vector width (simd_bits of "
           "the kernel rows; 256 = AVX2+FMA). `kernel_row` = the RBF kernel row of one query alone "
           "(`SupportVectors::kernel_row`), `dots` = Kernel::dots alone, `dots_rows64` = Kernel::dots_rows over 64 "
           "queries (scoring a chunk), `learn_row` = the kernel row of the row a chunk loop is learning (from the "
           "store's blocks of rows, detail/chunk_dots.hpp), `learn_row_u1` = the same with one SV given a new point "
           "per row (a step that adds or merges an SV). The check is on `learn_row_u1`, what learning computes.", "",
           md_table(["d", "B", *(f"{k} GFLOP/s" for k in ROW_KINDS), *(f"{k} / peak" for k in ROW_KINDS),
                     "learn_row_u1 / AVX-512 peak", "check"], krows), "",
           "Measured FMA peaks (one core, 12 independent chains on registers; sse2-128-muladd: a multiply and an add, "
           "the portable build's best):", "",
           md_table(["variant", "GFLOP/s"], prow), ""]
    checks = {"merge_ratio_target": MERGE_RATIO_TARGET, "merge": mrecs,
              "peak_fraction_target": PEAK_FRACTION_TARGET, "kernel_row": krecs, "fma_peak_gflops": peaks}
    return out, checks


if __name__ == "__main__":
    main()
