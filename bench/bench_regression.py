"""Budgeted kernel regression against KernelRidge, Nystroem + SGDRegressor and river (issue 31).

Streams (one pass, chunks of 10,000 through ``partial_fit``; test sets never used for tuning):

- friedman1: scikit-learn's ``make_friedman1`` (d = 10, noise 1), 100,000 training examples,
  an independent 10,000-example validation set and 10,000-example test set (other seeds);
- mackey_glass: MG30 (``budgetkernel.datasets.mackey_glass``, tau = 30, sampled every 6) embedded
  with ``embed_series(order=7)`` for one-step prediction: 10,000 training examples, then 2,000
  validation and 2,000 test examples that follow them in time; ``--mg-noise`` adds Gaussian
  observation noise (default 0: the noise-free series of the docs' examples).
  ``--mg-noise`` > 0 runs the noisy series in addition, as ``mackey_glass_noisy``.

Budget B = 100 for every budgeted learner. Hyper-parameter protocol, the same for every method
(KernelRidge included): gamma from ``median_gamma`` (of the first 1,000 inputs) times
{1/4, 1/2, 1, 2, 4}, crossed with each method's own small grid (``LEARNERS``), each
configuration trained on the training stream (one pass; ``--select N``: its first N examples)
and scored on the validation set (KernelRidge: trained on the 5,000-example prefix it is
reported with); the best one is trained again, timed, and scored on the test set. The parameter that sets a kernel
adaptive filter's dictionary size (KRLS's ALD threshold nu, QKLMS's quantisation epsilon) is
set on the training *inputs* alone, before the grid: the smallest value of its list whose
dictionary over the whole training stream stays within B (the dictionary does not depend on
the targets). river's regressors run with their defaults, one example at a time
(``predict_one`` then ``learn_one``, as its users drive them; dict rows built outside the
timed loop), the slow ones on a prefix (``--river-max``).

Reported per (stream, learner): test MSE, support vectors / centres, and training examples/s
(one pass, prequential for every learner: each example predicted, then learned). The targets:
best budgeted MSE <= 1.1 x KernelRidge's, below Nystroem + SGDRegressor's and river's best, at
>= 10x their throughput.

Learning curves (``results/bench_regression_curves.png``): KRLS-ALD, QKLMS and KLMS on the
first ``--curve-n`` Mackey-Glass examples, test MSE against examples seen (log scales), with
fixed literature-style parameters (gamma = 1, KLMS / QKLMS eta = 0.5, QKLMS epsilon = 0.3,
KRLS nu = 1e-3, lam = 1e-3), and their numbers of centres.

Timings are on a shared 2-core machine: compare ratios within one run.

    PYTHONPATH=python:/path/to/river python bench/bench_regression.py [--quick] [--seed 0]
"""

from __future__ import annotations

import _common  # noqa: F401

import itertools
import time
from dataclasses import dataclass, field
from typing import Callable

import numpy as np
from _common import RESULTS, env_md, environment, fmt_rate, mark, md_table, nogc, parser, write_results

B = 100
CHUNK = 10_000
KRR_PREFIX = 5_000
GAMMA_FACTORS = (0.25, 0.5, 1.0, 2.0, 4.0)


@dataclass
class Learner:
    """One method of the table. ``make(gamma, y_scale, **params)`` returns an unfitted
    estimator with partial_fit / predict (y_scale: the standard deviation of the selection
    prefix's targets, for loss thresholds in target units). ``grid``: the method's own
    parameters, crossed with the gammas. ``dictionary``: (parameter, values from the largest
    to the smallest) for a filter whose dictionary size that parameter sets (see the module
    docstring). ``budgeted``: holds at most B support vectors (a candidate for the target)."""

    name: str
    make: Callable
    grid: dict = field(default_factory=dict)
    dictionary: tuple | None = None
    budgeted: bool = True


def _bsgd(maintenance, loss):
    def make(gamma, y_scale, lam, eps=0.1, t0=0.0):
        from budgetkernel import BudgetedSGDRegressor

        return BudgetedSGDRegressor(budget=B, maintenance=maintenance, loss=loss, epsilon=eps * y_scale, lam=lam,
                                    t0=t0, gamma=gamma, random_state=0)
    return make


