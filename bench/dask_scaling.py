"""Scale-out on Dask (issue 28): iterative parameter mixing against one stream, its speed-up on
two worker processes, what a round costs, and the exact SVM as a cascade.

Sections (one run, one table each, and one plot):

* accuracy vs k: BSGD with merging, B = 100, on the noisy checkerboard (clean test labels),
  two Gaussians and waveform (``datasets.make_stream_and_test``, 1,000,000 training examples,
  10,000 test examples; features standardised by a scaler fitted on the first 10,000). The
  hyper-parameters are a single stream's: ``PrequentialSearch`` (default grid) on the first
  50,000 examples, then fixed. One stream (``fit``) against ``budgetkernel.dask.fit`` with the
  stream cut into k = 2 ... 256 contiguous partitions, one mixing round per epoch (one-shot
  averaging), on an in-process cluster (``Client(processes=False)``: the mixing does not depend
  on where partitions run). Then ``sync_every`` for the largest k: more rounds recover accuracy.
* speed: a workload one process needs a minute or more for (a 16-feature, 10-class stream,
  sklearn's ``make_classification`` in blocks, BSGD merging at B = 500), its blocks generated
  on the workers of a running ``LocalCluster(n_workers=2, threads_per_worker=1)`` and
  persisted there (as a user's data would be); one process doing the same pass (``fit`` on the
  same rows in this process) against ``dask.fit`` with 2 partitions. The overhead is
  itemised from ``mixing_history_`` (training, serialisation, combining, the rest =
  scheduling and transfer), with the bytes each round sent against k B (d + c) values.
* cascade: ``dask.fit(IncrementalSVC)`` on 20,000 checkerboard examples with the 2-worker
  cluster against one IncrementalSVC on all of them, and both against LIBSVM (scikit-learn's
  SVC): dual objective, support vectors, decision values.
* the scaling model: per-round cost = local training (n / k examples at the measured
  one-core rate) + serialisation + combine (measured against k), extrapolated to 100 workers
  and said to be an extrapolation.

    python bench/dask_scaling.py [--quick] [--seed 0] [--n-train 1000000] [--speed-seconds 60]

--quick: 60,000-example streams, k up to 16, a 5-second speed workload, 2,000 cascade examples.
"""

from __future__ import annotations

import _common  # first: pins the thread pools

import time

import numpy as np

from budgetkernel import BudgetedSGDClassifier, IncrementalSVC, datasets
from budgetkernel.model_selection import PrequentialSearch

STREAMS = ("noisy_checkerboard", "two_gaussians", "waveform")


def _stream(name, n_train, seed):
    from sklearn.preprocessing import StandardScaler

    train, (Xt, yt) = datasets.make_stream_and_test(name, n_train, 10_000, random_state=seed, chunk_size=100_000)
    parts = list(train)
    X = np.concatenate([p[0] for p in parts])
    y = np.concatenate([p[1] for p in parts])
    scaler = StandardScaler().fit(X[:10_000])
    return np.ascontiguousarray(scaler.transform(X)), y, scaler.transform(Xt), yt


def _tuned(X, y, n_prefix):
    search = PrequentialSearch(BudgetedSGDClassifier(budget=100), n_expected=len(y), random_state=0, n_jobs=1)
    search.fit(X[:n_prefix], y[:n_prefix])
    return BudgetedSGDClassifier(budget=100, random_state=0, **search.best_params_)


def _scattered(client, X, y, k):
    """X and y cut into k contiguous partitions that live on the workers (scattered once, not
    embedded in every graph)."""
    import dask.array as da

    cuts = np.array_split(np.arange(len(y)), k)
    fx = client.scatter([np.ascontiguousarray(X[c]) for c in cuts])
    fy = client.scatter([y[c] for c in cuts])
    dX = da.concatenate([da.from_delayed(f, shape=(len(c), X.shape[1]), dtype=X.dtype) for f, c in zip(fx, cuts)])
    dy = da.concatenate([da.from_delayed(f, shape=(len(c),), dtype=y.dtype) for f, c in zip(fy, cuts)])
    return dX, dy


