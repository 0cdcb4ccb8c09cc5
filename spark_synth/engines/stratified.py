"""Stratified uniforms: exact per-row draws whose counts are the expected counts, rounded.

Sampling n rows i.i.d. from a model adds multinomial noise to every marginal of the output (about
√(n·p) rows per cell) on top of the model's own error. Systematic sampling removes most of it:
within a group of m rows the uniforms are (rank + U)/m, one U per group and each row's rank a random
permutation, so inverse-CDF draws put ⌊m·p⌋ or ⌈m·p⌉ rows in every outcome — and each row's uniform is
still exactly U(0, 1), independent of anything else about the row, so every row's distribution is
the model's (the draws are post-processing of the model; the rows are merely not independent of
each other). Grouping by the values already drawn (a bag's separator, a mixture component) rounds
the conditional counts too. private-pgm's ``synthetic_data`` rounds counts in the same spirit.
"""

from __future__ import annotations

import numpy as np


def stratified_uniforms(n: int, rng: np.random.Generator, groups: np.ndarray | None = None) -> np.ndarray:
    """``n`` uniforms on [0, 1), each exactly U(0, 1), evenly spread within each group of equal ``groups``
    values (one group when None): the k-th of a group's m rows in a random order gets (k + U_group)/m."""
    if n == 0:
        return np.empty(0, dtype=np.float64)
    keys = np.zeros(n, dtype=np.int64) if groups is None else np.asarray(groups)
    if keys.shape != (n,):
        raise ValueError(f"groups must have shape ({n},), not {keys.shape}")
    shuffled = rng.permutation(n)  # a row's rank within its group is uniformly random
    order = shuffled[np.argsort(keys[shuffled], kind="stable")]  # rows grouped, random order within each group
    _, starts, counts = np.unique(keys[order], return_index=True, return_counts=True)
    group_of = np.repeat(np.arange(len(counts)), counts)
    rank = np.arange(n) - starts[group_of]
    out = np.empty(n, dtype=np.float64)
    out[order] = (rank + rng.random(len(counts))[group_of]) / counts[group_of]
    return out


def inverse_cdf(cumulative: np.ndarray, uniforms: np.ndarray) -> np.ndarray:
    """Indices drawn by ``uniforms`` in [0, 1) from unnormalised cumulative weights (zero weights never)."""
    return np.minimum(np.searchsorted(cumulative, uniforms * cumulative[-1], side="right"), len(cumulative) - 1)


def stratified_choice(weights: np.ndarray, n: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` indices drawn ∝ ``weights`` (≥ 0, not all zero), each exactly, with stratified uniforms."""
    return inverse_cdf(np.cumsum(weights), stratified_uniforms(n, rng))
