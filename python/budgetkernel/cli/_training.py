"""Reading the training file: the plan (width, index base, classes), the stream of chunks
that train and evaluate learn from (with --standardize and the scale hint), and errors of the
estimator named by the file line they come from. A regressor reads its targets as float64 and
is measured by MSE, MAE and R^2 (_RegressionMetrics) instead of the error rate.
"""

from __future__ import annotations

import os
import re
import sys
import time
from typing import NamedTuple

import numpy as np
from sklearn.base import is_regressor

from ..io import _can_reread, _plan_svmlight, _plan_svmlight_rows, iter_svmlight
from ..preprocessing import StreamingStandardizer
from ..stream import ProgressBar, evaluate_prequential
from ._options import is_regressor_learner

# Without --standardize, the first chunk is looked at: features whose largest |value| differ
# by more than this factor are weighed very unequally by every kernel (breast_cancer's raw
# features differ by ~1e5; data already on one scale, such as [0, 1] features, by < 100).
_SCALE_HINT_RATIO = 1e3


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


class _Plan(NamedTuple):
    """What reading the training file needs; n_rows is its length when the plan's scan for the
    classes counted it (None for a pipe, or when --classes spared that scan)."""

    n_features: int
    zero_based: bool
    label_dtype: np.dtype
    classes: np.ndarray
    n_rows: int | None = None


def _plan_training(args, path):
    """What reading the training file needs: a _Plan (n_features, zero_based, label_dtype,
    classes, n_rows).

    A file is scanned once (which also validates it) for what the options do not give.
    A pipe (e.g. ``/dev/stdin``) can be read only once, so it needs --n-features and
    --classes; its index base is then one-based (LIBSVM's convention) unless --zero-based
    says otherwise, and an index 0 is reported as an error rather than shifting the features.
    """
    zero_based = "auto" if args.zero_based is None else args.zero_based
    if is_regressor_learner(args.learner):
        return _plan_regression(args, path, zero_based)
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
        return _Plan(args.n_features, zero_based is True, np.dtype(label_dtype), args.classes)
    n_features, offset, label_dtype = _plan_svmlight(path, args.n_features, zero_based, None)
    classes, n_rows = args.classes, None
    if classes is None:
        seen = set()
        n_rows = 0  # counted on the way: --tune's n_expected
        for _, y in iter_svmlight(
            path, n_features=n_features, zero_based=offset == 0, label_dtype=label_dtype, chunk_size=args.chunk_size
        ):
            seen.update(np.unique(y).tolist())
            n_rows += len(y)
        classes = np.array(sorted(seen))
        _check_labels_are_classes(classes, f"{path}")
    return _Plan(n_features, offset == 0, label_dtype, classes, n_rows)


def _plan_regression(args, path, zero_based):
    """_plan_training for a regressor: the labels are the targets, read as float64, and there
    are no classes to find (a pipe needs only --n-features). A file is scanned once when the
    options leave its width or index base open, which also counts its rows (--tune's
    n_expected)."""
    if args.classes is not None:
        raise ValueError(f"--classes does not apply to --learner {args.learner}, which learns real-valued targets")
    if not _can_reread(path):
        if args.n_features is None:
            raise ValueError(
                f"{path} is a pipe or another stream that can be read only once: "
                "give --n-features to train on it in a single pass"
            )
        if args.epochs > 1:
            raise ValueError(f"--epochs {args.epochs} reads the data again, which a pipe ({path}) cannot do")
        return _Plan(args.n_features, zero_based is True, np.dtype(np.float64), None)
    # label_dtype None: the scan runs (checking the whole file before any learning, and
    # counting its rows) even when the options give the rest; the targets are read as float64
    n_features, offset, _, n_rows = _plan_svmlight_rows(path, args.n_features, zero_based, None)
    return _Plan(n_features, offset == 0, np.dtype(np.float64), None, n_rows)


_ROW_ERROR = re.compile(r"X row (\d+) (.*)", re.DOTALL)
_TARGET_ERROR = re.compile(r"target y\[(\d+)\] (.*)", re.DOTALL)


