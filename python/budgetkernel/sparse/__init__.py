"""Deprecated alias: SPA and BOGD now live in ``budgetkernel.sparse_pa`` and ``budgetkernel.bogd``.

The old name suggested scipy.sparse; the module held the two learners, so it is named after
them now (as the C++ headers learners/sparse_pa.hpp and learners/bogd.hpp are).  This alias
keeps ``from budgetkernel.sparse import SparsePAClassifier`` working, with a warning.  It is
a package rather than a ``sparse.py`` so that git sees ``sparse.py`` renamed to ``sparse_pa.py``
and carries edits made to the old file across the rename.
"""

import warnings

from ..bogd import BOGDClassifier
from ..sparse_pa import SparsePAClassifier

__all__ = ["BOGDClassifier", "SparsePAClassifier"]

warnings.warn(
    "budgetkernel.sparse is deprecated: import SparsePAClassifier and BOGDClassifier from "
    "budgetkernel (or budgetkernel.sparse_pa and budgetkernel.bogd)",
    DeprecationWarning,
    stacklevel=2,
)