def _krls(gamma, y_scale, nu, lam):
    from budgetkernel import KRLSRegressor

    return KRLSRegressor(nu=nu, lam=lam, gamma=gamma)


def _qklms(gamma, y_scale, epsilon, eta):
    from budgetkernel import KLMSRegressor

    return KLMSRegressor(epsilon=epsilon, eta=eta, gamma=gamma)


def _sliding(gamma, y_scale, lam):
    from budgetkernel import SlidingWindowKRLSRegressor

    return SlidingWindowKRLSRegressor(budget=B, lam=lam, gamma=gamma)


class _Nystroem:
    """Nystroem(B) (fitted on the first chunk) + SGDRegressor on the features, chunk by chunk."""

    def __init__(self, gamma, alpha, eta0, seed=0):
        self.gamma, self.alpha, self.eta0, self.seed, self.feat = gamma, alpha, eta0, seed, None

    def partial_fit(self, X, y):
        from sklearn.kernel_approximation import Nystroem
        from sklearn.linear_model import SGDRegressor

        if self.feat is None:
            self.feat = Nystroem(gamma=self.gamma, n_components=B, random_state=self.seed).fit(X)
            self.sgd = SGDRegressor(alpha=self.alpha, eta0=self.eta0, random_state=self.seed)
        self.sgd.partial_fit(self.feat.transform(X), y)
        return self

    def predict(self, X):
        return self.sgd.predict(self.feat.transform(X))

    n_support_ = B


def _bpa(variant):
    def make(gamma, y_scale, C):
        from budgetkernel import BudgetedPARegressor

        return BudgetedPARegressor(budget=B, variant=variant, C=C, epsilon=0.1 * y_scale, gamma=gamma)

    return make


# The methods of the table.
LEARNERS = [
    Learner("BSGD merge, squared, t0 = c/lam",
            lambda g, ys, lam, c: _bsgd("merge", "squared")(g, ys, lam, t0=c / lam),
            {"lam": [1e-4, 1e-5, 1e-6], "c": [1.0, 3.0]}),
    Learner("BSGD merge, squared (t0 = 0)", _bsgd("merge", "squared"), {"lam": [1e-2, 1e-3, 1e-4]}),
    Learner("BSGD merge, epsilon-insensitive, t0 = 1/lam",
            lambda g, ys, lam, eps: _bsgd("merge", "epsilon_insensitive")(g, ys, lam, eps, t0=1 / lam),
            {"lam": [1e-3, 1e-4, 1e-5], "eps": [0.02, 0.1]}),
    Learner("BSGD project, squared, t0 = c/lam",
            lambda g, ys, lam, c: _bsgd("project", "squared")(g, ys, lam, t0=c / lam),
            {"lam": [1e-4, 1e-5], "c": [1.0, 3.0]}),
    Learner("KRLS-ALD (nu: <= B centres)", _krls, {"lam": [1e-4, 1e-2, 1.0]},
            dictionary=("nu", [0.3, 0.2, 0.1, 0.05, 0.03, 0.02, 0.01, 5e-3, 3e-3, 2e-3, 1e-3])),
    Learner("QKLMS (epsilon: <= B centres)", _qklms, {"eta": [0.1, 0.3, 0.7]},
            dictionary=("epsilon", [4.0, 3.0, 2.5, 2.0, 1.7, 1.5, 1.3, 1.15, 1.0, 0.85, 0.7, 0.6, 0.5, 0.4, 0.3,
                                    0.25, 0.2, 0.15, 0.1, 0.05])),
    Learner("Sliding-window KRLS", _sliding, {"lam": [1e-3, 1e-2, 1e-1]}),
    Learner("BPA-P (PA-I)", _bpa("project"), {"C": [0.01, 0.1, 1.0]}),
    Learner("BPA-NN (PA-I)", _bpa("nn"), {"C": [0.01, 0.1, 1.0]}),
    Learner("Nystroem(100) + SGDRegressor", lambda g, ys, alpha, eta0: _Nystroem(g, alpha, eta0),
            {"alpha": [1e-6, 1e-4], "eta0": [0.01, 0.1]}, budgeted=False),
]

