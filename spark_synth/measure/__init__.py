"""Measure layer: the only code that reads private rows. Exact, distributed, returns small arrays."""

from .marginals import count_marginals, marginal_shape
from .moments import chebyshev_fixed_point_sums, measure_moment_sums
from .validate import check_structure

__all__ = ["count_marginals", "marginal_shape", "check_structure", "measure_moment_sums", "chebyshev_fixed_point_sums"]
