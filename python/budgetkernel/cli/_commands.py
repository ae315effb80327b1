"""The commands train, predict, evaluate and demo, and the checks of their output paths."""

from __future__ import annotations

import contextlib
import os
import stat
import sys
import time

import numpy as np
from sklearn.base import is_regressor

from .. import datasets
from .._files import replacing, written_in_place
from .._persistence import load
from ..pegasos import BudgetedSGDClassifier
from ..preprocessing import StreamingStandardizer
from ..stream import ProgressBar, peak_memory_mb
from ._options import _estimator
from ._predicting import _Accuracy, _predict_chunks, _reading_args
from ._training import _interactive, _plan_training, _RegressionMetrics, _train_stream, recorded_reading
from ._tuning import _build_search, _search_report, _tune_stream


def _check_input_path(path, what):
    """Fails with a message that names the argument when ``path`` cannot be read: not there,
    a directory, or not readable. Checked with stat and access, not by opening: opening a
    FIFO (a pipe given as a file) would wait for its writer."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        where = "" if os.path.isabs(path) else f" (relative to the current directory {os.getcwd()})"
        raise ValueError(f"{what} {path}: no such file{where}; check the path") from None
    except OSError as e:
        raise ValueError(f"{what} {path}: {e.strerror}") from None
    if stat.S_ISDIR(mode):
        raise ValueError(f"{what} {path}: is a directory; give a file in it")
    if not os.access(path, os.R_OK):
        raise ValueError(f"{what} {path}: not readable (permission denied); make it readable or copy it")


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


def _prepare(args):
    """The estimator the options describe, its search (--tune; else None) and the training
    file's plan: every option and the grid are checked before the file is read."""
    clf = _estimator(args)
    search = _build_search(clf, args)
    return clf, search, _plan_training(args, args.data)


def _learn(args, clf, search, plan):
    """The model learned from args.data and _train_stream's results; with --tune, the search's
    winner (and the search's report printed)."""
    progress = not args.quiet and _interactive()
    if search is None:
        return clf, _train_stream(clf, args, args.data, plan, progress)
    clf, r = _tune_stream(search, args, args.data, plan, progress)
    print(_search_report(search))
    return clf, r


def cmd_train(args):
    _check_input_path(args.data, "training file")
    _check_output_path(args.output, "-o", [("training file", args.data)])
    clf, search, plan = _prepare(args)
    clf, r = _learn(args, clf, search, plan)
    clf.save(args.output)  # after every input was read
    passes = f"{args.epochs} epochs of {r['examples']:,}" if args.epochs > 1 else f"{r['examples']:,}"
    last = " (last epoch)" if args.epochs > 1 else ""
    tuned, winner = (" for all candidates", " of the chosen model") if search is not None else ("", "")
    print(
        f"trained on {passes} examples in {r['train_seconds']:.2f} s "
        f"({r['examples_per_second']:,.0f}/s{tuned}); {_online_summary(r, winner + last)}; "
        f"{_support_summary(r)}; model written to {args.output}"
    )
    return 0


def _online_summary(result, note=""):
    """'online error E' of a classifier, 'online MSE m, MAE a, R^2 r' of a regressor
    (``note`` after 'online error' / 'online')."""
    if "online" in result:  # a regressor (_training._regression_result)
        return f"online {result['online'].text()}{note}"
    return f"online error{note} {result['online_error']:.4f}"


def _support_summary(result):
    """'N SVs', and for an averaged model the SVs it predicts with (a budgeted learner's
    average keeps every SV it removed, so it can be far larger than the budget)."""
    text = f"{result['n_support']} SVs"
    if "n_support_average" in result:
        text += f" (the averaged classifier predicts with {result['n_support_average']})"
    return text


