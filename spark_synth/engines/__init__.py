"""Engines: fit a generative model from noisy measurements only. Never imports pyspark.

An engine is a folder (or module) under ``engines/`` plus one :func:`register_engine` line below;
see ``docs/engines.md``.
"""

from __future__ import annotations

from ..errors import InternalError, ParameterError
from .base import Engine, FittedModel, LocalTaskRunner, MeasurementOracle, TaskRunner
from .fpt import FptEngine, FptModel
from .independent import IndependentEngine, IndependentModel
from .splice import SpliceEngine, SpliceModel

#: Engine name → class.
ENGINES: dict[str, type[Engine]] = {}


def register_engine(cls: type[Engine]) -> type[Engine]:
    """Make engine class ``cls`` available by its ``name`` (CLI ``--engine``, configs, saved models)."""
    if not (isinstance(cls, type) and issubclass(cls, Engine)) or not getattr(cls, "name", None):
        raise InternalError(f"{cls!r} is not an Engine subclass with a name")
    if ENGINES.get(cls.name, cls) is not cls:
        raise InternalError(f"two engines are called {cls.name!r}")
    ENGINES[cls.name] = cls
    return cls


register_engine(IndependentEngine)
register_engine(SpliceEngine)
register_engine(FptEngine)


def get_engine(name: str, **options) -> Engine:
    """Instantiate the engine called ``name`` with its options (names and types checked)."""
    if name not in ENGINES:
        raise ParameterError("engine", f"one of {sorted(ENGINES)}", name)
    return ENGINES[name](**options)


def model_class(name: str) -> type[FittedModel]:
    if name not in ENGINES:
        raise ParameterError("engine", f"one of {sorted(ENGINES)}", name)
    return ENGINES[name].model_class


__all__ = ["Engine", "FittedModel", "MeasurementOracle", "TaskRunner", "LocalTaskRunner", "ENGINES", "register_engine",
           "get_engine", "model_class", "IndependentEngine", "IndependentModel", "SpliceEngine", "SpliceModel",
           "FptEngine", "FptModel"]
