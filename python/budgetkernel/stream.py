"""Stream helpers: prequential (test-then-train) evaluation and a progress bar."""

from __future__ import annotations

import sys
import time

__all__ = ["ProgressBar", "evaluate_prequential", "peak_memory_mb"]


class ProgressBar:
    """A dependency-free progress bar on stderr, redrawn at most ~10 times a second.

    Parameters
    ----------
    total : int or None, default=None
        Number of examples expected; None draws a counter without a bar.
    desc : str, default=""
        Text before the bar.
    file : file object or None, default=None
        Where to draw; None is ``sys.stderr``.
    enabled : bool, default=True
        False draws nothing (the counts still advance).

    Examples
    --------
    >>> import io
    >>> from budgetkernel.stream import ProgressBar
    >>> bar = ProgressBar(total=1000, desc="training", file=io.StringIO())
    >>> for _ in range(4):
    ...     bar.update(250, err="0.1000")
    >>> bar.close()
    >>> bar.n
    1000
    >>> bar.file.getvalue().splitlines()[-1]
    'training [##############################] 1,000/1,000 ... ex/s err=0.1000'
    """

    def __init__(self, total=None, *, desc="", file=None, enabled=True):
        self.total = total
        self.desc = desc
        self.file = file if file is not None else sys.stderr
        self.enabled = enabled
        self.n = 0
        self._start = time.perf_counter()
        self._last = 0.0

    def update(self, n, **info):
        """Counts ``n`` more examples and redraws, showing ``info`` as ``key=value``."""
        self.n += n
        now = time.perf_counter()
        if not self.enabled or (now - self._last < 0.1 and (self.total is None or self.n < self.total)):
            return
        self._last = now
        rate = self.n / max(now - self._start, 1e-9)
        extra = "".join(f" {k}={v}" for k, v in info.items())
        if self.total:
            frac = min(self.n / self.total, 1.0)
            bar = "#" * int(30 * frac) + "-" * (30 - int(30 * frac))
            text = f"\r{self.desc} [{bar}] {self.n:,}/{self.total:,} {rate:,.0f} ex/s{extra}"
        else:
            text = f"\r{self.desc} {self.n:,} {rate:,.0f} ex/s{extra}"
        self.file.write(text)
        self.file.flush()

    def close(self):
        """Ends the bar's line."""
        if self.enabled:
            self.file.write("\n")
            self.file.flush()


def peak_memory_mb():
    """Peak resident memory of this process in MiB (None where the OS does not say).

    Examples
    --------
    >>> from budgetkernel.stream import peak_memory_mb
    >>> peak = peak_memory_mb()
    >>> peak is None or peak > 0
    True
    """
    try:
        import resource
    except ImportError:  # Windows
        return None
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / (1024.0 * 1024.0) if sys.platform == "darwin" else peak / 1024.0


def evaluate_prequential(estimator, chunks, *, classes, test=None, progress=False, total=None):
    """Runs a stream of ``(X, y)`` chunks through ``estimator.partial_fit``.

    Each example is predicted before it is learned (inside the C++ loop), so the online
    mistake rate and the accuracy curve cost nothing extra.

    Parameters
    ----------
    estimator : a budgetkernel classifier (fresh or already trained)
        An estimator trained before keeps learning; the results describe this stream only.
    chunks : iterable of (X, y)
    classes : array-like
        Every label of the stream.
    test : (X_test, y_test) or None
        Evaluated once at the end.
    progress : bool
        Draw a progress bar on stderr.
    total : int or None
        Stream length, for the progress bar.

    Returns
    -------
    dict
        ``examples``, ``online_error``, ``train_seconds``, ``examples_per_second``,
        ``curve`` (list of (examples, prequential accuracy so far), both over this stream),
        ``n_support``,
        ``n_support_average`` (an averaged model: the SVs it predicts with), ``test_accuracy``
        (when ``test`` is given).

    Examples
    --------
    >>> from budgetkernel import BudgetedSGDClassifier, datasets
    >>> from budgetkernel.stream import evaluate_prequential
    >>> train, test = datasets.make_stream_and_test(
    ...     "noisy_checkerboard", 5000, 1000, random_state=0, chunk_size=1000)
    >>> clf = BudgetedSGDClassifier(budget=50, gamma=2.0, random_state=0)
    >>> result = evaluate_prequential(clf, train, classes=[-1, 1], test=test)
    >>> result["examples"], result["n_support"], len(result["curve"])
    (5000, 50, 5)
    >>> round(result["online_error"], 2), round(result["test_accuracy"], 2)
    (0.23, 0.9)
    """
    bar = ProgressBar(total, desc="training", enabled=progress)
    seconds = 0.0
    n = 0
    # An estimator trained before: its counters and curve already hold that training. The
    # results describe this stream only, so everything is counted from where the estimator
    # stood (its online error would otherwise mix in the earlier training).
    # (From its counters: learn_one samples the curve, whose last point can lag behind them.)
    fitted = hasattr(estimator, "_model")
    start = len(estimator.prequential_curve_) if fitted else 0
    e0, m0 = (estimator.counters_["examples"], estimator.counters_["mistakes"]) if fitted else (0, 0)

    def stream_error():
        c = estimator.counters_
        return (c["mistakes"] - m0) / max(c["examples"] - e0, 1)

    for X, y in chunks:
        t0 = time.perf_counter()
        estimator.partial_fit(X, y, classes=classes)
        seconds += time.perf_counter() - t0
        n += len(y)
        bar.update(len(y), err=f"{stream_error():.4f}")
    bar.close()
    if n == 0:
        raise ValueError("the stream holds no examples")
    curve = [(int(e - e0), 1.0 - (m - m0) / (e - e0)) for e, m in estimator.prequential_curve_[start:] if e > e0]
    out = {
        "examples": n,
        "online_error": float(stream_error()),
        "train_seconds": seconds,
        "examples_per_second": n / seconds if seconds > 0 else float("nan"),
        "curve": curve,
        "n_support": int(getattr(estimator, "n_support_", 0)),
    }
    if getattr(estimator, "averaged", False) and hasattr(estimator, "n_support_average_"):
        # an averaged budgeted model predicts with (and saves) every SV it ever held
        out["n_support_average"] = int(estimator.n_support_average_)
    if test is not None:
        Xt, yt = test
        # score checks y_test against the predictions: `predict(Xt) == yt` broadcast a column
        # vector y_test (n, 1) against them into an n x n comparison, a meaningless accuracy
        out["test_accuracy"] = float(estimator.score(Xt, yt))
    return out
