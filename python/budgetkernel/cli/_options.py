"""The options of the command line: argument types, the model options, the learner table.

`_estimator` turns parsed options into an estimator, passing only the options given.

Building the parser imports no estimator: the option names come from the core (as the
estimators' modules take them), the learners are named, and their classes are imported when a
command runs, so that --help and --version do not wait for scikit-learn.
"""

from __future__ import annotations

import argparse
import re

import budgetkernel

from .._native import core as _core

# The names the options take, as the core defines them (the estimators check the same).
_MAINTENANCE = _core.BSGDParams.choices["maintenance"]
_BSGD_LOSSES = _core.BSGDParams.choices["loss"]
_REGRESSOR_MAINTENANCE = _core.BSGDRegressorParams.choices["maintenance"]
_REGRESSION_LOSSES = _core.BSGDRegressorParams.choices["loss"]
_PERCEPTRON_MAINTENANCE = _core.PerceptronParams.choices["maintenance"]
_VARIANTS = _core.PAParams.choices["variant"]
_LOSSES = _core.PAParams.choices["loss"]
_REGRESSOR_VARIANTS = _core.PARegressorParams.choices["variant"]
_SAMPLING = _core.BOGDParams.choices["sampling"]


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


def _budget_value(learner, budget, option="--budget"):
    """The estimator's budget for a --budget value: None (no budget) for 0, which a learner
    whose budget is a window it must have (sliding-krls) refuses, naming the option."""
    if budget == 0 and learner == "sliding-krls":
        raise ValueError(f"{option} 0 (no budget) does not apply to --learner {learner}, whose budget is its "
                         "window: give a positive integer")
    return budget or None


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
    import numpy as np

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


def _add_learner_args(p):
    """--learner, then its budget, budget rule and regularisation (_LEARNERS says who reads which)."""
    p.add_argument(
        "--learner",
        choices=list(_LEARNERS),
        default="bsgd",
        help="classifiers: Budgeted SGD (default), Budgeted Passive-Aggressive, a (budgeted) kernel perceptron, "
        "Sparse PA, or kernel OGD / BOGD; regressors (real-valued targets): Budgeted SGD regression "
        "(bsgd-regressor), Budgeted Passive-Aggressive regression (pa-regressor), KLMS / QKLMS (klms), KRLS with the ALD test (krls), sliding-window KRLS (sliding-krls)",
    )
    p.add_argument(
        "--budget",
        type=_budget_arg,
        default=None,
        help="max #SVs (0 = no budget; default 100); sliding-krls: the window; not spa, klms, krls",
    )
    p.add_argument(
        "--maintenance",
        choices=sorted(set(_MAINTENANCE) | set(_PERCEPTRON_MAINTENANCE) | set(_REGRESSOR_MAINTENANCE)),
        default=None,
        help="bsgd, bsgd-regressor: budget maintenance (default: merge with the rbf kernel, project with linear "
        "and poly); perceptron: budget rule (default random)",
    )
    p.add_argument(
        "--lam",
        type=float,
        default=None,
        help="regularisation: bsgd, bsgd-regressor, krls (default 1e-3); bogd, sliding-krls (default 0.01)",
    )


def _add_pa_args(p):
    """The options of Budgeted Passive-Aggressive (--learner pa), and --loss."""
    p.add_argument("--C", type=float, default=None, help="pa, pa-regressor: aggressiveness C (default 1)")
    p.add_argument(
        "--variant", choices=sorted(_VARIANTS), default=None, help="pa, pa-regressor: BPA variant (default nn)"
    )
    p.add_argument(
        "--loss",
        choices=sorted(set(_LOSSES) | set(_BSGD_LOSSES) | set(_REGRESSION_LOSSES)),
        default=None,
        help="bsgd: hinge (default) or log (kernel logistic regression, with native probabilities); "
        "pa: hinge or ramp loss (default hinge); bsgd-regressor: epsilon_insensitive (default), "
        "squared or huber",
    )
    p.add_argument(
        "--pa-type",
        type=int,
        choices=[0, 1, 2],
        default=None,
        help="pa, pa-regressor: 0 hard, 1 PA-I (default), 2 PA-II",
    )
    p.add_argument(
        "--spa-sampling",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="pa-regressor: add an SV only with SPA's loss-proportional probability (--alpha, --beta; default no)",
    )
    p.add_argument(
        "--probability",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="classifiers: calibrate the decision values online so that predict --proba works (default no; "
        "bsgd --loss log has native probabilities)",
    )


