"""PrequentialSearch: hyper-parameters chosen on the stream, in one pass.

Every candidate is a clone of the wrapped estimator with its own parameters. A chunk is
validated and its labels encoded once, then handed to every surviving candidate's core
learner by one call of the core (``partial_fit_many``): in C++, with the GIL released, over a
pool of ``n_jobs`` threads, each candidate owned by one thread for the whole chunk. Each
candidate predicts an example before it learns it (the core's test-then-train), so its
mistake counter is its prequential error; chunks are split at the rungs (_schedule), where the
survivors are ranked and halved. Nothing of the stream is kept beyond the current chunk.
A regressor's candidates learn real targets and are ranked by their squared (or absolute)
errors: what that changes is in _regression.
"""

from __future__ import annotations

import numbers
import os

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, MetaEstimatorMixin, clone
from sklearn.utils import RegressorTags
from sklearn.utils._available_if import available_if
from sklearn.utils.validation import check_is_fitted

from .._base import OnlineClassifierMixin, _curve_point
from .._labels import check_targets, encode
from .._native import core as _core
from .._publish import _PublishedStateMixin
from .._regressor import OnlineRegressorMixin, _target
from .._regressor import _targets as _regression_targets
from .._validation import _check_choice, _check_positive, _check_random_state, _seed, _store_params, validated
from . import _path, _regression, _remote, _schedule
from ._grids import build_candidates, candidate_params, default_grid
from ._report import format_results, results_table

__all__ = ["PrequentialSearch"]

_JUDGES = ("window", "cumulative")
_SCORINGS = ("error", "mse", "mae")
# The first power-of-two mark (_window_start).
_FIRST_MARK = 16
# What _start sets (fit starts over without them).
_FITTED = (
    "candidate_params_", "candidates_", "classes_", "n_features_in_", "feature_names_in_", "rungs_", "_alive",
    "_seen", "_wrong", "_marks", "_next_mark", "_rung_errors", "_dropped_at", "_position", "_groups",
    "_real_targets", "_counter",
)


