"""Baseline engine ``independent``: DP 1-way marginals (nulls included), columns sampled independently.

It keeps every column's distribution and none of the dependence between columns: the floor every
other engine must beat. The histograms are measured and estimated by :mod:`.one_way` (wide ordered
columns at the resolution the noise allows, a noise-sized null cell zeroed).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from ..errors import InternalError
from ..privacy import NoisyMeasurement
from ..schema import Schema
from .base import Engine, FittedModel, MeasurementOracle
from .evidence import Evidence, conditioned_distribution
from .one_way import OneWayConfig, measure_one_way, one_way_distributions, one_way_queries, one_way_releases
from .postprocess import estimate_total
from .stratified import inverse_cdf, stratified_uniforms


@dataclass(frozen=True, kw_only=True)
class IndependentConfig(OneWayConfig):
    """Options of the 1-way histograms (:mod:`.one_way`); the defaults are measured in docs/engines.md."""

    engine_name = "independent"


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
            codes[:, j] = inverse_cdf(cdf, stratified_uniforms(n_rows, rng))
        return codes

    def conditioned(self, evidence: Evidence) -> tuple["IndependentModel", float]:
        """Each constrained column's distribution times its weights, renormalised; the probability is the product."""
        pairs = [conditioned_distribution(p, evidence.get(j)) for j, p in enumerate(self.probabilities)]
        return IndependentModel([p for p, _ in pairs], self.estimated_rows), float(np.prod([q for _, q in pairs]))

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
    config_class = IndependentConfig

    def planned_queries(self, schema: Schema) -> list:
        """Every column's full 1-way histogram (stage two's coarser ones are sums of them)."""
        return one_way_queries(schema)

    def measure(self, schema: Schema, oracle: MeasurementOracle) -> list[NoisyMeasurement]:
        """Every column's 1-way histogram (two stages, one scan), ρ split evenly over the columns."""
        return measure_one_way(schema, oracle, oracle.rho_remaining, self.options)

    def fit_measurements(self, schema: Schema, measurements: Sequence[NoisyMeasurement]) -> IndependentModel:
        """The model from noisy 1-way histograms (post-processing)."""
        releases = one_way_releases(measurements)
        total = estimate_total(releases)
        probabilities = one_way_distributions(schema, releases, total, self.options.null_floor)
        return IndependentModel(probabilities, estimated_rows=total)
