"""The ``budgetkernel`` command line: train, predict, evaluate, demo."""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import stat
import sys
import time

import numpy as np

from .. import __version__, datasets
from .._persistence import load
from .._files import replacing, written_in_place
from ..io import _can_reread, _plan_svmlight, iter_svmlight
from ..passive_aggressive import _LOSSES, _VARIANTS, BudgetedPAClassifier
from ..pegasos import _MAINTENANCE, BudgetedSGDClassifier
from ..perceptron import _MAINTENANCE as _PERCEPTRON_MAINTENANCE
from ..perceptron import KernelPerceptron
from ..preprocessing import StreamingStandardizer
from ..bogd import _SAMPLING, BOGDClassifier
from ..sparse_pa import SparsePAClassifier
from ..stream import ProgressBar, evaluate_prequential, peak_memory_mb

# Demo settings for the standardised noisy checkerboard, picked from a gamma x lam grid at
# 10^5 and 10^6 examples (`python -m budgetkernel demo` gives test accuracy 0.9897 at 10^6).
# Chosen on the noisy checkerboard only: other data need their own gamma and lam.
DEMO_GAMMA = 4.0
DEMO_LAM = 3e-3

# Without --standardize, the first chunk is looked at: features whose largest |value| differ
# by more than this factor are weighed very unequally by every kernel (breast_cancer's raw
# features differ by ~1e5; data already on one scale, such as [0, 1] features, by < 100).
_SCALE_HINT_RATIO = 1e3


def _int_arg(text, low, what):
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be {what}; got {text!r}") from None
    if value < low:
        raise argparse.ArgumentTypeError(f"must be {what}; got {value}")
    return value


def _positive_int(text):
    return _int_arg(text, 1, "a positive integer")


def _non_negative_int(text):
    return _int_arg(text, 0, "a non-negative integer")


def _budget_arg(text):
    """--budget of train, evaluate and demo alike: 0 means no budget."""
    return _int_arg(text, 0, "a non-negative integer (0 = no budget)")


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


def _attach_negative_values(argv):
    """``--classes -1,1`` as ``--classes=-1,1``.

    argparse takes a value that starts with '-' for an option unless it is a single negative
    number, so the most common label list of all, -1,1, failed with "expected one argument".
    Only the token after --classes (or an abbreviation argparse would accept) is joined, and
    only when it starts like a negative number; nothing after a '--' is touched.
    """
    out = []
    i = 0
    while i < len(argv):
        token = argv[i]
        if token == "--":
            out.extend(argv[i:])
            break
        is_classes = len(token) > 3 and "--classes".startswith(token)
        if is_classes and i + 1 < len(argv) and re.match(r"-\.?[0-9]", argv[i + 1]):
            out.append(f"{token}={argv[i + 1]}")
            i += 2
            continue
        out.append(token)
        i += 1
    return out


def _add_zero_based_arg(p, what):
    p.add_argument(
        "--zero-based",
        action=argparse.BooleanOptionalAction,
        default=None,
        help=f"whether the LIBSVM indices start at 0 ({what})",
    )


def _add_chunk_size_arg(p):
    p.add_argument(
        "--chunk-size",
        type=_positive_int,
        default=10_000,
        help="examples read and processed per chunk; bounds the memory used (default 10,000)",
    )


