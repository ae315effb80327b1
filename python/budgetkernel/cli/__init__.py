"""The ``budgetkernel`` command line: train, predict, evaluate, demo.

The parser and ``main`` (the entry point ``budgetkernel.cli:main`` and ``python -m
budgetkernel``) live here; the rest of the package splits by concern:

    _options     argument types, the model options, the learner table, the estimator
    _training    planning a training file, the training stream, --standardize, row errors,
                 a regressor's pass and its MSE / MAE / R^2
    _tuning      --tune: the grid, the PrequentialSearch over the training stream, its report
    _predicting  reading a file to predict on with a model, and the accuracy on its labels
    _commands    train, predict, evaluate and demo, and the output-path checks
"""

from __future__ import annotations

import argparse
import os
import sys

from .. import __version__
from ._options import (
    _MAINTENANCE,
    _add_chunk_size_arg,
    _add_model_args,
    _add_zero_based_arg,
    _attach_negative_values,
    _budget_arg,
    _non_negative_int,
    _positive_int,
)

# Demo settings for the standardised noisy checkerboard, picked from a gamma x lam grid at
# 10^5 and 10^6 examples (the demo's accuracy: docs/benchmarks.md). Chosen on the noisy
# checkerboard only: other data need their own gamma and lam.
DEMO_GAMMA = 4.0
DEMO_LAM = 3e-3


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

    p = sub.add_parser("predict", help="predict the labels (a regressor: the values) of a LIBSVM file with a model file")
    p.add_argument("model", help="model file written by `budgetkernel train` (or an estimator's save())")
    p.add_argument("data", help="LIBSVM/svmlight file to predict (may be gzip-compressed, or a pipe)")
    p.add_argument(
        "-o",
        "--output",
        default=None,
        help="file for the predicted labels (a regressor's values), one a line (default: standard output); replaced only "
        "once every prediction is made, and never one of the input files",
    )
    p.add_argument(
        "-q", "--quiet", action="store_true", help="do not print the accuracy (a regressor: MSE, MAE, R^2) on the file's labels to stderr"
    )
    p.add_argument(
        "--proba",
        action="store_true",
        help="write class probabilities in LIBSVM's svm-predict -b 1 layout: a first line 'labels' and the classes, "
        "then each example's label and its probability of each class (the model needs probabilities: trained "
        "with --probability, or bsgd with --loss log)",
    )
    _add_chunk_size_arg(p)
    _add_zero_based_arg(p, "default: as in the training file, which the model records")

    p = sub.add_parser("evaluate", help="prequential evaluation on a LIBSVM file (+ test accuracy; a regressor: MSE, MAE, R^2)")
    p.add_argument("data", help="LIBSVM/svmlight file to learn from, each example predicted before it is learned")
    p.add_argument("--test", default=None, help="LIBSVM file to measure the trained model's accuracy (a regressor: MSE, MAE, R^2) on")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress bar, hints or per-epoch lines on stderr")
    _add_model_args(p)

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
    return parser


# Library messages that name a Python keyword where the command line has an option.
_CLI_WORDING = (("(pass zero_based=True or 'auto')", "(give --zero-based if the file's indices start at 0)"),)


def _cli_message(text):
    for library, cli in _CLI_WORDING:
        text = text.replace(library, cli)
    return text


def _error_text(e):
    """An error's message; an OSError about a file as 'FILE: what went wrong' (not Python's
    '[Errno 2] ...')."""
    if isinstance(e, OSError) and e.strerror and e.filename is not None:
        return f"{e.filename}: {e.strerror[:1].lower()}{e.strerror[1:]}"
    return str(e)


def main(argv=None):
    argv = sys.argv[1:] if argv is None else list(argv)
    args = build_parser().parse_args(_attach_negative_values(argv))
    try:
        # The commands import scikit-learn and the estimators (seconds), which parsing,
        # --help and --version do without.
        from . import _commands

        return getattr(_commands, f"cmd_{args.command}")(args)
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
        print(f"budgetkernel: error: {_cli_message(_error_text(e))}", file=sys.stderr)
        return 2
    except MemoryError as e:  # e.g. a LIBSVM file whose feature indices ask for a huge dense chunk
        print(f"budgetkernel: error: out of memory ({e or 'allocation failed'})", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        # Ctrl-C: the shell's code for SIGINT (128 + 2), one line and no traceback.
        # A progress bar (drawn on a terminal only) may be mid-line: start a new line after it.
        from ._training import _interactive  # imported by every command before it learns

        newline = "\n" if not getattr(args, "quiet", True) and _interactive() else ""
        print(f"{newline}budgetkernel: interrupted", file=sys.stderr)
        return 130
