"""Column partitions: checked when the user names them, or grouped from DP pairwise associations.

A partition is a tuple of column indices (schema order); partitions are disjoint and cover every
column. Grouping by association is post-processing of noisy 2-way marginals: strongly associated
columns stay together, so the join has less to restore.
"""

from __future__ import annotations

import math

import numpy as np

from ...errors import ParameterError
from ...schema import Schema

Partition = tuple[int, ...]


def checked_partitions(schema: Schema, partitions: list[list[str]]) -> list[Partition]:
    """The user's partitions as column indices; one-line errors for unknown, repeated or left-out columns."""
    names = schema.names
    unknown = [c for p in partitions for c in p if c not in names]
    if unknown:
        raise ParameterError("dgm.partitions", f"names of schema columns (unknown: {unknown})", partitions)
    seen = [c for p in partitions for c in p]
    repeated = sorted({c for c in seen if seen.count(c) > 1})
    if repeated:
        raise ParameterError("dgm.partitions", f"disjoint lists (in more than one partition: {repeated})", partitions)
    missing = [c for c in names if c not in seen]
    if missing:
        raise ParameterError("dgm.partitions", f"lists that cover every column (not in any partition: {missing})", partitions)
    return [tuple(sorted(names.index(c) for c in p)) for p in partitions]


def association(table: np.ndarray) -> float:
    """Cramér's V of a (noisy) two-way table, negative counts clipped to zero first."""
    table = np.clip(np.asarray(table, dtype=np.float64), 0.0, None)
    table = table[table.sum(axis=1) > 0][:, table.sum(axis=0) > 0]
    total = table.sum()
    if total <= 0 or min(table.shape) < 2:
        return 0.0
    expected = np.outer(table.sum(axis=1), table.sum(axis=0)) / total
    chi2 = float(((table - expected) ** 2 / expected).sum())
    return math.sqrt(chi2 / (total * (min(table.shape) - 1)))


def grouped_by_association(n_columns: int, strength: dict[tuple[int, int], float], n_partitions: int) -> list[Partition]:
    """``n_partitions`` groups of columns by average-linkage agglomeration on ``strength[(i, j)]``
    (i < j): the two groups with the strongest mean association merge first, among merges that keep
    groups within ⌈d / n⌉ columns while there are such merges."""
    if not 2 <= n_partitions <= n_columns:
        raise ParameterError("dgm.n_partitions", f"between 2 and the number of columns ({n_columns})", n_partitions)
    cap = -(-n_columns // n_partitions)
    groups: list[list[int]] = [[j] for j in range(n_columns)]

    def linkage(a: list[int], b: list[int]) -> float:
        return float(np.mean([strength.get((min(i, j), max(i, j)), 0.0) for i in a for j in b]))

    while len(groups) > n_partitions:
        pairs = [(x, y) for x in range(len(groups)) for y in range(x + 1, len(groups))]
        allowed = [(x, y) for x, y in pairs if len(groups[x]) + len(groups[y]) <= cap] or pairs  # over the cap only if need be
        x, y = max(allowed, key=lambda xy: (linkage(groups[xy[0]], groups[xy[1]]), -xy[0], -xy[1]))
        groups[x] = sorted(groups[x] + groups[y])
        del groups[y]
    return [tuple(g) for g in sorted(groups)]
