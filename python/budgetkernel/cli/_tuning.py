"""--tune: the learner wrapped in a PrequentialSearch, run over the training file's stream.

The grid is checked (names, values, every candidate's parameters) when the search is built,
before the file is read. The search learns the chunks the CLI reads anyway, in one pass per
epoch; the winner gets the reading's metadata (index base, --standardize statistics) exactly
as a model trained without --tune, and is what train saves and evaluate tests.
"""

from __future__ import annotations

import argparse
import numbers
import sys
import time

from ..model_selection import PrequentialSearch, default_grid
from ..model_selection._grids import build_candidates, candidate_params
from ..stream import ProgressBar
from ._options import _LEARNER_OPTIONS, _budget_value, _gamma_arg, is_regressor_learner
from ._training import _locate_row_error, _record_reading, _RegressionMetrics, _scaler, _TrainingStream

_TRUE = ("true", "yes", "1")
_FALSE = ("false", "no", "0")


def _tuning(args):
    """Whether --tune was asked for, by itself or by one of the --tune-* options."""
    return args.tune or any(v is not None for v in (args.tune_grid, args.tune_eta, args.tune_jobs))


def _parameter_name(clf, learner, name):
    """A --tune-grid NAME as the estimator's parameter: the Python name, or the option's
    spelling (pa-type, and --averaged, which BSGD calls average)."""
    name = name.replace("-", "_")
    if learner == "bsgd" and name == "averaged":
        name = "average"
    params = clf.get_params(deep=False)
    if name not in params:
        raise ValueError(
            f"--tune-grid {name}: not a parameter of --learner {learner} ({type(clf).__name__}); "
            f"its parameters are {', '.join(sorted(params))}"
        )
    return name


def _grid_value(learner, name, default, text):
    """One --tune-grid value, parsed as the parameter's type (that of its default), as the
    option of the same name parses it: gamma a number or 'scale', budget 0 for no budget."""
    value = _parsed(name, default, text)
    return _budget_value(learner, value, "--tune-grid budget") if name == "budget" else value


def _parsed(name, default, text):
    try:
        if name == "gamma":
            return _gamma_arg(text)
        if name == "budget":
            return int(text)
        if isinstance(default, bool):
            if text.lower() not in _TRUE + _FALSE:
                raise ValueError
            return text.lower() in _TRUE
        if isinstance(default, numbers.Integral):
            return int(text)
        if isinstance(default, float):
            return float(text)
        if isinstance(default, str):
            return text
        for convert in (int, float):  # a parameter whose default is None
            try:
                return convert(text)
            except ValueError:
                pass
        return text
    except (ValueError, TypeError, argparse.ArgumentTypeError):
        raise ValueError(f"--tune-grid {name}: {text!r} is not {_kind(name, default)}") from None


def _kind(name, default):
    if name == "gamma":
        return "a number or 'scale'"
    if name == "budget":
        return "an integer (0 = no budget)"
    if isinstance(default, bool):
        return "true or false"
    return "an integer" if isinstance(default, numbers.Integral) else "a number"


def _user_grid(clf, args):
    """--tune-grid as a param_grid (None when not given), every value parsed."""
    if not args.tune_grid:
        return None
    grid = {}
    defaults = clf.get_params(deep=False)
    for raw_name, texts in args.tune_grid:
        name = _parameter_name(clf, args.learner, raw_name)
        if name in grid:
            raise ValueError(f"--tune-grid {name} is given twice: give all its values in one NAME=v1,v2,...")
        grid[name] = [_grid_value(args.learner, name, defaults[name], t) for t in texts]
    return grid


def _fixed_parameters(args):
    """The estimator parameters the options set explicitly, which the default grid leaves alone."""
    fixed = {dest for dest in _LEARNER_OPTIONS if getattr(args, dest) is not None}
    if args.learner == "bsgd" and "averaged" in fixed:
        fixed.add("average")
    if args.gamma != "scale":
        fixed.add("gamma")
    return fixed


def _build_search(clf, args):
    """The PrequentialSearch of --tune (None without it); an invalid grid fails here, before
    any reading or learning."""
    if not _tuning(args):
        return None
    grid = _user_grid(clf, args)
    if grid is not None:
        try:  # every candidate's parameters through the estimator's own checks
            build_candidates(clf, candidate_params(clf, grid, None, None))
        except (ValueError, TypeError) as e:
            raise ValueError(f"--tune-grid: {e}") from None
    return PrequentialSearch(
        clf,
        grid,
        eta=3 if args.tune_eta is None else args.tune_eta,
        n_jobs=args.tune_jobs,
        random_state=args.random_state,
    )


def _default_grid(search, args, X, n_expected):
    """The search's default grid for the first chunk X, less the parameters the options fix."""
    grid = default_grid(search.estimator, X, n_expected)
    fixed = _fixed_parameters(args)
    return {k: v for k, v in grid.items() if k not in fixed}


