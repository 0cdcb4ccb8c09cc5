"""The compiled moment kernel gives exactly the reference's integers (dense embedding + numpy)."""

import numpy as np
import pandas as pd
import pytest

from spark_synth.measure import answer_frame, chebyshev_fixed_point_sums, moment_kernel
from spark_synth.measure.moment_kernel import MomentTables, _fused_chunk_python
from spark_synth.measure.moments import projection_grid, projection_unit
from spark_synth.queries import MomentQuery
from spark_synth.schema import Column, ColumnType, OutOfDomainPolicy, Schema
from spark_synth.schema.embedding import Embedding
from spark_synth.schema.encoding import encode_frame


def _schema() -> Schema:
    """Every block kind: one-hot (nullable and not), ordinal grid + null, numeric value + null
    (affine and through knots), a non-nullable numeric, a boolean and a date."""
    return Schema(columns=(
        Column("colour", ColumnType.CATEGORICAL, categories=("red", "green", "blue"), nullable=True),
        Column("shape", ColumnType.CATEGORICAL, categories=("round", "flat"), nullable=False),
        Column("size", ColumnType.ORDINAL, categories=(1, 2, 3, 4), nullable=True),
        Column("age", ColumnType.INTEGER, min=0, max=90, bins=9, nullable=True),
        Column("score", ColumnType.CONTINUOUS, min=-5.0, max=5.0, bins=8, nullable=False),
        Column("flag", ColumnType.BOOLEAN, nullable=True),
        Column("day", ColumnType.DATE, min=0, max=365, bins=12, nullable=True),
    ))


def _frame(n: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    colour = rng.choice(["red", "green", "blue", "purple"], n).astype(object)  # purple: out of domain
    colour[rng.random(n) < 0.1] = None
    age = rng.integers(-10, 120, n).astype(float)  # beyond the bounds: clipped
    age[rng.random(n) < 0.1] = np.nan
    score = rng.normal(0, 3, n)
    score[rng.random(n) < 0.05] = np.inf
    flag = rng.choice([True, False], n).astype(object)
    flag[rng.random(n) < 0.1] = None
    days = pd.Series(pd.to_datetime("1970-01-01") + pd.to_timedelta(rng.integers(0, 400, n), unit="D")).dt.date.astype(object)
    return pd.DataFrame({"colour": colour, "shape": rng.choice(["round", "flat"], n), "size": pd.array(rng.choice([1, 2, 3, 4], n), dtype="Int64"),
                         "age": age, "score": score, "flag": flag, "day": days})


def _query(schema: Schema, bits: int | None, knots: bool, seed: int = 0) -> MomentQuery:
    rng = np.random.default_rng(seed)
    width = Embedding(schema).width
    directions = rng.normal(size=(37, width)) * (rng.random((37, width)) < 0.5)  # sparse and dense rows
    directions /= np.maximum(np.abs(directions).sum(axis=1, keepdims=True), 1e-12)  # ‖w‖₁ ≤ 1 so |wᵀx| ≤ 1
    value_knots = None
    if knots:
        value_knots = {c.name: np.concatenate([[-1.0], np.sort(rng.uniform(-1, 1, c.n_values - 1)), [1.0]])
                       for c in schema if not c.type.is_discrete}
    return MomentQuery(name="m", directions=directions, degree=7, fraction_bits=bits, value_knots=value_knots)


@pytest.mark.parametrize("bits, knots", [(None, False), (22, True), (48, True)])  # 48 bits: exact float sums of 16 rows
def test_kernel_equals_the_dense_reference(bits, knots):
    schema = _schema()
    query = _query(schema, bits, knots)
    frame = _frame(20_000, seed=3)  # more than two chunks of 8192 rows
    (fast,) = answer_frame(frame, schema, [query])
    x, _ = Embedding(schema, query.value_knots).embed(frame, OutOfDomainPolicy.CLIP)
    assert np.array_equal(fast, chebyshev_fixed_point_sums(x, query))
    assert np.abs(fast).max() > 0


def test_compiled_and_interpreted_kernels_agree():
    """The compiled kernel is the Python function given to numba: run both on the same chunk."""
    schema = _schema()
    query = _query(schema, 22, True, seed=1)
    frame = _frame(300, seed=5)
    embedding = Embedding(schema, query.value_knots)
    grid = projection_grid(query)
    tables = MomentTables(embedding, query, grid, projection_unit(grid))
    numbers: dict = {}
    codes, _ = encode_frame(frame, schema, OutOfDomainPolicy.CLIP, numbers)
    values = tables.numeric_values(embedding.value_coordinates(frame, codes, numbers), len(frame))
    compiled = tables.chunk_sums(codes, values)
    interpreted = np.zeros_like(compiled)
    _fused_chunk_python(np.ascontiguousarray(codes + tables.offsets), tables.table, values, tables.numeric_weights, tables.unit,
                        tables.coefficients, tables.flush_rows, interpreted)
    assert np.array_equal(compiled, interpreted)


def test_the_compiled_kernel_is_in_use():
    """numba is a declared dependency: without it the pass silently falls back to the slow reference."""
    assert moment_kernel.COMPILED


def test_each_row_contributes_alone():
    """A row's integers do not depend on the other rows of its chunk (or their order)."""
    schema = _schema()
    query = _query(schema, None, True, seed=2)
    frame = _frame(64, seed=9)
    (together,) = answer_frame(frame, schema, [query])
    alone = sum(answer_frame(frame.iloc[[i]], schema, [query])[0].astype(object) for i in range(len(frame)))
    assert np.array_equal(together, alone.astype(np.int64))
    (reversed_,) = answer_frame(frame.iloc[::-1], schema, [query])
    assert np.array_equal(together, reversed_)


def test_kernel_on_a_table_without_numeric_columns():
    """Regression: an all-categorical table (mushroom) has no value coordinates at all."""
    schema = Schema(columns=tuple(c for c in _schema() if c.type.is_discrete))
    query = _query(schema, None, False, seed=3)
    frame = _frame(500, seed=4)[list(schema.names)]
    (fast,) = answer_frame(frame, schema, [query])
    x, _ = Embedding(schema).embed(frame, OutOfDomainPolicy.CLIP)
    assert np.array_equal(fast, chebyshev_fixed_point_sums(x, query))


def test_without_numba_the_reference_gives_the_same_answer(monkeypatch):
    """Where numba cannot be imported the accumulator runs the dense reference: same integers."""
    schema = _schema()
    query = _query(schema, None, True, seed=6)
    frame = _frame(3000, seed=8)
    (compiled,) = answer_frame(frame, schema, [query])
    monkeypatch.setattr(moment_kernel, "COMPILED", False)
    from spark_synth.measure.answers import accumulator

    assert accumulator(schema, query).tables is None  # the fallback really is taken
    (reference,) = answer_frame(frame, schema, [query])
    assert np.array_equal(compiled, reference)
