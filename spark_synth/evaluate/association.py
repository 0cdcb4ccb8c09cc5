"""Association structure: one matrix of pairwise association strengths per table, and their difference.

* numeric – numeric: |Pearson correlation| over rows where both values are present;
* categorical – categorical: Cramér's V of the contingency table (null is a category);
* categorical – numeric: the correlation ratio η (share of the numeric column's spread explained by
  the category; null is a category, rows with a missing number are left out).

Everything is computed from the distributed statistics (2-way counts and
:mod:`~spark_synth.evaluate.profile` moments): no rows reach the driver. Pearson is reported as an
absolute value so that all three measures live in [0, 1] and can share one heat map scale; a sign
flip therefore does not count as a difference. A constant column has association 0.
"""

from __future__ import annotations

import numpy as np

from ..schema import Schema
from .profile import TableStats


def cramers_v(table: np.ndarray) -> float:
    table = np.asarray(table, dtype=np.float64)
    table = table[table.sum(axis=1) > 0][:, table.sum(axis=0) > 0]
    n = table.sum()
    r, c = table.shape
    if n == 0 or min(r, c) < 2:
        return 0.0
    expected = table.sum(axis=1, keepdims=True) * table.sum(axis=0, keepdims=True) / n
    chi2 = float(((table - expected) ** 2 / expected).sum())
    return float(np.sqrt(min(1.0, chi2 / n / (min(r, c) - 1))))


def pearson(n, sx, sy, sxx, syy, sxy) -> float:
    if n < 2:
        return 0.0
    cov = sxy - sx * sy / n
    vx, vy = sxx - sx * sx / n, syy - sy * sy / n
    if vx <= 1e-12 * max(1.0, sxx) or vy <= 1e-12 * max(1.0, syy):
        return 0.0
    return float(np.clip(abs(cov) / np.sqrt(vx * vy), 0.0, 1.0))


def correlation_ratio(n_k: np.ndarray, s_k: np.ndarray, ss_k: np.ndarray) -> float:
    n = n_k.sum()
    if n < 2:
        return 0.0
    mean = s_k.sum() / n
    total = ss_k.sum() - n * mean * mean
    if total <= 1e-12 * max(1.0, ss_k.sum()):
        return 0.0
    present = n_k > 0
    between = float((s_k[present] ** 2 / n_k[present]).sum() - n * mean * mean)
    return float(np.sqrt(np.clip(between / total, 0.0, 1.0)))


def association_matrix(schema: Schema, pair_counts: dict, stats: TableStats) -> np.ndarray:
    """The d × d association matrix (diagonal 1) from 2-way counts and profile statistics."""
    names = list(schema.names)
    numeric = [c.name for c in schema if not c.type.is_discrete]
    num_index = {n: i for i, n in enumerate(numeric)}
    d = len(names)
    out = np.eye(d)
    for a in range(d):
        for b in range(a + 1, d):
            ca, cb = schema[names[a]], schema[names[b]]
            if ca.type.is_discrete and cb.type.is_discrete:
                key = (names[a], names[b])
                value = cramers_v(pair_counts[key]) if key in pair_counts else np.nan
            elif not ca.type.is_discrete and not cb.type.is_discrete:
                i, j = num_index[names[a]], num_index[names[b]]
                value = pearson(*(stats.pair[s, i, j] for s in range(6)))
            else:
                cat, num = (names[a], names[b]) if ca.type.is_discrete else (names[b], names[a])
                block = stats.by_category[cat][:, num_index[num], :]
                value = correlation_ratio(block[0], block[1], block[2])
            out[a, b] = out[b, a] = value
    return out


def association_difference(real: np.ndarray, synthetic: np.ndarray, names: list[str]) -> dict:
    """Mean / max absolute difference over the off-diagonal pairs (pairs too large to count are skipped)."""
    upper = np.triu_indices(len(names), k=1)
    diff = np.abs(real - synthetic)[upper]
    keep = ~np.isnan(diff)
    if not keep.any():
        return {"abs_diff_mean": 0.0, "abs_diff_max": 0.0, "worst_pair": None, "n_pairs": 0}
    values = diff[keep]
    worst = int(np.argmax(values))
    pairs = list(zip(upper[0][keep], upper[1][keep]))
    i, j = pairs[worst]
    return {"abs_diff_mean": float(values.mean()), "abs_diff_max": float(values[worst]),
            "worst_pair": [names[i], names[j]], "n_pairs": int(keep.sum())}
