"""The fitted SPLICE model: a mixture of K product distributions over the columns' public codes."""

from __future__ import annotations

import numpy as np

from ...errors import InternalError
from ...schema import Schema
from ..base import FittedModel


class SpliceModel(FittedModel):
    """Mixture weights (K,) and, per column, a (K, size) matrix of per-component code probabilities."""

    engine = "splice"

    def __init__(self, weights: np.ndarray, probabilities: list[np.ndarray], estimated_rows: float):
        self.weights = np.asarray(weights, dtype=np.float64)
        self.probabilities = [np.asarray(p, dtype=np.float64) for p in probabilities]
        self.estimated_rows = float(estimated_rows)
        self._cumulative = [np.cumsum(p, axis=1) for p in self.probabilities]

    def sample_codes(self, n_rows: int, rng: np.random.Generator) -> np.ndarray:
        components = rng.choice(len(self.weights), size=n_rows, p=self.weights / self.weights.sum())
        codes = np.empty((n_rows, len(self.probabilities)), dtype=np.int64)
        for j, cdf in enumerate(self._cumulative):
            rows = cdf[components]  # (n, size)
            u = rng.random(n_rows) * rows[:, -1]
            codes[:, j] = np.minimum((u[:, None] >= rows).sum(axis=1), rows.shape[1] - 1)
        return codes

    def marginal(self, j: int) -> np.ndarray:
        """The mixture's 1-way distribution of column j."""
        return self.weights @ self.probabilities[j]

    def to_state(self) -> dict:
        return {
            "weights": self.weights.tolist(),
            "probabilities": [p.tolist() for p in self.probabilities],
            "estimated_rows": self.estimated_rows,
        }

    @classmethod
    def from_state(cls, state: dict, schema: Schema) -> "SpliceModel":
        probabilities = [np.asarray(p, dtype=np.float64) for p in state["probabilities"]]
        if [p.shape[1] for p in probabilities] != [c.size for c in schema]:
            raise InternalError("saved splice model does not match its schema's domain sizes")
        return cls(np.asarray(state["weights"]), probabilities, state["estimated_rows"])
