"""The search's record: ``results_`` (one entry per candidate, in scikit-learn's
``cv_results_`` layout) and its text table (``summary()``, the CLI's ``--tune`` output)."""

from __future__ import annotations

import math

__all__ = ["format_results", "results_table"]


def results_table(search):
    """results_ of a fitted PrequentialSearch: dict of column -> list, one row per candidate."""
    params = search.candidate_params_
    names = sorted({k for p in params for k in p})
    alive = set(search._alive)
    # rank: survivors first, by their error over the latest window (what best_index_ takes the
    # best of: the window_error column), then the dropped by when they were dropped (later is
    # better) and their last rung error.
    ranked = search._ranked_survivors()
    survivors = [i for i, _ in ranked]
    window = [None] * len(params)
    for i, e in ranked:
        window[i] = e
    dropped = sorted(
        (i for i in range(len(params)) if i not in alive),
        key=lambda i: (-search._dropped_at[i], search._rung_errors[i][-1], i),
    )
    rank = [0] * len(params)
    for r, i in enumerate(survivors + dropped, start=1):
        rank[i] = r
    table = {
        "params": [dict(p) for p in params],
        **{f"param_{k}": [p.get(k) for p in params] for k in names},
        "examples": list(search._seen),
        "rung_errors": [list(e) for e in search._rung_errors],
        "online_error": [w / n if n else math.nan for w, n in zip(search._wrong, search._seen)],
        "window_error": window,
        "dropped_at": list(search._dropped_at),
        "rank": rank,
    }
    return table


def _fmt(v):
    if isinstance(v, float):
        return f"{v:.4g}"
    return str(v)


def format_results(results, error_name="online_error", error_format=".4f"):
    """results_ as a text table, best first: rank, parameters, examples, each rung's error, a
    survivor's error over its latest window (what ranks the survivors), online error (headed
    ``error_name``, e.g. online_mse for a regressor, whose errors have no fixed scale:
    ``error_format`` '.4g'; the window's column the same with window_), dropped at."""
    n = len(results["rank"])
    order = sorted(range(n), key=lambda i: results["rank"][i])
    pnames = [k for k in results if k.startswith("param_")]
    n_rungs = max((len(e) for e in results["rung_errors"]), default=0)
    header = ["rank", *(k[len("param_"):] for k in pnames), "examples",
              *(f"rung{j + 1}" for j in range(n_rungs)), error_name.replace("online_", "window_", 1), error_name,
              "dropped_at"]
    rows = []
    for i in order:
        errs = results["rung_errors"][i]
        rows.append(
            [str(results["rank"][i]), *(_fmt(results[k][i]) for k in pnames), str(results["examples"][i]),
             *(format(errs[j], error_format) if j < len(errs) else "" for j in range(n_rungs)),
             "" if results["window_error"][i] is None else format(results["window_error"][i], error_format),
             format(results["online_error"][i], error_format),
             "" if results["dropped_at"][i] is None else str(results["dropped_at"][i])]
        )
    widths = [max(len(r[j]) for r in [header, *rows]) for j in range(len(header))]
    return "\n".join("  ".join(c.rjust(w) for c, w in zip(r, widths)) for r in [header, *rows])
