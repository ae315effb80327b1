"""Candidate parameters for PrequentialSearch: the data-driven default grids, and a user's grid
(lists, or scipy.stats distributions) expanded into candidates and checked before any learning.

Why the defaults are what they are (docs: the user guide repeats this):

- gamma (RBF): the median heuristic, gamma_m = 1 / median of the squared distances between
  rows of the first chunk (at most 500 rows of it), times 1, 4 and 16. On standardised data the
  median squared distance is about 2 * n_features, so gamma_m is half of gamma='scale'. The
  grid leans wide of it because a budgeted model on fine structure wants a narrower kernel than
  the typical distance: measured with BSGD at B = 100 (one pass), the best factor was 1 on
  digits and wine, 4-16 on breast cancer, 16 on the noisy checkerboard, and 1-16 about the same
  on the two Gaussians and waveform; 1/4 was never the best, 64 rarely.
- lam of the Pegasos learners: their objective is lam/2 |w|^2 + (1/n) sum of hinge losses, the
  SVM's with C = 1 / (lam n), so the lam that suits a stream depends on its length n: a lam
  chosen on a prefix is too strong for the whole stream. With ``n_expected`` known, lam is
  1 / (C n_expected) for C on a log range from 1e-4 to 10; unknown, lam spans 1e-1..1e-6. A
  budget wants a small C: the project's tuned settings on 10^5-example streams at B = 100 had
  lam from 1e-4 to 1e-2 (C from 1e-3 to 0.1), and digits' best is C ~ 0.1.
- C of the PA family, the SVMs and the TVM, eta of the perceptrons, SPA and BOGD bound a single
  step or weigh the losses of the examples held, so they do not scale with n: log ranges.
- The regressors (searched by prequential MSE): gamma at 1/4, 1 and 4 times the median
  heuristic (a smooth target wants a wider kernel than a class boundary; not yet measured as the
  classifiers' factors were). BSGD regression's lam as the classifier's (the same Pegasos
  objective, a mean loss), with 5 values. The filters' lam (KRLS, sliding-window KRLS: ridge
  on a sum of squared errors, not a mean, so independent of n) and KLMS's step eta on log
  ranges. The parameters that trade accuracy for size are left as given: a search by MSE would
  always pick the most centres (KLMS's quantisation epsilon, KRLS's ALD threshold nu, the
  budgets), and epsilon of the losses is in the targets' units, which the first chunk's X
  does not tell.
- The budget maintenance where it changes accuracy most (the perceptrons: random, max-margin,
  projectron++). BSGD and BPA keep the one their estimator was given (merge and nn by
  default): their projections cost O(B^2) per step, which broke the search's time bound
  (BPA's grid with project ran at 6.7 times one fit), and the defaults were the best of their
  kind measured (bench/tuning.py).
"""

from __future__ import annotations

import numbers

import numpy as np
from sklearn.base import clone
from sklearn.metrics.pairwise import euclidean_distances
from sklearn.model_selection import ParameterGrid, ParameterSampler

__all__ = ["build_candidates", "candidate_params", "default_grid", "median_gamma"]

_GAMMA_FACTORS = (1.0, 4.0, 16.0)
_REGRESSION_GAMMA_FACTORS = (0.25, 1.0, 4.0)

# A regressor's grid beyond gamma (module docstring): name -> (parameter -> values).
_REGRESSION_GRIDS = {
    "KLMSRegressor": lambda n_expected: {"eta": [0.05, 0.1, 0.2, 0.4, 0.8]},
    "KRLSRegressor": lambda n_expected: {"lam": _log(1e-5, 1e-1, 5)},
    "SlidingWindowKRLSRegressor": lambda n_expected: {"lam": _log(1e-4, 1.0, 5)},
    "BudgetedSGDRegressor": lambda n_expected: {"lam": _lam_range(n_expected, 5)},
    "BudgetedPARegressor": lambda n_expected: {"C": _log(0.01, 100.0, 5)},
}
_MEDIAN_ROWS = 500


def median_gamma(X):
    """1 / median of the squared pairwise distances of (at most 500 evenly spaced) rows of X;
    1 / n_features when X has fewer than two distinct rows.

    Examples
    --------
    >>> import numpy as np
    >>> from budgetkernel.model_selection import median_gamma
    >>> median_gamma(np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 2.0]]))
    0.25
    """
    X = np.asarray(X, dtype=np.float64)
    n, d = X.shape
    rows = X[np.linspace(0, n - 1, min(n, _MEDIAN_ROWS)).astype(int)] if n > _MEDIAN_ROWS else X
    dist = euclidean_distances(rows, squared=True)[np.triu_indices(len(rows), k=1)]
    dist = dist[dist > 0]
    if dist.size == 0:
        return 1.0 / d
    med = float(np.median(dist))
    return 1.0 / med if np.isfinite(1.0 / med) else 1.0 / d


def _log(lo, hi, n):
    return [float(v) for v in np.logspace(np.log10(lo), np.log10(hi), n)]


def _lam_range(n_expected, n):
    """Pegasos' lam = 1 / (C n) over C in 1e-4..10 (module docstring); 1e-1..1e-6 for an
    unknown stream length. Strongest first."""
    if n_expected:
        return [1.0 / (C * n_expected) for C in _log(1e-4, 10.0, n)]
    return _log(1e-1, 1e-6, n)


