"""The ``budgetkernel`` command line: train, predict, evaluate, demo."""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

from . import datasets
from ._base import load
from .passive_aggressive import _LOSSES, _VARIANTS, BudgetedPAClassifier
from .pegasos import _MAINTENANCE, BudgetedSGDClassifier
from .perceptron import _MAINTENANCE as _PERCEPTRON_MAINTENANCE
from .perceptron import KernelPerceptron
from .sparse import _SAMPLING, BOGDClassifier, SparsePAClassifier
from .stream import ProgressBar, evaluate_prequential, peak_memory_mb

# Demo settings for the standardised noisy checkerboard, picked from a gamma x lam grid at
# 10^5 and 10^6 examples (`python -m budgetkernel demo` gives test accuracy 0.9897 at 10^6).
# Chosen on the noisy checkerboard only: other data need their own gamma and lam.
DEMO_GAMMA = 4.0
DEMO_LAM = 3e-3


def _positive_int(text):
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1; got {value}")
    return value


def _gamma_arg(text):
    """--gamma: 'scale' or a number (a bad value is an argparse error naming --gamma)."""
    if text == "scale":
        return text
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number or 'scale'; got {text!r}") from None


def _classes_arg(text):
    """--classes: ints when every entry is an integer literal (so that `predict`
    prints 2, not 2.0), else floats, else strings."""
    labels = [v.strip() for v in text.split(",")]
    if "" in labels:
        raise argparse.ArgumentTypeError(f"empty label in {text!r}")
    for convert in (int, float):
        try:
            return np.array([convert(v) for v in labels])
        except ValueError:
            pass
    return np.array(labels)


def _add_zero_based_arg(p, what):
    p.add_argument(
        "--zero-based",
        action=argparse.BooleanOptionalAction,
        default=None,
        help=f"whether the LIBSVM indices start at 0 ({what})",
    )


def _add_model_args(p):
    p.add_argument(
        "--learner",
        choices=["bsgd", "pa", "perceptron", "spa", "bogd"],
        default="bsgd",
        help="Budgeted SGD (default), Budgeted Passive-Aggressive, a (budgeted) kernel perceptron, "
        "Sparse PA, or kernel OGD / BOGD",
    )
    p.add_argument("--budget", type=int, default=None, help="max #SVs (0 = no budget; default 100); not spa")
    p.add_argument(
        "--maintenance",
        choices=sorted(set(_MAINTENANCE) | set(_PERCEPTRON_MAINTENANCE)),
        default=None,
        help="bsgd: budget maintenance (default merge); perceptron: budget rule (default random)",
    )
    p.add_argument("--lam", type=float, default=None, help="bsgd / bogd: regularisation (default 1e-4 / 0.01)")
    p.add_argument("--C", type=float, default=None, help="pa: aggressiveness C (default 1)")
    p.add_argument("--variant", choices=sorted(_VARIANTS), default=None, help="pa: BPA variant (default simple)")
    p.add_argument("--loss", choices=sorted(_LOSSES), default=None, help="pa: hinge or ramp loss (default hinge)")
    p.add_argument("--pa-type", type=int, choices=[0, 1, 2], default=None, help="pa: 0 hard, 1 PA-I (default), 2 PA-II")
    p.add_argument(
        "--eta",
        type=float,
        default=None,
        help="perceptron: Projectron threshold (default 0.1); spa: aggressiveness (default 1); bogd: step (default 0.5)",
    )
    p.add_argument("--alpha", type=float, default=None, help="spa: loss cap of the sampling probability (default 1)")
    p.add_argument("--beta", type=float, default=None, help="spa: sampling divisor, >= alpha (default 20)")
    p.add_argument("--sampling", choices=sorted(_SAMPLING), default=None, help="bogd: discard rule (default uniform)")
    p.add_argument(
        "--averaged",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="pa / bogd / spa: predict with the mean of all classifiers (default: spa yes, i.e. SPA-avg; "
        "pa and bogd no); bsgd: polynomial-decay averaging (average=True)",
    )
    p.add_argument("--kernel", choices=["rbf", "linear", "poly"], default="rbf")
    p.add_argument("--gamma", type=_gamma_arg, default="scale", help="kernel gamma or 'scale' (default)")
    p.add_argument("--degree", type=int, default=3)
    p.add_argument("--coef0", type=float, default=0.0)
    p.add_argument("--epochs", type=_positive_int, default=1)
    p.add_argument("--random-state", type=int, default=0)
    p.add_argument("--chunk-size", type=int, default=10_000)
    p.add_argument("--n-features", type=int, default=None, help="feature count of the LIBSVM file")
    p.add_argument(
        "--classes",
        type=_classes_arg,
        default=None,
        help="comma-separated labels (default: a first pass over the file)",
    )
    _add_zero_based_arg(p, "default: zero-based iff index 0 occurs in the file; a pipe is one-based")


