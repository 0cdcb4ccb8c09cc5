"""FPT engine: private multiplicative weights / LP over a tree decomposition of the query scopes.

The package imports nothing itself: ``FptEngine`` (which imports torch), ``FptModel`` and
``FptConfig`` are loaded on first access. A Spark worker unpickling an ``FptModel`` imports this
package on the way to ``fpt.model``, and must not pay for torch there (sampling needs NumPy only).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .config import FptConfig
    from .engine import FptEngine
    from .model import FptModel

_LAZY_ATTRIBUTES = {"FptEngine": ".engine", "FptModel": ".model", "FptConfig": ".config"}


def __getattr__(name: str):
    """``from spark_synth.engines.fpt import FptEngine`` (etc.) still works: imported on first access."""
    if name in _LAZY_ATTRIBUTES:
        return getattr(importlib.import_module(_LAZY_ATTRIBUTES[name], __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["FptEngine", "FptModel", "FptConfig"]
