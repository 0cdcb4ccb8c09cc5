"""Sliced Chebyshev moment sums (fixed point, exact integer aggregation).

Each partition embeds its rows (public embedding), projects them on all L directions at once
(rows × directions matrix product, exact on a public grid: see :func:`exact_projection`), runs the
Chebyshev recurrence T_{j+1} = 2zT_j − T_{j−1} elementwise over rows × directions, rounds T_j/√j
to fixed point and sums as int64, chunk by chunk
(a chunk's sum fits 2^62 whatever the precision; a running total that could pass 2^62 is set
aside and emitted as it is). Spark sums the partitions' integers exactly and the driver clamps
each sum to ±2^62 (see :mod:`spark_synth.measure.answers`); the driver gets L·k numbers.
"""

from __future__ import annotations

from typing import Iterator

import numpy as np

from ..errors import InternalError, ParameterError
from ..queries import MAX_FRACTION_BITS, MomentQuery
from ..schema import OutOfDomainPolicy, Schema
from ..schema.embedding import Embedding
from . import moment_kernel
from .answers import MAX_ABS_ANSWER, Accumulator, RowBatch, answer_queries, clamp_sums, register_answerer
from .moment_kernel import MomentTables

_ROWS_PER_CHUNK = 8192
assert _ROWS_PER_CHUNK << MAX_FRACTION_BITS <= MAX_ABS_ANSWER  # a chunk's sum always fits 2^62
_DIRECTION_BITS = 30  # directions are rounded to multiples of 2^-30
_MAX_ROW_BITS = 30  # embedded rows to multiples of 2^-a, a ≤ 30 chosen so the product is exact


def projection_grid(query: MomentQuery) -> tuple[np.ndarray, int]:
    """The directions on their public grid (integers, in units of 2^-30) and the bits ``a`` of the
    rows' grid: every partial sum of a row's products is then an integer below 2^53 (|x| ≤ 1)."""
    w = np.rint(query.directions * 2.0**_DIRECTION_BITS)
    if not np.isfinite(w).all():
        raise ParameterError(f"directions of {query.name!r}", "finite numbers", "non-finite entries")
    reach = int(np.abs(w).sum(axis=1).max(initial=1.0))  # largest Σ_t |w_t| in units: bounds |Σ_t x_t w_t|
    row_bits = min(_MAX_ROW_BITS, 53 - reach.bit_length())
    if row_bits < 8:
        raise ParameterError(f"directions of {query.name!r}", "rows with an l1 norm of at most 2^15", "larger")
    return w, row_bits


def projection_unit(grid: tuple[np.ndarray, int]) -> float:
    """The value of one unit of a row-grid × direction-grid product."""
    return 2.0 ** -(grid[1] + _DIRECTION_BITS)


def exact_projection(x: np.ndarray, query: MomentQuery, grid: tuple[np.ndarray, int] | None = None) -> np.ndarray:
    """z = xq · wqᵀ for the rows and directions rounded to their public grids. Computed in integers
    held exactly by float64, so every summation order (BLAS kernel, batch size, position in the
    batch) gives the same z: a row's contribution depends on that row alone."""
    w, row_bits = grid or projection_grid(query)
    return (np.rint(x * 2.0**row_bits) @ w.T) * projection_unit((w, row_bits))