def _marks(search):
    """Each candidate's (examples, mistakes) so far, as the search counts them (candidates of
    IncrementalSVC's C path share a model); empty before the first chunk."""
    return list(zip(search._seen, search._wrong)) if hasattr(search, "_seen") else []


def _error_since(search, marks):
    """The current best's prequential error since ``marks`` (all zero for the first pass)."""
    i = search.best_index_
    e0, m0 = marks[i] if marks else (0, 0)
    return (search._wrong[i] - m0) / max(search._seen[i] - e0, 1)


def _tune_pass(search, args, chunks, plan, n_expected, bar, targets=None):
    """One pass of the search over the file's chunks; returns (examples, seconds). A
    regressor's targets are also summed into ``targets`` (the pass's R^2)."""
    n, seconds = 0, 0.0
    for X, y in chunks:
        if search.param_grid is None:  # the first chunk, without --tune-grid
            search.param_grid = _default_grid(search, args, X, n_expected)
        t0 = time.perf_counter()
        search.partial_fit(X, y, **({} if plan.classes is None else {"classes": plan.classes}))
        seconds += time.perf_counter() - t0
        if targets is not None:  # after the core accepted them (finite, squares finite)
            targets.add_targets(y)
        n += len(y)
        bar.update(len(y), err=f"{_error_since(search, None):.4f}")
    return n, seconds


def _tune_stream(search, args, path, plan, progress):
    """_train_stream's counterpart for --tune: the search over args.epochs passes of the file.
    Returns (the winner, the results _train_stream returns, for the winner)."""
    n_expected = plan.n_rows * args.epochs if plan.n_rows else None
    search.set_params(n_expected=n_expected)
    scaler = _scaler(args)
    bar = ProgressBar(n_expected, desc="tuning", enabled=progress)
    seconds, marks, n, start = 0.0, [], 0, []
    regression = is_regressor_learner(args.learner)
    for epoch in range(args.epochs):
        chunks = _TrainingStream(args, path, plan, scaler, first_pass=epoch == 0)
        marks = _marks(search)
        if regression and marks:  # every candidate's counters where this pass starts
            start = [dict(c._model.counters) for c in search.candidates_]
        targets = _RegressionMetrics() if regression else None
        try:
            n, pass_seconds = _tune_pass(search, args, chunks, plan, n_expected, bar, targets)
        except ValueError as e:
            raise _locate_row_error(e, path, chunks.lines, scaler is not None) from None
        if n == 0:
            raise ValueError("the stream holds no examples")
        seconds += pass_seconds
        if not args.quiet and args.epochs > 1:
            print(
                f"epoch {epoch + 1}: online {'MSE' if regression else 'error'} "
                f"{_error_since(search, marks):{'.6g' if regression else '.4f'}} (best candidate)",
                file=sys.stderr,
            )
    bar.close()
    winner = search.best_estimator_
    result = {
        "examples": n,
        "online_error": float(_error_since(search, marks)),  # the last pass's, as _train_stream's
        "train_seconds": seconds,
        "examples_per_second": n * args.epochs / seconds if seconds > 0 else float("nan"),
        "n_support": int(getattr(winner, "n_support_", 0)),
    }
    if regression:  # the winner's prequential MSE, MAE and R^2 over the last pass
        del result["online_error"]
        c, c0 = winner._model.counters, start[search.best_index_] if start else {}
        targets.sse = c["squared_error"] - c0.get("squared_error", 0.0)
        targets.sae = c["absolute_error"] - c0.get("absolute_error", 0.0)
        result["online"] = targets
    if getattr(winner, "averaged", False) and hasattr(winner, "n_support_average_"):
        result["n_support_average"] = int(winner.n_support_average_)
    _record_reading(winner, plan, scaler)
    return winner, result


def _format_params(params):
    # repr of a float is exact: the value given back to --gamma / --lam trains the same model
    return ", ".join(f"{k}={v!r}" if isinstance(v, float) else f"{k}={v}" for k, v in sorted(params.items()))


def _search_report(search):
    """The lines --tune prints: what was searched, the candidates' table, the choice."""
    n = len(search.candidate_params_)
    rungs = ", ".join(f"{r:,}" for r in search.rungs_ if r <= search.n_seen_)
    halving = f"halving by {search.eta:g} at {rungs} examples" if rungs else "no halving"
    chosen = _format_params(search.best_params_) or "none (no parameter was left to search)"
    ranked = "rank: the survivors by their error over the latest window (window_), then the dropped"
    return "\n".join(
        [f"--tune: {n} candidate{'s' if n != 1 else ''}, {halving}; {ranked}", search.summary(),
         f"chosen parameters: {chosen}"]
    )
