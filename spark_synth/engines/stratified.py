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
    values (non-negative integers; one group when None): the k-th of a group's m rows in a random
    order gets (k + U_group)/m."""
    if groups is None:
        return (rng.permutation(n) + rng.random()) / max(n, 1)
    keys = np.asarray(groups)
    if keys.shape != (n,) or not np.issubdtype(keys.dtype, np.integer) or (n and keys.min() < 0):
        raise ValueError(f"groups must be {n} non-negative integers, not {keys.dtype} of shape {keys.shape}")
    if n == 0:
        return np.empty(0, dtype=np.float64)
    keys = _small_keys(keys)
    order = rng.permutation(n)  # a row's rank within its group is uniformly random
    order = order[np.argsort(keys[order], kind="stable")]  # rows grouped, random order within each group
    grouped = keys[order]
    starts = np.flatnonzero(np.concatenate(([True], grouped[1:] != grouped[:-1])))
    counts = np.diff(np.append(starts, n))
    out = np.empty(n, dtype=np.float64)
    out[order] = (np.arange(n) - np.repeat(starts, counts) + np.repeat(rng.random(len(counts)), counts)) / np.repeat(counts, counts)
    return out


def ranked_uniforms(values: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Stratified uniforms in the order of ``values`` (no ties expected): the k-th smallest of the n gets
    (k + U)/n, one U for all. Each is exactly U(0, 1) when the values are exchangeable (a row's rank is
    then uniform), and they follow the values' empirical CDF, so a quantile map of them keeps the
    values' rank order while its counts are the expected counts, rounded."""
    n = len(values)
    ranks = np.empty(n, dtype=np.int64)
    ranks[np.argsort(values, kind="stable")] = np.arange(n)
    return (ranks + rng.random()) / max(n, 1)


def _small_keys(keys: np.ndarray) -> np.ndarray:
    """The same grouping as uint16 keys when they fit, numbered densely first if they are large
    (NumPy's stable sort is then a radix sort: several times faster than on int64)."""
    if int(keys.max()) >= 65_536:
        keys = np.unique(keys, return_inverse=True)[1].reshape(-1)
    return keys.astype(np.uint16) if int(keys.max()) < 65_536 else keys


def inverse_cdf(cumulative: np.ndarray, uniforms: np.ndarray) -> np.ndarray:
    """Indices drawn by ``uniforms`` in [0, 1) from unnormalised cumulative weights (zero weights never)."""
    return np.minimum(np.searchsorted(cumulative, uniforms * cumulative[-1], side="right"), len(cumulative) - 1)


def stratified_choice(weights: np.ndarray, n: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` indices drawn ∝ ``weights`` (≥ 0, not all zero), each exactly, with stratified uniforms."""
    return inverse_cdf(np.cumsum(weights), stratified_uniforms(n, rng))
