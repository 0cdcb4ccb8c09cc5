"""Exact marginal counts: the histogram of a column set over its public codes.

Each partition encodes its rows to public codes (see :mod:`spark_synth.schema.encoding`) and
accumulates a dense histogram per requested column set; only non-zero cells leave the partition
(see :mod:`spark_synth.measure.answers`).
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from ..errors import ParameterError
from ..queries import MarginalQuery
from ..schema import OutOfDomainPolicy, Schema
from .answers import Accumulator, RowBatch, answer_queries, register_answerer

#: Largest dense histogram (cells) one column set may have.
MAX_CELLS_PER_MARGINAL = 1 << 22


def marginal_shape(schema: Schema, columns: Sequence[str]) -> tuple[int, ...]:
    return tuple(schema[c].size for c in columns)


@register_answerer(MarginalQuery.kind)
class MarginalCounter(Accumulator):
    """Counts of rows per cell of the column set's public codes."""

    def __init__(self, schema: Schema, query: MarginalQuery):
        unknown = [c for c in query.columns if c not in schema.names]
        if unknown:
            raise ParameterError(f"columns of {query.name!r}", f"columns of the schema {list(schema.names)}", unknown)
        super().__init__(schema, query)
        if self.totals.size > MAX_CELLS_PER_MARGINAL:
            raise ParameterError(f"marginal over {list(query.columns)}", f"at most {MAX_CELLS_PER_MARGINAL} cells (use coarser bins)",
                                 self.totals.size)
        self.positions = [schema.names.index(c) for c in query.columns]
        self.lookups = [None if g is None else np.asarray(g, dtype=np.int64) for g in (query.groupings or [None] * len(query.columns))]

    def add(self, batch: RowBatch) -> None:
        codes = [batch.codes[:, j] if lookup is None else lookup[batch.codes[:, j]] for j, lookup in zip(self.positions, self.lookups)]
        cells = np.ravel_multi_index(tuple(codes), self.shape)
        self.totals += np.bincount(cells, minlength=self.totals.size)


def count_marginals(df, schema: Schema, column_sets: Sequence[Sequence[str]],
                    policy: OutOfDomainPolicy = OutOfDomainPolicy.CLIP) -> list[np.ndarray]:
    """Exact histograms (int64 arrays shaped by the columns' domain sizes), one per column set, in
    one pass. Raises :class:`~spark_synth.errors.DataValidationError` naming the columns (never the
    rows or how many) whose values the out-of-domain ``policy`` refuses."""
    return answer_queries(df, schema, [MarginalQuery(tuple(cols)) for cols in column_sets], policy)
