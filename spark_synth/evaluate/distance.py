"""Distributional distances on the public encoding (:mod:`~spark_synth.evaluate.encoding`).

* Sliced Wasserstein-1: the mean, over seeded random unit directions, of the 1-D Wasserstein-1
  distance between the two tables' projections. Each projection's distribution is a histogram on a
  fixed public grid filled by the distributed :mod:`~spark_synth.evaluate.profile` pass, so it works
  at any scale; W1 = ∫ |F_real − F_synth|, exact up to one grid step (reported as ``resolution``).
* Kernel MMD: the (biased, V-statistic) maximum mean discrepancy with a Gaussian kernel between
  bounded samples of both tables; bandwidth = median pairwise distance of the pooled sample.
  Identical samples give exactly 0.
"""

from __future__ import annotations

import numpy as np

from .profile import ProfilePlan, TableStats


def sliced_wasserstein(real_stats: TableStats, synthetic_stats: TableStats, plan: ProfilePlan) -> dict:
    p, q = real_stats.projections, synthetic_stats.projections
    step = (plan.upper - plan.lower) / plan.bins
    if p.sum() == 0 or q.sum() == 0:
        return {"sliced_w1": None, "resolution": float(step.max()), "projections": int(p.shape[0])}
    cdf_p = np.cumsum(p, axis=1) / p.sum(axis=1, keepdims=True)
    cdf_q = np.cumsum(q, axis=1) / q.sum(axis=1, keepdims=True)
    per_direction = (np.abs(cdf_p - cdf_q) * step[:, None]).sum(axis=1)
    return {"sliced_w1": float(per_direction.mean()), "sliced_w1_max": float(per_direction.max()),
            "resolution": float(step.max()), "projections": int(p.shape[0])}


def _sq_dists(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    d = (a * a).sum(1)[:, None] + (b * b).sum(1)[None, :] - 2.0 * a @ b.T
    return np.maximum(d, 0.0)


def mmd(real: np.ndarray, synthetic: np.ndarray) -> dict:
    """Gaussian-kernel MMD between two encoded samples (rows are points)."""
    if len(real) == 0 or len(synthetic) == 0:
        return {"mmd": None, "bandwidth": None, "n_real": len(real), "n_synthetic": len(synthetic)}
    pooled = np.vstack([real, synthetic])
    rng = np.random.default_rng(0)
    sub = pooled[rng.choice(len(pooled), size=min(len(pooled), 1000), replace=False)]
    d = np.sqrt(_sq_dists(sub, sub))
    positive = d[d > 0]
    bandwidth = float(np.median(positive)) if positive.size else 1.0
    gamma = 1.0 / (2.0 * bandwidth**2)
    kxx = np.exp(-gamma * _sq_dists(real, real)).mean()
    kyy = np.exp(-gamma * _sq_dists(synthetic, synthetic)).mean()
    kxy = np.exp(-gamma * _sq_dists(real, synthetic)).mean()
    value = float(np.sqrt(max(kxx + kyy - 2.0 * kxy, 0.0)))
    return {"mmd": value, "bandwidth": bandwidth, "n_real": len(real), "n_synthetic": len(synthetic)}
