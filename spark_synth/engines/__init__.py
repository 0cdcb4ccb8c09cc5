"""Engines: fit a generative model from noisy measurements only. Never imports pyspark."""

from __future__ import annotations

from ..errors import ParameterError
from .base import Engine, FittedModel, MarginalQuery
from .independent import IndependentEngine, IndependentModel
from .splice import SpliceEngine, SpliceModel

#: Engine name → class. Later engines (fpt, dgm) register here.
ENGINES: dict[str, type[Engine]] = {IndependentEngine.name: IndependentEngine, SpliceEngine.name: SpliceEngine}


def get_engine(name: str, **options) -> Engine:
    """Instantiate the engine called ``name`` with its options."""
    if name not in ENGINES:
        raise ParameterError("engine", f"one of {sorted(ENGINES)}", name)
    return ENGINES[name](**options)


def model_class(name: str) -> type[FittedModel]:
    if name not in ENGINES:
        raise ParameterError("engine", f"one of {sorted(ENGINES)}", name)
    return ENGINES[name].model_class


__all__ = ["Engine", "FittedModel", "MarginalQuery", "ENGINES", "get_engine", "model_class", "IndependentEngine", "IndependentModel", "SpliceEngine", "SpliceModel"]