def cmd_predict(args):
    inputs = [("model", args.model), ("data file", args.data)]
    for what, path in (("model file", args.model), ("data file", args.data)):
        _check_input_path(path, what)
    if args.output:
        _check_output_path(args.output, "-o", inputs)
    clf = load(args.model)
    stored, stats = recorded_reading(clf, args.model)
    # --zero-based overrides the base the model was trained with; a model saved without
    # it (trained in Python) falls back to detecting it from the file.
    zero_based = args.zero_based
    if zero_based is None:
        zero_based = "auto" if stored is None else stored
    regression = is_regressor(clf)
    if args.proba:
        _check_proba(clf, regression)
    reading = _reading_args(args.data, clf.n_features_in_, zero_based, regression)
    accuracy = _RegressionMetrics() if regression else _Accuracy(clf.classes_)
    # a regressor's predictions as the shortest text that reads back as the same float64
    line = (lambda v: f"{float(v)!r}\n") if regression else (lambda label: f"{label}\n")

    def write(out):
        if args.proba:  # LIBSVM's svm-predict -b 1 layout: a header of the classes, then label p_1 .. p_k
            out.write("labels " + " ".join(map(str, clf.classes_)) + "\n")
        chunks = _predict_chunks(clf, args.data, args.chunk_size, reading, proba=args.proba, stats=stats)
        for pred, y, *proba in chunks:
            out.write("".join(map(_proba_line, pred, *proba) if proba else map(line, pred)))
            accuracy.add(pred, y)
        out.flush()  # a closed pipe (`| head`) shows up here, inside main's handler

    if args.output:
        # the predictions go to a temporary file renamed over -o at the end: a failed run
        # (a bad line halfway) leaves an earlier predictions file intact
        with replacing(args.output) as tmp, open(tmp, "w", encoding="utf-8") as out:
            write(out)
    else:
        write(sys.stdout)
    report = _regression_report(accuracy, args.data) if regression else accuracy.report(args.data)
    if report and not args.quiet:
        print(report, file=sys.stderr)
    return 0


def _proba_line(label, probabilities):
    """'label p_1 .. p_k', each probability the shortest text that reads back as the same float64."""
    return f"{label} {' '.join(map(repr, probabilities.tolist()))}\n"


def _check_proba(clf, regression):
    if regression:
        raise ValueError("--proba: a regressor predicts values, not class probabilities")
    if not hasattr(clf, "predict_proba"):
        raise ValueError(
            "--proba: this model has no probabilities; train it with --probability (or bsgd with --loss log)"
        )


def cmd_evaluate(args):
    _check_input_path(args.data, "training file")
    if args.test:
        _check_input_path(args.test, "--test file")
    clf, search, plan = _prepare(args)
    if args.test:
        # checked before training: a test file of the wrong width (or a malformed one)
        # fails now rather than after a long training run
        n_features, zero_based = plan[0], plan[1]
        test_reading = _reading_args(args.test, n_features, zero_based, is_regressor(clf))
    clf, r = _learn(args, clf, search, plan)
    passes = f" x {args.epochs} epochs" if args.epochs > 1 else ""
    notes = [note for note, on in (("last epoch", args.epochs > 1), ("the chosen model", search is not None)) if on]
    print(f"examples            {r['examples']:,}{passes}")
    note = f"  ({', '.join(notes)})" if notes else ""
    if "online" in r:  # a regressor: its prequential MSE, MAE and R^2
        for name, value in (("MSE", r["online"].mse), ("MAE", r["online"].mae), ("R^2", r["online"].r2)):
            print(f"{'online ' + name:<20}{value:.6g}{note}")
    else:
        print(f"online error        {r['online_error']:.4f}{note}")
    print(f"examples/s          {r['examples_per_second']:,.0f}" + ("  (all candidates)" if search is not None else ""))
    print(f"support vectors     {r['n_support']}")
    if "n_support_average" in r:
        print(f"SVs of the average  {r['n_support_average']}")
    if args.test and is_regressor(clf):
        _print_test_regression(clf, args, test_reading)
    elif args.test:
        correct = total = 0
        for pred, y in _predict_chunks(clf, args.test, args.chunk_size, test_reading, stats=recorded_reading(clf)[1]):
            correct += int(np.sum(pred == y))
            total += len(y)
        print(f"test accuracy       {correct / total:.4f}" if total else "test accuracy       n/a (no test examples)")
    return 0


def _print_test_regression(reg, args, reading):
    """evaluate --test of a regressor: test MSE, MAE and R^2 on the file's targets."""
    m = _RegressionMetrics()
    for pred, y in _predict_chunks(reg, args.test, args.chunk_size, reading, stats=recorded_reading(reg)[1]):
        m.add(pred, y)
    if m.n == 0:
        print("test MSE            n/a (no test examples)")
        return
    for name, value in (("MSE", m.mse), ("MAE", m.mae), ("R^2", m.r2)):
        print(f"{'test ' + name:<20}{value:.6g}")


def _regression_report(metrics, path):
    """predict's line on stderr for a regressor: the errors against the file's targets."""
    if metrics.n == 0:
        return None
    return f"{metrics.text()} on the {metrics.n:,} examples of {path} (their labels taken as the targets)"


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