def _add_model_args(p):
    p.add_argument(
        "--learner",
        choices=["bsgd", "pa", "perceptron", "spa", "bogd"],
        default="bsgd",
        help="Budgeted SGD (default), Budgeted Passive-Aggressive, a (budgeted) kernel perceptron, "
        "Sparse PA, or kernel OGD / BOGD",
    )
    p.add_argument("--budget", type=_budget_arg, default=None, help="max #SVs (0 = no budget; default 100); not spa")
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
    p.add_argument(
        "--kernel",
        choices=["rbf", "linear", "poly"],
        default="rbf",
        help="rbf: exp(-gamma |x - x'|^2) (default); linear: <x, x'>; poly: (gamma <x, x'> + coef0)^degree",
    )
    p.add_argument(
        "--gamma",
        type=_gamma_arg,
        default="scale",
        help="kernel gamma (rbf, poly), or 'scale' (default): 1 / (n_features * variance of the first chunk)",
    )
    p.add_argument("--degree", type=_positive_int, default=3, help="poly: the polynomial's degree (default 3)")
    p.add_argument("--coef0", type=float, default=0.0, help="poly: the constant term coef0 (default 0)")
    p.add_argument("--epochs", type=_positive_int, default=1, help="passes over the training file (default 1)")
    p.add_argument(
        "--random-state",
        type=_non_negative_int,
        default=0,
        help="seed of the learner's random choices (e.g. which SV a random budget rule drops; default 0)",
    )
    _add_chunk_size_arg(p)
    p.add_argument(
        "--n-features",
        type=_positive_int,
        default=None,
        help="feature count of the LIBSVM file (default: its largest index; needed for a pipe)",
    )
    p.add_argument(
        "--classes",
        type=_classes_arg,
        default=None,
        help="comma-separated labels, e.g. --classes -1,1 or --classes=-1,1 "
        "(default: a first pass over the file; needed for a pipe)",
    )
    _add_zero_based_arg(p, "default: zero-based iff index 0 occurs in the file; a pipe is one-based")
    p.add_argument(
        "--standardize",
        action="store_true",
        help="standardise every feature to mean 0 and standard deviation 1, with statistics of the "
        "first examples of the training file (see --standardize-warmup), frozen after them; they are "
        "stored in the model file and `predict` applies the same transform",
    )
    p.add_argument(
        "--standardize-warmup",
        type=_positive_int,
        default=None,
        metavar="N",
        help="the number of leading examples --standardize takes its statistics from "
        "(default: the first chunk, --chunk-size examples; implies --standardize)",
    )


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
    clf = _LEARNERS[args.learner](
        kernel=args.kernel,
        gamma=args.gamma,
        degree=args.degree,
        coef0=args.coef0,
        random_state=args.random_state,
        **given,
    )
    # The estimator checks its parameters when it starts to learn, i.e. after the first pass
    # over a possibly large file: checked now, a bad --lam fails before any reading.
    clf._validate_params()
    return clf


def _check_labels_are_classes(classes, source):
    """Non-integer numeric labels (0.5 / -0.5) are refused up front with what to do.

    scikit-learn's check_classification_targets, which the estimators apply, calls such labels
    a "continuous regression target": true to its rule (a float label that is not a whole
    number is taken for a measured value), but no help on a LIBSVM file where they name two
    classes. Mapping them to integers behind the user's back would make `predict` print labels
    the file never had, so the user relabels.
    """
    if classes.dtype.kind != "f":
        return
    fractional = classes[classes != np.round(classes)]
    if len(fractional):
        shown = ", ".join(f"{v:g}" for v in fractional[:5]) + (", ..." if len(fractional) > 5 else "")
        raise ValueError(
            f"{source}: the labels {shown} are not whole numbers; a classifier (here as in "
            "scikit-learn) reads such labels as a regression target and refuses them. If they "
            "name classes, relabel them as integers (e.g. -1 and 1)"
        )


def _plan_training(args, path):
    """What reading the training file needs: (n_features, zero_based, label_dtype, classes).

    A file is scanned once (which also validates it) for what the options do not give.
    A pipe (e.g. ``/dev/stdin``) can be read only once, so it needs --n-features and
    --classes; its index base is then one-based (LIBSVM's convention) unless --zero-based
    says otherwise, and an index 0 is reported as an error rather than shifting the features.
    """
    zero_based = "auto" if args.zero_based is None else args.zero_based
    if args.classes is not None:
        _check_labels_are_classes(args.classes, f"--classes {','.join(map(str, args.classes.tolist()))}")
    if not _can_reread(path):
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
    n_features, offset, label_dtype = _plan_svmlight(path, args.n_features, zero_based, None)
    classes = args.classes
    if classes is None:
        seen = set()
        for _, y in iter_svmlight(
            path, n_features=n_features, zero_based=offset == 0, label_dtype=label_dtype, chunk_size=args.chunk_size
        ):
            seen.update(np.unique(y).tolist())
        classes = np.array(sorted(seen))
        _check_labels_are_classes(classes, f"{path}")
    return n_features, offset == 0, label_dtype, classes


