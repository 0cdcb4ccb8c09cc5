"""Domain compression from the noisy 1-way histograms (MST's, post-processing of DP releases).

A column's codes (or its public numeric ranges) whose noisy count is below ``threshold`` standard
deviations of its noise are merged into one group: marginals over the compressed domain have
fewer cells, so they carry less noise and the model is smaller. Sampled groups become codes again
through the noisy 1-way distribution (the model's refinements).
"""

from __future__ import annotations

import numpy as np


def compress(grouping, noisy_counts: np.ndarray, sigma: float, threshold: float) -> tuple[int, ...] | None:
    """A grouping of the column's codes (numbered 0..G−1) that keeps every group of ``grouping``
    (None: every code) whose noisy count is ≥ threshold·σ_group and merges the others into one,
    last group; ``grouping`` itself when fewer than two groups would merge."""
    noisy_counts = np.asarray(noisy_counts, dtype=np.float64)
    base = np.arange(noisy_counts.size) if grouping is None else np.asarray(grouping, dtype=np.int64)
    members = np.bincount(base)
    supported = np.bincount(base, weights=noisy_counts) >= threshold * sigma * np.sqrt(members)
    if np.count_nonzero(~supported) < 2:
        return None if grouping is None else tuple(int(g) for g in grouping)
    new_id = np.where(supported, np.cumsum(supported) - 1, np.count_nonzero(supported))
    return tuple(int(g) for g in new_id[base])