def _add_regression_args(p):
    """The options only regressors read (--epsilon, --nu, --fit-intercept)."""
    p.add_argument(
        "--epsilon",
        type=float,
        default=None,
        help="bsgd-regressor: the insensitive zone of epsilon_insensitive, the threshold of huber (default 0.1); "
        "pa-regressor: the insensitive zone (default 0.1); "
        "klms: the quantisation size of QKLMS, in input distance (default 0: plain KLMS)",
    )
    p.add_argument(
        "--t0",
        type=float,
        default=None,
        help="bsgd-regressor: step offset, the step is 1 / (lam (t + t0)) (default 0; about 1/lam tames the first steps)",
    )
    p.add_argument(
        "--nu", type=float, default=None, help="krls: the approximate-linear-dependence threshold (default 0.2)"
    )
    p.add_argument(
        "--fit-intercept",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="bsgd-regressor, pa-regressor: predict the running mean of the targets plus the kernel expansion (default yes)",
    )


def _add_step_and_averaging_args(p):
    """The options of the perceptron, SPA and BOGD (--eta; --alpha, --beta; --sampling), and --averaged."""
    p.add_argument(
        "--eta",
        type=float,
        default=None,
        help="perceptron: Projectron threshold (default 0.1); spa: aggressiveness (default 1); bogd: step "
        "(default 0.5); klms: step size (default 0.5)",
    )
    p.add_argument("--alpha", type=float, default=None, help="spa, pa-regressor: loss cap of the sampling probability (default 1)")
    p.add_argument("--beta", type=float, default=None, help="spa, pa-regressor: sampling divisor, >= alpha (default 20)")
    p.add_argument("--sampling", choices=sorted(_SAMPLING), default=None, help="bogd: discard rule (default uniform)")
    p.add_argument(
        "--averaged",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="pa / bogd / spa / pa-regressor: predict with the mean of all models held (default: spa yes, "
        "i.e. SPA-avg; pa, bogd and pa-regressor no); bsgd: polynomial-decay averaging (average, default yes)",
    )


def _add_kernel_args(p):
    """The kernel and its parameters, common to every learner."""
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


def _add_reading_args(p):
    """Passes, seed, and how the training file is read (chunks, width, labels, index base)."""
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
        help="classifiers: comma-separated labels, e.g. --classes -1,1 or --classes=-1,1 "
        "(default: a first pass over the file; needed for a pipe)",
    )
    _add_zero_based_arg(p, "default: zero-based iff index 0 occurs in the file; a pipe is one-based")


def _add_standardize_args(p):
    """--standardize and the number of examples its statistics come from."""
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


def _tune_grid_arg(text):
    """--tune-grid NAME=v1,v2,...: (name, [value texts]); the values are parsed as the
    learner's parameter types once the learner is known (_tuning._user_grid)."""
    name, sep, values = text.partition("=")
    name = name.strip()
    if not sep or not name:
        raise argparse.ArgumentTypeError(f"must be NAME=v1,v2,... (e.g. lam=1e-5,1e-4); got {text!r}")
    items = [v.strip() for v in values.split(",")]
    if not values.strip():
        raise argparse.ArgumentTypeError(f"{name}: no values (give NAME=v1,v2,...)")
    if "" in items:
        raise argparse.ArgumentTypeError(f"{name}: empty value in {values!r}")
    return name, items


def _tune_eta_arg(text):
    try:
        value = float(text)
    except ValueError:
        value = None
    if value is None or not value > 1 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a number > 1; got {text!r}")
    return value


def _add_tune_args(p):
    """--tune and its --tune-* options (each of which implies --tune)."""
    p.add_argument(
        "--tune",
        action="store_true",
        help="choose the learner's parameters on the stream, in the same single pass: every candidate of a "
        "grid (default: a data-driven grid, e.g. bsgd: gamma around the median heuristic of the first chunk x lam "
        "tied to the file's length, known unless --classes spares the scan that counts it) learns the file "
        "prequentially, successive halving keeps the best 1/eta at each rung, and the winner is the model "
        "(train: written to -o). Parameters fixed by other options are left out of the default grid. Prints "
        "the chosen parameters and the table of candidates",
    )
    p.add_argument(
        "--tune-grid",
        type=_tune_grid_arg,
        action="append",
        default=None,
        metavar="NAME=V1,V2,...",
        help="search these values of the learner's parameter NAME (its Python name, e.g. lam, C, gamma, "
        "variant, maintenance; repeatable), parsed as that parameter's type (numbers, names, true/false; "
        "budget 0 = no budget); given, it replaces the default grid: the grid is every combination of the "
        "values given, the other parameters stay as the options set them. Implies --tune",
    )
    p.add_argument(
        "--tune-eta",
        type=_tune_eta_arg,
        default=None,
        metavar="ETA",
        help="--tune's halving rate: a rung keeps the best ceil(n / ETA) candidates, and rungs are ETA times "
        "apart (default 3). Implies --tune",
    )
    p.add_argument(
        "--tune-jobs",
        type=_positive_int,
        default=None,
        metavar="N",
        help="--tune's threads running the candidates (default: every core); the result does not depend "
        "on it. Implies --tune",
    )


