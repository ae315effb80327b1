"""Plots (needs the ``plot`` extra: matplotlib)."""

from __future__ import annotations

import os

import numpy as np

__all__ = ["plot_accuracy_curve", "plot_decision_boundary", "plot_demo", "plot_format", "require_matplotlib"]


def require_matplotlib():
    """Returns the matplotlib module, or raises ImportError saying how to install it.

    Examples
    --------
    >>> from budgetkernel.plot import require_matplotlib
    >>> require_matplotlib().__name__
    'matplotlib'
    """
    try:
        import matplotlib
    except ImportError as e:
        raise ImportError("plotting needs matplotlib: pip install 'budgetkernel[plot]'") from e
    return matplotlib


def plot_format(path):
    """The image format ``plot_demo`` writes ``path`` in: its extension, or png without one.

    Raises ImportError without matplotlib and ValueError for an extension matplotlib
    cannot write, so that a caller can check ``path`` before a long training run.

    Examples
    --------
    >>> from budgetkernel.plot import plot_format
    >>> plot_format("boundary.svg"), plot_format("boundary")
    ('svg', 'png')
    """
    require_matplotlib()
    from matplotlib.backend_bases import FigureCanvasBase

    ext = os.path.splitext(os.fspath(path))[1][1:].lower()
    if not ext:
        return "png"
    supported = FigureCanvasBase.get_supported_filetypes()
    if ext not in supported:
        raise ValueError(f"cannot write a .{ext} image; formats: {', '.join(sorted(supported))}")
    return ext


def _plt():
    """pyplot, to draw on the current axes when the caller passes none.

    The backend is never chosen here: the caller's (a Jupyter inline or GUI backend)
    or matplotlib's own default, which is Agg when there is no display. Forcing Agg
    would silently switch an interactive session to a backend that shows nothing.
    """
    require_matplotlib()
    import matplotlib.pyplot as plt

    return plt


def plot_accuracy_curve(estimators, ax=None, labels=None):
    """Prequential accuracy vs. examples seen, one line per fitted estimator.

    Draws on ``ax`` (default: pyplot's current axes) and returns it.

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import matplotlib.pyplot as plt
    >>> from budgetkernel import BudgetedSGDClassifier, KernelPerceptron, datasets
    >>> from budgetkernel.plot import plot_accuracy_curve
    >>> X, y = datasets.checkerboard(3000, random_state=0)
    >>> models = [BudgetedSGDClassifier(budget=50, gamma=2.0, random_state=0).fit(X, y),
    ...           KernelPerceptron(budget=50, gamma=2.0, random_state=0).fit(X, y)]
    >>> fig, ax = plt.subplots()
    >>> ax = plot_accuracy_curve(models, ax=ax, labels=["BSGD", "perceptron"])
    >>> type(ax).__name__, len(ax.get_lines())
    ('Axes', 2)
    >>> plt.close(fig)
    """
    if ax is None:
        ax = _plt().gca()
    for i, est in enumerate(estimators):
        pts = [(e, 1 - m / e) for e, m in est.prequential_curve_ if e > 0]
        if not pts:
            continue
        e, a = np.array(pts).T
        ax.plot(e, a, label=labels[i] if labels else type(est).__name__)
    ax.set_xscale("log")
    ax.set_xlabel("examples seen")
    ax.set_ylabel("prequential accuracy")
    ax.grid(True, alpha=0.3)
    ax.legend()
    return ax


def plot_decision_boundary(est, ax=None, transform=None, lim=(0.0, 4.0), resolution=300):
    """Decision regions of a 2-D classifier with its support vectors.

    ``transform`` maps raw inputs to the model's features (e.g. a fitted standardiser's
    ``transform``); SVs are mapped back for display when it has ``mean_``/``scale_``.
    The plane is ``lim`` x ``lim``, sampled on a ``resolution`` x ``resolution`` grid. Draws
    on ``ax`` (default: pyplot's current axes) and returns it.

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import matplotlib.pyplot as plt
    >>> from budgetkernel import BudgetedSGDClassifier, datasets
    >>> from budgetkernel.plot import plot_decision_boundary
    >>> X, y = datasets.checkerboard(3000, random_state=0)
    >>> clf = BudgetedSGDClassifier(budget=50, gamma=2.0, random_state=0).fit(X, y)
    >>> fig, ax = plt.subplots()
    >>> ax = plot_decision_boundary(clf, ax=ax, resolution=100)
    >>> type(ax).__name__, ax.get_legend().get_texts()[0].get_text()
    ('Axes', '50 SVs')
    >>> plt.close(fig)
    """
    if ax is None:
        ax = _plt().gca()
    g = np.linspace(lim[0], lim[1], resolution)
    xx, yy = np.meshgrid(g, g)
    grid = np.c_[xx.ravel(), yy.ravel()]
    feats = transform(grid) if transform is not None else grid
    d = est.decision_function(feats)
    z = d if d.ndim == 1 else np.argmax(d, axis=1)
    ax.contourf(xx, yy, z.reshape(xx.shape) > 0 if d.ndim == 1 else z.reshape(xx.shape), alpha=0.35, cmap="coolwarm")
    sv = est.support_vectors_
    owner = getattr(transform, "__self__", None)
    if owner is not None and hasattr(owner, "mean_"):
        sv = sv * owner.scale_ + owner.mean_
    ax.scatter(sv[:, 0], sv[:, 1], s=14, c="k", marker="x", label=f"{len(sv)} SVs")
    ax.set_xlim(*lim)
    ax.set_ylim(*lim)
    ax.set_aspect("equal")
    ax.legend(loc="upper right")
    return ax


def plot_demo(est, scaler, path):
    """The demo's figure: accuracy curve and decision boundary with the SVs.

    ``est`` is a fitted :class:`~budgetkernel.BudgetedSGDClassifier` on two features
    standardised by ``scaler`` (a fitted
    :class:`~budgetkernel.preprocessing.StreamingStandardizer`); the figure is written to
    ``path`` in the format :func:`plot_format` gives, without touching pyplot.

    Examples
    --------
    >>> import os
    >>> from budgetkernel import BudgetedSGDClassifier, datasets
    >>> from budgetkernel.plot import plot_demo
    >>> from budgetkernel.preprocessing import StreamingStandardizer
    >>> X, y = datasets.checkerboard(3000, random_state=0)
    >>> scaler = StreamingStandardizer(n_warmup=1000).partial_fit(X)
    >>> clf = BudgetedSGDClassifier(budget=50, random_state=0).fit(scaler.transform(X), y)
    >>> plot_demo(clf, scaler, "demo.png")
    >>> os.path.getsize("demo.png") > 0
    True
    """
    require_matplotlib()
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    # A figure outside pyplot with its own Agg canvas writes the file without touching
    # pyplot's global backend or its list of open figures.
    fig = Figure(figsize=(11, 5))
    FigureCanvasAgg(fig)
    a, b = fig.subplots(1, 2)
    plot_accuracy_curve([est], ax=a, labels=[f"BSGD {est.maintenance}, B={est.budget}"])
    a.set_title("prequential accuracy")
    plot_decision_boundary(est, ax=b, transform=scaler.transform)
    b.set_title("decision boundary and support vectors")
    fig.tight_layout()
    # An explicit format: given none, matplotlib appends ".png" to a path without an
    # extension, so the file would not be where the caller (and the CLI's message) says.
    fig.savefig(path, dpi=110, format=plot_format(path))
