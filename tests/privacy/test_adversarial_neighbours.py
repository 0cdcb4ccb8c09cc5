"""Adversarial neighbours: for D and D + one row, every exact answer moves by at most its declared
sensitivity, every sum is finite and within ±2^62, and under `clip` the refusal decision of a
non-empty D never differs from that of D + row.

Schemas are generated with extreme public bounds and non-nullable columns; rows hold NaN, ±inf,
None, unknown categories, strings in numeric columns and numbers beyond float64. The documented
refusals are the exceptions: an empty table (D = ∅ is refused, D + row is not), and under
`--out-of-domain error` the names of the columns holding such values.
"""

from __future__ import annotations

import math
import re

import numpy as np
import pandas as pd
import pytest

from spark_synth.engines.splice.directions import make_directions
from spark_synth.engines.splice.engine import encoding_knots
from spark_synth.errors import DataValidationError
from spark_synth.measure import answer_frame, answer_queries
from spark_synth.queries import MarginalQuery, MomentQuery
from spark_synth.schema import Column, ColumnType, OutOfDomainPolicy, Schema

CLIP, ERROR = OutOfDomainPolicy.CLIP, OutOfDomainPolicy.ERROR
LIMIT = 2**62
CONTINUOUS_BOUNDS = [(0.0, 1.0), (-5e299, 5e299), (1.79e308 - 1e300, 1.79e308), (0.0, 5e-324), (-1e-300, 1e-300), (-1e300, 0.0)]
INTEGER_BOUNDS = [(0, 9), (-(2**62), 2**62), (-(10**15), 10**15), (0, 1), (2**53, 2**53 + 300)]
ODD_VALUES = [None, np.nan, np.inf, -np.inf, "abc", "", "1e999", " 3 ", "NaN", 10**400, -(10**400), 1e308, -1e308,
              2**63, True, b"x", "unknown", 3.5, -0.0]
N_CASES = 120


def random_column(rng: np.random.Generator, name: str) -> Column:
    kind = rng.choice(["categorical", "ordinal", "integer", "continuous"])
    nullable = bool(rng.random() < 0.5)
    if kind == "categorical":
        return Column(name, ColumnType.CATEGORICAL, categories=("a", "b", "c")[: rng.integers(1, 4)], nullable=nullable)
    if kind == "ordinal":
        categories = [(1, 2, 3), (0.5, 1.5), (-(2**62), 0, 2**62)][rng.integers(3)]
        return Column(name, ColumnType.ORDINAL, categories=categories, nullable=nullable)
    bins = [None, 1, 3][rng.integers(3)]
    if kind == "integer":
        low, high = INTEGER_BOUNDS[rng.integers(len(INTEGER_BOUNDS))]
        return Column(name, ColumnType.INTEGER, min=low, max=high, bins=bins, nullable=nullable)
    low, high = CONTINUOUS_BOUNDS[rng.integers(len(CONTINUOUS_BOUNDS))]
    return Column(name, ColumnType.CONTINUOUS, min=low, max=high, bins=bins, nullable=nullable)


def random_schema(rng: np.random.Generator) -> Schema:
    return Schema(columns=tuple(random_column(rng, f"c{i}") for i in range(rng.integers(1, 4))))


def random_value(rng: np.random.Generator, column: Column):
    """An in-domain value half of the time, else an adversarial one."""
    if rng.random() < 0.5:
        return ODD_VALUES[rng.integers(len(ODD_VALUES))]
    if column.type.is_discrete:
        return column.categories[rng.integers(len(column.categories))]
    value = float(column.min) + rng.random() * (float(column.max) - float(column.min))
    return round(value) if column.type is ColumnType.INTEGER else value


def random_rows(rng: np.random.Generator, schema: Schema, n: int) -> pd.DataFrame:
    return pd.DataFrame({c.name: [random_value(rng, c) for _ in range(n)] for c in schema}, columns=list(schema.names), dtype=object)


def queries_for(schema: Schema, seed: int) -> list:
    d = len(schema)
    out: list = [MarginalQuery((c,)) for c in schema.names]
    if d > 1:
        out.append(MarginalQuery(schema.names[:2]))
    directions, _ = make_directions(schema, n_dense=3, n_sparse=2 if d > 1 else 0, seed=seed)
    rng = np.random.default_rng(seed)
    knots = encoding_knots(schema, [rng.dirichlet(np.full(c.size, 0.3)) for c in schema], 0.7) or None
    out += [MomentQuery(name="affine", directions=directions, degree=5),
            MomentQuery(name="fine", directions=directions, degree=3, fraction_bits=48),
            MomentQuery(name="knots", directions=directions, degree=4, value_knots=knots)]
    return out


def outcome(frame: pd.DataFrame, schema: Schema, queries, policy):
    """(answers, None) or (None, the refusal)."""
    try:
        return answer_frame(frame, schema, queries, policy), None
    except DataValidationError as refusal:
        return None, refusal