class PrequentialSearch(_PublishedStateMixin, MetaEstimatorMixin, ClassifierMixin, BaseEstimator):
    """Successive halving over a parameter grid, on the stream, in one pass.

    Every candidate (the wrapped estimator with one point of the grid) sees the same examples
    in the same order and predicts each before learning it; at each rung the best
    ``1 / eta`` of the survivors by prequential error go on, and the last survivor keeps
    learning. Predictions come from the best candidate (``best_estimator_``).

    Parameters
    ----------
    estimator : budgetkernel classifier or regressor
        The learner to tune (any of the package's estimators), with the parameters that are not
        searched. A regressor's candidates are ranked by their prequential mean squared error
        (see ``scoring``).
    param_grid : dict, list of dicts or None, default=None
        Parameter name -> list of values, or a scipy.stats distribution (then ``n_candidates``
        draws). None: the data-driven default grid of the estimator (see
        :func:`budgetkernel.model_selection.default_grid`): gamma around the median heuristic
        of the first chunk, the regularisation on a log range (tied to ``n_expected`` for the
        Pegasos learners), the budget maintenance where it matters.
    n_candidates : int or None, default=None
        Draws from the grid (scikit-learn's ParameterSampler); None: every point of a grid of
        lists.
    eta : float, default=3
        Halving rate (> 1): a rung keeps the best ceil(n / eta) survivors (at most n - 1, so
        that an eta below 2 comes down to one too), and rungs are eta times apart.
    first_rung : int or None, default=None
        Examples before the first halving. None: the last halving at a quarter of
        ``n_expected``, the first at least 1000 examples and 100 per class.
    n_expected : int or None, default=None
        The expected stream length (``fit`` knows it): places the rungs and sets the default
        grid's lam for the Pegasos learners.
    judge : {'window', 'cumulative'}, default='window'
        Rank at a rung by the prequential error since the previous rung ('window': each
        candidate as it is now), or over all it has seen ('cumulative': favours candidates
        that learn fast and then plateau, see bench/tuning.py).
    scoring : {'error', 'mse', 'mae'} or None, default=None
        What the candidates are ranked by, each example predicted before it is learned: a
        classifier's error rate ('error'), a regressor's mean squared ('mse') or absolute
        ('mae') error. None: 'error' for a classifier, 'mse' for a regressor.
    n_jobs : int or None, default=None
        Threads that run the candidates of a chunk (None or -1: every core). The results do not
        depend on it.
    random_state : int, numpy Generator, RandomState or None, default=None
        Seeds the sampling of distributions and, when the estimator's own random_state is None,
        each candidate's seed.
    client : dask.distributed.Client or None, default=None
        Spreads the candidates over the cluster's workers (one group per worker thread; the
        search's bookkeeping stays here). ``fit`` then also takes Dask arrays and dataframes,
        whose partitions every worker reads where they are; each candidate's model is the
        one a local search gives, bit for bit. A pickled search forgets its client. The
        IncrementalSVC path over C runs locally.

    Attributes
    ----------
    candidates_ : list of estimators
        Every candidate, in the order of ``candidate_params_`` (dropped ones keep the model
        they had when dropped).
    candidate_params_ : list of dict
    best_index_ : int
    best_estimator_, best_params_ : the best survivor and its parameters
    rungs_ : list of int
        Examples seen at each rung.
    results_ : dict of lists
        One entry per candidate (scikit-learn's ``cv_results_`` layout): ``params``,
        ``param_<name>``, ``examples`` it learned, ``rung_errors`` (its prequential error over
        each rung's window, by ``scoring``: a regressor's MSE or MAE), ``online_error``,
        ``window_error`` (a survivor's error over its latest window, as a rung would judge it
        now, see ``judge``: it ranks the survivors, ``best_index_`` the lowest; None for the
        dropped), ``dropped_at`` (examples seen when dropped; None for survivors), ``rank``
        (the survivors by ``window_error``, then the dropped, the later the better, each time
        by their last rung error).
    n_seen_ : int
        Examples of the stream that every surviving candidate has learned: where the next
        chunk starts.
    classes_, n_features_in_

    Notes
    -----
    A chunk is checked whole (every row and label, by every surviving candidate's core)
    before any candidate learns any of it: a call that fails on its input changes nothing,
    and the rows it names are the chunk's. ``fit`` and the first ``partial_fit`` or
    ``learn_one`` build the search aside and publish it whole once it has learned (another
    thread sees the search before or after, never one half built); a ``fit`` that fails on
    its input keeps the search fitted before.

    Ctrl-C during a chunk stops every candidate between two examples: each keeps the rows it
    learned before the stop (as the other estimators do), so the survivors may stop at
    different rows. ``n_seen_`` is then the fewest rows any survivor learned, and the next
    chunk must start there (the resume loop of the user guide, ``X[n_seen_ - seen:]``): each
    survivor first learns the rows of it that it has not learned yet, so that every
    candidate sees every example once, as without the stop. ``best_estimator_`` is always a
    survivor that holds a model.

    Examples
    --------
    Six candidates on one pass over 5000 examples: a third survive the first rung, one
    the second, and it predicts:

    >>> from budgetkernel import BudgetedSGDClassifier, datasets
    >>> from budgetkernel.model_selection import PrequentialSearch
    >>> X, y = datasets.checkerboard(5000, random_state=0)
    >>> X_test, y_test = datasets.checkerboard(1000, random_state=1)
    >>> grid = {"gamma": [0.5, 2.0, 8.0], "lam": [1e-3, 1e-4]}
    >>> search = PrequentialSearch(BudgetedSGDClassifier(budget=50), grid, random_state=0).fit(X, y)
    >>> search.rungs_, search.best_params_
    ([1000, 3000], {'gamma': 8.0, 'lam': 0.001})
    >>> round(search.score(X_test, y_test), 2)
    0.95

    A regressor's candidates are ranked by their prequential mean squared error:

    >>> from budgetkernel import KRLSRegressor
    >>> from budgetkernel.datasets import embed_series, mackey_glass
    >>> X, y = embed_series(mackey_glass(2007, random_state=0), order=7)
    >>> search = PrequentialSearch(KRLSRegressor(nu=1e-3, gamma=1.0), {"lam": [1e-4, 1e-2, 1.0]}).fit(X, y)
    >>> search.rungs_, search.best_params_
    ([1000], {'lam': 0.0001})
    """

    _supervised = True
    _multiclass = True

    def __init__(
        self,
        estimator,
        param_grid=None,
        *,
        n_candidates=None,
        eta=3,
        first_rung=None,
        n_expected=None,
        judge="window",
        scoring=None,
        n_jobs=None,
        random_state=None,
        client=None,
    ):
        _store_params(self, locals())

    # ------------------------------------------------------------ parameters
    def _check_params(self):
        if not isinstance(self.estimator, (OnlineClassifierMixin, OnlineRegressorMixin)):
            raise TypeError(
                f"estimator must be a budgetkernel classifier or regressor; got {type(self.estimator).__name__}"
            )
        if self.scoring is not None:
            _check_choice("scoring", self.scoring, _regression.scorings(self.estimator))
        _check_positive("eta", self.eta)
        if not self.eta > 1:
            raise ValueError(f"eta must be > 1 (a rung keeps 1 / eta of the candidates); got {self.eta!r}")
        _check_positive("first_rung", self.first_rung, integer=True, allow_none=True)
        _check_positive("n_expected", self.n_expected, integer=True, allow_none=True)
        _check_choice("judge", self.judge, _JUDGES)
        if not (isinstance(self.n_jobs, numbers.Integral) and self.n_jobs == -1):  # -1: every core
            _check_positive("n_jobs", self.n_jobs, integer=True, allow_none=True)
        _check_random_state(self.random_state)
        _remote.check_client(self.client)

    def _threads(self):
        return os.cpu_count() or 1 if self.n_jobs in (None, -1) else int(self.n_jobs)

    def set_params(self, **params):
        with self._state_lock():  # not between a fit's building and its publishing
            return super().set_params(**params)

    def __getstate__(self):
        state = dict(self.__dict__)
        state.pop("_lock", None)  # a lock cannot be pickled; each copy makes its own (_state_lock)
        state["client"] = None  # a connection does not travel (nor do the workers' candidates need it)
        return state

    # ------------------------------------------------------------- building
    def _start(self, X, y, classes, n_expected, feature_order=None):
        """The candidates, built from the first chunk (X, y): parameters checked and every
        candidate's model made before anything learns. Returns the validated chunk."""
        self._check_params()
        proto = clone(self.estimator)
        Xv, yv = validated(proto, X, y, reset=True)  # records n_features_in_ (and names) on proto
        regression = self._real_targets = _regression.is_regression(self.estimator)
        if regression:
            yv = _regression_targets(yv)
        else:
            check_targets(yv)
        if classes is None and not regression:  # fit: the labels of y
            classes = np.unique(yv)
        grid = self.param_grid
        if grid is None:  # empty only with nothing to tune (then the estimator alone)
            grid = default_grid(proto, Xv, n_expected) or {"n_epochs": [self.estimator.n_epochs]}
        base = None if self.random_state is None else _seed(self.random_state)
        params = candidate_params(self.estimator, grid, self.n_candidates, None if base is None else base % 2**32)
        candidates = build_candidates(self.estimator, params, self._seeds(base, len(params)))
        # IncrementalSVC over C: one model per group walks its C values (_path); else one each.
        self._groups = _path.groups(self.estimator, params)
        for c in candidates:
            for attr in ("n_features_in_", "feature_names_in_"):
                if attr in proto.__dict__:
                    setattr(c, attr, getattr(proto, attr))
            if regression:
                c._init_model(Xv, feature_order=feature_order)
            else:
                c._init_model(Xv, classes, feature_order=feature_order)
        for g in self._groups or ():
            for i in g[1:]:  # the group's model is its first candidate's until it moves
                del candidates[i].__dict__["_model"]
        self.candidate_params_ = params
        self.candidates_ = candidates
        if not regression:
            self.classes_ = candidates[0].classes_
        self.n_features_in_ = candidates[0].n_features_in_
        if "feature_names_in_" in proto.__dict__:
            self.feature_names_in_ = proto.feature_names_in_
        self._counter = _regression.counter_name(self.estimator, self.scoring)
        # a regressor's first rung: at least MIN_FIRST_RUNG examples (it has no classes)
        n_classes = 1 if regression else len(self.classes_)
        self.rungs_ = _schedule.rung_schedule(len(params), self.eta, self.first_rung, n_expected, n_classes)
        self._start_record(len(params))
        return Xv, yv

    def _start_record(self, n):
        """The search's record of n fresh candidates, all alive, at the start of the stream."""
        self._alive = list(range(n))  # best first after each halving
        self._seen = [0] * n  # examples each candidate predicted (and learned)
        # ... and its prequential mistakes among them (a regressor: the sum of its squared or
        # absolute errors, by scoring)
        self._wrong = [0] * n
        # (position, seen, wrong) of each candidate at each rung and each power of two: a
        # window starts at the latest mark at most 1/eta of the position back (_window_start)
        self._marks = [[(0, 0, 0)] for _ in range(n)]
        self._next_mark = _FIRST_MARK
        self._rung_errors = [[] for _ in range(n)]
        self._dropped_at = [None] * n
        self._position = 0

    def _seeds(self, base, n):
        """Each candidate's random_state: the estimator's own if it has one (the same for all,
        as a one-candidate search must equal the estimator), else drawn from ``base``, the
        search's random_state drawn once (None: None)."""
        if base is None or getattr(self.estimator, "random_state", None) is not None:
            return None
        return [int(s) for s in np.random.default_rng(base).integers(0, 2**63, size=n)]

    # --------------------------------------------------------------- fitting
    def fit(self, X, y):
        """A fresh search over (X, y): ``n_epochs`` passes of the wrapped estimator, one
        chunk each (its length sets ``n_expected`` unless given).

        Returns
        -------
        self
        """
        self._publish(lambda new: new._fit(X, y))
        return self

    def _fit(self, X, y):
        if self.client is not None and _remote.is_collection(X):
            _remote.fit_collection(self, X, y)
            return
        epochs = getattr(self.estimator, "n_epochs", 1)
        n = len(y) if hasattr(y, "__len__") else None
        n_expected = self.n_expected or (n * epochs if n else None)
        X, y = self._start(X, y, None, n_expected)
        for order in self.candidates_[0]._epochs(len(y)):
            self._feed(X[order], y[order])

    def _publish(self, build):
        """Runs ``build(new)`` on a private copy ``new`` of the search (its parameters, none of
        its fitted state) and publishes new's state whole, by one assignment (as the
        estimators' _publish_new): readers see the search before or after. One that failed
        publishes nothing, unless it learned rows before a stop (Ctrl-C, an exact SVM's
        breakdown) and not because its input was rejected: nothing learned is lost."""
        with self._state_lock():
            new = object.__new__(type(self))
            new.__dict__.update((k, v) for k, v in self.__dict__.items() if k not in _FITTED)
            try:
                build(new)
            except (ValueError, TypeError):
                raise
            except BaseException:
                if new.__dict__.get("_position", 0) > 0:
                    self.__dict__ = new.__dict__
                raise
            self.__dict__ = new.__dict__

    def partial_fit(self, X, y, classes=None):
        """Learns one chunk of the stream with every surviving candidate (prequentially).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
        classes : array-like, default=None
            Every label of the stream; required on the first call for a classifier (a
            regressor takes none).

        Returns
        -------
        self
        """
        regression = _regression.is_regression(self.estimator)
        if regression and classes is not None:
            raise ValueError("classes does not apply to a search of regressors (their targets are real numbers)")
        with self._state_lock():
            if "_alive" not in self.__dict__:
                if classes is None and not regression:
                    raise ValueError("classes must be passed on the first call to partial_fit")
                self._publish(lambda new: new._feed(*new._start(X, y, classes, self.n_expected)))
            elif self._real_targets:
                self._feed(*self._lead()._chunk_data(X, y))
            else:
                self._feed(*self._lead()._chunk_data(X, y, classes))
        return self

    def learn_one(self, x, y, classes=None):
        """Learns one example (a 1-D array, or a dict as the estimators take it) with every
        surviving candidate. Before the first chunk, gamma's grid comes from this example
        alone (the median heuristic needs two rows: 1 / n_features)."""
        regression = _regression.is_regression(self.estimator)
        if regression and classes is not None:
            raise ValueError("classes does not apply to a search of regressors (their targets are real numbers)")
        with self._state_lock():
            fresh = "_alive" not in self.__dict__
            v, names = (clone(self.estimator) if fresh else self._lead())._as_vector(x)
            X = v.reshape(1, -1)
            if regression:  # a one-row chunk of a finite target
                y1 = np.array([_target(y)])
                if fresh:
                    self._publish(lambda new: new._feed(*new._start(X, y1, None, self.n_expected, names)))
                else:
                    self._feed(*self._lead()._chunk_data(X, y1))
            elif fresh:
                if classes is None and isinstance(y, (bool, np.bool_)):
                    classes = [False, True]
                if classes is None:
                    raise ValueError("classes must be passed on the first call to learn_one unless labels are bool")
                self._publish(lambda new: new._feed(*new._start(X, np.asarray([y]), classes, self.n_expected, names)))
            else:
                self._feed(*self._lead()._chunk_data(X, np.asarray([y]), classes, "learn_one"))
        return self

    def _lead(self):
        """The best survivor, which validates chunks (it holds a model in every mode)."""
        check_is_fitted(self, "_alive")
        return self.candidates_[self.best_index_]

    def _feed(self, X, y):
        """Hands a validated chunk, which starts at n_seen_, to the survivors: checked whole
        first (_check_chunk), then the rows some survivors have not learned yet (_catch_up),
        then the rest split at the marks and rungs."""
        X = np.ascontiguousarray(X, dtype=np.float64)
        if self._real_targets:
            yi = np.ascontiguousarray(y, dtype=np.float64)
        else:
            lead = self._lead()
            yi = np.ascontiguousarray(encode(y, lead.classes_, lead._label_index), dtype=np.int32)
        self._check_chunk(X, yi)
        skip = self._catch_up(X, yi)
        self._split(len(yi) - skip, lambda start, stop: self._run(X[skip + start : skip + stop], yi[skip + start : skip + stop]))

    def _models(self, indices):
        """The distinct core models of the candidates ``indices`` (a C path's group shares one)."""
        cands = self.candidates_
        if self._groups is None:
            return [cands[i]._model for i in indices]
        return [cands[_path.holder(cands, g)]._model for g in self._groups if any(i in g for i in indices)]

    def _check_chunk(self, X, yi):
        """Every row and label (target) of the chunk through each survivor's own check (its
        kernel decides which rows it can learn), before any learns: partial_fit checks only
        the piece it is given, and a chunk is learned in pieces (the marks, the rungs, the C
        path's blocks), so a bad row after the first piece would leave the rows before it
        learned and be named by its row in the piece."""
        for model in self._models(self._alive):
            model.check_chunk(X, yi)

    def _catch_up(self, X, yi):
        """The rows of the chunk (which starts at n_seen_) that some survivors learned before a
        stop and others not: each of the others learns its missing ones, so that all
        survivors stand at the stream position again. Returns how many rows of the chunk that
        covered (0 without a stop)."""
        base = self.n_seen_
        end = min(len(yi), self._position - base)
        for at in sorted({self._seen[i] for i in self._alive} - {self._position}):
            if at - base < end:
                self._run(X[at - base : end], yi[at - base : end], [i for i in self._alive if self._seen[i] == at])
        return max(end, 0)

    def _split(self, n, run):
        """Runs rows 0:n of the stream's next chunk by pieces, run(start, stop), that end at
        the marks and rungs, and marks and halves there."""
        start = 0
        while True:
            stop = n
            rung = self._next_rung()
            if rung is not None:
                stop = min(stop, start + min(rung, self._next_mark) - self._position)
            if stop > start:  # none when a stop came at a rung, before it was taken
                run(start, stop)
                start = stop
            if rung is not None and self._position >= self._next_mark:
                self._mark(self._alive)
                while self._next_mark <= self._position:
                    self._next_mark *= 2
            if rung is not None and self._position >= rung:
                self._halve()
            elif start >= n:
                return

    def _next_rung(self):
        if len(self._alive) <= 1:
            return None
        return self.rungs_[len(self._rung_errors[self._alive[0]])]

    def _mark(self, indices):
        for i in indices:
            self._marks[i].append((self._position, self._seen[i], self._wrong[i]))

    def _window_start(self, i):
        """(seen, wrong) of candidate i where its window starts: the latest mark at most
        position / eta ('window': at a rung, the previous rung, as rungs are eta apart; before
        the first, a power of two, which leaves out the first burst of learning), or the
        start ('cumulative')."""
        if self.judge == "cumulative":
            return 0, 0
        for pos, seen, wrong in reversed(self._marks[i]):
            if pos * self.eta <= self._position + self.eta:  # rungs are rounded to whole examples
                return seen, wrong
        return 0, 0

    def _run(self, X, yi, indices=None):
        """Rows of a chunk through the candidates ``indices`` (default: every survivor): their
        core learners in one call, in parallel (module docstring), or IncrementalSVC's groups
        along the C path (_path). Also after Ctrl-C (each candidate stopped between two
        examples) or a failure, the counts and curves end at what each learned, and the
        stream position at the most any learned."""
        indices = list(self._alive if indices is None else indices)
        try:
            if self._groups is not None and len(self._alive) > 1:
                _path.run(self, X, yi, indices)
            elif self.client is not None:
                self._account(indices, _remote.run_scattered(self, X, yi, indices))
            else:
                cands = [self.candidates_[i] for i in indices]
                try:
                    if self._real_targets:
                        _regression.fit_piece(cands, X, yi, self._threads())
                    else:
                        _core.partial_fit_many([c._model for c in cands], X, yi, min(self._threads(), len(cands)))
                finally:
                    self._account(indices, cands)
        finally:
            self._advance(indices)

    def _advance(self, indices):
        """The stream position after the candidates ``indices`` learned: the most any learned."""
        self._position = max(self._position, *(self._seen[i] for i in indices))

    def _account(self, indices, cands):
        """Takes the candidates ``indices`` as they are after learning: their counts and
        curves."""
        for i, c in zip(indices, cands):
            self.candidates_[i] = c  # the same object, unless it came back from a worker
            now = c._model.counters
            self._seen[i], self._wrong[i] = now["examples"], now[self._counter]
            if not self._real_targets:
                _curve_point(c._model, c.prequential_curve_)

    def _errors(self, indices, extra=None):
        """Prequential error of each candidate over its window (_window_start), with
        ``extra[i]`` = (examples, mistakes) more where given; inf for one that saw nothing
        there."""
        out = []
        for i in indices:
            e0, m0 = self._window_start(i)
            n_more, w_more = (extra or {}).get(i, (0, 0))
            n = self._seen[i] + n_more - e0
            out.append((self._wrong[i] + w_more - m0) / n if n > 0 else float("inf"))
        return out

    def _halve(self):
        alive = sorted(self._alive)  # ties go to the earlier candidate of the grid
        errors = self._errors(alive)
        kept = [alive[j] for j in _schedule.keep(errors, self.eta)]
        if self._groups is not None:  # before anything is recorded: a stop there retakes the rung
            _path.hand_over(self, kept)
        for i, e in zip(alive, errors):
            self._rung_errors[i].append(e)
        for i in set(alive) - set(kept):
            self._dropped_at[i] = self._position
        self._alive = kept
        self._mark(kept)

    # ---------------------------------------------------------------- results
    def _fitted(self):
        """The fitted search as one state: a view of the current __dict__, which a
        concurrent fit replaces (_publish) but does not change under the caller."""
        d = self.__dict__
        if "_alive" not in d:
            check_is_fitted(self, "_alive")
        view = object.__new__(type(self))
        view.__dict__ = d
        return view

    @property
    def best_index_(self):
        """The best survivor that holds a model (every survivor does, but for the C path's
        groups, whose model one holds): the only one, else the best by its error over its
        latest window."""
        s = self._fitted()
        ranked = [i for i, _ in s._ranked_survivors()]
        holders = [i for i in ranked if "_model" in s.candidates_[i].__dict__]
        return (holders or ranked)[0]

    def _ranked_survivors(self):
        """The survivors best first, and the error each is ranked by: over its latest window
        (_window_start; inf for one that saw nothing there). Ties go to the earlier
        candidate of the grid; nothing seen since the last rung keeps the last rung's order."""
        alive = sorted(self._alive)
        errors = dict(zip(alive, self._errors(alive)))
        if len(alive) == 1 or all(e == float("inf") for e in errors.values()):
            order = list(self._alive)
        else:
            order = sorted(alive, key=lambda i: (errors[i], i))  # as _schedule.keep ranks
        return [(i, errors[i]) for i in order]

    @property
    def best_estimator_(self):
        s = self._fitted()  # NotFittedError before any learning
        return s.candidates_[s.best_index_]

    @property
    def best_params_(self):
        s = self._fitted()
        return dict(s.candidate_params_[s.best_index_])

    @property
    def n_seen_(self):
        s = self._fitted()
        return min(s._seen[i] for i in s._alive)

    @property
    def results_(self):
        return results_table(self._fitted())

    def summary(self):
        """The candidates as a text table (``results_``), best first."""
        if self._real_targets:
            return format_results(self.results_, f"online_{self.scoring or 'mse'}", ".4g")
        return format_results(self.results_)

    # ------------------------------------------------------------ prediction
    def decision_function(self, X):
        return self.best_estimator_.decision_function(X)

    def _estimator_has(name):
        """available_if's test: the wrapped estimator has the method (predict_proba with
        probability=True, or natively)."""
        return lambda self: hasattr(self.estimator, name)

    @available_if(_estimator_has("predict_proba"))
    def predict_proba(self, X):
        """The best candidate's class probabilities (the wrapped estimator's predict_proba:
        available with probability=True, or natively for BSGD's logistic loss)."""
        return self.best_estimator_.predict_proba(X)

    @available_if(_estimator_has("predict_log_proba"))
    def predict_log_proba(self, X):
        """The best candidate's log-probabilities (as predict_proba)."""
        return self.best_estimator_.predict_log_proba(X)

    del _estimator_has

    def predict(self, X):
        return self.best_estimator_.predict(X)

    def score(self, X, y, sample_weight=None):
        """The best candidate's score: accuracy for a classifier, R^2 for a regressor."""
        return self.best_estimator_.score(X, y, sample_weight=sample_weight)

    def predict_one(self, x):
        if "_alive" not in self.__dict__:  # nothing learned: the estimators' own answer (river's)
            return 0.0 if _regression.is_regression(self.estimator) else None
        return self.best_estimator_.predict_one(x)

    def save(self, path):
        """Saves the best candidate's model (``budgetkernel.load`` gives it back as the
        wrapped estimator's class, with its parameters)."""
        self.best_estimator_.save(path)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.classifier_tags.multi_class = True
        tags.non_deterministic = False
        if _regression.is_regression(self.estimator):  # a search of regressors is a regressor
            tags.estimator_type = "regressor"
            tags.classifier_tags = None
            tags.regressor_tags = RegressorTags()
        return tags