def default_grid(estimator, X, n_expected=None):
    """The default parameter grid of :class:`PrequentialSearch` for ``estimator``.

    ``estimator`` is a budgetkernel classifier or regressor. An RBF kernel's gamma is placed around
    :func:`median_gamma` of the first chunk ``X``: 1, 4 and 16 times it (for
    :class:`~budgetkernel.KernelPerceptron`, which has no step size to tune, nine powers of
    two from 1/4 to 64 times it). Pegasos' lam is 1 / (C n_expected) for C on a log range
    (1e-1 down to 1e-6 when ``n_expected`` is None); C of the PA family, the SVMs and the TVM
    and eta of SPA span log ranges, BOGD gets three values each of eta and lam, and a
    budgeted perceptron also searches its maintenance rule. A regressor's gamma is 1/4, 1 and
    4 times the median heuristic, with five values of its regularisation (lam) or step (KLMS's
    eta); its budget, quantisation and ALD threshold are not searched. Returns a dict of
    parameter name -> list of values.

    Examples
    --------
    gamma at 1, 4 and 16 times the median heuristic, and for Pegasos lam = 1 / (C n) over a
    log range of C:

    >>> from budgetkernel import BudgetedSGDClassifier, datasets
    >>> from budgetkernel.model_selection import default_grid, median_gamma
    >>> X, y = datasets.checkerboard(1000, random_state=0)
    >>> grid = default_grid(BudgetedSGDClassifier(), X, n_expected=100_000)
    >>> sorted(grid), len(grid["lam"])
    (['gamma', 'lam'], 9)
    >>> [round(g / median_gamma(X), 6) for g in grid["gamma"]]
    [1.0, 4.0, 16.0]
    """
    name = type(estimator).__name__
    grid = {}
    factors = _REGRESSION_GAMMA_FACTORS if name in _REGRESSION_GRIDS else _GAMMA_FACTORS
    if "gamma" in estimator.get_params() and getattr(estimator, "kernel", "rbf") == "rbf":
        gm = median_gamma(X)
        grid["gamma"] = [gm * f for f in factors]
    if name in _REGRESSION_GRIDS:
        grid.update(_REGRESSION_GRIDS[name](n_expected))
    elif name == "BudgetedSGDClassifier":
        grid["lam"] = _lam_range(n_expected, 9)
    elif name == "LinearPegasosClassifier":
        grid["lam"] = _lam_range(n_expected, 27)
    elif name == "BudgetedPAClassifier":
        grid["C"] = _log(0.01, 100.0, 9)
    elif name == "KernelPerceptron":
        # The perceptron's step has no size to tune (its eta is Projectron's threshold), so
        # gamma gets the grid's width, and the maintenance rule where a budget needs one.
        if "gamma" in grid:
            grid["gamma"] = [grid["gamma"][0] * 2.0**k for k in range(-2, 7)]
        if estimator.budget is not None:
            grid["maintenance"] = ["random", "max-margin", "projectron++"]
    elif name == "SparsePAClassifier":
        grid["eta"] = _log(0.01, 100.0, 9)
    elif name == "BOGDClassifier":
        grid["eta"] = [0.1, 0.5, 2.5]
        grid["lam"] = [1e-1, 1e-2, 1e-3]
    elif name in ("IncrementalSVC", "ReservoirSVC", "TwinVectorMachine"):
        grid["C"] = _log(0.01, 100.0, 9)
    return {k: v for k, v in grid.items() if v}


def _is_distribution(v):
    return hasattr(v, "rvs")


def _check_grid(estimator, grid):
    """Names and shapes of a user's grid: a dict (or list of dicts) of parameter -> non-empty
    list or scipy.stats distribution, every name a parameter of ``estimator``."""
    grids = grid if isinstance(grid, (list, tuple)) else [grid]
    if not grids or not all(grids):
        raise ValueError("param_grid is empty: give at least one parameter with at least one value")
    valid = estimator.get_params(deep=False)
    for g in grids:
        if not isinstance(g, dict):
            raise TypeError(f"param_grid must be a dict or a list of dicts; got {type(g).__name__}")
        for k, v in g.items():
            if k not in valid:
                raise ValueError(
                    f"param_grid names {k!r}, which is not a parameter of {type(estimator).__name__}; "
                    f"its parameters are {sorted(valid)}"
                )
            if _is_distribution(v):
                continue
            if isinstance(v, (str, bytes)) or not hasattr(v, "__iter__"):
                raise TypeError(f"param_grid[{k!r}] must be a list of values or a distribution; got {v!r}")
            if len(list(v)) == 0:
                raise ValueError(f"param_grid[{k!r}] is empty")
    return grids


def candidate_params(estimator, grid, n_candidates, random_state):
    """The candidates' parameter dicts, in a fixed order: every point of a grid of lists, or
    ``n_candidates`` draws (scikit-learn's ParameterSampler, seeded by random_state) when the
    grid holds a distribution or n_candidates is given. Names and shapes are checked here;
    the values by build_candidates."""
    grids = _check_grid(estimator, grid)
    sampled = n_candidates is not None or any(_is_distribution(v) for g in grids for v in g.values())
    if not sampled:
        return list(ParameterGrid(grids))
    if n_candidates is None:
        raise ValueError("param_grid holds a distribution: pass n_candidates, the number of draws")
    if isinstance(n_candidates, bool) or not isinstance(n_candidates, numbers.Integral) or n_candidates < 1:
        raise ValueError(f"n_candidates must be a positive int; got {n_candidates!r}")
    return list(ParameterSampler(grids, int(n_candidates), random_state=random_state))


def build_candidates(estimator, params, seeds=None):
    """A clone of ``estimator`` per parameter dict (random_state set to its seed, where one is
    given), each through the estimator's own checks: a bad value raises, naming the
    candidate, before anything learns."""
    out = []
    for p, seed in zip(params, seeds or [None] * len(params)):
        c = clone(estimator).set_params(**p)
        if seed is not None:
            c.set_params(random_state=seed)
        try:
            c._validate_params()
        except (ValueError, TypeError) as e:
            raise type(e)(f"candidate {p}: {e}") from None
        out.append(c)
    return out
