"""DGM: disjoint column partitions with one model each, joined by an end-to-end DP validator."""

from .engine import DgmEngine
from .model import DgmModel

__all__ = ["DgmEngine", "DgmModel"]
