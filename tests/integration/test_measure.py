"""Measure layer on Spark: exact counts, one pass, sensitivity, domain policies, empty input."""

import numpy as np
import pandas as pd
import pytest

from spark_synth.errors import DataValidationError
from spark_synth.measure import check_structure, count_marginals
from spark_synth.schema import OutOfDomainPolicy, encode_frame
from tests.helpers import tiny_frame, tiny_schema

pytestmark = pytest.mark.spark


def _df(spark, frame):
    return spark.createDataFrame(frame.astype(object).where(frame.notna(), None), "colour string, size long, age long, score double")


def test_counts_match_numpy(spark):
    schema, frame = tiny_schema(), tiny_frame(1000)
    sets = [("colour",), ("size", "age"), ("colour", "size", "score"), ("score",)]
    got = count_marginals(_df(spark, frame).repartition(3), schema, sets)
    codes, _ = encode_frame(frame, schema, OutOfDomainPolicy.CLIP)
    for cols, hist in zip(sets, got):
        idx = [schema.names.index(c) for c in cols]
        shape = tuple(schema[c].size for c in cols)
        expected = np.zeros(shape, dtype=np.int64)
        np.add.at(expected, tuple(codes[:, idx].T), 1)
        assert hist.shape == shape and (hist == expected).all()
    assert got[0].sum() == 1000


def test_neighbouring_tables_change_each_histogram_by_l2_one(spark):
    """Sensitivity bound (add/remove one row) checked by brute force on real neighbours."""
    schema, frame = tiny_schema(), tiny_frame(60, seed=3)
    sets = [("colour",), ("age", "score")]
    full = count_marginals(_df(spark, frame), schema, sets)
    for drop in (0, 17, 59):
        neighbour = count_marginals(_df(spark, frame.drop(index=drop)), schema, sets)
        for a, b in zip(full, neighbour):
            assert np.sqrt(((a - b) ** 2).sum()) == 1.0


def test_error_policy_names_columns_only(spark):
    schema = tiny_schema()
    frame = tiny_frame(50)
    frame.loc[3, "age"] = 42
    with pytest.raises(DataValidationError) as info:
        count_marginals(_df(spark, frame), schema, [("colour",)], OutOfDomainPolicy.ERROR)
    message = str(info.value)
    assert "['age']" in message and "42" not in message and "1 row" not in message
    # the default policy clips instead
    (hist,) = count_marginals(_df(spark, frame), schema, [("age",)], OutOfDomainPolicy.CLIP)
    assert hist[9] >= 1 and hist.sum() == 50


def test_clip_gives_non_nullable_columns_their_public_code(spark):
    """Regression: under `clip` a null, unknown category or non-number in a non-nullable column
    failed the fit and named the column; now it counts as the first category / first bin."""
    schema = tiny_schema(nullable=False)
    frame = tiny_frame(40, seed=5)
    frame.loc[0, "colour"], frame.loc[1, "size"], frame.loc[2, "age"] = "purple", None, None
    frame.loc[3, "score"], frame.loc[4, "score"] = np.nan, np.inf
    sets = [("colour",), ("size",), ("age",), ("score",)]
    got = count_marginals(_df(spark, frame), schema, sets)  # default policy: clip
    codes, rejected = encode_frame(frame, schema, OutOfDomainPolicy.CLIP)
    assert not rejected.any() and (codes[[0, 1, 2, 3], [0, 1, 2, 3]] == 0).all() and codes[4, 3] == 3
    for j, hist in enumerate(got):
        assert hist.tolist() == np.bincount(codes[:, j], minlength=schema.columns[j].size).tolist()
    with pytest.raises(DataValidationError, match=r"\['colour', 'size', 'age', 'score'\]"):
        count_marginals(_df(spark, frame), schema, sets, OutOfDomainPolicy.ERROR)


def test_empty_table_is_refused(spark):
    empty = _df(spark, tiny_frame(5)).limit(0)
    with pytest.raises(DataValidationError, match="no rows"):
        count_marginals(empty, tiny_schema(), [("colour",)])


def test_structure_check_lists_every_problem(spark):
    df = spark.createDataFrame(pd.DataFrame({"colour": ["red"], "size": ["big"], "extra": [1]}))
    with pytest.raises(DataValidationError) as info:
        check_structure(df, tiny_schema())
    message = str(info.value)
    assert "missing columns ['age', 'score']" in message
    assert "extra columns ['extra']" in message
    assert "column 'size' has Spark type string" not in message  # strings are parsed by the encoder
    typed = spark.createDataFrame(pd.DataFrame({"colour": [1], "size": [1], "age": [1.5], "score": [0.5]}))
    with pytest.raises(DataValidationError) as info:
        check_structure(typed, tiny_schema())
    assert "column 'colour' has Spark type bigint" in str(info.value)
    assert "column 'age' has Spark type double" in str(info.value)


def test_column_names_with_dots_and_spaces_are_names_not_paths(spark):
    """bank_marketing has `emp.var.rate`: a dot must not be read as a struct field."""
    from spark_synth.schema import schema_from_dict

    schema = schema_from_dict({"columns": [{"name": "emp.var.rate", "type": "integer", "min": 0, "max": 3},
                                           {"name": "odd name", "type": "categorical", "categories": ["a", "b"]}]})
    df = spark.createDataFrame(pd.DataFrame({"emp.var.rate": [1, 3, 3], "odd name": ["a", "b", None]}))
    rate, odd = count_marginals(df, schema, [("emp.var.rate",), ("odd name",)])
    assert rate.tolist() == [0, 1, 0, 2, 0] and odd.tolist() == [1, 1, 1]


def test_sums_reach_the_driver_as_columns_with_or_without_arrow(spark):
    """The summed (query, cell) answers come back as int64 columns through Arrow (pyspark >= 4) and,
    on a session without ``toArrow``, as collected rows: the same arrays either way."""
    from spark_synth.measure.answers import _int64_columns

    frame = spark.createDataFrame([(0, 3, 2**62), (1, 0, -5), (-1, 0, 7)], "query int, cell long, total long")

    class RowsOnly:  # what a pyspark 3.5 DataFrame offers
        def collect(self):
            return frame.collect()

    arrow = _int64_columns(frame, ("query", "cell", "total"))
    rows = _int64_columns(RowsOnly(), ("query", "cell", "total"))
    for a, b in zip(arrow, rows):
        assert a.dtype == b.dtype == np.int64 and a.tolist() == b.tolist()
    assert arrow[2].tolist() == [2**62, -5, 7]


def test_sums_past_2_62_are_clamped_in_spark_as_on_the_driver(spark):
    """The Spark path clamps each exact (DECIMAL) sum to ±2^62 before it becomes an int64, as
    ``clamp_sum`` does for the pandas path: the same answers as ``answer_frame``."""
    from spark_synth.measure import answer_frame, answer_queries
    from spark_synth.queries import MomentQuery
    from tests.unit.test_splice_privacy import _extreme_rows

    schema, frame = _extreme_rows(40960, 32768)
    query = MomentQuery(name="m", directions=np.ones((1, 1)), degree=2, fraction_bits=48)
    (on_spark,) = answer_queries(spark.createDataFrame(frame).repartition(3), schema, [query])
    assert on_spark.tolist() == answer_frame(frame, schema, [query])[0].tolist() == [[8192 * 2**48, 2**62]]