_ROW_ERROR = re.compile(r"X row (\d+) (.*)", re.DOTALL)


def _locate_row_error(error, path, lines, standardized=False):
    """The estimator's ``X row i ...`` (i: the row within the chunk) as the file's line.

    The reader's own errors already name the line; this is for what only the estimator
    finds, after parsing (e.g. a value whose square overflows the kernel's arithmetic).
    Returns the ValueError to raise (``error`` itself when it names no row).
    """
    m = _ROW_ERROR.match(str(error))
    if m is None or lines is None or int(m.group(1)) >= len(lines):
        return error
    what = m.group(2)
    if standardized:
        what += " (after --standardize)"
    elif "rescale" in what:
        what += " (--standardize rescales every feature)"
    return ValueError(f"svmlight file {os.fspath(path)!r}, line {int(lines[int(m.group(1))])}: the example {what}")


def _interactive():
    """Whether stderr is a terminal: the '\\r' progress bar is drawn only there (in a log
    file or a CI output it is a pile of overwritten lines)."""
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):  # replaced by an object without it, or closed
        return False


def _scale_hint(X, path, n_seen):
    """A one-line hint (or None) when the features of the first chunk have very different
    ranges, which --standardize would even out."""
    top = np.abs(X).max(axis=0) if len(X) else np.zeros(0)
    used = np.flatnonzero(top > 0)
    if len(used) < 2:
        return None
    hi, lo = used[np.argmax(top[used])], used[np.argmin(top[used])]
    if top[hi] <= _SCALE_HINT_RATIO * top[lo]:
        return None
    return (
        f"budgetkernel: hint: the features of {path} have very different ranges (in the first {n_seen:,} "
        f"examples, |feature {hi + 1}| reaches {top[hi]:.3g} and |feature {lo + 1}| {top[lo]:.3g}); "
        "kernels weigh features by their range, so --standardize may improve accuracy a lot"
    )


class _TrainingStream:
    """The chunks of one pass over the training file, as evaluate_prequential takes them.

    Keeps the line numbers of the chunk last handed out (the one being learned when the
    estimator raises), standardises when asked (fitting the statistics in the first pass
    only), checks labels against --classes with the file line, and gives the scale hint.
    """

    def __init__(self, args, path, plan, scaler, first_pass):
        self.args, self.path, self.plan = args, path, plan
        self.scaler, self.first_pass = scaler, first_pass
        self.lines = None

    def __iter__(self):
        n_features, zero_based, label_dtype, classes = self.plan
        chunks = iter_svmlight(
            self.path,
            n_features=n_features,
            zero_based=zero_based,
            label_dtype=label_dtype,
            chunk_size=self.args.chunk_size,
            return_lines=True,
        )
        if self.scaler is not None:
            if self.first_pass:
                chunks = self.scaler.fit_transform_stream(chunks)
            else:  # later epochs: the statistics of the first pass, frozen
                chunks = ((self.scaler.transform(X), y, lines) for X, y, lines in chunks)
        hint = self.first_pass and self.scaler is None and not self.args.quiet
        chunks = iter(chunks)
        while True:
            # a value far outside the warm-up's range can overflow the transform: reported
            # below with its line, not as numpy's RuntimeWarning
            with np.errstate(over="ignore", invalid="ignore"):
                try:
                    X, y, lines = next(chunks)
                except StopIteration:
                    return
            self.lines = lines
            if self.scaler is not None:
                _check_standardized(X, self.path, lines)
            if self.args.classes is not None:
                # the estimator's own message names the Python parameter and no line
                unknown = ~np.isin(y, classes)
                if unknown.any():
                    i = int(np.argmax(unknown))
                    raise ValueError(
                        f"svmlight file {os.fspath(self.path)!r}, line {int(lines[i])}: label {y[i]} is not one "
                        f"of --classes {','.join(map(str, classes.tolist()))}"
                    )
            if hint:
                hint = False
                text = _scale_hint(X, self.path, len(y))
                if text:
                    print(text, file=sys.stderr)
            yield X, y


