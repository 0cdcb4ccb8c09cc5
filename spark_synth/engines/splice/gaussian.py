"""The low-rank Gaussian block of SPLICE components (``numeric_model="gaussian"``).

Per component k, the value coordinates g ∈ R^G of the non-nullable numeric columns (each embedded
affinely onto [-1, 1]) are jointly N(μ_k, U_k U_kᵀ + diag(D_k)), U_k of rank R. A draw becomes a
public bin code in one of two ways:

* **calibrated** (DP 1-way marginals available): per column, the quantile map
  u = F_model(g) → the code whose DP cumulative share first reaches u, where F_model is the
  mixture's own marginal CDF of that column. The 1-way marginal of the output then equals the DP
  anchor, and the dependence between columns is the model's (a copula of the Gaussian mixture).
  Post-processing of DP outputs only.
* **clipped** (no anchors): g clipped to [-1, 1], then the public bin that contains it.

A nullable column in the block (DP null share at most ``max_null_share``) is then set to null
independently with its DP null share.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import ndtr


@dataclass(frozen=True)
class GaussianBlock:
    """Mixture parameters of the Gaussian-modelled columns and how their draws become codes."""

    columns: tuple[int, ...]  # schema indices of the Gaussian-modelled columns
    mean: np.ndarray  # (K, G)
    factor: np.ndarray  # (K, G, R)
    diag: np.ndarray  # (K, G), > 0
    edges: tuple[np.ndarray, ...]  # per column: public bin edges in the fit's embedded coordinates
    calibration: tuple[np.ndarray, ...] | None  # per column: DP 1-way distribution over its non-null codes
    null_share: tuple[float, ...]  # per column: share of nulls to emit (0 for non-nullable columns)

    def column_std(self) -> np.ndarray:
        """(K, G) standard deviation of each column under each component."""
        return np.sqrt((self.factor**2).sum(axis=-1) + self.diag)

    def draw(self, components: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """(n, G) latent values for rows whose mixture components are ``components``."""
        n, (n_components, g, r) = len(components), self.factor.shape
        shared, own = rng.standard_normal((n, r)), rng.standard_normal((n, g))
        out = np.empty((n, g))
        for k in range(n_components):
            rows = components == k
            out[rows] = self.mean[k] + shared[rows] @ self.factor[k].T + own[rows] * np.sqrt(self.diag[k])
        return out

    def model_cdf(self, i: int, values: np.ndarray, weights: np.ndarray) -> np.ndarray:
        """The mixture's marginal CDF of block column i at ``values``."""
        std = self.column_std()[:, i]
        return ndtr((np.asarray(values)[:, None] - self.mean[:, i]) / std) @ (weights / weights.sum())

    def quantile_steps(self, weights: np.ndarray) -> tuple[np.ndarray, ...] | None:
        """Per column, the latent values where the calibrated quantile map steps up one code: step b
        is the least g with F_model(g) · c ≥ C_b (C: the DP cumulative shares, c = C[-1]), found by
        bisection on the mixture CDF to adjacent floats. Then the code of g is the number of steps
        ≤ g — the quantile map in O(log bins) per value instead of K normal CDFs. None if uncalibrated."""
        if self.calibration is None:
            return None
        steps, column_std = [], self.column_std()
        for i, calibration in enumerate(self.calibration):
            cumulative = np.cumsum(calibration)
            targets = cumulative[:-1]  # the last code takes everything above the last step

            def reached(values, i=i, total=cumulative[-1]):
                return self.model_cdf(i, values, weights) * total >= targets

            mean, std = self.mean[:, i], column_std[:, i]
            low = np.full(targets.shape, float((mean - 64 * std).min()))
            high = np.full(targets.shape, float((mean + 64 * std).max()))
            always, never = reached(low), ~reached(high)
            for _ in range(2100):  # each halving gains a bit; adjacent floats within ~2100 from any bracket
                middle = low + (high - low) / 2
                if np.all((middle == low) | (middle == high)):
                    break
                up = reached(middle)
                high, low = np.where(up, middle, high), np.where(up, low, middle)
            steps.append(np.where(always, -np.inf, np.where(never, np.inf, high)))
        return tuple(steps)

    def to_codes(self, latent: np.ndarray, weights: np.ndarray, rng: np.random.Generator,
                 steps: tuple[np.ndarray, ...] | None = None) -> np.ndarray:
        """(n, G) codes of latent draws (calibrated quantile map, or clip + public bin; then nulls,
        whose code is the number of bins). ``steps``: :meth:`quantile_steps` for these weights, if
        the caller keeps them (they depend on the model only)."""
        codes = np.empty(latent.shape, dtype=np.int64)
        if self.calibration is not None and steps is None:
            steps = self.quantile_steps(weights)
        for i, edges in enumerate(self.edges):
            n_bins = len(edges) - 1
            if self.calibration is not None:
                codes[:, i] = np.searchsorted(steps[i], latent[:, i], side="right")
            else:
                codes[:, i] = np.clip(np.searchsorted(edges, np.clip(latent[:, i], -1.0, 1.0), side="right") - 1, 0, n_bins - 1)
            if self.null_share[i] > 0:
                codes[rng.random(len(codes)) < self.null_share[i], i] = n_bins
        return codes

    def bin_probabilities(self, i: int, weights: np.ndarray) -> np.ndarray:
        """The output's 1-way distribution over block column i's codes (null code last, if any)."""
        if self.calibration is not None:
            values = self.calibration[i] / self.calibration[i].sum()
        else:
            inner = self.edges[i][1:-1]
            values = np.diff(np.concatenate([[0.0], self.model_cdf(i, np.clip(inner, -1.0, 1.0), weights), [1.0]]))
        return values if self.null_share[i] == 0 else np.append((1 - self.null_share[i]) * values, self.null_share[i])

    def to_state(self) -> dict:
        return {
            "columns": list(self.columns),
            "mean": self.mean.tolist(),
            "factor": self.factor.tolist(),
            "diag": self.diag.tolist(),
            "calibration": None if self.calibration is None else [c.tolist() for c in self.calibration],
            "null_share": list(self.null_share),
            "edges": [e.tolist() for e in self.edges],
        }

    @classmethod
    def from_state(cls, state: dict) -> "GaussianBlock":
        calibration = state["calibration"]
        return cls(
            columns=tuple(int(c) for c in state["columns"]),
            mean=np.asarray(state["mean"], dtype=np.float64),
            factor=np.asarray(state["factor"], dtype=np.float64),
            diag=np.asarray(state["diag"], dtype=np.float64),
            edges=tuple(np.asarray(e, dtype=np.float64) for e in state["edges"]),
            calibration=None if calibration is None else tuple(np.asarray(c, dtype=np.float64) for c in calibration),
            null_share=tuple(float(v) for v in state["null_share"]),
        )
