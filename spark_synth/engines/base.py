"""What every engine is: a plan of queries, a fit from noisy measurements, a fitted model.

Engines never see rows or Spark: they name the statistics they need (:class:`MarginalQuery`),
receive them as :class:`~spark_synth.privacy.NoisyMeasurement`, and return a
:class:`FittedModel` whose state is post-processed DP output only.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import ClassVar, Sequence

import numpy as np

from ..privacy import NoisyMeasurement
from ..queries import MarginalQuery, MomentQuery
from ..schema import Schema


class FittedModel(ABC):
    """A fitted generative model over codes. Its state holds only DP post-processed values."""

    engine: ClassVar[str]

    @abstractmethod
    def sample_codes(self, n_rows: int, rng: np.random.Generator) -> np.ndarray:
        """Draw an ``(n_rows, d)`` int64 code matrix (columns in schema order)."""

    @abstractmethod
    def to_state(self) -> dict:
        """JSON-serialisable state, enough for :meth:`from_state` to rebuild the model."""

    @classmethod
    @abstractmethod
    def from_state(cls, state: dict, schema: Schema) -> "FittedModel":
        """Rebuild a model from :meth:`to_state` output."""


class Engine(ABC):
    """A synthesis method: SELECT (plan queries) → MEASURE (done by the pipeline) → FIT."""

    name: ClassVar[str]
    model_class: ClassVar[type[FittedModel]]

    @abstractmethod
    def plan(self, schema: Schema) -> list[MarginalQuery | MomentQuery]:
        """The statistics this engine needs, with their budget weights (deterministic)."""

    def adapt(self, schema: Schema, query: MomentQuery, released: Sequence[NoisyMeasurement]) -> MomentQuery:
        """Complete a query the plan marked ``adaptive`` from the releases made before it (noisy
        measurements only: post-processing). Same name and weight; engines that plan adaptive
        queries override this."""
        raise NotImplementedError(f"engine {self.name!r} planned an adaptive query but does not adapt it")

    @abstractmethod
    def fit(self, schema: Schema, measurements: Sequence[NoisyMeasurement]) -> FittedModel:
        """Fit a model from noisy measurements only."""

    def config(self) -> dict:
        """The engine's configuration (for tracking); engines with options override this."""
        return {}