# The learners that read each learner-specific option (its default is None, so that an
# option given to a learner that ignores it is an error, not a model trained without it).
_LEARNER_OPTIONS = {
    "budget": ("--budget", ("bsgd", "pa", "perceptron", "bogd")),
    "maintenance": ("--maintenance", ("bsgd", "perceptron")),
    "lam": ("--lam", ("bsgd", "bogd")),
    "C": ("--C", ("pa",)),
    "variant": ("--variant", ("pa",)),
    "loss": ("--loss", ("pa",)),
    "pa_type": ("--pa-type", ("pa",)),
    "eta": ("--eta", ("perceptron", "spa", "bogd")),
    "alpha": ("--alpha", ("spa",)),
    "beta": ("--beta", ("spa",)),
    "sampling": ("--sampling", ("bogd",)),
    "averaged": ("--averaged", ("bsgd", "pa", "spa", "bogd")),
}


# The estimator of each --learner, and the --maintenance values it takes.
_LEARNERS = {
    "bsgd": BudgetedSGDClassifier,
    "pa": BudgetedPAClassifier,
    "perceptron": KernelPerceptron,
    "spa": SparsePAClassifier,
    "bogd": BOGDClassifier,
}
_MAINTENANCE_OF = {
    "bsgd": (_MAINTENANCE, "a BSGD strategy"),
    "perceptron": (_PERCEPTRON_MAINTENANCE, "a perceptron rule"),
}


def _estimator(args):
    # Only the options given are passed: an option left out keeps the estimator's own default
    # (the defaults the help texts name), so the CLI holds no second copy of them.
    given = {}
    for dest, (option, learners) in _LEARNER_OPTIONS.items():
        value = getattr(args, dest)
        if value is None:
            continue
        if args.learner not in learners:
            raise ValueError(f"{option} does not apply to --learner {args.learner}")
        given[dest] = value
    if "budget" in given:
        given["budget"] = given["budget"] or None  # --budget 0: no budget
    if "maintenance" in given:
        rules, what = _MAINTENANCE_OF[args.learner]
        if given["maintenance"] not in rules:
            raise ValueError(f"--maintenance {given['maintenance']} is not {what}: {sorted(rules)}")
    if args.learner == "bsgd" and "averaged" in given:
        given["average"] = given.pop("averaged")  # BSGD's name: polynomial-decay averaging
    return _LEARNERS[args.learner](
        kernel=args.kernel,
        gamma=args.gamma,
        degree=args.degree,
        coef0=args.coef0,
        random_state=args.random_state,
        **given,
    )


def _plan_training(args, path):
    """What reading the training file needs: (n_features, zero_based, label_dtype, classes).

    A file is scanned once (which also validates it) for what the options do not give.
    A pipe (e.g. ``/dev/stdin``) can be read only once, so it needs --n-features and
    --classes; its index base is then one-based (LIBSVM's convention) unless --zero-based
    says otherwise, and an index 0 is reported as an error rather than shifting the features.
    """
    zero_based = "auto" if args.zero_based is None else args.zero_based
    if not datasets._can_reread(path):
        given = {"--n-features": args.n_features, "--classes": args.classes}
        missing = [opt for opt, value in given.items() if value is None]
        if missing:
            raise ValueError(
                f"{path} is a pipe or another stream that can be read only once: "
                f"give {' and '.join(missing)} to train on it in a single pass"
            )
        if args.epochs > 1:
            raise ValueError(f"--epochs {args.epochs} reads the data again, which a pipe ({path}) cannot do")
        label_dtype = np.int64 if args.classes.dtype.kind in "iu" else np.float64
        return args.n_features, zero_based is True, np.dtype(label_dtype), args.classes
    n_features, offset, label_dtype = datasets._plan_svmlight(path, args.n_features, zero_based, None)
    classes = args.classes
    if classes is None:
        seen = set()
        for _, y in datasets.iter_svmlight(
            path, n_features=n_features, zero_based=offset == 0, label_dtype=label_dtype, chunk_size=args.chunk_size
        ):
            seen.update(np.unique(y).tolist())
        classes = np.array(sorted(seen))
    return n_features, offset == 0, label_dtype, classes


def _train_stream(clf, args, path, plan, progress):
    n_features, zero_based, label_dtype, classes = plan
    result = None
    seconds = 0.0
    for epoch in range(args.epochs):
        chunks = datasets.iter_svmlight(
            path, n_features=n_features, zero_based=zero_based, label_dtype=label_dtype, chunk_size=args.chunk_size
        )
        result = evaluate_prequential(clf, chunks, classes=classes, progress=progress)
        seconds += result["train_seconds"]
        if progress and args.epochs > 1:
            print(f"epoch {epoch + 1}: online error {result['online_error']:.4f}", file=sys.stderr)
    # evaluate_prequential describes the pass it ran: the time and the rate are made to
    # cover every pass, the online error stays the last pass's (the callers say so).
    result["train_seconds"] = seconds
    result["examples_per_second"] = result["examples"] * args.epochs / seconds if seconds > 0 else float("nan")
    # Saved with the model, so that `predict` reads test files with the same index base
    # (guessing it per file shifts the features of a sparse file that never uses index 0).
    clf._svmlight_zero_based = zero_based
    return result


