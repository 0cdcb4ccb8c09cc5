"""Baseline engine ``independent``: DP 1-way marginals (nulls included), columns sampled independently.

It keeps every column's distribution and none of the dependence between columns: the floor every
other engine must beat.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from ..errors import InternalError
from ..privacy import NoisyMeasurement, split_rho
from ..queries import MarginalQuery
from ..schema import Schema
from .base import Engine, FittedModel, MeasurementOracle, TaskRunner
from .postprocess import estimate_total, probabilities_from_counts


class IndependentModel(FittedModel):
    """One probability vector per column over its codes."""

    engine = "independent"

    def __init__(self, probabilities: Sequence[np.ndarray], estimated_rows: float):
        self.probabilities = [np.asarray(p, dtype=np.float64) for p in probabilities]
        self.estimated_rows = float(estimated_rows)
        self._cumulative = [np.cumsum(p) for p in self.probabilities]

    def sample_codes(self, n_rows: int, rng: np.random.Generator) -> np.ndarray:
        codes = np.empty((n_rows, len(self.probabilities)), dtype=np.int64)
        for j, cdf in enumerate(self._cumulative):
            draws = np.searchsorted(cdf, rng.random(n_rows) * cdf[-1], side="right")
            codes[:, j] = np.minimum(draws, len(cdf) - 1)
        return codes

    def to_state(self) -> dict:
        return {"probabilities": [p.tolist() for p in self.probabilities], "estimated_rows": self.estimated_rows}

    @classmethod
    def from_state(cls, state: dict, schema: Schema) -> "IndependentModel":
        probabilities = [np.asarray(p, dtype=np.float64) for p in state["probabilities"]]
        if [len(p) for p in probabilities] != [c.size for c in schema]:
            raise InternalError("saved independent model does not match its schema's domain sizes")
        return cls(probabilities, state["estimated_rows"])


class IndependentEngine(Engine):
    """Measure every column's 1-way histogram with an equal share of ρ; sample independently."""

    name = "independent"
    model_class = IndependentModel

    def fit(self, schema: Schema, oracle: MeasurementOracle, tasks: TaskRunner) -> IndependentModel:
        return self.fit_measurements(schema, self.measure(schema, oracle))

    def measure(self, schema: Schema, oracle: MeasurementOracle) -> list[NoisyMeasurement]:
        """Every column's 1-way histogram, ρ split evenly."""
        queries = one_way_queries(schema)
        return oracle.measure_many(list(zip(queries, split_rho(oracle.rho_remaining, [1.0] * len(queries)))))

    def fit_measurements(self, schema: Schema, measurements: Sequence[NoisyMeasurement]) -> IndependentModel:
        """The model from noisy 1-way histograms (post-processing)."""
        by_column = {m.columns: m for m in measurements}
        missing = [c.name for c in schema if (c.name,) not in by_column]
        if missing:
            raise InternalError(f"independent engine got no 1-way measurement for {missing}")
        total = estimate_total(measurements)
        probabilities = [probabilities_from_counts(by_column[(c.name,)].values, total) for c in schema]
        return IndependentModel(probabilities, estimated_rows=total)


def one_way_queries(schema: Schema) -> list[MarginalQuery]:
    """Every column's 1-way histogram, named ``1-way[column]``."""
    return [MarginalQuery(name=f"1-way[{c.name}]", columns=(c.name,)) for c in schema]
