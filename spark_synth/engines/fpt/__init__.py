"""FPT engine: private multiplicative weights / LP over a tree decomposition of the query scopes."""

from .config import FptConfig
from .engine import FptEngine
from .model import FptModel

__all__ = ["FptEngine", "FptModel", "FptConfig"]
