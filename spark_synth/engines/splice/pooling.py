"""SPLICE's pooled fits: each fit's seed, how many run at once, one mixture from several, and the
raking of that mixture to the DP 1-way marginals (post-processing)."""

from __future__ import annotations

import os
from typing import Sequence

import numpy as np


def fit_seed(seed: int, i: int) -> int:
    """The initialisation seed of pooled fit ``i`` (public): ``seed`` itself for the first fit, so one
    fit is the single fit of before; the others drawn from ``SeedSequence((seed, i))``."""
    return seed if i == 0 else int(np.random.SeedSequence((seed, i)).generate_state(1, dtype=np.uint64)[0] >> np.uint64(1))


def parallel_fits(fits: int, cpu_threads: int) -> int:
    """How many pooled fits run at once: as many as the CPUs hold at ``cpu_threads`` PyTorch threads each."""
    return max(1, min(fits, (os.cpu_count() or 1) // max(1, cpu_threads)))


def pool_fits(fits: Sequence[tuple], shared: Sequence[bool]):
    """One mixture from several fitted ones, each given weight 1/len(fits): components concatenated, the
    weights scaled; a ``shared`` code column (one distribution for every component) gets the fits'
    average distribution. Each fit is (weights (K,), probabilities per code column (K, size), Gaussian
    (mean, factor, diag) or None)."""
    n = len(fits)
    if n == 1:
        return fits[0]
    weights = np.concatenate([np.asarray(w, dtype=np.float64) for w, _, _ in fits]) / n
    probabilities = []
    for c, is_shared in enumerate(shared):
        tables = [np.asarray(p[c], dtype=np.float64) for _, p, _ in fits]
        if is_shared:
            probabilities.append(np.tile(np.mean([t[0] for t in tables], axis=0), (len(weights), 1)))
        else:
            probabilities.append(np.concatenate(tables, axis=0))
    gaussian = None
    if fits[0][2] is not None:
        gaussian = tuple(np.concatenate([g[part] for _, _, g in fits], axis=0) for part in range(3))
    return weights, probabilities, gaussian


def rake_to_marginals(weights: np.ndarray, probabilities: list[np.ndarray], anchors: list[np.ndarray], sweeps: int):
    """Iterative proportional fitting of the latent-class joint π(k, x_c) = w_k p_kc(x_c) to the DP
    1-way marginals of the code-modelled columns (post-processing). Each step makes column c's mixture marginal equal its anchor
    while keeping every component's conditional shape; sweeps repeat over all columns."""
    weights = np.asarray(weights, dtype=np.float64).copy()
    probabilities = [np.asarray(p, dtype=np.float64).copy() for p in probabilities]
    for _ in range(sweeps):
        for j, anchor in enumerate(anchors):
            joint = weights[:, None] * probabilities[j]  # (K, size)
            marginal = joint.sum(axis=0)
            ratio = np.divide(anchor, marginal, out=np.zeros_like(anchor), where=marginal > 0)
            joint *= ratio
            weights = joint.sum(axis=1)
            keep = weights > 0
            probabilities[j] = np.where(keep[:, None], joint / np.where(keep, weights, 1.0)[:, None], probabilities[j])
    total = weights.sum()
    return weights / total, probabilities
