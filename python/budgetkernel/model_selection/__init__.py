"""Hyper-parameters chosen on the stream, in one pass: :class:`PrequentialSearch` (successive
halving by prequential error, candidates run in parallel in C++) and the data-driven
:func:`default_grid` it uses when given no grid."""

from ._grids import default_grid, median_gamma
from ._search import PrequentialSearch

__all__ = ["PrequentialSearch", "default_grid", "median_gamma"]