def _locate_row_error(error, path, lines, standardized=False):
    """The estimator's ``X row i ...`` or ``target y[i] ...`` (i: the row within the chunk) as
    the file's line.

    The reader's own errors already name the line; this is for what only the estimator
    finds, after parsing (e.g. a value whose square overflows the kernel's arithmetic).
    Returns the ValueError to raise (``error`` itself when it names no row).
    """
    t = _TARGET_ERROR.match(str(error))  # a regressor's target the core refuses
    if t is not None and lines is not None and int(t.group(1)) < len(lines):
        line = int(lines[int(t.group(1))])
        return ValueError(f"svmlight file {os.fspath(path)!r}, line {line}: the target (label) {t.group(2)}")
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
        n_features, zero_based, label_dtype, classes = self.plan[:4]
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


def _scaler(args):
    """The StreamingStandardizer of --standardize (None without it)."""
    if args.standardize or args.standardize_warmup is not None:
        return StreamingStandardizer(n_warmup=args.standardize_warmup or args.chunk_size)
    return None


def _record_reading(clf, plan, scaler):
    """What the model file keeps of how the training file was read (train and train --tune
    alike), as entries of its metadata (the estimator's ``_app_metadata``: save() writes them,
    load() gives them back; read by :func:`recorded_reading`)."""
    app = {}
    if plan[1] is not None:
        # so that `predict` reads test files with the same index base (guessing it per file
        # shifts the features of a sparse file that never uses index 0)
        app["svmlight_zero_based"] = bool(plan[1])
    if scaler is not None:
        # --standardize: the model learned (X - mean) / scale, which only the CLI applies
        # (see _standardized); float64 through JSON's repr comes back exactly
        app["standardize"] = {"mean": [float(v) for v in scaler.mean_], "scale": [float(v) for v in scaler.scale_]}
    clf._app_metadata = app


def recorded_reading(clf, where="the model file"):
    """(zero_based, standardize) that ``train`` recorded in a loaded model: the index base of
    its training file (None: not recorded, e.g. a model trained in Python) and the (mean,
    scale) arrays of --standardize (None without it). A corrupt entry is a ValueError naming
    ``where``."""
    app = clf.__dict__.get("_app_metadata") or {}
    zero_based = app.get("svmlight_zero_based")
    stats = app.get("standardize")
    if stats is not None:
        try:
            stats = _standardize_stats(stats, clf.n_features_in_)
        except ValueError as e:
            raise ValueError(f"{where}: {e}") from None
    return (None if zero_based is None else bool(zero_based)), stats


def _standardize_stats(entry, n_features):
    """The (mean, scale) arrays of a model file's "standardize" entry, checked: a corrupt
    entry must fail here, not turn every prediction into NaN or a silent shift."""
    try:
        mean = np.array(entry["mean"], dtype=np.float64)
        scale = np.array(entry["scale"], dtype=np.float64)
    except (TypeError, ValueError, KeyError) as e:
        raise ValueError(f"corrupt file: its standardize entry is not two lists of numbers ({e})") from None
    if mean.shape != (n_features,) or scale.shape != (n_features,):
        raise ValueError(f"corrupt file: its standardize entry must hold {n_features} means and scales")
    if not (np.all(np.isfinite(mean)) and np.all(np.isfinite(scale)) and np.all(scale > 0)):
        raise ValueError("corrupt file: its standardize entry must hold finite means and positive finite scales")
    return mean, scale


def _train_stream(clf, args, path, plan, progress):
    if is_regressor(clf):
        return _train_regression_stream(clf, args, path, plan, progress)
    classes = plan[3]
    scaler = _scaler(args)
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
    _record_reading(clf, plan, scaler)
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


