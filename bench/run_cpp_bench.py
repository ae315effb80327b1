"""Runs the C++ Google Benchmark executables and summarises them (log-log slopes vs B).

Runs ``bench_kernel_row`` and ``bench_bsgd`` from a CMake build directory configured with
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
header comment of bench/cpp/bench_bsgd.cpp).

Each benchmark runs ``--repetitions`` times (default 3) and the median is reported: the
machine is shared, and a single run can be disturbed. ``--quick``: one repetition, a short
minimum time per benchmark and only B <= 200 for the projection.

    python bench/run_cpp_bench.py [--quick] [--build-dir /tmp/bk-bench]
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

EXECUTABLES = ("bench_kernel_row", "bench_bsgd")


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
    args = p.parse_args()
    bdir = Path(args.build_dir) / "bench"
    results = {"context": None, "benchmarks": []}
    for exe in EXECUTABLES:
        path = bdir / exe
        if not path.exists():
            raise SystemExit(f"{path} not found: configure and build with -DBUDGETKERNEL_BUILD_BENCHMARKS=ON "
                             "(see bench/README.md)")
        flt = "-project/B:(400|800)$" if args.quick and exe == "bench_bsgd" else None
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
            rows.append([f, B, f"{b['real_time']:.4g} {unit}", f"{ips:,.0f}" if ips else "-", counters])
        s_all, s_big = slope(bs, ts), slope(bs, ts, 100)
        g = bigo.get(f, {})
        summary[f] = {"B": bs, "time_per_iteration": ts, "time_unit": unit, "slope_all": s_all, "slope_B>=100": s_big,
                      "gbench_big_o": g.get("big_o"), "gbench_rms": g.get("rms")}
        srows.append([f, f"{s_all:.2f}", f"{s_big:.2f}", g.get("big_o", "-"),
                      f"{100 * g['rms']:.0f}%" if g.get("rms") is not None else "-"])
    ctx = results["context"] or {}
    md = "\n".join([
        "# C++ micro-benchmarks (Google Benchmark)", "",
        "Log-log slope of the time per iteration vs the budget B (least squares): 1 = O(B), 2 = O(B²). "
        "Google Benchmark's own fit (Complexity(oAuto)) alongside.", "",
        md_table(["benchmark", "slope (all B)", "slope (B ≥ 100)", "GB big-O fit", "GB RMS"], srows), "",
        "## All runs", "",
        md_table(["benchmark", "B", "time / iteration", "items/s", "counters"], rows, ["l", "r", "r", "r", "l"]), "",
        f"_{ctx.get('date', '')}, `python bench/run_cpp_bench.py{' --quick' if args.quick else ''}` "
        f"(median of {1 if args.quick else args.repetitions} repetition(s)) "
        f"(build dir {args.build_dir}); {ctx.get('num_cpus', '?')} CPUs at {ctx.get('mhz_per_cpu', '?')} MHz; "
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
    write_results("bench_cpp", {"summary": summary, "build": flags, "context": ctx, "runs": runs}, md, args)


if __name__ == "__main__":
    main()