def _train_stream(clf, args, path, plan, progress):
    classes = plan[3]
    scaler = None
    if args.standardize or args.standardize_warmup is not None:
        scaler = StreamingStandardizer(n_warmup=args.standardize_warmup or args.chunk_size)
    result = None
    seconds = 0.0
    for epoch in range(args.epochs):
        chunks = _TrainingStream(args, path, plan, scaler, first_pass=epoch == 0)
        try:
            result = evaluate_prequential(clf, chunks, classes=classes, progress=progress)
        except ValueError as e:
            raise _locate_row_error(e, path, chunks.lines, scaler is not None) from None
        seconds += result["train_seconds"]
        if not args.quiet and args.epochs > 1:
            print(f"epoch {epoch + 1}: online error {result['online_error']:.4f}", file=sys.stderr)
    # evaluate_prequential describes the pass it ran: the time and the rate are made to
    # cover every pass, the online error stays the last pass's (the callers say so).
    result["train_seconds"] = seconds
    result["examples_per_second"] = result["examples"] * args.epochs / seconds if seconds > 0 else float("nan")
    # Saved with the model, so that `predict` reads test files with the same index base
    # (guessing it per file shifts the features of a sparse file that never uses index 0).
    clf._svmlight_zero_based = plan[1]
    # Saved with the model too (only the CLI applies them: see _standardized)
    clf._standardize_stats = None if scaler is None else (scaler.mean_, scaler.scale_)
    return result


def _check_standardized(X, path, lines):
    """A standardised chunk is finite (the reader's values are): else the line whose value
    overflowed the transform, with why."""
    bad = ~np.isfinite(X).all(axis=1)
    if bad.any():
        raise ValueError(
            f"svmlight file {os.fspath(path)!r}, line {int(lines[np.argmax(bad)])}: a feature value is so far "
            "outside the range of the examples --standardize took its statistics from that it overflows "
            "when standardised; take them from more examples (--standardize-warmup) or rescale the data"
        )


def _standardized(clf, X, path, lines):
    """X as the model saw it in training: --standardize's transform, the same expression
    (hence the same bits) as StreamingStandardizer.transform."""
    stats = getattr(clf, "_standardize_stats", None)
    if stats is None:
        return X
    mean, scale = stats
    with np.errstate(over="ignore", invalid="ignore"):  # overflow: reported with its line
        Xs = (X - mean) / scale
    _check_standardized(Xs, path, lines)
    return Xs


def _reading_args(path, n_features, zero_based):
    """iter_svmlight arguments to read a file to predict on with a model of n_features.

    A file that can be re-read is checked in a first pass (width, index base, labels), so
    that a bad file fails before any output or training.  A pipe is streamed in one pass:
    its labels are read as floats, and 'auto' means one-based as for training.
    """
    if _can_reread(path):
        n_features, offset, label_dtype = _plan_svmlight(path, n_features, zero_based, None)
        return {"n_features": n_features, "zero_based": offset == 0, "label_dtype": label_dtype}
    return {"n_features": n_features, "zero_based": zero_based is True, "label_dtype": np.float64}


