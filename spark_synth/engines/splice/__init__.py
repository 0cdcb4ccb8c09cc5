"""SPLICE: sliced Chebyshev moment matching (methods.md §1), with DP 1-way marginal anchors."""

from .engine import SpliceConfig, SpliceEngine
from .model import SpliceModel

__all__ = ["SpliceConfig", "SpliceEngine", "SpliceModel"]