def _reading_args(path, n_features, zero_based):
    """iter_svmlight arguments to read a file to predict on with a model of n_features.

    A file that can be re-read is checked in a first pass (width, index base, labels), so
    that a bad file fails before any output or training.  A pipe is streamed in one pass:
    its labels are read as floats, and 'auto' means one-based as for training.
    """
    if datasets._can_reread(path):
        n_features, offset, label_dtype = datasets._plan_svmlight(path, n_features, zero_based, None)
        return {"n_features": n_features, "zero_based": offset == 0, "label_dtype": label_dtype}
    return {"n_features": n_features, "zero_based": zero_based is True, "label_dtype": np.float64}


def _check_output_path(path, option):
    """Fails now when ``path`` could not be written at the end of a long run (a missing
    directory, a directory given as the file, a read-only place)."""
    if os.path.isdir(path):
        raise ValueError(f"{option} {path}: is a directory")
    parent = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(parent):
        raise ValueError(f"{option} {path}: directory {parent} does not exist")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise ValueError(f"{option} {path}: directory {parent} is not writable")


def cmd_train(args):
    _check_output_path(args.output, "-o")
    clf = _estimator(args)
    plan = _plan_training(args, args.data)
    r = _train_stream(clf, args, args.data, plan, not args.quiet)
    clf.save(args.output)
    passes = f"{args.epochs} epochs of {r['examples']:,}" if args.epochs > 1 else f"{r['examples']:,}"
    last = " (last epoch)" if args.epochs > 1 else ""
    print(
        f"trained on {passes} examples in {r['train_seconds']:.2f} s "
        f"({r['examples_per_second']:,.0f}/s); online error{last} {r['online_error']:.4f}; "
        f"{_support_summary(r)}; model written to {args.output}"
    )
    return 0


def _support_summary(result):
    """'N SVs', and for an averaged model the SVs it predicts with (a budgeted learner's
    average keeps every SV it removed, so it can be far larger than the budget)."""
    text = f"{result['n_support']} SVs"
    if "n_support_average" in result:
        text += f" (the averaged classifier predicts with {result['n_support_average']})"
    return text


def cmd_predict(args):
    clf = load(args.model)
    # --zero-based overrides the base the model was trained with; a model saved without
    # it (older files, or trained in Python) falls back to detecting it from the file.
    zero_based = args.zero_based
    if zero_based is None:
        stored = getattr(clf, "_svmlight_zero_based", None)
        zero_based = "auto" if stored is None else stored
    reading = _reading_args(args.data, clf.n_features_in_, zero_based)
    out = open(args.output, "w", encoding="utf-8") if args.output else sys.stdout
    try:
        for X, _ in datasets.iter_svmlight(args.data, chunk_size=args.chunk_size, **reading):
            for label in clf.predict(X):
                out.write(f"{label}\n")
        out.flush()  # a closed pipe (`| head`) shows up here, inside main's handler
    finally:
        if out is not sys.stdout:
            out.close()
    return 0


def cmd_evaluate(args):
    clf = _estimator(args)
    plan = _plan_training(args, args.data)
    if args.test:
        # checked before training: a test file of the wrong width (or a malformed one)
        # fails now rather than after a long training run
        n_features, zero_based = plan[0], plan[1]
        test_reading = _reading_args(args.test, n_features, zero_based)
    r = _train_stream(clf, args, args.data, plan, not args.quiet)
    passes, last = (f" x {args.epochs} epochs", "  (last epoch)") if args.epochs > 1 else ("", "")
    print(f"examples            {r['examples']:,}{passes}")
    print(f"online error        {r['online_error']:.4f}{last}")
    print(f"examples/s          {r['examples_per_second']:,.0f}")
    print(f"support vectors     {r['n_support']}")
    if "n_support_average" in r:
        print(f"SVs of the average  {r['n_support_average']}")
    if args.test:
        correct = total = 0
        for X, y in datasets.iter_svmlight(args.test, chunk_size=args.chunk_size, **test_reading):
            correct += int(np.sum(clf.predict(X) == y))
            total += len(y)
        print(f"test accuracy       {correct / total:.4f}" if total else "test accuracy       n/a (no test examples)")
    return 0


