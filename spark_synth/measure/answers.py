"""Exact answers to any batch of queries in ONE pass over the table (the only code that reads rows).

Each kind of query (:attr:`~spark_synth.queries.Query.kind`) has an *accumulator* registered
here with :func:`register_answerer`: it adds one batch of rows into a flat int64 vector. One
``mapInPandas`` runs every accumulator of the batch over each partition's rows (encoding each
batch once), emits the non-zero entries, and Spark sums them exactly (as DECIMAL(38, 0)); the
driver clamps each sum to ±2^62 (a safety net: clamping is 1-Lipschitz, so it cannot raise a
query's sensitivity) and gets dense int64 arrays shaped by
:meth:`~spark_synth.queries.Query.answer_shape`. :func:`answer_frame` runs the same partition
function on a pandas frame (tests, benchmarks).

Refusals (documented; they reveal one bit each): an empty table, and — under the ``error``
out-of-domain policy only — the names of the columns holding values outside their declared
domain, nulls in a non-nullable column included (never the rows or how many). Under ``clip``
nothing else is ever refused.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Callable, Iterator, Sequence

import numpy as np
import pandas as pd

from ..errors import DataValidationError, InternalError
from ..queries import Query
from ..schema import OutOfDomainPolicy, Schema
from ..schema.encoding import encode_frame
from ..schema.spark_types import measured_column

#: Every released answer is clamped to ±2^62, so it fits OpenDP's signed 64-bit discrete Gaussian input.
MAX_ABS_ANSWER = 2**62
_OUT_SCHEMA = "query int, cell long, total long"
_ROW_COUNT = -1  # query index of the partition's row count (used only for the empty-table refusal)


class RowBatch:
    """One batch of raw rows with its public encodings computed at most once."""

    def __init__(self, frame: pd.DataFrame, schema: Schema, policy: OutOfDomainPolicy):
        self.frame, self.schema, self.policy = frame, schema, policy
        self.rejected = np.zeros(len(schema), dtype=bool)
        self._codes: np.ndarray | None = None
        self.numbers: dict[int, np.ndarray] = {}  # numeric columns' parsed values, filled with the codes
        self._embedded: dict[int, np.ndarray] = {}

    def __len__(self) -> int:
        return len(self.frame)

    @property
    def codes(self) -> np.ndarray:
        """(n, d) int64 public codes (see :func:`~spark_synth.schema.encoding.encode_frame`)."""
        if self._codes is None:
            self._codes, bad = encode_frame(self.frame, self.schema, self.policy, self.numbers)
            self.rejected |= bad
        return self._codes

    def embedded(self, embedding) -> np.ndarray:
        """(n, width) rows under ``embedding`` (one computation per embedding object)."""
        key = id(embedding)
        if key not in self._embedded:
            self._embedded[key], _ = embedding.embed(self.frame, self.policy, codes=self.codes, numbers=self.numbers)
        return self._embedded[key]


class Accumulator(ABC):
    """Exact running answer of one query over the rows seen so far (flat int64)."""

    def __init__(self, schema: Schema, query: Query):
        self.schema, self.query = schema, query
        self.shape = tuple(int(s) for s in query.answer_shape(schema))
        self.totals = np.zeros(int(np.prod(self.shape, dtype=np.int64)), dtype=np.int64)
        self.spilled: list[np.ndarray] = []

    @abstractmethod
    def add(self, batch: RowBatch) -> None:
        """Add one batch's contribution to :attr:`totals` (directly, or by :meth:`accumulate`)."""

    def accumulate(self, part: np.ndarray) -> None:
        """Add flat int64 ``part`` (|entries| ≤ 2^62) exactly: a running total that could pass
        2^62 is set aside first (:meth:`pieces` returns it too), so int64 never wraps."""
        if np.abs(self.totals).max(initial=0) > MAX_ABS_ANSWER - np.abs(part).max(initial=0):
            self.spilled.append(self.totals)
            self.totals = np.zeros_like(self.totals)
        self.totals += part

    def pieces(self) -> list[np.ndarray]:
        """Flat int64 arrays whose exact sum is the partial answer."""
        return [*self.spilled, self.totals]


_ANSWERERS: dict[str, type[Accumulator]] = {}


