"""Distributed, exact marginal counts for many column sets in ONE pass over the table.

Each partition encodes its rows to public codes (see :mod:`spark_synth.schema.encoding`),
accumulates a dense histogram per requested column set, and emits only the non-zero cells; Spark
sums them per (set, cell). The driver receives at most one number per non-zero cell and returns
dense arrays over the public domain. This is the only code that reads private rows.
"""

from __future__ import annotations

from typing import Iterator, Sequence

import numpy as np
import pandas as pd

from ..errors import DataValidationError, ParameterError
from ..schema import OutOfDomainPolicy, Schema
from ..schema.encoding import encode_frame

#: Largest dense histogram (cells) one column set may have.
MAX_CELLS_PER_MARGINAL = 1 << 22

_OUT_SCHEMA = "query int, cell long, count long"


def marginal_shape(schema: Schema, columns: Sequence[str]) -> tuple[int, ...]:
    return tuple(schema[c].size for c in columns)


def count_marginals(
    df, schema: Schema, column_sets: Sequence[Sequence[str]], policy: OutOfDomainPolicy = OutOfDomainPolicy.CLIP
) -> list[np.ndarray]:
    """Exact histograms (int64 arrays shaped by the columns' domain sizes), one per column set.

    Raises :class:`DataValidationError` naming the columns (never the rows or how many) whose
    values the out-of-domain ``policy`` refuses.
    """
    shapes = [marginal_shape(schema, cols) for cols in column_sets]
    for cols, shape in zip(column_sets, shapes):
        cells = int(np.prod(shape, dtype=np.int64))
        if cells > MAX_CELLS_PER_MARGINAL:
            raise ParameterError(
                f"marginal over {list(cols)}", f"at most {MAX_CELLS_PER_MARGINAL} cells (use coarser bins)", cells
            )
    positions = [[schema.names.index(c) for c in cols] for cols in column_sets]
    partial_counts = _partition_counter(schema, positions, shapes, OutOfDomainPolicy(policy))
    rows = (
        df.select(*schema.names)
        .mapInPandas(partial_counts, _OUT_SCHEMA)
        .groupBy("query", "cell")
        .sum("count")
        .collect()
    )
    histograms = [np.zeros(int(np.prod(shape)), dtype=np.int64) for shape in shapes]
    rejected = set()
    for query, cell, count in rows:
        if query < 0:
            rejected.add(schema.names[-1 - query])
        else:
            histograms[query][cell] = count
    if rejected:
        names = [n for n in schema.names if n in rejected]
        raise DataValidationError(
            f"columns {names} hold values outside their declared domain (or nulls in a non-nullable column) "
            "and the out-of-domain policy refuses them: widen the schema's bounds/categories, make the "
            "column nullable, or use --out-of-domain clip. (How many rows are affected is private and not reported.)"
        )
    if histograms and not any(h.any() for h in histograms):
        # Refusing an empty table reveals only that it is empty (documented in the README).
        raise DataValidationError("the input table has no rows; there is nothing to synthesize")
    return [h.reshape(shape) for h, shape in zip(histograms, shapes)]


def _partition_counter(schema: Schema, positions, shapes, policy):
    """The per-partition function (a closure over public information only)."""

    def count(batches: Iterator[pd.DataFrame]) -> Iterator[pd.DataFrame]:
        sizes = [int(np.prod(s)) for s in shapes]
        totals = [np.zeros(n, dtype=np.int64) for n in sizes]
        rejected = np.zeros(len(schema), dtype=bool)
        for batch in batches:
            if batch.empty:
                continue
            codes, bad = encode_frame(batch, schema, policy)
            rejected |= bad
            for q, (cols, shape) in enumerate(zip(positions, shapes)):
                cells = np.ravel_multi_index(tuple(codes[:, cols].T), shape)
                totals[q] += np.bincount(cells, minlength=sizes[q])
        frames = []
        for q, total in enumerate(totals):
            nonzero = np.flatnonzero(total)
            frames.append(pd.DataFrame({"query": np.int32(q), "cell": nonzero.astype(np.int64), "count": total[nonzero]}))
        bad_columns = np.flatnonzero(rejected)
        frames.append(pd.DataFrame({"query": (-1 - bad_columns).astype(np.int32), "cell": 0, "count": 1}))
        yield pd.concat(frames, ignore_index=True).astype({"query": "int32", "cell": "int64", "count": "int64"})

    return count