def _add_model_args(p):
    """The options of train and evaluate: the learner and its parameters, and the training file's reading."""
    _add_learner_args(p)
    _add_pa_args(p)
    _add_regression_args(p)
    _add_step_and_averaging_args(p)
    _add_kernel_args(p)
    _add_reading_args(p)
    _add_standardize_args(p)
    _add_tune_args(p)


# Each --learner: its estimator (a name in budgetkernel), and the learner-specific options it
# reads (their argparse dests). Every such option defaults to None, so that one given to a learner that ignores it
# is an error, not a model trained without it. A new learner is one entry here (its options
# added to _OPTION_NAMES if new).
_LEARNERS = {
    "bsgd": ("BudgetedSGDClassifier", ("budget", "maintenance", "lam", "loss", "averaged", "probability")),
    "pa": ("BudgetedPAClassifier", ("budget", "C", "variant", "loss", "pa_type", "averaged", "probability")),
    "perceptron": ("KernelPerceptron", ("budget", "maintenance", "eta", "probability")),
    "spa": ("SparsePAClassifier", ("eta", "alpha", "beta", "averaged", "probability")),
    "bogd": ("BOGDClassifier", ("budget", "lam", "eta", "sampling", "averaged", "probability")),
    # the regressors (real-valued targets: _training reads the file's labels as numbers)
    "bsgd-regressor": (
        "BudgetedSGDRegressor",
        ("budget", "maintenance", "lam", "t0", "loss", "epsilon", "fit_intercept"),
    ),
    "klms": ("KLMSRegressor", ("eta", "epsilon")),
    "krls": ("KRLSRegressor", ("nu", "lam")),
    "sliding-krls": ("SlidingWindowKRLSRegressor", ("budget", "lam")),
    "pa-regressor": (
        "BudgetedPARegressor",
        ("budget", "C", "variant", "pa_type", "epsilon", "spa_sampling", "alpha", "beta", "averaged", "fit_intercept"),
    ),
}

# The option of each learner-specific dest (as its error messages name it).
_OPTION_NAMES = {
    "budget": "--budget",
    "maintenance": "--maintenance",
    "lam": "--lam",
    "C": "--C",
    "variant": "--variant",
    "loss": "--loss",
    "pa_type": "--pa-type",
    "eta": "--eta",
    "alpha": "--alpha",
    "beta": "--beta",
    "sampling": "--sampling",
    "spa_sampling": "--spa-sampling",
    "probability": "--probability",
    "averaged": "--averaged",
    "epsilon": "--epsilon",
    "nu": "--nu",
    "t0": "--t0",
    "fit_intercept": "--fit-intercept",
}

# dest -> (option, the learners that read it): the tables above, by option.
_LEARNER_OPTIONS = {
    dest: (option, tuple(name for name, (_, dests) in _LEARNERS.items() if dest in dests))
    for dest, option in _OPTION_NAMES.items()
}

# The options whose choices are the union of several learners' names: each learner's own.
_CHOICES_OF = {
    ("maintenance", "bsgd"): (_MAINTENANCE, "a BSGD strategy"),
    ("maintenance", "bsgd-regressor"): (_REGRESSOR_MAINTENANCE, "a BSGD strategy"),
    ("maintenance", "perceptron"): (_PERCEPTRON_MAINTENANCE, "a perceptron rule"),
    ("loss", "bsgd"): (_BSGD_LOSSES, "a BSGD loss"),
    ("variant", "pa-regressor"): (_REGRESSOR_VARIANTS, "a BPA regression variant"),
    ("loss", "pa"): (_LOSSES, "a PA loss"),
    ("loss", "bsgd-regressor"): (_REGRESSION_LOSSES, "a regression loss"),
}


def _learner_class(name):
    """The estimator class of --learner NAME (imported now, with scikit-learn)."""
    return getattr(budgetkernel, _LEARNERS[name][0])


def is_regressor_learner(name):
    """Whether --learner NAME learns real-valued targets."""
    from sklearn.base import RegressorMixin

    return issubclass(_learner_class(name), RegressorMixin)


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
        given["budget"] = _budget_value(args.learner, given["budget"])  # --budget 0: no budget
    for dest in ("maintenance", "loss", "variant"):
        if dest in given and (dest, args.learner) in _CHOICES_OF:
            names, what = _CHOICES_OF[dest, args.learner]
            if given[dest] not in names:
                raise ValueError(f"{_OPTION_NAMES[dest]} {given[dest]} is not {what}: {sorted(names)}")
    if args.learner == "bsgd" and "averaged" in given:
        given["average"] = given.pop("averaged")  # BSGD's name: polynomial-decay averaging
    if "spa_sampling" in given:
        given["sampling"] = given.pop("spa_sampling")  # --sampling is BOGD's discard rule
    clf = _learner_class(args.learner)(
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