def register_answerer(kind: str) -> Callable[[type[Accumulator]], type[Accumulator]]:
    """Class decorator: the accumulator answering queries of ``kind``."""

    def register(cls: type[Accumulator]) -> type[Accumulator]:
        if kind in _ANSWERERS:
            raise InternalError(f"two answerers for query kind {kind!r}")
        _ANSWERERS[kind] = cls
        return cls

    return register


def accumulator(schema: Schema, query: Query) -> Accumulator:
    """A fresh accumulator for ``query`` (validates it against ``schema``)."""
    cls = _ANSWERERS.get(getattr(query, "kind", None))
    if cls is None:
        raise InternalError(f"no answerer registered for query kind {getattr(query, 'kind', type(query).__name__)!r}")
    return cls(schema, query)


def partition_scan(schema: Schema, queries: Sequence[Query], policy: OutOfDomainPolicy):
    """The per-partition function: every query's partial sums over an iterator of row batches.

    Emits rows (query index, cell, total) for the non-zero cells, the row count, and one row per
    column holding refused values. A closure over public information only.
    """

    def scan(batches: Iterator[pd.DataFrame]) -> Iterator[pd.DataFrame]:
        accumulators = [accumulator(schema, q) for q in queries]
        rows = 0
        rejected = np.zeros(len(schema), dtype=bool)
        for frame in batches:
            if frame.empty:
                continue
            frame.columns = list(schema.names)  # batches arrive in schema order (see answer_queries)
            batch = RowBatch(frame, schema, policy)
            batch.codes  # every query kind refuses on the same encoding
            for acc in accumulators:
                acc.add(batch)
            rejected |= batch.rejected
            rows += len(batch)
        frames = []
        for index, acc in enumerate(accumulators):
            for piece in acc.pieces():  # Spark sums repeated (query, cell) rows exactly
                nonzero = np.flatnonzero(piece)
                frames.append(pd.DataFrame({"query": np.int32(index), "cell": nonzero.astype(np.int64), "total": piece[nonzero]}))
        bad = np.flatnonzero(rejected)
        frames.append(pd.DataFrame({"query": np.concatenate([[_ROW_COUNT], -2 - bad]).astype(np.int32), "cell": 0,
                                    "total": np.concatenate([[rows], np.ones(bad.size)]).astype(np.int64)}))
        yield pd.concat(frames, ignore_index=True).astype({"query": "int32", "cell": "int64", "total": "int64"})

    return scan


def out_of_domain_error(names: list[str]) -> DataValidationError:
    """The refusal of columns holding values the out-of-domain policy does not accept."""
    return DataValidationError(
        f"columns {names} hold values outside their declared domain (or nulls in a non-nullable column) "
        "and the out-of-domain policy refuses them: widen the schema's bounds/categories, make the "
        "column nullable, or use --out-of-domain clip. (How many rows are affected is private and not reported.)")


def answer_queries(df, schema: Schema, queries: Sequence[Query], policy: OutOfDomainPolicy = OutOfDomainPolicy.CLIP) -> list[np.ndarray]:
    """Exact answers (int64 arrays) to ``queries`` over Spark DataFrame ``df``, in ONE pass."""
    from pyspark.sql import functions as F

    if not queries:
        return []
    shapes = [accumulator(schema, q).shape for q in queries]  # validates every query first
    sums = (
        # plain positional names: mapInPandas resolves a dotted name ("emp.var.rate") as a struct path
        df.select(*_measured(df, schema))
        .mapInPandas(partition_scan(schema, list(queries), OutOfDomainPolicy(policy)), _OUT_SCHEMA)
        .selectExpr("query", "cell", "CAST(total AS DECIMAL(38, 0)) AS total")  # no overflow while summing
        .groupBy("query", "cell")
        .agg(F.sum("total").alias("total"))
        # each exact sum clamped to ±2^62 (clamp_sum) in Spark, then int64: three plain columns reach the driver
        .select("query", "cell", F.greatest(F.least("total", F.lit(MAX_ABS_ANSWER)), F.lit(-MAX_ABS_ANSWER))
                .cast("long").alias("total"))
    )
    return _assemble_sums(schema, shapes, *_int64_columns(sums, ("query", "cell", "total")))


