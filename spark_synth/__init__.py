"""spark-synth: differentially private synthetic copies of large tables, on Spark.

The workflow, left to right (each step is a module; data flows one way)::

    schema (public domain)        load_schema("adult.schema.json")
    measure (Spark, exact)        one distributed pass over the table: marginal counts
    privacy (driver, once)        privacy filter + OpenDP noise/selection, zCDP inside, (ε, δ) outside
    engines (driver)              ask an oracle for noisy measurements; fit a model from them only
    sample (Spark)                generate rows on the executors from the broadcast model
    io / track                    Delta / Parquet / CSV out; MLflow run with the privacy report

Typical use::

    from spark_synth import Synthesizer, load_schema
    synth = Synthesizer("independent", epsilon=1.0, delta=1e-9).fit(df, load_schema("adult.schema.json"))
    synth.sample(10_000, seed=7).write.format("delta").save("/tmp/synthetic_adult")

Guarantee: (ε, δ)-DP under the add/remove-one-row neighbouring relation, for everything derived
from a fitted :class:`Synthesizer` (sampling is post-processing and spends nothing).
"""

from ._version import __version__
from .errors import (
    BudgetExhausted,
    DataValidationError,
    InternalError,
    NotFittedError,
    OutputError,
    ParameterError,
    SchemaError,
    SparkSynthError,
    UserInputError,
)
from .schema import Column, ColumnType, Schema, load_schema

# The rest of the surface loads on first use (PEP 562): a Spark Python worker that unpickles a
# measure or sample function imports `spark_synth` first and should not pay for the pipeline,
# OpenDP and MLflow it never calls.
_LAZY = {"run": ".commands", "RunConfig": ".config", "Synthesizer": ".pipeline", "NEIGHBOURING_RELATION": ".privacy",
         "PrivacyBudget": ".privacy", "get_spark": ".session"}


def __getattr__(name: str):
    if name in _LAZY:
        import importlib

        value = getattr(importlib.import_module(_LAZY[name], __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_LAZY))


__all__ = [
    "__version__",
    "Synthesizer",
    "run",
    "RunConfig",
    "load_schema",
    "Schema",
    "Column",
    "ColumnType",
    "PrivacyBudget",
    "NEIGHBOURING_RELATION",
    "get_spark",
    "SparkSynthError",
    "UserInputError",
    "ParameterError",
    "SchemaError",
    "DataValidationError",
    "OutputError",
    "NotFittedError",
    "BudgetExhausted",
    "InternalError",
]
