"""Sliced Chebyshev moment sums in ONE distributed pass (fixed point, exact integer aggregation).

Each partition embeds its rows (public embedding), projects them on all L directions at once
(rows × directions matrix product), runs the Chebyshev recurrence T_{j+1} = 2zT_j − T_{j−1}
vectorised over rows × directions, truncates T_j/√j to fixed point and sums as int64. Spark sums
the partitions' integers exactly; the driver gets L·k numbers.
"""

from __future__ import annotations

from typing import Iterator

import numpy as np
import pandas as pd

from ..errors import DataValidationError, ParameterError
from ..queries import MomentQuery
from ..schema import OutOfDomainPolicy, Schema
from ..schema.embedding import Embedding

_OUT_SCHEMA = "entry long, total long"
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


def measure_moment_sums(df, schema: Schema, query: MomentQuery, policy: OutOfDomainPolicy) -> np.ndarray:
    """Exact fixed-point moment sums (L, k) as int64, over the whole table, in one pass."""
    from pyspark.sql import functions as F

    if query.adaptive:
        raise ValueError(f"moment query {query.name!r} is adaptive: complete it (Engine.adapt) before measuring")
    embedding = Embedding(schema, query.value_knots)
    if query.directions.shape[1] != embedding.width:
        raise ValueError(f"directions have {query.directions.shape[1]} coordinates; the embedding has {embedding.width}")
    partial = _partition_sums(embedding, query, OutOfDomainPolicy(policy))
    rows = (
        df.select(*schema.names)
        .mapInPandas(partial, _OUT_SCHEMA)
        .selectExpr("entry", "CAST(total AS DECIMAL(38, 0)) AS total")  # no overflow while summing
        .groupBy("entry")
        .agg(F.sum("total").alias("total"))
        .collect()
    )
    totals = np.zeros(query.n_directions * query.degree, dtype=np.int64)
    rejected = []
    for entry, total in rows:
        if entry < 0:
            rejected.append(schema.names[-1 - entry])
        elif abs(int(total)) >= query.MAX_ABS_SUM:
            raise ParameterError(
                "splice.moment_fraction_bits", f"fewer than {query.fraction_bits} for a table this large (fixed-point sums overflow 63 bits)",
                query.fraction_bits,
            )
        else:
            totals[entry] = int(total)
    if rejected:
        raise DataValidationError(
            f"columns {sorted(rejected)} hold values the out-of-domain policy refuses (see the schema's domain)"
        )
    return totals.reshape(query.n_directions, query.degree)


def _partition_sums(embedding: Embedding, query: MomentQuery, policy: OutOfDomainPolicy):
    def sums(batches: Iterator[pd.DataFrame]) -> Iterator[pd.DataFrame]:
        totals = np.zeros((query.n_directions, query.degree), dtype=np.int64)
        rejected = np.zeros(len(embedding.schema), dtype=bool)
        for batch in batches:
            if batch.empty:
                continue
            x, bad = embedding.embed(batch, policy)
            rejected |= bad
            totals += chebyshev_fixed_point_sums(x, query)
        flat = totals.ravel()
        bad_columns = np.flatnonzero(rejected)
        yield pd.DataFrame(
            {
                "entry": np.concatenate([np.arange(flat.size), -1 - bad_columns]).astype(np.int64),
                "total": np.concatenate([flat, np.ones(bad_columns.size, dtype=np.int64)]),
            }
        )

    return sums
