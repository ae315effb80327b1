"""Shared plumbing of the Python benchmarks: one-core setup, environment record, output.

Import this module *before* numpy / scikit-learn: it pins the BLAS/OpenMP thread pools to
one thread (``OMP_NUM_THREADS=1`` etc., unless the caller already set them) so that every
timing is a one-core comparison.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMEXPR_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import datetime  # noqa: E402
import gc  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
# Running from a source checkout: make `import budgetkernel` find python/ when not installed.
_SRC = HERE.parent / "python"
if _SRC.is_dir() and str(_SRC) not in sys.path:
    try:
        import budgetkernel  # noqa: F401
    except ImportError:
        sys.path.insert(0, str(_SRC))


def parser(doc):
    """ArgumentParser with the options every script shares (--quick, --seed, --out)."""
    p = argparse.ArgumentParser(description=(doc or "").split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter, epilog=doc)
    p.add_argument("--quick", action="store_true", help="small sizes (< 1 min), for smoke runs")
    p.add_argument("--seed", type=int, default=0, help="base random seed (default 0)")
    p.add_argument("--out", default=None, help="result name in bench/results/ (default: the script's name; "
                                                "--quick appends _quick)")
    return p


def baseline_child(script, args):
    """Runs `script --child` (same --seed / --quick) with BUDGETKERNEL_SIMD=baseline and returns
    {label: measurement} from the JSON it prints last: the portable build's numbers, measured
    in a fresh process right after the parent's (the SIMD module is chosen at import)."""
    import subprocess

    cmd = [sys.executable, os.path.abspath(script), "--child", "--seed", str(args.seed)] + (
        ["--quick"] if args.quick else [])
    out = subprocess.run(cmd, env=dict(os.environ, BUDGETKERNEL_SIMD="baseline"), check=True,
                         stdout=subprocess.PIPE, text=True)
    child = json.loads(out.stdout.strip().splitlines()[-1])
    return {child["simd"] + " (BUDGETKERNEL_SIMD=baseline)": child}


def environment():
    """What ran: versions, SIMD build, CPU, thread settings."""
    import numpy as np
    import sklearn

    from budgetkernel._native import core

    cpu = platform.processor() or ""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return {
        "date": datetime.datetime.now().isoformat(timespec="seconds"),
        "command": " ".join([Path(sys.executable).name] + sys.argv),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "scikit-learn": sklearn.__version__,
        "budgetkernel": getattr(core, "__version__", "?"),
        "simd": getattr(core, "simd", "?"),
        "core_module": _module_info(core),
        "cpu": cpu,
        "n_cpus": os.cpu_count(),
        "threads": {v: os.environ.get(v) for v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")},
    }


def _module_info(mod):
    """Path and build time of the compiled core (dev builds are rebuilt in place)."""
    try:
        path = Path(mod.__file__).resolve()
        built = datetime.datetime.fromtimestamp(path.stat().st_mtime).isoformat(timespec="seconds")
        return {"path": str(path), "built": built}
    except (AttributeError, OSError):
        return None


def md_table(headers, rows, align=None):
    """A GitHub-flavoured Markdown table (cells are str()-ed)."""
    align = align or ["l"] + ["r"] * (len(headers) - 1)
    sep = ["---:" if a == "r" else ":---:" if a == "c" else ":---" for a in align]
    out = ["| " + " | ".join(map(str, headers)) + " |", "| " + " | ".join(sep) + " |"]
    out += ["| " + " | ".join(map(str, r)) + " |" for r in rows]
    return "\n".join(out)


def env_md(env):
    return (f"_{env['date']}, `{env['command']}`; budgetkernel {env['budgetkernel']} "
            f"(SIMD build: {env['simd']}{_built(env)}), numpy {env['numpy']}, scikit-learn {env['scikit-learn']}, "
            f"Python {env['python']}; CPU: {env['cpu']} ({env['n_cpus']} cores); "
            f"BLAS/OpenMP threads: {env['threads']['OMP_NUM_THREADS']}._")


def _built(env):
    info = env.get("core_module")
    return f", core built {info['built']}" if info else ""


def write_results(name, data, markdown, args=None):
    """Writes bench/results/<name>.json and .md and prints the Markdown."""
    if args is not None:
        name = args.out or (name + ("_quick" if getattr(args, "quick", False) else ""))
    RESULTS.mkdir(parents=True, exist_ok=True)
    jpath, mpath = RESULTS / f"{name}.json", RESULTS / f"{name}.md"
    with open(jpath, "w") as f:
        f.write(dumps(data))
    with open(mpath, "w") as f:
        f.write(markdown.rstrip() + "\n")
    print(markdown)
    shown = [p.relative_to(HERE.parent) if p.is_relative_to(HERE.parent) else p for p in (jpath, mpath)]
    print(f"\nwrote {shown[0]} and {shown[1]}")
    return jpath, mpath


def dumps(data):
    """Compact JSON: floats to 6 significant digits, one top-level key per line."""
    data = _round(json.loads(json.dumps(data, default=_jsonable)))
    if isinstance(data, dict):
        return "{\n" + ",\n".join(f"{json.dumps(k)}: {json.dumps(v, ensure_ascii=False)}"
                                   for k, v in data.items()) + "\n}\n"
    return json.dumps(data) + "\n"


def _round(v):
    if isinstance(v, float):
        return float(f"{v:.6g}")
    if isinstance(v, list):
        return [_round(x) for x in v]
    if isinstance(v, dict):
        return {k: _round(x) for k, x in v.items()}
    return v


def _jsonable(v):
    import numpy as np

    if isinstance(v, np.generic):
        return v.item()
    if isinstance(v, np.ndarray):
        return v.tolist()
    raise TypeError(f"not JSON serialisable: {type(v).__name__}")


class nogc:
    """Timed regions run without the cyclic garbage collector (its pauses are not the code's)."""

    def __enter__(self):
        self.was = gc.isenabled()
        gc.disable()

    def __exit__(self, *exc):
        if self.was:
            gc.enable()


def best_of(fn, reps=3):
    """(shortest wall time of `reps` calls of fn, the last call's result)."""
    best, out = float("inf"), None
    for _ in range(reps):
        t = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t)
    return best, out


class Timer:
    """``with Timer() as t: ...; t.seconds``"""

    def __enter__(self):
        self._t0 = time.perf_counter()
        return self

    def __exit__(self, *exc):
        self.seconds = time.perf_counter() - self._t0
        return False


def fmt_rate(x):
    """Examples per second, human readable."""
    if x != x:  # noqa: PLR0124 - NaN test
        return "n/a"
    if x >= 1e6:
        return f"{x / 1e6:.2f}M"
    if x >= 1e3:
        return f"{x / 1e3:.0f}k"
    return f"{x:.0f}"


def mark(ok):
    return "met" if ok else "**missed**"
