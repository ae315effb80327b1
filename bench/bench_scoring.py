"""Scoring a chunk (``decision_function``) in higher dimension, one core, against NumPy.

From 32 features on, the core scores a chunk in blocks of rows with register-tiled dot
products (cpp/include/budgetkernel/detail/dot_block.hpp) instead of one kernel row per
example, so the SVs are read once per block rather than once per row.

Data: Gaussian rows in d dimensions, labels sign(x0 x1). Model: BudgetedSGDClassifier with
``maintenance='remove-random'`` (the cheapest to fill; scoring cost does not depend on the
maintenance), gamma = 1/d, lam = 1e-3, trained on 3 B rows so the budget is full. Timed:
``decision_function`` on 10,000 fresh rows (2,000 with ``--quick``), best of 3, against the
same expansion evaluated by NumPy with one BLAS thread, the way a user would write it:
``exp(-gamma * max(0, |t|^2 + |s|^2 - 2 T S^T)) @ alpha`` (one GEMM, its exp, one GEMV).
Both agree to ~1e-13 (reported). Measured twice, as bench_speed.py does: in this process (the
SIMD build the package picks) and in a child with ``BUDGETKERNEL_SIMD=baseline``.

    python bench/bench_scoring.py [--quick] [--seed 0] [--no-baseline]
"""

from __future__ import annotations

import _common  # noqa: F401  (first: pins the thread pools)

import json

import numpy as np

from _common import baseline_child, best_of, env_md, environment, md_table, parser, write_results

SIZES = ((64, 100), (64, 1000), (784, 100), (784, 1000))  # (d, B)


def measure_one(d, B, n_test, seed):
    """One (d, B) row: budgetkernel's and NumPy's scoring of the same fresh rows."""
    import budgetkernel as bk

    rng = np.random.default_rng(seed + d + B)
    X = rng.standard_normal((3 * B, d))
    y = np.where(X[:, 0] * X[:, 1] > 0, 1, -1)
    clf = bk.BudgetedSGDClassifier(budget=B, maintenance="remove-random", gamma=1.0 / d, lam=1e-3,
                                   random_state=seed).fit(X, y)
    T = rng.standard_normal((n_test, d))
    t_bk, f_bk = best_of(lambda: clf.decision_function(T))
    S, a = clf.support_vectors_, np.asarray(clf.dual_coef_).reshape(-1)
    s_sq = (S**2).sum(1)

    def numpy_eval():
        sq = (T**2).sum(1)[:, None] + s_sq[None, :] - 2.0 * (T @ S.T)
        return np.exp(-clf.gamma_ * np.maximum(sq, 0.0)) @ a

    t_np, f_np = best_of(numpy_eval)
    print(f"d={d} B={B}: budgetkernel {n_test / t_bk:,.0f} rows/s, numpy {n_test / t_np:,.0f} rows/s", flush=True)
    return {"d": d, "B": B, "n_sv": len(S), "n_test": n_test, "bk_rows_per_s": n_test / t_bk,
            "numpy_rows_per_s": n_test / t_np, "bk_over_numpy": t_np / t_bk,
            "max_abs_diff": float(np.abs(f_bk - f_np).max())}


def measure(n_test, seed):
    from budgetkernel._native import core

    return {"simd": getattr(core, "simd", "?"), "rows": [measure_one(d, B, n_test, seed) for d, B in SIZES]}


def markdown(data):
    out = ["## Scoring a chunk: budgetkernel decision_function vs NumPy (one core)", "", env_md(data["env"]), ""]
    for label, run in data["runs"].items():
        out += [f"SIMD build: {label}", "", md_table(
            ["d", "B", "#SVs", "budgetkernel rows/s", "NumPy rows/s", "speed vs NumPy", "max |diff|"],
            [[r["d"], r["B"], r["n_sv"], f"{r['bk_rows_per_s']:,.0f}", f"{r['numpy_rows_per_s']:,.0f}",
              f"{r['bk_over_numpy']:.2f}x", f"{r['max_abs_diff']:.1e}"] for r in run["rows"]]), ""]
    return "\n".join(out)


def main():
    p = parser(__doc__)
    p.add_argument("--no-baseline", action="store_true", help="skip the BUDGETKERNEL_SIMD=baseline child run")
    p.add_argument("--child", action="store_true", help="(internal) print the measurement as JSON")
    args = p.parse_args()
    n_test = 2_000 if args.quick else 10_000
    if args.child:
        print(json.dumps(measure(n_test, args.seed)))
        return
    env = environment()
    run = measure(n_test, args.seed)
    runs = {run["simd"]: run}
    if not args.no_baseline:
        runs.update(baseline_child(__file__, args))
    data = {"protocol": __doc__, "env": env, "runs": runs}
    write_results("bench_scoring", data, markdown(data), args)


if __name__ == "__main__":
    main()