def fixed_point_chunks(x: np.ndarray, query: MomentQuery) -> Iterator[np.ndarray]:
    """Per chunk of at most 8192 rows of ``x`` (n, D): the int64 sums (L, k) of
    round(T_j(w_lᵀx)/√j · 2^bits). Each entry is at most 2^bits, so a chunk's sum is at most 2^62.

    Rounding to nearest (not truncation) keeps the fixed-point error unbiased; it can move an entry
    by half a unit, which :attr:`MomentQuery.l2_sensitivity` accounts for."""
    scale = float(2**query.fraction_bits)
    inv_sqrt_j = 1.0 / np.sqrt(np.arange(1, query.degree + 1))
    grid = projection_grid(query)
    for start in range(0, len(x), _ROWS_PER_CHUNK):
        z = exact_projection(x[start : start + _ROWS_PER_CHUNK], query, grid)  # (rows, L)
        if not np.isfinite(z).all():  # rint(NaN) would be INT64_MIN: never round a non-finite value
            raise InternalError(f"non-finite projection in moment query {query.name!r}")
        z = np.clip(z, -1.0, 1.0)
        totals = np.zeros((query.n_directions, query.degree), dtype=np.int64)
        previous, current = np.ones_like(z), z
        for j in range(1, query.degree + 1):
            totals[:, j - 1] = np.rint(np.clip(current, -1.0, 1.0) * (inv_sqrt_j[j - 1] * scale)).astype(np.int64).sum(axis=0)
            previous, current = current, 2.0 * z * current - previous
        yield totals


def chebyshev_fixed_point_sums(x: np.ndarray, query: MomentQuery) -> np.ndarray:
    """Integer sums (L, k) of round(T_j(w_lᵀx)/√j · 2^bits) over the rows of ``x`` (n, D), summed
    exactly and clamped to ±2^62 (as the released answer is)."""
    exact = np.zeros((query.n_directions, query.degree), dtype=object)
    for part in fixed_point_chunks(x, query):
        exact += part.astype(object)  # Python integers: no overflow
    return clamp_sums(exact.ravel()).reshape(exact.shape)


@register_answerer(MomentQuery.kind)
class MomentSummer(Accumulator):
    """Fixed-point Chebyshev moment sums over the query's directions."""

    def __init__(self, schema: Schema, query: MomentQuery):
        super().__init__(schema, query)
        # the embedding spans query.columns (a scoped oracle's columns) or the whole schema
        self.index = None if query.columns is None else [_column_index(schema, c, query) for c in query.columns]
        view = schema if self.index is None else Schema(tuple(schema.columns[j] for j in self.index), name=schema.name)
        self.embedding = Embedding(view, query.value_knots)
        if query.directions.shape[1] != self.embedding.width:
            raise ParameterError(f"directions of {query.name!r}", f"{self.embedding.width} coordinates (the embedding's width)",
                                 query.directions.shape[1])

        grid = projection_grid(query)
        self.tables = MomentTables(self.embedding, query, grid, projection_unit(grid)) if moment_kernel.COMPILED else None

    def add(self, batch: RowBatch) -> None:
        codes, numbers = batch.codes, batch.numbers
        if self.index is not None:  # the embedding's columns only, renumbered
            codes = codes[:, self.index]
            numbers = {k: numbers[j] for k, j in enumerate(self.index) if j in numbers}
        if self.tables is None:  # no numba: the reference, on the dense embedding
            embedded = (batch.embedded(self.embedding) if self.index is None
                        else self.embedding.embed(batch.frame, batch.policy, codes=codes, numbers=numbers)[0])
            for part in fixed_point_chunks(embedded, self.query):
                self.accumulate(part.ravel())
            return
        values = self.tables.numeric_values(self.embedding.value_coordinates(batch.frame, codes, numbers), len(batch))
        for start in range(0, len(batch), _ROWS_PER_CHUNK):
            stop = start + _ROWS_PER_CHUNK
            self.accumulate(self.tables.chunk_sums(codes[start:stop], values[start:stop]).ravel())


def _column_index(schema: Schema, name: str, query: MomentQuery) -> int:
    if name not in schema.names:
        raise ParameterError(f"columns of {query.name!r}", f"columns of the table's schema {list(schema.names)}", name)
    return schema.names.index(name)


def measure_moment_sums(df, schema: Schema, query: MomentQuery, policy: OutOfDomainPolicy) -> np.ndarray:
    """Exact fixed-point moment sums (L, k) as int64 (clamped to ±2^62), over the whole table, in one pass."""
    (sums,) = answer_queries(df, schema, [query], policy)
    return sums
