"""The compiled moment kernel: a row's whole contribution computed while it sits in cache.

:func:`~spark_synth.measure.moments.fixed_point_chunks` states the answer on a dense embedded
matrix with array-at-a-time numpy (the reference). This module computes the same integers from
the rows' public codes, without ever building the (rows × width) embedding:

* projection: every embedded block of a discrete column (and a numeric column's null indicator) is
  a function of the code alone, so its product with the directions is a public lookup table
  (code × L, integers on the projection grid); a numeric value coordinate adds value × direction
  column. Every term and partial sum is an integer below 2^53 (the grid's reach bound), so the sum
  is exact in any order: z is bit-identical to the reference's matrix product.
* Chebyshev recurrence, clip, rounding to fixed point and summation fused per row; rounded
  entries (integers of at most 2^bits) are summed exactly in float64 over at most 2^(52 - bits)
  rows, then moved into the chunk's int64 totals.

Compiled with numba when it is installed; otherwise the reference runs (same integers).
"""

from __future__ import annotations

import numpy as np

from ..errors import InternalError
from ..queries import MomentQuery
from ..schema.embedding import Embedding

try:  # numba is a dependency; the reference path keeps the answer identical without it
    import numba
except ImportError:  # pragma: no cover - exercised only where numba cannot be installed
    numba = None

_EXACT_FLOAT_BITS = 52  # a float64 sum of integers stays exact below 2^53


class MomentTables:
    """Public lookup tables turning a batch's codes (and numeric values) into exact projections."""

    def __init__(self, embedding: Embedding, query: MomentQuery, grid: tuple[np.ndarray, int], unit: float):
        """``grid``: the directions in integer units and the rows' grid bits; ``unit``: the value of
        one unit of their product (see :func:`~spark_synth.measure.moments.projection_grid`)."""
        w, self.row_bits = grid
        self.unit = unit
        scale = 2.0**self.row_bits
        schema = embedding.schema
        tables, offsets, numeric, numeric_weights = [], [], [], []
        start = 0
        for j, column in enumerate(schema):
            block = embedding.block(j)
            vectors = np.rint(embedding.code_vectors(j) * scale)  # as the reference rounds each coordinate
            if not column.type.is_discrete:
                numeric.append(j)
                numeric_weights.append(w[:, block.start])
                vectors[:, 0] = 0.0  # the value coordinate comes from the value itself
            tables.append(vectors @ w[:, block].T)  # (size, L), exact integers
            offsets.append(start)
            start += column.size
        self.table = np.ascontiguousarray(np.concatenate(tables, axis=0))
        self.offsets = np.asarray(offsets, dtype=np.int64)
        self.numeric = numeric
        self.numeric_weights = np.ascontiguousarray(np.array(numeric_weights, dtype=np.float64).reshape(len(numeric), w.shape[0]))
        self.coefficients = (1.0 / np.sqrt(np.arange(1, query.degree + 1))) * float(2**query.fraction_bits)
        self.flush_rows = 1 << max(0, _EXACT_FLOAT_BITS - query.fraction_bits)
        self.shape = (query.n_directions, query.degree)

    def numeric_values(self, values: dict[int, np.ndarray], n_rows: int) -> np.ndarray:
        """(n, m) numeric value coordinates on the row grid (the reference's rint(x · 2^a))."""
        columns = [np.rint(values[j] * 2.0**self.row_bits) for j in self.numeric]
        return np.ascontiguousarray(np.stack(columns, axis=1)) if columns else np.zeros((n_rows, 0))

    def chunk_sums(self, codes: np.ndarray, numeric_values: np.ndarray) -> np.ndarray:
        """int64 (L, k) sums of round(T_j(z)/√j · 2^bits) over the rows of one chunk."""
        rows = np.ascontiguousarray(codes + self.offsets[None, :])
        if not np.isfinite(numeric_values).all():  # never round a non-finite value
            raise InternalError("non-finite numeric value coordinate in a moment query")
        out = np.zeros(self.shape, dtype=np.int64)
        _fused_chunk(rows, self.table, numeric_values, self.numeric_weights, self.unit, self.coefficients, self.flush_rows, out)
        return out


def _fused_chunk_python(rows, table, numeric_values, numeric_weights, unit, coefficients, flush_rows, out):
    """Per row: exact projection, clip to [-1, 1], Chebyshev recurrence, fixed-point rounding and
    summation (see the module docstring). Adds into ``out`` (L, k) int64."""
    n_rows, n_codes = rows.shape
    n_numeric = numeric_values.shape[1]
    n_directions, degree = out.shape
    z = np.empty(n_directions)
    previous = np.empty(n_directions)
    current = np.empty(n_directions)
    partial = np.zeros((degree, n_directions))  # exact float sums of at most flush_rows rows
    pending = 0
    for i in range(n_rows):
        for l in range(n_directions):
            z[l] = 0.0
        for c in range(n_codes):
            entry = table[rows[i, c]]
            for l in range(n_directions):
                z[l] += entry[l]
        for m in range(n_numeric):
            value = numeric_values[i, m]
            if value != 0.0:
                weights = numeric_weights[m]
                for l in range(n_directions):
                    z[l] += value * weights[l]
        for l in range(n_directions):
            zl = min(max(z[l] * unit, -1.0), 1.0)
            z[l] = zl
            previous[l] = 1.0
            current[l] = zl
        for j in range(degree):
            coefficient = coefficients[j]
            row = partial[j]
            for l in range(n_directions):
                t = current[l]
                row[l] += np.rint(min(max(t, -1.0), 1.0) * coefficient)
                following = 2.0 * z[l] * t - previous[l]
                previous[l] = t
                current[l] = following
        pending += 1
        if pending == flush_rows or i == n_rows - 1:
            for j in range(degree):
                for l in range(n_directions):
                    out[l, j] += np.int64(partial[j, l])
                    partial[j, l] = 0.0
            pending = 0


def _compiled(function):
    """``function`` compiled by numba, cached on disk where numba finds a writable cache folder
    (next to this file, else the user's cache); compiled per process where it finds none."""
    try:
        return numba.njit(cache=True, nogil=True)(function)
    except RuntimeError:  # "cannot cache function ...: no locator available" (read-only install and home)
        return numba.njit(nogil=True)(function)


#: False where numba cannot be imported: callers then use the reference (same integers, slower).
COMPILED = numba is not None
_fused_chunk = _compiled(_fused_chunk_python) if COMPILED else _fused_chunk_python