def _predict_chunks(clf, path, chunk_size, reading):
    """(predictions, labels) of each chunk of a LIBSVM file, an estimator's row error named
    by its file line."""
    for X, y, lines in iter_svmlight(path, chunk_size=chunk_size, return_lines=True, **reading):
        X = _standardized(clf, X, path, lines)
        try:
            pred = clf.predict(X)
        except ValueError as e:
            standardized = getattr(clf, "_standardize_stats", None) is not None
            raise _locate_row_error(e, path, lines, standardized) from None
        yield pred, y


def _check_output_path(path, option, inputs=()):
    """Fails now when ``path`` could not be written at the end of a long run (a missing
    directory, a directory given as the file, a read-only place), or when writing it would
    destroy an input: ``inputs`` are (what, path) pairs read by the same run.

    Every output (model files too: save() goes through the same helper) is written by
    _files.replacing, which writes a device or a FIFO (/dev/null, /dev/stdout) in place rather
    than through a temporary file beside it.
    """
    if os.path.isdir(path):
        raise ValueError(f"{option} {path}: is a directory")
    for what, source in inputs:
        # samefile compares device and inode after following symlinks: a symlink or a hard
        # link to an input is caught as well as the same name. Only a regular file holds data
        # to lose: `predict m.bkm /dev/stdin -o /dev/stdout` on a terminal reads and writes
        # one device, as it should.
        with contextlib.suppress(OSError):
            if stat.S_ISREG(os.stat(source).st_mode) and os.path.samefile(path, source):
                raise ValueError(
                    f"{option} {path} is the same file as the {what} {source}, which writing it would "
                    f"destroy: choose another {option} file"
                )
    if written_in_place(path):
        return
    target = os.path.realpath(path)  # a symlink is written through: its target's directory
    parent = os.path.dirname(target)
    if not os.path.isdir(parent):
        raise ValueError(f"{option} {path}: directory {parent} does not exist")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise ValueError(f"{option} {path}: directory {parent} is not writable")
    if os.path.exists(target):
        # The rename would replace it anyway (it needs the directory's permission only); a file
        # without write permission is a user's "keep this", also for root, who may write it.
        writable = stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH
        if not os.access(target, os.W_OK) or not os.stat(target).st_mode & writable:
            raise ValueError(f"{option} {path}: the file is read-only; make it writable or choose another file")


def cmd_train(args):
    _check_output_path(args.output, "-o", [("training file", args.data)])
    clf = _estimator(args)
    plan = _plan_training(args, args.data)
    r = _train_stream(clf, args, args.data, plan, not args.quiet and _interactive())
    clf.save(args.output)  # after every input was read
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


class _Accuracy:
    """Counts the correct predictions of the examples whose file label is a class of the
    model. LIBSVM files always have a label, and a file without real ones usually repeats
    a placeholder (often 0): one that is no class says the file is unlabelled."""

    def __init__(self, classes):
        self.classes = classes
        self.correct = self.labelled = self.total = 0

    def add(self, pred, y):
        known = np.isin(y, self.classes)
        if known.any():  # not compared at all for a model with str classes (trained in Python)
            self.correct += int(np.sum((pred == y) & known))
        self.labelled += int(np.sum(known))
        self.total += len(y)

    def report(self, path):
        if self.labelled == 0:
            return None
        text = f"accuracy {self.correct / self.labelled:.4f} on the {self.labelled:,} labelled examples of {path}"
        if self.labelled < self.total:
            text += f" ({self.total - self.labelled:,} others have labels the model does not know)"
        return text


