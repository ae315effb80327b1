"""Parameter descriptions that several estimators share, written once (numpydoc entries).

A class docstring names a shared piece by a line holding only ``{{name}}``; the class
decorator :func:`shared_docs` puts the piece there, indented as that line, so ``help()``,
the doctests and the API pages all see the complete docstring.
"""

from __future__ import annotations

import re
import textwrap

__all__ = ["shared_docs"]

_PIECES = {
    "probability": """\
probability : bool, default=False
    Whether to calibrate the decision values online for ``predict_proba`` and
    ``predict_log_proba``, which exist only then (as with scikit-learn's ``SVC``): a
    Platt-style map refitted on the prequential decision values of the last 1024
    examples and saved with the model. Off, the model does no calibration work and its
    file has no calibration. It cannot change between ``partial_fit`` calls (``fit``
    starts over with it).""",
    "kernel": """\
kernel : {'rbf', 'linear', 'poly'}, default='rbf'
gamma : float or 'scale', default='scale'
degree : int, default=3
coef0 : float, default=0.0
    Independent term of the polynomial kernel: >= 0 and ``|coef0|^degree <= 1e300``.""",
    # the tail of an ``averaged`` entry, after what the average predicts with
    "average_growth": """\
The average grows with the stream: one SV per removal, about (d + c + 2) float64 values
in memory and (2 d + 2 c + 1) in the file and pickle (c coefficient columns), and
prediction costs O((B + r) d) for r removed SVs (docs/guide/regression.md, "Budgets").""",
    "fit_intercept": """\
fit_intercept : bool, default=True
    Predict b + f(x) with b the running mean of the targets seen (not regularised); the
    kernel expansion then learns the centred target.""",
    "fit_passes": """\
n_epochs : int, default=1
    Passes over the data in ``fit`` (``partial_fit`` always makes one).
shuffle : bool, default=False
    Whether ``fit`` shuffles the data before each pass.""",
}

_PLACEHOLDER = re.compile(r"^( *)\{\{(\w+)\}\}$", re.M)


def shared_docs(cls):
    """Class decorator: fills the ``{{name}}`` lines of ``cls.__doc__`` with the shared pieces."""
    cls.__doc__ = _PLACEHOLDER.sub(lambda m: textwrap.indent(_PIECES[m.group(2)], m.group(1)), cls.__doc__)
    return cls