def accuracy_section(args, client):
    from budgetkernel import dask as bkdask

    ks = [2, 4, 8, 16] if args.quick else [2, 4, 8, 16, 32, 64, 128, 256]
    rows, data = [], {}
    for name in STREAMS:
        X, y, Xt, yt = _stream(name, args.n_train, args.seed)
        est = _tuned(X, y, min(50_000, len(y) // 4))
        t = time.perf_counter()
        one = est.__class__(**est.get_params()).fit(X, y)
        t_one = time.perf_counter() - t
        base = one.score(Xt, yt)
        entry = {"params": {k: v for k, v in est.get_params().items() if k in ("gamma", "lam")},
                 "one_stream": base, "one_stream_s": t_one, "k": {}, "sync": {}}
        for k in ks:
            dX, dy = _scattered(client, X, y, k)
            t = time.perf_counter()
            fitted = bkdask.fit(est, dX, dy, client=client)
            h = fitted.mixing_history_
            entry["k"][k] = {"accuracy": fitted.score(Xt, yt), "wall_s": time.perf_counter() - t,
                             "degradation": sum(r["degradation"] for r in h),
                             "combine_s": sum(r["combine_s"] for r in h),
                             "serialise_s": sum(r["serialise_s"] for r in h),
                             "bytes_sent": sum(r["bytes_sent"] for r in h)}
        kmax = ks[-1]
        per_part = -(-len(y) // kmax)
        dX, dy = _scattered(client, X, y, kmax)
        for rounds in (3, 10, 30):
            fitted = bkdask.fit(est, dX, dy, client=client, sync_every=-(-per_part // rounds))
            entry["sync"][rounds] = fitted.score(Xt, yt)
        data[name] = entry
        rows.append([name, f"{entry['params']}", f"{base:.4f}"]
                    + [f"{(entry['k'][k]['accuracy'] - base) * 100:+.2f}" for k in ks]
                    + [f"{(entry['sync'][r] - base) * 100:+.2f}" for r in (3, 10, 30)])
    headers = ["stream", "tuned (prefix)", "one stream"] + [f"k={k}" for k in ks] + [
        f"k={ks[-1]}, {r} rounds" for r in (3, 10, 30)]
    return data, ks, _common.md_table(headers, rows)


def _multiclass_block(n, seed, part=0, n_parts=1):
    """Part `part` of `n_parts` of one 16-feature, 10-class stream (sklearn's make_classification:
    its seed draws the class clusters too, so every part comes from the one draw)."""
    from sklearn.datasets import make_classification

    X, y = make_classification(n * n_parts, n_features=16, n_informative=12, n_redundant=2, n_classes=10,
                               n_clusters_per_class=2, class_sep=2.0, random_state=seed)
    rows = slice(part * n, (part + 1) * n)
    return np.ascontiguousarray(X[rows]), y[rows]


def speed_section(args, client):
    import dask
    import dask.array as da
    from distributed import wait

    from budgetkernel import dask as bkdask

    est = BudgetedSGDClassifier(budget=500, gamma=0.05, lam=1e-5, random_state=0)
    # the rate, to size the workload (on 100,000 examples: a model's first examples cost more,
    # it updates more often while it learns)
    Xc, yc = _multiclass_block(min(100_000, int(args.speed_seconds * 5_000)), args.seed + 1)
    t = time.perf_counter()
    est.__class__(**est.get_params()).fit(Xc, yc)
    rate = len(yc) / (time.perf_counter() - t)
    n = int(rate * args.speed_seconds) // 2 * 2
    half = n // 2
    # each worker generates its own half (the data never passes through this process)
    # parts 0 and 1 of one draw of three are the halves; part 2 holds the test examples
    blocks = [dask.delayed(_multiclass_block, nout=2)(half, args.seed, i, 3) for i in range(2)]
    Xd = da.concatenate([da.from_delayed(b[0], shape=(half, 16), dtype=float) for b in blocks])
    yd = da.concatenate([da.from_delayed(b[1], shape=(half,), dtype=int) for b in blocks])
    Xd, yd = client.persist([Xd, yd])
    wait([Xd, yd])
    X, y = _multiclass_block(3 * half, args.seed)
    Xtest, ytest = X[n:n + 20_000], y[n:n + 20_000]
    X, y = X[:n], y[:n]
    t = time.perf_counter()
    single = est.__class__(**est.get_params()).fit(X, y)
    t_single = time.perf_counter() - t
    t = time.perf_counter()
    mixed = bkdask.fit(est, Xd, yd, client=client, classes=np.arange(10))
    t_dask = time.perf_counter() - t
    h = mixed.mixing_history_
    train = sum(max(r["train_s"]) if isinstance(r["train_s"], list) else r["train_s"] for r in h)
    ser = sum(r["serialise_s"] for r in h)
    comb = sum(r["combine_s"] for r in h)
    values = 2 * 500 * (16 + 10)
    data = {"n": n, "rate_one_core": rate, "single_s": t_single, "dask_s": t_dask, "speedup": t_single / t_dask,
            "train_s": train, "serialise_s": ser, "combine_s": comb, "other_s": t_dask - train - ser - comb,
            "bytes_sent": sum(r["bytes_sent"] for r in h), "values_k_B_d_c": values,
            "bytes_k_B_d_c": 8 * values, "rounds": len(h),
            "accuracy_single": float(single.score(Xtest, ytest)), "accuracy_dask": float(mixed.score(Xtest, ytest))}
    rows = [[f"{n:,}", f"{t_single:.1f}", f"{t_dask:.1f}", f"{t_single / t_dask:.2f}", f"{train:.1f}", f"{ser:.3f}",
             f"{comb:.3f}", f"{data['other_s']:.2f}", f"{data['bytes_sent']:,}", f"{8 * values:,}",
             f"{data['accuracy_single']:.4f} / {data['accuracy_dask']:.4f}"]]
    md = _common.md_table(["examples", "one process (s)", "dask.fit, 2 workers (s)", "speed-up", "training (s)",
                           "serialisation (s)", "combine (s)", "scheduling + transfer (s)", "bytes sent",
                           "8 k B (d + c)", "test accuracy one / dask"], rows)
    return data, md


def cascade_section(args, client):
    from sklearn.svm import SVC

    from budgetkernel import dask as bkdask

    n = 2_000 if args.quick else 20_000
    X, y = datasets.checkerboard(n, random_state=args.seed + 7)
    params = dict(C=10.0, gamma=2.0)
    t = time.perf_counter()
    one = IncrementalSVC(**params).fit(X, y)
    t_one = time.perf_counter() - t
    t = time.perf_counter()
    casc = bkdask.fit(IncrementalSVC(**params), *_scattered(client, X, y, 2), client=client)
    t_casc = time.perf_counter() - t
    ref = SVC(kernel="rbf", **params, tol=1e-6).fit(X, y)
    Xt, _ = datasets.checkerboard(5_000, random_state=args.seed + 8)
    d_one, d_casc, d_ref = one.decision_function(Xt), casc.decision_function(Xt), ref.decision_function(Xt)
    obj = [one.machine_state()["dual_objective"], casc.machine_state()["dual_objective"]]
    data = {"n": n, "one_s": t_one, "cascade_s": t_casc, "speedup": t_one / t_casc,
            "dual_one": obj[0], "dual_cascade": obj[1], "dual_rel_diff": abs(obj[0] - obj[1]) / abs(obj[0]),
            "n_sv_one": int(one.n_support_), "n_sv_cascade": int(casc.n_support_), "n_sv_libsvm": int(ref.n_support_.sum()),
            "max_dec_diff_cascade_one": float(np.abs(d_one - d_casc).max()),
            "max_dec_diff_cascade_libsvm": float(np.abs(d_casc - d_ref).max()),
            "passes": len(getattr(casc, "cascade_history_", []))}
    md = _common.md_table(
        ["examples", "one IncrementalSVC (s)", "cascade, 2 workers (s)", "speed-up", "dual rel. diff", "SVs one / cascade / LIBSVM",
         "max |f_cascade - f_one|", "max |f_cascade - f_LIBSVM|", "passes"],
        [[f"{n:,}", f"{t_one:.1f}", f"{t_casc:.1f}", f"{t_one / t_casc:.2f}", f"{data['dual_rel_diff']:.1e}",
          f"{data['n_sv_one']} / {data['n_sv_cascade']} / {data['n_sv_libsvm']}",
          f"{data['max_dec_diff_cascade_one']:.1e}", f"{data['max_dec_diff_cascade_libsvm']:.1e}", data["passes"]]])
    return data, md


def scaling_model(acc, speed, bandwidth=125e6):
    """One round at k workers = local training (n / k examples at the one-core rate measured
    in the speed section) + serialisation + combining (both measured against k in the
    accuracy runs, median over the streams; k = 100 interpolated between the measured k) +
    sending the bytes measured at k over a 1 Gbit/s link (an assumption, not a measurement)."""
    rate, n = speed["rate_one_core"], speed["n"]
    ks = sorted({k for e in acc.values() for k in e["k"]})
    med = {f: [float(np.median([e["k"][k][f] for e in acc.values()])) for k in ks]
           for f in ("combine_s", "serialise_s", "bytes_sent")}
    rows = []
    for k in (2, 8, 32, 100):
        comb, ser, sent = (float(np.interp(k, ks, med[f])) for f in ("combine_s", "serialise_s", "bytes_sent"))
        train = n / (k * rate)
        t = train + ser + comb + sent / bandwidth
        rows.append([k, f"{train:.1f}", f"{ser:.3f}", f"{comb:.3f}", f"{sent / bandwidth:.3f}", f"{t:.1f}",
                     f"{(n / rate) / t:.1f}"])
    return _common.md_table(["workers k", "training (s)", "serialisation (s)", "combine (s)", "transfer at 1 Gbit/s (s)",
                             "round (s)", "speed-up (extrapolated)"], rows)


def plot(acc, ks, path):
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    fig, ax = plt.subplots(figsize=(6, 4))
    for name, e in acc.items():
        ax.plot([1] + ks, [e["one_stream"]] + [e["k"][k]["accuracy"] for k in ks], marker="o", label=name)
    ax.set_xscale("log", base=2)
    ax.set_xlabel("partitions k (one mixing round per epoch)")
    ax.set_ylabel("test accuracy")
    ax.set_title("dask.fit: BSGD merge, B = 100")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    return path


def main():
    p = _common.parser(__doc__)
    p.add_argument("--n-train", type=int, default=None)
    p.add_argument("--speed-seconds", type=float, default=None)
    args = p.parse_args()
    args.n_train = args.n_train or (60_000 if args.quick else 1_000_000)
    args.speed_seconds = args.speed_seconds or (5.0 if args.quick else 60.0)
    from distributed import Client, LocalCluster

    with Client(processes=False, n_workers=2, threads_per_worker=1, dashboard_address=":0") as client:
        acc, ks, md_acc = accuracy_section(args, client)
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0") as cluster, \
            Client(cluster) as client:
        speed, md_speed = speed_section(args, client)
        casc, md_casc = cascade_section(args, client)
    md_model = scaling_model(acc, speed)
    name = args.out or ("dask_scaling" + ("_quick" if args.quick else ""))
    png = plot(acc, ks, _common.RESULTS / f"{name}.png")
    env = _common.environment()
    md = "\n\n".join([
        "# Scale-out on Dask (bench/dask_scaling.py)", _common.env_md(env),
        "## Accuracy against one stream (points; one-shot mixing, then more rounds for the largest k)", md_acc,
        "## Speed-up of dask.fit on 2 worker processes over one process", md_speed,
        "## The exact SVM as a cascade", md_casc,
        "## The scaling model (per round: training + serialisation + mixing; beyond the measured k it is an "
        "extrapolation)", md_model,
    ] + ([f"![accuracy vs k]({png.name})"] if png else []))
    _common.write_results("dask_scaling", {"env": env, "accuracy": acc, "speed": speed, "cascade": casc}, md, args)


if __name__ == "__main__":
    main()