def check_neighbours(queries, small: list[np.ndarray], large: list[np.ndarray]) -> None:
    for query, a, b in zip(queries, small, large):
        assert a.dtype == np.int64 and np.abs(a).max(initial=0) <= LIMIT and np.abs(b).max(initial=0) <= LIMIT
        change = (b.astype(np.float64) - a.astype(np.float64)) / query.unit
        assert np.isfinite(change).all()
        assert math.sqrt(float((change**2).sum())) <= query.l2_sensitivity, query.name
        assert float(np.abs(change).sum()) <= query.l1_sensitivity, query.name


def refused_columns(refusal) -> set[str]:
    """The column names a refusal lists (its only data-dependent content)."""
    return set(re.findall(r"'([^']+)'", str(refusal).split("]")[0]))


@pytest.mark.parametrize("block", range(4))
def test_neighbours_move_answers_by_at_most_the_sensitivity(block):
    for case in range(block * N_CASES // 4, (block + 1) * N_CASES // 4):
        rng = np.random.default_rng([case, 0xADD])
        schema = random_schema(rng)
        queries = queries_for(schema, case)
        small = random_rows(rng, schema, int(rng.integers(0, 6)))
        row = random_rows(rng, schema, 1)
        large = pd.concat([small, row], ignore_index=True)
        for policy in (CLIP, ERROR):
            a, refused_small = outcome(small, schema, queries, policy)
            b, refused_large = outcome(large, schema, queries, policy)
            if len(small) == 0:  # documented: an empty table is refused, D + row is not (under clip)
                assert "no rows" in str(refused_small)
                assert policy is ERROR or refused_large is None
            elif policy is CLIP:
                assert refused_small is None and refused_large is None, (case, refused_small or refused_large)
                check_neighbours(queries, a, b)
                alone, _ = outcome(row, schema, queries, CLIP)  # a row's contribution depends on that row only
                assert all(np.array_equal(y, x + z) for x, y, z in zip(a, b, alone))
            elif refused_small is None and refused_large is None:
                check_neighbours(queries, a, b)
            else:  # documented: `error` names columns only, and adding a row never un-refuses one
                assert refused_large is not None and "hold values outside" in str(refused_large)
                assert refused_columns(refused_large) <= set(schema.names)
                if refused_small is not None:
                    assert refused_columns(refused_small) <= refused_columns(refused_large)


def test_worst_case_rows_reach_but_never_exceed_the_bound():
    """A row at the corner of every direction (z = ±1) moves the moment sums by nearly the full bound."""
    schema = Schema(columns=(Column("v", ColumnType.CONTINUOUS, min=-5e299, max=5e299, nullable=False),))
    query = MomentQuery(name="m", directions=np.array([[1.0], [-1.0]]), degree=6)
    small = pd.DataFrame({"v": [0.0, "abc"]}, dtype=object)
    for extreme in (np.inf, 1e308, 10**400, -np.inf):
        large = pd.concat([small, pd.DataFrame({"v": [extreme]}, dtype=object)], ignore_index=True)
        (a,), (b,) = answer_frame(small, schema, [query]), answer_frame(large, schema, [query])
        change = math.sqrt(float((((b - a) / query.unit) ** 2).sum()))
        assert 0.999 * query.l2_sensitivity <= change <= query.l2_sensitivity


ADVERSARIAL_SCHEMA = Schema(columns=(
    Column("cat", ColumnType.CATEGORICAL, categories=("a", "b"), nullable=False),
    Column("big", ColumnType.INTEGER, min=-(2**62), max=2**62),
    Column("wide", ColumnType.CONTINUOUS, min=-5e299, max=5e299, bins=8, nullable=False),
    Column("rank", ColumnType.ORDINAL, categories=(1, 2, 3), nullable=False),
))


def _spark_tables(spark):
    """Two adversarial tables on Spark (strings in the numeric and ordinal columns, NaN/±inf in a double)."""
    rows = [("a", "5", 0.0, "1"), (None, "abc", float("nan"), None), ("zzz", "1e999", float("inf"), "7"),
            ("b", "99999999999999999999999", float("-inf"), "2.5"), ("a", None, None, "x"), ("b", "-3", 1e308, "3")]
    schema = "cat string, big string, wide double, rank string"
    base = spark.createDataFrame(rows, schema).repartition(2)
    extra = spark.createDataFrame([("?", "NaN", float("nan"), "")], schema)
    return base, base.unionByName(extra)


@pytest.mark.spark
def test_spark_answers_adversarial_tables_like_pandas_and_within_sensitivity(spark):
    queries = queries_for(ADVERSARIAL_SCHEMA, 3)
    small_df, large_df = _spark_tables(spark)
    answers = []
    for df in (small_df, large_df):
        distributed = answer_queries(df, ADVERSARIAL_SCHEMA, queries, CLIP)  # clip refuses nothing
        local = answer_frame(df.toPandas(), ADVERSARIAL_SCHEMA, queries, CLIP)
        assert all(np.array_equal(x, y) for x, y in zip(distributed, local))
        answers.append(distributed)
    check_neighbours(queries, *answers)
    with pytest.raises(DataValidationError, match=r"\['cat', 'big', 'wide', 'rank'\]"):
        answer_queries(small_df, ADVERSARIAL_SCHEMA, queries, ERROR)