def _int64_columns(frame, names) -> list[np.ndarray]:
    """``frame``'s integer columns as int64 arrays on the driver: through Arrow (pyspark >= 4, classic
    or Connect), else collected rows. A wide table's answers are tens of millions of cells: as Row
    objects and a dict of Python integers they took 11 GB of driver memory on 300 columns."""
    if hasattr(frame, "toArrow"):
        table = frame.toArrow()
        return [table.column(name).to_numpy().astype(np.int64, copy=False) for name in names]
    rows = frame.collect()
    return [np.fromiter((row[k] for row in rows), dtype=np.int64, count=len(rows)) for k in range(len(names))]


def _measured(df, schema: Schema) -> list:
    """The schema's columns of ``df`` as positional ``_c{j}`` (dates/timestamps as numbers, see
    :func:`~spark_synth.schema.spark_types.measured_column`)."""
    from pyspark.sql import functions as F

    types = {f.name: f.dataType for f in df.schema.fields}
    return [measured_column(column, types.get(column.name), F.col(_quoted(column.name))).alias(f"_c{j}")
            for j, column in enumerate(schema)]


def _quoted(name: str) -> str:
    """A column name as a Spark identifier (backticks, so dots and spaces are part of the name)."""
    return "`" + name.replace("`", "``") + "`"


def answer_frame(frame: pd.DataFrame, schema: Schema, queries: Sequence[Query],
                 policy: OutOfDomainPolicy = OutOfDomainPolicy.CLIP) -> list[np.ndarray]:
    """The same answers computed in-process on a pandas frame (tests and benchmarks)."""
    if not queries:
        return []
    shapes = [accumulator(schema, q).shape for q in queries]
    (partial,) = list(partition_scan(schema, list(queries), OutOfDomainPolicy(policy))(iter([frame[list(schema.names)]])))
    return _assemble_sums(schema, shapes, *_exact_sums(partial.itertuples(index=False, name=None)))


def clamp_sum(total: int) -> int:
    """An exact integer sum clamped to ±2^62 (1-Lipschitz, so the sensitivity still holds)."""
    return max(-MAX_ABS_ANSWER, min(MAX_ABS_ANSWER, int(total)))


def clamp_sums(values) -> np.ndarray:
    """Exact integer sums (any iterable of integers) as int64, each clamped by :func:`clamp_sum`."""
    return np.array([clamp_sum(v) for v in values], dtype=np.int64)


def _assemble_sums(schema: Schema, shapes, query: np.ndarray, cell: np.ndarray, total: np.ndarray) -> list[np.ndarray]:
    """Dense int64 answers from one clamped sum per (query, cell), as arrays — the row count at query
    ``_ROW_COUNT``, a rejected column j at query ``-2 - j`` — refusing rejected columns and an empty table."""
    rejected = {schema.names[-2 - int(q)] for q in np.unique(query[query < _ROW_COUNT])}
    if rejected:
        raise out_of_domain_error([n for n in schema.names if n in rejected])
    if int(total[query == _ROW_COUNT].sum()) == 0:
        # Refusing an empty table reveals only that it is empty (documented in docs/privacy.md).
        raise DataValidationError("the input table has no rows; there is nothing to synthesize")
    kept = query >= 0
    order = np.argsort(query[kept], kind="stable")
    query, cell, total = query[kept][order], cell[kept][order], total[kept][order]
    bounds = np.searchsorted(query, np.arange(len(shapes) + 1))
    answers = []
    for q, shape in enumerate(shapes):
        answer = np.zeros(int(np.prod(shape, dtype=np.int64)), dtype=np.int64)
        answer[cell[bounds[q]:bounds[q + 1]]] = total[bounds[q]:bounds[q + 1]]
        answers.append(answer.reshape(shape))
    return answers


def _exact_sums(entries) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(query, cell, total)`` entries summed exactly per (query, cell) in Python integers, each
    sum clamped (:func:`clamp_sums`): the arrays :func:`_assemble_sums` takes (the pandas path)."""
    exact: dict[tuple[int, int], int] = {}
    for query, cell, total in entries:
        exact[int(query), int(cell)] = exact.get((int(query), int(cell)), 0) + int(total)
    keys = np.array(list(exact), dtype=np.int64).reshape(-1, 2)
    return keys[:, 0], keys[:, 1], clamp_sums(exact.values())
