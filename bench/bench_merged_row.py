"""How accurate is a merged point's kernel row formed from cached dot products? (issue 29)

A merge replaces SVs x_m, x_n by z = h x_m + (1 - h) x_n (BSGD eq. 20) and needs z's kernel
row over the SVs: O(B d) computed directly. With the SVs' dot products cached, the same row
follows in O(B) from z.x_j = h x_m.x_j + (1 - h) x_n.x_j and
|z|^2 = h^2 |x_m|^2 + 2 h (1 - h) x_m.x_n + (1 - h)^2 |x_n|^2. This measures how far the two
kernel values lie apart, and how often they differ at all, on the support vectors of BSGD
models trained on ``gaussian_classes`` streams (d = 64 and 784, B = 500), for h in [0, 1] and
beyond the pair (h in [-0.5, 1.5], as opposite-sign merges have). z is formed as
``detail::merge_pair`` forms it (from the nearer end). docs/performance.md says why the
library keeps the direct row.

    python bench/bench_merged_row.py [--quick]
"""

from __future__ import annotations

import _common  # noqa: F401

import numpy as np

from _common import env_md, environment, md_table, parser, write_results

import budgetkernel as bk


def support_vectors(d, budget, n, seed):
    X, y = bk.datasets.gaussian_classes(n, n_features=d, n_classes=10, random_state=seed)
    X = (X - X.mean(0)) / X.std(0)
    est = bk.BudgetedSGDClassifier(budget=budget, random_state=seed).fit(X, y)
    return est.support_vectors_, est.gamma_


def compare(S, gamma, n_pairs, rng):
    sq = np.einsum("ij,ij->i", S, S)
    G = S @ S.T
    worst_abs = worst_rel = 0.0
    differing = 0
    for t in range(n_pairs):
        m, n = rng.choice(len(S), 2, replace=False)
        h = rng.uniform(0.0, 1.0) if t % 2 == 0 else rng.uniform(-0.5, 1.5)
        xm, xn = S[m], S[n]
        z = xm + (h - 1.0) * (xm - xn) if h >= 0.5 else xn + h * (xm - xn)
        direct = np.exp(-gamma * (z @ z + sq - 2.0 * (S @ z)))
        z_sq = h * h * sq[m] + 2.0 * h * (1.0 - h) * G[m, n] + (1.0 - h) ** 2 * sq[n]
        cached = np.exp(-gamma * (z_sq + sq - 2.0 * (h * G[m] + (1.0 - h) * G[n])))
        err = np.abs(cached - direct)
        worst_abs = max(worst_abs, float(err.max()))
        worst_rel = max(worst_rel, float((err / np.maximum(direct, 1e-300)).max()))
        differing += int((cached != direct).any())
    return worst_abs, worst_rel, differing


def main():
    args = parser(__doc__).parse_args()
    n_pairs = 200 if args.quick else 2000
    n, budget = (3000, 100) if args.quick else (20000, 500)
    rng = np.random.default_rng(args.seed)
    rows, data = [], {"pairs": n_pairs, "budget": budget, "cells": []}
    for d in (64, 784):
        S, gamma = support_vectors(d, budget, n, args.seed)
        worst_abs, worst_rel, differing = compare(S, gamma, n_pairs, rng)
        data["cells"].append(dict(d=d, n_sv=len(S), gamma=gamma, max_abs=worst_abs, max_rel=worst_rel,
                                  rows_differing=differing))
        rows.append([d, len(S), f"{worst_abs:.2e}", f"{worst_rel:.2e}", f"{differing}/{n_pairs}"])
    env = environment()
    data["environment"] = env
    md = "\n\n".join([
        "# A merged point's kernel row: from cached dot products vs computed directly",
        f"{n_pairs} random pairs of the SVs of a BSGD model (B = {budget}, 10-class `gaussian_classes`, "
        "standardised), h in [0, 1] for half of them and in [-0.5, 1.5] for the rest.",
        md_table(["d", "SVs", "max abs. difference", "max relative difference", "rows with any difference"], rows),
        env_md(env),
    ])
    write_results("bench_merged_row", data, md, args)


if __name__ == "__main__":
    main()
