"""Post-processing of noisy counts (free under DP: it never touches the data)."""

from __future__ import annotations

from typing import Sequence

import numpy as np

from ..privacy import NoisyMeasurement


def project_to_simplex(values: np.ndarray, total: float) -> np.ndarray:
    """Euclidean projection of ``values`` onto {p ≥ 0, Σp = total} (total > 0).

    Unlike clip-and-renormalise, this keeps the noisy counts' differences and zeroes cells whose
    noisy count is small, which removes the upward bias on empty cells.
    """
    v = np.asarray(values, dtype=np.float64).ravel()
    u = np.sort(v)[::-1]
    cumulative = np.cumsum(u) - total
    k = np.arange(1, len(u) + 1)
    last = np.nonzero(u - cumulative / k > 0)[0][-1]
    shift = cumulative[last] / (last + 1)
    return np.maximum(v - shift, 0.0).reshape(np.shape(values))


def estimate_total(measurements: Sequence[NoisyMeasurement]) -> float:
    """Inverse-variance weighted estimate of the row count from the noisy histograms' totals.

    A histogram with c cells and per-cell noise σ has a total with variance c·σ².
    """
    weights = np.array([1.0 / (m.values.size * m.sigma**2) if m.sigma > 0 else np.inf for m in measurements])
    totals = np.array([float(m.values.sum()) for m in measurements])
    if np.isinf(weights).any():
        return float(max(totals[np.isinf(weights)].mean(), 1.0))
    return float(max(np.dot(weights, totals) / weights.sum(), 1.0))


def probabilities_from_counts(values: np.ndarray, total: float) -> np.ndarray:
    """Noisy counts → a probability vector (projection onto the simplex scaled to ``total``)."""
    projected = project_to_simplex(values, total)
    return projected / projected.sum()