def cmd_predict(args):
    inputs = [("model", args.model), ("data file", args.data)]
    if args.output:
        _check_output_path(args.output, "-o", inputs)
    clf = load(args.model)
    # --zero-based overrides the base the model was trained with; a model saved without
    # it (older files, or trained in Python) falls back to detecting it from the file.
    zero_based = args.zero_based
    if zero_based is None:
        stored = getattr(clf, "_svmlight_zero_based", None)
        zero_based = "auto" if stored is None else stored
    reading = _reading_args(args.data, clf.n_features_in_, zero_based)
    accuracy = _Accuracy(clf.classes_)

    def write(out):
        for pred, y in _predict_chunks(clf, args.data, args.chunk_size, reading):
            out.write("".join(f"{label}\n" for label in pred))
            accuracy.add(pred, y)
        out.flush()  # a closed pipe (`| head`) shows up here, inside main's handler

    if args.output:
        # the predictions go to a temporary file renamed over -o at the end: a failed run
        # (a bad line halfway) leaves an earlier predictions file intact
        with replacing(args.output) as tmp, open(tmp, "w", encoding="utf-8") as out:
            write(out)
    else:
        write(sys.stdout)
    report = accuracy.report(args.data)
    if report and not args.quiet:
        print(report, file=sys.stderr)
    return 0


def cmd_evaluate(args):
    clf = _estimator(args)
    plan = _plan_training(args, args.data)
    if args.test:
        # checked before training: a test file of the wrong width (or a malformed one)
        # fails now rather than after a long training run
        n_features, zero_based = plan[0], plan[1]
        test_reading = _reading_args(args.test, n_features, zero_based)
    r = _train_stream(clf, args, args.data, plan, not args.quiet and _interactive())
    passes, last = (f" x {args.epochs} epochs", "  (last epoch)") if args.epochs > 1 else ("", "")
    print(f"examples            {r['examples']:,}{passes}")
    print(f"online error        {r['online_error']:.4f}{last}")
    print(f"examples/s          {r['examples_per_second']:,.0f}")
    print(f"support vectors     {r['n_support']}")
    if "n_support_average" in r:
        print(f"SVs of the average  {r['n_support_average']}")
    if args.test:
        correct = total = 0
        for pred, y in _predict_chunks(clf, args.test, args.chunk_size, test_reading):
            correct += int(np.sum(pred == y))
            total += len(y)
        print(f"test accuracy       {correct / total:.4f}" if total else "test accuracy       n/a (no test examples)")
    return 0


def cmd_demo(args):
    """The README's main job: a noisy-checkerboard stream through BSGD with merging."""
    # Every argument is checked before the banner: a bad one is an error, not a report
    # that starts and then fails.
    clf = BudgetedSGDClassifier(
        budget=args.budget or None,  # 0: no budget, as for train and evaluate
        maintenance=args.maintenance,
        lam=args.lam,
        gamma=args.gamma,
        random_state=args.seed,
    )
    clf._validate_params()
    if args.plot:
        from ..plot import plot_format

        try:  # now, not after a training run whose result would be lost
            plot_format(args.plot)
        except (ImportError, ValueError) as e:
            raise ValueError(f"--plot: {e}") from None
        _check_output_path(args.plot, "--plot")
    budget = "no budget" if clf.budget is None else f"B={clf.budget}"
    print(
        f"budgetkernel demo: {args.n:,} noisy-checkerboard examples (15% label noise) through "
        f"Budgeted SGD, maintenance={args.maintenance}, {budget}",
        flush=True,  # seen at once when stdout is a pipe (`| tee log`), before the long run
    )
    train, (X_test, y_test) = datasets.make_stream_and_test(
        "noisy_checkerboard", args.n, 10_000, random_state=args.seed, chunk_size=args.chunk_size
    )
    scaler = StreamingStandardizer(n_warmup=1000)
    bar = ProgressBar(args.n, desc="training", enabled=not args.quiet and _interactive())
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
        from ..plot import plot_demo

        with replacing(args.plot) as tmp:
            plot_demo(clf, scaler, tmp)
        print(f"plot written to {args.plot}")
    return 0