# river's regressors as its users would pick them (defaults); the second field: run on at most
# --river-max examples (the slow ones).
RIVER = [
    ("river LinearRegression (StandardScaler)",
     lambda r: r.preprocessing.StandardScaler() | r.linear_model.LinearRegression(), False),
    ("river HoeffdingAdaptiveTreeRegressor", lambda r: r.tree.HoeffdingAdaptiveTreeRegressor(seed=0), False),
    ("river KNNRegressor (StandardScaler)", lambda r: r.preprocessing.StandardScaler() | r.neighbors.KNNRegressor(),
     True),
    ("river ARFRegressor", lambda r: r.forest.ARFRegressor(seed=0), True),
]


def datasets(args):
    """name -> (X_train, y_train, X_val, y_val, X_test, y_test)."""
    from sklearn.datasets import make_friedman1

    from budgetkernel.datasets import embed_series, mackey_glass

    n_f, n_mg, n_mg_eval = (20_000, 4_000, 1_000) if args.quick else (100_000, 10_000, 2_000)
    out = {}
    X, y = make_friedman1(n_f, noise=1.0, random_state=args.seed)
    Xv, yv = make_friedman1(10_000, noise=1.0, random_state=args.seed + 1)
    Xt, yt = make_friedman1(10_000, noise=1.0, random_state=args.seed + 2)
    out["friedman1"] = (X, y, Xv, yv, Xt, yt)
    noises = [0.0] + ([args.mg_noise] if args.mg_noise > 0 else [])
    for noise in noises:
        series = mackey_glass(n_mg + 2 * n_mg_eval + 7, noise=noise, random_state=args.seed)
        X, y = embed_series(series, order=7)
        a, b = n_mg, n_mg + n_mg_eval
        out["mackey_glass" + ("_noisy" if noise else "")] = (X[:a], y[:a], X[a:b], y[a:b], X[b:], y[b:])
    return out


def mse(model, X, y):
    return float(np.mean((model.predict(X) - y) ** 2))


def stream(model, X, y):
    """One timed pass, chunk by chunk; returns seconds."""
    with nogc():
        t = time.perf_counter()
        for i in range(0, len(X), CHUNK):
            model.partial_fit(X[i:i + CHUNK], y[i:i + CHUNK])
        return time.perf_counter() - t


