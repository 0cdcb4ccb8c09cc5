"""Sliced Chebyshev moment sums (fixed point, exact integer aggregation).

Each partition embeds its rows (public embedding), projects them on all L directions at once
(rows × directions matrix product), runs the Chebyshev recurrence T_{j+1} = 2zT_j − T_{j−1}
vectorised over rows × directions, rounds T_j/√j to fixed point and sums as int64. Spark sums
the partitions' integers exactly (see :mod:`spark_synth.measure.answers`); the driver gets L·k numbers.
"""

from __future__ import annotations

import numpy as np

from ..errors import ParameterError
from ..queries import MomentQuery
from ..schema import OutOfDomainPolicy, Schema
from ..schema.embedding import Embedding
from .answers import Accumulator, RowBatch, answer_queries, register_answerer

_ROWS_PER_CHUNK = 8192


def chebyshev_fixed_point_sums(x: np.ndarray, query: MomentQuery) -> np.ndarray:
    """Integer sums (L, k) of round(T_j(w_lᵀx)/√j · 2^bits) over the rows of ``x`` (n, D).

    Rounding to nearest (not truncation) keeps the fixed-point error unbiased; it can move an entry
    by half a unit, which :attr:`MomentQuery.l2_sensitivity` accounts for."""
    scale = float(2**query.fraction_bits)
    inv_sqrt_j = 1.0 / np.sqrt(np.arange(1, query.degree + 1))
    totals = np.zeros((query.n_directions, query.degree), dtype=np.int64)
    for start in range(0, len(x), _ROWS_PER_CHUNK):
        z = np.clip(x[start : start + _ROWS_PER_CHUNK] @ query.directions.T, -1.0, 1.0)  # (rows, L)
        previous, current = np.ones_like(z), z
        for j in range(1, query.degree + 1):
            totals[:, j - 1] += np.rint(np.clip(current, -1.0, 1.0) * (inv_sqrt_j[j - 1] * scale)).astype(np.int64).sum(axis=0)
            previous, current = current, 2.0 * z * current - previous
    return totals


@register_answerer(MomentQuery.kind)
class MomentSummer(Accumulator):
    """Fixed-point Chebyshev moment sums over the query's directions."""

    def __init__(self, schema: Schema, query: MomentQuery):
        super().__init__(schema, query)
        self.embedding = Embedding(schema, query.value_knots)
        if query.directions.shape[1] != self.embedding.width:
            raise ParameterError(f"directions of {query.name!r}", f"{self.embedding.width} coordinates (the embedding's width)",
                                 query.directions.shape[1])

    def add(self, batch: RowBatch) -> None:
        self.totals += chebyshev_fixed_point_sums(batch.embedded(self.embedding), self.query).ravel()

    def overflow_error(self) -> ParameterError:
        return ParameterError("splice.moment_fraction_bits",
                              f"fewer than {self.query.fraction_bits} for a table this large (fixed-point sums overflow 63 bits)",
                              self.query.fraction_bits)


def measure_moment_sums(df, schema: Schema, query: MomentQuery, policy: OutOfDomainPolicy) -> np.ndarray:
    """Exact fixed-point moment sums (L, k) as int64, over the whole table, in one pass."""
    (sums,) = answer_queries(df, schema, [query], policy)
    return sums