def build_parser():
    parser = argparse.ArgumentParser(prog="budgetkernel", description="Online kernel learning on a budget.")
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(
        dest="command", required=True, metavar="COMMAND", help="`budgetkernel COMMAND -h` lists its options"
    )

    p = sub.add_parser("train", help="train on a LIBSVM file and write a model file")
    p.add_argument("data", help="LIBSVM/svmlight training file (may be gzip-compressed, or a pipe)")
    p.add_argument(
        "-o", "--output", required=True, help="model file to write (replaced only once training has succeeded)"
    )
    p.add_argument("-q", "--quiet", action="store_true", help="no progress bar, hints or per-epoch lines on stderr")
    _add_model_args(p)
    p.set_defaults(func=cmd_train)

    p = sub.add_parser("predict", help="predict the labels of a LIBSVM file with a model file")
    p.add_argument("model", help="model file written by `budgetkernel train` (or an estimator's save())")
    p.add_argument("data", help="LIBSVM/svmlight file to predict (may be gzip-compressed, or a pipe)")
    p.add_argument(
        "-o",
        "--output",
        default=None,
        help="file for the predicted labels, one a line (default: standard output); replaced only "
        "once every prediction is made, and never one of the input files",
    )
    p.add_argument(
        "-q", "--quiet", action="store_true", help="do not print the accuracy on the file's labels to stderr"
    )
    _add_chunk_size_arg(p)
    _add_zero_based_arg(p, "default: as in the training file, which the model records")
    p.set_defaults(func=cmd_predict)

    p = sub.add_parser("evaluate", help="prequential evaluation on a LIBSVM file (+ test accuracy)")
    p.add_argument("data", help="LIBSVM/svmlight file to learn from, each example predicted before it is learned")
    p.add_argument("--test", default=None, help="LIBSVM file to measure the trained model's accuracy on")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress bar, hints or per-epoch lines on stderr")
    _add_model_args(p)
    p.set_defaults(func=cmd_evaluate)

    p = sub.add_parser("demo", help="noisy checkerboard stream through BSGD with merging")
    p.add_argument("--n", type=_positive_int, default=1_000_000, help="stream length (default 1,000,000)")
    p.add_argument("--budget", type=_budget_arg, default=100, help="max #SVs (0 = no budget; default 100)")
    p.add_argument(
        "--maintenance", choices=sorted(_MAINTENANCE), default="merge", help="budget maintenance (default merge)"
    )
    p.add_argument("--gamma", type=float, default=DEMO_GAMMA, help=f"RBF kernel gamma (default {DEMO_GAMMA})")
    p.add_argument("--lam", type=float, default=DEMO_LAM, help=f"regularisation (default {DEMO_LAM})")
    p.add_argument("--seed", type=_non_negative_int, default=0, help="seed of the data and of the learner (default 0)")
    _add_chunk_size_arg(p)
    p.add_argument("--plot", default=None, metavar="FILE.png", help="draw the accuracy curve and decision boundary")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress bar on stderr")
    p.set_defaults(func=cmd_demo)
    return parser


# Library messages that name a Python keyword where the command line has an option.
_CLI_WORDING = (("(pass zero_based=True or 'auto')", "(give --zero-based if the file's indices start at 0)"),)


def _cli_message(text):
    for library, cli in _CLI_WORDING:
        text = text.replace(library, cli)
    return text


def main(argv=None):
    argv = sys.argv[1:] if argv is None else list(argv)
    args = build_parser().parse_args(_attach_negative_values(argv))
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
        print(f"budgetkernel: error: {_cli_message(str(e))}", file=sys.stderr)
        return 2
    except MemoryError as e:  # e.g. a LIBSVM file whose feature indices ask for a huge dense chunk
        print(f"budgetkernel: error: out of memory ({e or 'allocation failed'})", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        # Ctrl-C: the shell's code for SIGINT (128 + 2), one line and no traceback.
        # A progress bar (drawn on a terminal only) may be mid-line: start a new line after it.
        newline = "\n" if not getattr(args, "quiet", True) and _interactive() else ""
        print(f"{newline}budgetkernel: interrupted", file=sys.stderr)
        return 130
