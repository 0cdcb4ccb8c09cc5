"""The fitted SPLICE model: a mixture of K product distributions over the columns' public codes.

Each component is a product of per-column code distributions and, with
``numeric_model="gaussian"``, one low-rank Gaussian over the numeric columns (:mod:`.gaussian`).
"""

from __future__ import annotations

import numpy as np

from ...errors import InternalError
from ...schema import Schema
from ..base import FittedModel
from ..stratified import stratified_choice, stratified_uniforms
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
        order = np.argsort(components, kind="stable")  # rows grouped by component
        bounds = np.searchsorted(components[order], np.arange(len(self.weights) + 1))
        codes = np.empty((n_rows, self.n_columns), dtype=np.int64)
        for j, cdf in zip(self.code_columns, self._cumulative):
            u = stratified_uniforms(n_rows, rng, components) * cdf[components, -1]
            column = np.empty(n_rows, dtype=np.int64)
            for k in range(len(self.weights)):  # the code: how many of the component's CDF values are ≤ u
                rows = order[bounds[k]:bounds[k + 1]]
                column[rows] = np.searchsorted(cdf[k], u[rows], side="right")
            codes[:, j] = np.minimum(column, cdf.shape[1] - 1)
        if self.gaussian is not None:
            latent = self.gaussian.draw(components, rng)
            codes[:, list(self.gaussian.columns)] = self.gaussian.to_codes(latent, rng)
        return codes

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
