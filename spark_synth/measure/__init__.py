"""Measure layer: the only code that reads private rows. Exact, distributed, returns small arrays.

Each query kind has an accumulator registered in :mod:`.answers`; importing this package
registers the built-in kinds (marginal counts, sliced Chebyshev moment sums).
"""

from .answers import Accumulator, RowBatch, answer_frame, answer_queries, register_answerer
from .marginals import MAX_CELLS_PER_MARGINAL, count_marginals, marginal_shape
from .moments import chebyshev_fixed_point_sums, measure_moment_sums
from .validate import check_structure

__all__ = ["answer_queries", "answer_frame", "register_answerer", "Accumulator", "RowBatch", "count_marginals",
           "marginal_shape", "MAX_CELLS_PER_MARGINAL", "check_structure", "measure_moment_sums", "chebyshev_fixed_point_sums"]
