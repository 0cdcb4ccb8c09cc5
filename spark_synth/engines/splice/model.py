"""The fitted SPLICE model: a mixture of K product distributions over the columns' public codes.

Each component is a product of per-column code distributions and, with
``numeric_model="gaussian"``, one low-rank Gaussian over the numeric columns (:mod:`.gaussian`).
"""

from __future__ import annotations

import numpy as np

from ...errors import InternalError
from ...schema import Schema
from ..base import FittedModel
from ..stratified import stratified_choice
from ..evidence import Evidence
from .components import draw_code_columns
from .gaussian import GaussianBlock


class SpliceModel(FittedModel):
    """Mixture weights (K,), a (K, size) code-probability matrix per code-modelled column (schema
    order, Gaussian-modelled columns skipped), and the optional Gaussian block."""

    engine = "splice"

    def __init__(self, weights: np.ndarray, probabilities: list[np.ndarray], estimated_rows: float,
                 gaussian: GaussianBlock | None = None):
        self.weights = np.asarray(weights, dtype=np.float64)
        self.probabilities = [np.asarray(p, dtype=np.float64) for p in probabilities]
        self.estimated_rows = float(estimated_rows)
        self.gaussian = gaussian
        gaussian_columns = set(gaussian.columns) if gaussian else set()
        self.n_columns = len(self.probabilities) + len(gaussian_columns)
        self.code_columns = [j for j in range(self.n_columns) if j not in gaussian_columns]
        self._cumulative = [np.cumsum(p, axis=1) for p in self.probabilities]

    def sample_codes(self, n_rows: int, rng: np.random.Generator) -> np.ndarray:
        components = stratified_choice(self.weights, n_rows, rng)
        codes = np.empty((n_rows, self.n_columns), dtype=np.int64)
        draw_code_columns(codes, components, self.code_columns, self._cumulative, rng)
        if self.gaussian is not None:
            latent = self.gaussian.draw(components, rng)
            codes[:, list(self.gaussian.columns)] = self.gaussian.to_codes(latent, rng)
        return codes

    def conditioned(self, evidence: Evidence) -> tuple[FittedModel, float]:
        """Components reweighted by the evidence's probability under each, sampled within it
        (:class:`.conditioning.ConditionedSplice`)."""
        from .conditioning import ConditionedSplice

        model = ConditionedSplice(self, evidence)
        return model, model.probability

    def marginal(self, j: int) -> np.ndarray:
        """The model's 1-way distribution of column j (over its codes)."""
        if self.gaussian is not None and j in self.gaussian.columns:
            return self.gaussian.bin_probabilities(self.gaussian.columns.index(j), self.weights)
        return self.weights @ self.probabilities[self.code_columns.index(j)] / self.weights.sum()

    def to_state(self) -> dict:
        return {
            "weights": self.weights.tolist(),
            "probabilities": [p.tolist() for p in self.probabilities],
            "estimated_rows": self.estimated_rows,
            "gaussian": None if self.gaussian is None else self.gaussian.to_state(),
        }

    @classmethod
    def from_state(cls, state: dict, schema: Schema) -> "SpliceModel":
        probabilities = [np.asarray(p, dtype=np.float64) for p in state["probabilities"]]
        gaussian = GaussianBlock.from_state(state["gaussian"]) if state.get("gaussian") is not None else None
        model = cls(np.asarray(state["weights"]), probabilities, state["estimated_rows"], gaussian)
        if model.n_columns != len(schema) or \
                [p.shape[1] for p in probabilities] != [schema.columns[j].size for j in model.code_columns] or \
                (gaussian and [len(e) - 1 for e in gaussian.edges] != [schema.columns[j].n_values for j in gaussian.columns]):
            raise InternalError("saved splice model does not match its schema's domain sizes")
        return model