def dictionary_value(learner, gamma, X):
    """The smallest value of the learner's dictionary parameter whose dictionary over the
    training inputs X stays within B (targets 0: the dictionary depends on the inputs only),
    or None; a pass stops as soon as the dictionary exceeds B."""
    name, values = learner.dictionary
    rest = {k: v[0] for k, v in learner.grid.items()}
    best = None
    zeros = np.zeros(len(X))
    for v in values:
        model = learner.make(gamma, 1.0, **{name: v}, **rest)
        for i in range(0, len(X), CHUNK // 2):
            model.partial_fit(X[i:i + CHUNK // 2], zeros[i:i + CHUNK // 2])
            if model.n_support_ > B:
                return best
        best = v
    return best


def select(learner, gammas, data, n_select):
    """The configuration with the lowest validation MSE (module docstring), and that MSE."""
    X, y, Xv, yv = data[:4]
    Xs, ys = X[:n_select], y[:n_select]
    y_scale = float(np.std(ys))
    best = (np.inf, None)
    for g in gammas:
        extra = {}
        if learner.dictionary:
            v = dictionary_value(learner, g, X)
            if v is None:
                continue
            extra = {learner.dictionary[0]: v}
        for combo in itertools.product(*learner.grid.values()):
            params = dict(gamma=g, **dict(zip(learner.grid, combo)), **extra)
            model = learner.make(g, y_scale, **{k: v for k, v in params.items() if k != "gamma"})
            try:
                stream(model, Xs, ys)
                score = mse(model, Xv, yv)
            except (ValueError, RuntimeError) as e:  # e.g. a diverging step: not this configuration
                print(f"    {learner.name} {params}: {type(e).__name__}: {e}")
                continue
            if np.isfinite(score) and score < best[0]:
                best = (score, params)
    return best, y_scale


def run_learner(learner, gammas, data, n_select):
    X, y, _, _, Xt, yt = data
    (val, params), y_scale = select(learner, gammas, data, n_select)
    if params is None:
        return {"learner": learner.name, "params": None, "test_mse": None}
    model = learner.make(params["gamma"], y_scale, **{k: v for k, v in params.items() if k != "gamma"})
    seconds = stream(model, X, y)
    return {"learner": learner.name, "budgeted": learner.budgeted, "params": params, "validation_mse": val,
            "test_mse": mse(model, Xt, yt), "n_support": int(model.n_support_), "n_train": len(X),
            "examples_per_second": len(X) / seconds}


def run_krr(gammas, data):
    from sklearn.kernel_ridge import KernelRidge

    X, y, Xv, yv, Xt, yt = data
    best = (np.inf, None)
    for g, a in itertools.product(gammas, [1e-4, 1e-3, 1e-2, 1e-1, 1.0]):
        score = mse(KernelRidge(kernel="rbf", gamma=g, alpha=a).fit(X[:KRR_PREFIX], y[:KRR_PREFIX]), Xv, yv)
        if score < best[0]:
            best = (score, {"gamma": g, "alpha": a})
    model = KernelRidge(kernel="rbf", **best[1])
    t = time.perf_counter()
    model.fit(X[:KRR_PREFIX], y[:KRR_PREFIX])
    seconds = time.perf_counter() - t
    return {"learner": f"KernelRidge ({KRR_PREFIX:,}-example prefix)", "budgeted": False, "params": best[1],
            "validation_mse": best[0], "test_mse": mse(model, Xt, yt), "n_support": KRR_PREFIX,
            "n_train": KRR_PREFIX, "examples_per_second": KRR_PREFIX / seconds}


def run_fixed_centres(gammas, data):
    """A reference, not a competitor: the least-squares fit over the whole stream of an
    expansion on B fixed centres (the first B inputs) plus an intercept (batch, exact), gamma
    picked on the validation set: what B centres placed without care can reach at best."""
    from sklearn.metrics.pairwise import rbf_kernel

    X, y, Xv, yv, Xt, yt = data
    C, mean = X[:B], float(np.mean(y))
    best = (np.inf, None, None)
    for g in gammas:
        K = rbf_kernel(X, C, gamma=g)
        G = K.T @ K
        a = np.linalg.solve(G + 1e-10 * np.trace(G) / B * np.eye(B), K.T @ (y - mean))
        score = float(np.mean((rbf_kernel(Xv, C, gamma=g) @ a + mean - yv) ** 2))
        if score < best[0]:
            best = (score, g, a)
    score, g, a = best
    return {"learner": f"reference: least squares on {B} fixed centres (batch)", "budgeted": False,
            "params": {"gamma": g}, "validation_mse": score,
            "test_mse": float(np.mean((rbf_kernel(Xt, C, gamma=g) @ a + mean - yt) ** 2)), "n_support": B,
            "n_train": len(X), "examples_per_second": None}


def run_river(data, river_max):
    """river's regressors, one example at a time; None when river is not installed."""
    try:
        import river
        import river.forest
        import river.linear_model
        import river.neighbors
        import river.preprocessing
        import river.tree
    except ImportError:
        return None
    X, y, _, _, Xt, yt = data
    out = []
    for name, make, slow in RIVER:
        n = min(len(X), river_max) if slow else len(X)
        rows = [dict(enumerate(r)) for r in X[:n].tolist()]
        model, targets = make(river), y[:n].tolist()
        with nogc():
            t = time.perf_counter()
            for x, target in zip(rows, targets):
                model.predict_one(x)
                model.learn_one(x, target)
            seconds = time.perf_counter() - t
        pred = np.array([model.predict_one(dict(enumerate(r))) for r in Xt.tolist()], dtype=float)
        out.append({"learner": name, "budgeted": False, "params": "defaults", "test_mse": float(np.mean((pred - yt) ** 2)),
                    "n_support": None, "n_train": n, "examples_per_second": n / seconds})
        print(f"      {name}: MSE {out[-1]['test_mse']:.4g} on {n:,} examples, {n / seconds:,.0f} ex/s", flush=True)
    return out


def verdict(rows):
    """The issue's targets for one stream, from its rows."""
    krr = next(r for r in rows if r["learner"].startswith("KernelRidge"))
    ours = [r for r in rows if r.get("budgeted") and r["test_mse"] is not None and r["n_support"] <= B]
    best = min(ours, key=lambda r: r["test_mse"])
    nys = next(r for r in rows if r["learner"].startswith("Nystroem"))
    river = [r for r in rows if r["learner"].startswith("river")]
    river_best = min(river, key=lambda r: r["test_mse"]) if river else None
    v = {"best": best["learner"], "best_mse": best["test_mse"], "krr_mse": krr["test_mse"],
         "ratio_to_krr": best["test_mse"] / krr["test_mse"], "within_10pct_of_krr": best["test_mse"] <= 1.1 * krr["test_mse"],
         "nystroem_mse": nys["test_mse"], "below_nystroem": best["test_mse"] < nys["test_mse"],
         "speed_vs_nystroem": best["examples_per_second"] / nys["examples_per_second"]}
    if river_best:
        v.update(river_best=river_best["learner"], river_mse=river_best["test_mse"],
                 below_river=best["test_mse"] < river_best["test_mse"],
                 speed_vs_river=best["examples_per_second"] / river_best["examples_per_second"])
    return v


def curves(data, n, points=25):
    """Test MSE against examples seen for KLMS, QKLMS and KRLS-ALD (module docstring)."""
    from budgetkernel import KLMSRegressor, KRLSRegressor

    X, y, _, _, Xt, yt = data
    n = min(n, len(X))
    marks = np.unique(np.geomspace(10, n, points).astype(int))
    filters = {"KLMS (eta 0.5)": KLMSRegressor(eta=0.5, gamma=1.0),
               "QKLMS (eta 0.5, epsilon 0.3)": KLMSRegressor(eta=0.5, epsilon=0.3, gamma=1.0),
               "KRLS-ALD (nu 1e-3, lam 1e-3)": KRLSRegressor(nu=1e-3, lam=1e-3, gamma=1.0)}
    out = {}
    for name, f in filters.items():
        seen, mses, centres = 0, [], []
        for m in marks:
            f.partial_fit(X[seen:m], y[seen:m])
            seen = m
            mses.append(mse(f, Xt, yt))
            centres.append(int(f.n_support_))
        out[name] = {"examples": marks.tolist(), "test_mse": mses, "centres": centres}
    return out


def plot_curves(cur, title, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    for name, c in cur.items():
        axes[0].plot(c["examples"], c["test_mse"], "o-", ms=3, label=name)
        axes[1].plot(c["examples"], c["centres"], "o-", ms=3, label=name)
    axes[0].set(title=f"{title}: learning curves", xlabel="training examples", ylabel="test MSE", xscale="log",
                yscale="log")
    axes[1].set(title="centres (dictionary size)", xlabel="training examples", ylabel="centres", xscale="log",
                yscale="log")
    for ax in axes:
        ax.grid(alpha=0.3, which="both")
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=90)


def _params_text(p):
    if not isinstance(p, dict):
        return str(p)
    return ", ".join(f"{k} {v:.3g}" if isinstance(v, float) else f"{k} {v}" for k, v in p.items())


def markdown(results, verdicts, cur, env, args):
    md = [f"# Budgeted kernel regression at B = {B} (one pass; test MSE, one-core training throughput)", "",
          "Protocol: `python bench/bench_regression.py --help` (gamma = median heuristic x {1/4 .. 4} and each "
          "method's small grid, picked on a validation set after one pass over the training stream"
          + (f" (its first {args.select:,} examples)" if args.select else "")
          + "; KernelRidge picked the same way on its 5,000-example prefix; river with defaults). "
          "The machine is shared by other jobs: compare throughputs as ratios within this run.", ""]
    for stream, rows in results.items():
        md += [f"## {stream}", "",
               md_table(["learner", "test MSE", "centres / SVs", "train examples", "train examples/s", "chosen parameters"],
                        [[r["learner"], "n/a" if r["test_mse"] is None else f"{r['test_mse']:.4g}",
                          r.get("n_support") if r.get("n_support") is not None else "-",
                          f"{r['n_train']:,}" if r.get("n_train") else "-",
                          fmt_rate(r["examples_per_second"]) if r.get("examples_per_second") else "-",
                          _params_text(r["params"])] for r in rows]), ""]
        v = verdicts[stream]
        md += [f"Best budgeted (B = {B}): **{v['best']}**, test MSE {v['best_mse']:.4g}.", "",
               md_table(["target", "measured", "verdict"], [
                   ["within 10% of KernelRidge", f"{v['ratio_to_krr']:.2f} x ({v['krr_mse']:.4g})",
                    mark(v["within_10pct_of_krr"])],
                   ["below Nystroem(100) + SGDRegressor", f"{v['nystroem_mse']:.4g}", mark(v["below_nystroem"])],
                   ["below river's best" + (f" ({v['river_best']})" if "river_best" in v else ""),
                    f"{v['river_mse']:.4g}" if "river_mse" in v else "river not installed",
                    mark(v.get("below_river", False))],
                   [">= 10x Nystroem's throughput", f"{v['speed_vs_nystroem']:.1f}x", mark(v["speed_vs_nystroem"] >= 10)],
                   [">= 10x river's best's throughput", f"{v['speed_vs_river']:.1f}x" if "speed_vs_river" in v else "-",
                    mark(v.get("speed_vs_river", 0) >= 10)],
               ], align=["l", "r", "l"]), ""]
    if cur:
        md += ["## Kernel adaptive filters on Mackey-Glass: learning curves", "",
               "![curves](bench_regression_curves.png) (gamma = 1; test MSE on the Mackey-Glass test "
               "examples after each number of training examples)", "",
               md_table(["filter"] + [f"{n:,} ex." for n in _curve_marks(cur)] + ["centres at the end"],
                        [[name] + [f"{m:.2e}" for m in _pick(c, "test_mse")] + [c["centres"][-1]]
                         for name, c in cur.items()]), ""]
    md.append(env_md(env))
    return "\n".join(md)


def _curve_marks(cur):
    ex = next(iter(cur.values()))["examples"]
    return [ex[i] for i in sorted({0, len(ex) // 4, len(ex) // 2, 3 * len(ex) // 4, len(ex) - 1})]


def _pick(c, key):
    idx = [c["examples"].index(m) for m in _curve_marks({"_": c})]
    return [c[key][i] for i in idx]


def main():
    p = parser(__doc__)
    p.add_argument("--select", type=int, default=0, help="training examples of each tuning run (default 0: all)")
    p.add_argument("--river-max", type=int, default=20_000, help="examples for river's KNN and ARF (default 20,000)")
    p.add_argument("--mg-noise", type=float, default=0.0, help="also run a Mackey-Glass series with this noise std")
    p.add_argument("--curve-n", type=int, default=5_000, help="examples of the learning curves (default 5,000)")
    p.add_argument("--no-river", action="store_true", help="leave river out")
    args = p.parse_args()
    if args.quick:
        args.river_max, args.curve_n = min(args.river_max, 2_000), 1_000
    from budgetkernel.model_selection import median_gamma

    results, verdicts = {}, {}
    for stream_name, data in datasets(args).items():
        gammas = [float(f * median_gamma(data[0][:1000])) for f in GAMMA_FACTORS]
        print(f"{stream_name}: {len(data[0]):,} training examples, gammas {[round(g, 4) for g in gammas]}", flush=True)
        rows = [run_krr(gammas, data)]
        print(f"    {rows[-1]['learner']}: MSE {rows[-1]['test_mse']:.4g} {rows[-1]['params']}", flush=True)
        for learner in LEARNERS:
            rows.append(run_learner(learner, gammas, data, min(args.select or len(data[0]), len(data[0]))))
            r = rows[-1]
            print(f"    {r['learner']}: MSE {r['test_mse']} centres {r.get('n_support')} "
                  f"{r.get('examples_per_second', 0):,.0f} ex/s {r['params']}", flush=True)
        rows.append(run_fixed_centres(gammas, data))
        river_rows = None if args.no_river else run_river(data, args.river_max)
        rows += river_rows or []
        results[stream_name], verdicts[stream_name] = rows, verdict(rows)
    cur = curves(datasets(args)["mackey_glass"], args.curve_n)
    env = environment()
    name = args.out or ("bench_regression" + ("_quick" if args.quick else ""))
    plot_curves(cur, "Mackey-Glass (tau = 30, order 7)", RESULTS / f"{name}_curves.png")
    write_results("bench_regression", {"environment": env, "budget": B, "results": results, "verdicts": verdicts,
                                       "curves": cur}, markdown(results, verdicts, cur, env, args), args)


if __name__ == "__main__":
    main()