def _regression_pass(reg, chunks, progress):
    """One pass of a regressor over the chunks: partial_fit each, timed. Returns the pass's
    examples, seconds and prequential metrics (_RegressionMetrics: the squared and absolute
    errors from the core's counters, which predicted each example before learning it; R^2
    against the targets' spread over this pass)."""
    fitted = "_model" in reg.__dict__
    c0 = reg.counters_ if fitted else {"examples": 0, "squared_error": 0.0, "absolute_error": 0.0}
    metrics = _RegressionMetrics()
    bar = ProgressBar(None, desc="training", enabled=progress)
    seconds = 0.0
    for X, y in chunks:
        t0 = time.perf_counter()
        reg.partial_fit(X, y)
        seconds += time.perf_counter() - t0
        metrics.add_targets(y)
        c = reg.counters_
        metrics.sse = c["squared_error"] - c0["squared_error"]
        metrics.sae = c["absolute_error"] - c0["absolute_error"]
        bar.update(len(y), mse=f"{metrics.sse / max(metrics.n, 1):.4g}", SVs=reg.n_support_)
    bar.close()
    if metrics.n == 0:
        raise ValueError("the stream holds no examples")
    return metrics, seconds


def _train_regression_stream(reg, args, path, plan, progress):
    """_train_stream for a regressor: the same passes and reading, its results the
    prequential MSE, MAE and R^2 (of the last pass) instead of the error rate."""
    scaler = _scaler(args)
    metrics, seconds = None, 0.0
    for epoch in range(args.epochs):
        chunks = _TrainingStream(args, path, plan, scaler, first_pass=epoch == 0)
        try:
            metrics, pass_seconds = _regression_pass(reg, chunks, progress)
        except ValueError as e:
            raise _locate_row_error(e, path, chunks.lines, scaler is not None) from None
        seconds += pass_seconds
        if not args.quiet and args.epochs > 1:
            print(f"epoch {epoch + 1}: online {metrics.text()}", file=sys.stderr)
    _record_reading(reg, plan, scaler)
    return _regression_result(metrics, seconds, args.epochs, reg)


def _regression_result(metrics, seconds, epochs, reg):
    """The results dict of a regressor's training (the commands' report reads it)."""
    return {
        "examples": metrics.n,
        "online": metrics,
        "train_seconds": seconds,
        "examples_per_second": metrics.n * epochs / seconds if seconds > 0 else float("nan"),
        "n_support": int(getattr(reg, "n_support_", 0)),
    }


class _RegressionMetrics:
    """MSE, MAE and R^2 of predictions against real targets, summed chunk by chunk.

    R^2 = 1 - SSE / SST, with SST the targets' sum of squared deviations from their mean,
    accumulated by the pairwise update of Chan, Golub & LeVeque (1979): no sum of squares of
    raw targets, whose cancellation loses the digits of a small spread around a large mean.
    """

    def __init__(self):
        self.n = 0
        self.sse = self.sae = 0.0
        self._mean = self._m2 = 0.0

    def add_targets(self, y):
        m = len(y)
        if m == 0:
            return
        with np.errstate(over="ignore"):  # a test file's huge targets: an infinite spread
            mean = float(np.mean(y))
            m2 = float(np.sum((y - mean) ** 2))
        n = self.n + m
        delta = mean - self._mean
        self._mean += delta * m / n
        self._m2 += m2 + delta * delta * self.n * m / n
        self.n = n

    def add(self, pred, y):
        r = np.asarray(pred, dtype=np.float64) - y
        with np.errstate(over="ignore"):  # an error too large to square: an infinite MSE, honestly
            self.sse += float(r @ r)
        self.sae += float(np.abs(r).sum())
        self.add_targets(y)

    @property
    def mse(self):
        return self.sse / self.n if self.n else float("nan")

    @property
    def mae(self):
        return self.sae / self.n if self.n else float("nan")

    @property
    def r2(self):
        """nan when the targets do not vary (R^2 is undefined there, as in scikit-learn)."""
        return 1.0 - self.sse / self._m2 if self._m2 > 0 else float("nan")

    def text(self):
        return f"MSE {self.mse:.6g}, MAE {self.mae:.6g}, R^2 {self.r2:.4f}"