def cmd_demo(args):
    """The README's main job: a noisy-checkerboard stream through BSGD with merging."""
    if args.plot:
        from .plot import plot_format

        try:  # now, not after a training run whose result would be lost
            plot_format(args.plot)
        except (ImportError, ValueError) as e:
            raise ValueError(f"--plot: {e}") from None
        _check_output_path(args.plot, "--plot")
    print(
        f"budgetkernel demo: {args.n:,} noisy-checkerboard examples (15% label noise) through "
        f"Budgeted SGD, maintenance={args.maintenance}, B={args.budget}"
    )
    train, (X_test, y_test) = datasets.make_stream_and_test(
        "noisy_checkerboard", args.n, 10_000, random_state=args.seed, chunk_size=args.chunk_size
    )
    scaler = datasets.StreamingStandardizer(n_warmup=1000)
    clf = BudgetedSGDClassifier(
        budget=args.budget, maintenance=args.maintenance, lam=args.lam, gamma=args.gamma, random_state=args.seed
    )
    bar = ProgressBar(args.n, desc="training", enabled=not args.quiet)
    seconds = 0.0
    for X, y in scaler.fit_transform_stream(train):
        t0 = time.perf_counter()
        clf.partial_fit(X, y, classes=[-1, 1])
        seconds += time.perf_counter() - t0
        bar.update(len(y), err=f"{clf.online_error_:.4f}", SVs=clf.n_support_)
    bar.close()
    acc = float(np.mean(clf.predict(scaler.transform(X_test)) == y_test))
    mem = peak_memory_mb()
    print(f"prequential error   {clf.online_error_:.4f}  (15% of the training labels are flipped)")
    print(f"test accuracy       {acc:.4f}  (clean test set of 10,000)")
    print(f"examples/s          {args.n / seconds:,.0f}  (training only, {seconds:.2f} s)")
    print(f"support vectors     {clf.n_support_}")
    print(f"peak memory         {mem:.1f} MiB" if mem is not None else "peak memory         n/a")
    if args.plot:
        from .plot import plot_demo

        plot_demo(clf, scaler, args.plot)
        print(f"plot written to {args.plot}")
    return 0


def build_parser():
    parser = argparse.ArgumentParser(prog="budgetkernel", description="Online kernel learning on a budget.")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("train", help="train on a LIBSVM file and write a model file")
    p.add_argument("data")
    p.add_argument("-o", "--output", required=True)
    p.add_argument("-q", "--quiet", action="store_true")
    _add_model_args(p)
    p.set_defaults(func=cmd_train)

    p = sub.add_parser("predict", help="predict the labels of a LIBSVM file with a model file")
    p.add_argument("model")
    p.add_argument("data")
    p.add_argument("-o", "--output", default=None)
    p.add_argument("--chunk-size", type=int, default=10_000)
    _add_zero_based_arg(p, "default: as in the training file, which the model records")
    p.set_defaults(func=cmd_predict)

    p = sub.add_parser("evaluate", help="prequential evaluation on a LIBSVM file (+ test accuracy)")
    p.add_argument("data")
    p.add_argument("--test", default=None)
    p.add_argument("-q", "--quiet", action="store_true")
    _add_model_args(p)
    p.set_defaults(func=cmd_evaluate)

    p = sub.add_parser("demo", help="noisy checkerboard stream through BSGD with merging")
    p.add_argument("--n", type=_positive_int, default=1_000_000, help="stream length (default 1,000,000)")
    p.add_argument("--budget", type=int, default=100)
    p.add_argument("--maintenance", choices=sorted(_MAINTENANCE), default="merge")
    p.add_argument("--gamma", type=float, default=DEMO_GAMMA)
    p.add_argument("--lam", type=float, default=DEMO_LAM)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--chunk-size", type=int, default=10_000)
    p.add_argument("--plot", default=None, metavar="FILE.png", help="draw the accuracy curve and decision boundary")
    p.add_argument("-q", "--quiet", action="store_true")
    p.set_defaults(func=cmd_demo)
    return parser


def main(argv=None):
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except BrokenPipeError:
        # The reader went away (`budgetkernel predict ... | head`): stop quietly. Python
        # flushes stdout again at exit, so point it at devnull to avoid a second error.
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        except (OSError, ValueError):  # stdout without a file descriptor (e.g. captured)
            pass
        return 1
    except (ValueError, OSError) as e:
        print(f"budgetkernel: error: {e}", file=sys.stderr)
        return 2
    except MemoryError as e:  # e.g. a LIBSVM file whose feature indices ask for a huge dense chunk
        print(f"budgetkernel: error: out of memory ({e or 'allocation failed'})", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        # Ctrl-C: the shell's code for SIGINT (128 + 2), one line and no traceback.
        # A progress bar may be mid-line on stderr: start a new line after it.
        newline = "" if getattr(args, "quiet", True) else "\n"
        print(f"{newline}budgetkernel: interrupted", file=sys.stderr)
        return 130
