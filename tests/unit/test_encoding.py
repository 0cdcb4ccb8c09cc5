import numpy as np
import pandas as pd
import pytest

from spark_synth.schema import OutOfDomainPolicy, decode_codes, encode_frame
from spark_synth.schema.encoding import substitute_code
from tests.helpers import tiny_frame, tiny_schema

CLIP, ERROR = OutOfDomainPolicy.CLIP, OutOfDomainPolicy.ERROR


def test_codes_cover_values_and_nulls():
    schema = tiny_schema()
    frame = pd.DataFrame(
        {"colour": ["red", None, "blue"], "size": [1, 3, None], "age": [0, 9, 5], "score": [0.0, 0.99, np.nan]}
    )
    codes, rejected = encode_frame(frame, schema, CLIP)
    assert codes.tolist() == [[0, 0, 0, 0], [3, 2, 9, 3], [2, 3, 5, 4]]
    assert not rejected.any()


def test_clip_policy_clips_numbers_and_nulls_unknown_categories():
    schema = tiny_schema()
    frame = pd.DataFrame({"colour": ["purple"], "size": [7], "age": [-5], "score": [3.0]})
    codes, rejected = encode_frame(frame, schema, CLIP)
    assert codes.tolist() == [[3, 3, 0, 3]]  # unknown → null code; numbers → their bound's bin
    assert not rejected.any()


def test_error_policy_flags_only_offending_columns():
    schema = tiny_schema()
    frame = pd.DataFrame({"colour": ["red"], "size": [2], "age": [12], "score": ["not a number"]})
    _, rejected = encode_frame(frame, schema, ERROR)
    assert rejected.tolist() == [False, False, True, True]


def test_non_nullable_columns_take_their_public_code_under_clip_and_are_refused_under_error():
    """Regression: `clip` used to refuse a null in a non-nullable column (naming it: one bit per
    column). Now nulls, NaN, unknown categories and non-numbers take the public substitute code."""
    schema = tiny_schema(nullable=False)
    frame = pd.DataFrame({"colour": [None, "purple", "red"], "size": [None, "x", 2], "age": [np.nan, "abc", 3],
                          "score": [None, "n/a", 0.6]}, dtype=object)
    codes, rejected = encode_frame(frame, schema, CLIP)
    assert not rejected.any()
    assert codes.tolist() == [[0, 0, 0, 0], [0, 0, 0, 0], [0, 1, 3, 2]]  # first category / first bin
    assert [substitute_code(c) for c in schema] == [0, 0, 0, 0]
    _, rejected = encode_frame(frame, schema, ERROR)
    assert rejected.tolist() == [True, True, True, True]


def test_substitute_embeds_like_the_public_value_it_stands_for():
    """Moments and counts agree: a substituted value embeds as the first category / lower bound."""
    from spark_synth.schema.embedding import Embedding

    schema = tiny_schema(nullable=False)
    odd = pd.DataFrame({"colour": ["purple"], "size": [None], "age": ["abc"], "score": [np.nan]}, dtype=object)
    public = pd.DataFrame({"colour": ["red"], "size": [1], "age": [0], "score": [0.0]}, dtype=object)
    for knots in (None, {"score": np.array([-1.0, -0.5, 0.2, 0.9, 1.0])}):
        embedding = Embedding(schema, knots)
        assert np.array_equal(embedding.embed(odd, CLIP)[0], embedding.embed(public, CLIP)[0])


def test_each_row_is_encoded_on_its_own():
    """Adversarial values (huge ints, ±inf, strings, bytes) never fail the batch or change another row's code."""
    schema = tiny_schema()
    values = {"colour": ["red", 10**400, b"red", float("nan"), "blue"], "size": [2, 10**400, 1e300, "2", -2**70],
              "age": [5, 10**400, -10**400, float("inf"), "1e999"], "score": [0.3, float("-inf"), "0.9", True, None]}
    frame = pd.DataFrame(values, dtype=object)
    together, _ = encode_frame(frame, schema, CLIP)
    alone = np.vstack([encode_frame(frame.iloc[[i]].reset_index(drop=True), schema, CLIP)[0] for i in range(len(frame))])
    assert np.array_equal(together, alone)
    assert together[:, 2].tolist() == [5, 9, 0, 9, 10]  # huge ints and inf clip to the bounds; "1e999" is null
    assert together[:, 1].tolist() == [1, 3, 3, 1, 3]  # no whole number beyond int64 matches a category


def test_numeric_strings_are_parsed():
    schema = tiny_schema()
    frame = pd.DataFrame({"colour": ["green"], "size": ["2"], "age": ["7"], "score": ["0.6"]})
    codes, rejected = encode_frame(frame, schema, ERROR)
    assert codes.tolist() == [[1, 1, 7, 2]] and not rejected.any()


def test_decode_inverts_encode_on_codes():
    schema = tiny_schema()
    frame = tiny_frame(500)
    codes, _ = encode_frame(frame, schema, CLIP)
    decoded = decode_codes(codes, schema, np.random.default_rng(1))
    recoded, _ = encode_frame(decoded, schema, ERROR)
    assert (recoded == codes).all()
    assert decoded["age"].dtype == "Int64" and decoded["size"].dtype == "Int64"
    assert decoded["score"].dtype == np.float64 and decoded["colour"].dtype == object
    # Integer bins wider than one value decode to a uniform integer inside the bin.
    assert decoded["colour"].isna().sum() == (codes[:, 0] == 3).sum()


def test_embedding_value_knots_map_numeric_columns_piecewise_linearly():
    from spark_synth.schema.embedding import Embedding

    schema = tiny_schema()
    score = schema["score"]  # 4 bins over [0, 1]
    knots = np.array([-1.0, 0.5, 0.6, 0.6, 1.0])
    emb = Embedding(schema, {"score": knots})
    assert np.allclose(emb.to_unit(np.array([0.0, 0.125, 0.25, 0.6, 1.0]), score), [-1.0, -0.25, 0.5, 0.6, 1.0])
    assert np.array_equal(emb.value_edges(3), knots)
    x, _ = emb.embed(tiny_frame(300), OutOfDomainPolicy.CLIP)
    assert np.abs(x).max() <= 1.0
    affine = Embedding(schema)
    assert np.allclose(affine.to_unit(np.array([0.0, 0.5, 1.0]), score), [-1.0, 0.0, 1.0])


@pytest.mark.parametrize("name, knots, why", [
    ("score", [-1.0, 0.0, 1.0], "5 knots"),
    ("score", [-0.9, 0.0, 0.1, 0.2, 1.0], "from -1 to 1"),
    ("score", [-1.0, 0.5, 0.2, 0.6, 1.0], "non-decreasing"),
    ("colour", [-1.0, 1.0], "integer/continuous"),
])
def test_bad_value_knots_name_the_column(name, knots, why):
    from spark_synth.errors import ParameterError
    from spark_synth.schema.embedding import Embedding

    with pytest.raises(ParameterError, match=f"value_knots\\[{name}\\].*{why}"):
        Embedding(tiny_schema(), {name: np.array(knots)})


@pytest.mark.parametrize("low, high", [(-5e299, 5e299), (1.79e308 - 1e300, 1.79e308), (0.0, 5e-324), (-1e300, 0.0)])
def test_embedding_is_finite_at_extreme_accepted_bounds(low, high):
    """Regression: 2·(x − min) overflowed (and bin centres (a + b)/2 too) for wide bounds."""
    from spark_synth.schema import Column, ColumnType, Schema
    from spark_synth.schema.embedding import Embedding

    schema = Schema(columns=(Column("x", ColumnType.CONTINUOUS, min=low, max=high, nullable=False),
                             Column("n", ColumnType.INTEGER, min=-(2**62), max=2**62)))
    frame = pd.DataFrame({"x": [low, high, np.inf, -np.inf, np.nan, "s"], "n": [2**63, None, -(2**63), 0, 1.5e300, "x"]}, dtype=object)
    embedding = Embedding(schema)
    x, _ = embedding.embed(frame, CLIP)
    assert np.isfinite(x).all() and np.abs(x).max() <= 1.0
    assert x[[0, 3, 4, 5], 0].tolist() == [-1.0] * 4 and x[[1, 2], 0].tolist() == [1.0, 1.0]
    assert all(np.isfinite(embedding.code_vectors(j)).all() for j in range(2))


# ---- a CSV's text read as the fit reads it (Spark's try_cast), issue 46 -------------------------

def _typed_schema():
    from spark_synth.schema import schema_from_dict

    return schema_from_dict({"columns": [
        {"name": "flag", "type": "boolean"},
        {"name": "day", "type": "date", "min": "2020-01-01", "max": "2020-12-31"},
        {"name": "at", "type": "timestamp", "min": "2020-01-01T00:00:00Z", "max": "2020-01-31T00:00:00Z", "bins": 30},
        {"name": "wall", "type": "timestamp_ntz", "min": "2020-01-01T00:00:00", "max": "2020-01-31T00:00:00", "bins": 30},
    ]})


def test_text_dates_timestamps_and_booleans_encode_like_the_same_values_typed():
    """Regression: the evaluation's pandas-side statistics read a CSV's text dates, timestamps and
    true/false as nulls (sliced W1 0.35 vs 0.006 for the same table as Parquet). Text now gives the
    typed value's codes and epoch numbers — and a null exactly where Spark's try_cast gives one."""
    import datetime as dt

    from spark_synth.schema.encoding import column_numbers

    utc = dt.timezone.utc
    text = pd.DataFrame({
        "flag": ["true", " FALSE ", "t", "F", "yes", "No", "y", "n", "1", "0", "maybe", "on", "", "2"],
        "day": ["2020-01-05", " 2020-1-5 ", "2020-02-29", "2020-03-01T10:00:00", "2020-04", "2020", "2020-05-05 x",
                "2020-02-30", "05/01/2020", "2020-01-05x", "", "20200105", "2019-02-29", "2020-06-31"],
        "at": ["2020-01-05 10:00:00", "2020-01-05T10:00:00Z", "2020-01-05 12:00:00+02:00", "2020-01-06T01:02:03.5",
               "2020-01-07", "2020-01-05 02:00:00 PST", "2020-01-08 10:00:00 Europe/Paris", "2020-01-05 25:00:00",
               "2020-01-05 10:00Z", "2020-01-05 10:00:00 utc", "", "soon", "2020-01-32", "2020-01-05T10:00:00 Mars/X"],
        "wall": ["2020-01-05 10:00:00", "2020-01-05T10:00:00Z", "2020-01-05 10:00:00+02:00", "2020-01-06T01:02:03.5",
                 "2020-01-07", "2020-01-05 10:00:00 PST", "2020-01-08 10:00:00 Europe/Paris", "10:00:00",
                 "2020-01-05 10:00Z", "2020-01-05 10:00:00 utc", "", "soon", "2020-01-32", "2020-01-05T24:00:00"],
    }, dtype=object)
    day, at, wall = dt.date, dt.datetime, dt.datetime
    typed = pd.DataFrame({
        "flag": [True, False, True, False, True, False, True, False, True, False] + [None] * 4,
        "day": [day(2020, 1, 5), day(2020, 1, 5), day(2020, 2, 29), day(2020, 3, 1), day(2020, 4, 1), day(2020, 1, 1),
                day(2020, 5, 5)] + [None] * 7,
        "at": [at(2020, 1, 5, 10, tzinfo=utc), at(2020, 1, 5, 10, tzinfo=utc), at(2020, 1, 5, 10, tzinfo=utc),
               at(2020, 1, 6, 1, 2, 3, 500000, tzinfo=utc), at(2020, 1, 7, tzinfo=utc), at(2020, 1, 5, 10, tzinfo=utc),
               at(2020, 1, 8, 9, tzinfo=utc)] + [None] * 7,
        "wall": [wall(2020, 1, 5, 10), wall(2020, 1, 5, 10), wall(2020, 1, 5, 10), wall(2020, 1, 6, 1, 2, 3, 500000),
                 wall(2020, 1, 7), wall(2020, 1, 5, 10), wall(2020, 1, 8, 10)] + [None] * 7,
    }, dtype=object)
    schema = _typed_schema()
    text_codes, text_rejected = encode_frame(text, schema, CLIP)
    typed_codes, _ = encode_frame(typed, schema, CLIP)
    assert np.array_equal(text_codes, typed_codes)
    null = np.array([c.null_code for c in schema])
    assert (text_codes[:7] != null).all() and (text_codes[10:] == null).all()  # values parse; Spark's nulls are nulls
    for column in schema:
        if column.type.is_temporal:
            assert np.array_equal(column_numbers(text[column.name], column), column_numbers(typed[column.name], column),
                                  equal_nan=True), column.name
    _, rejected = encode_frame(text.iloc[:7], schema, ERROR)  # text that parses is in the domain
    assert not rejected.any() and not text_rejected.any()


@pytest.mark.parametrize("text, date, timestamp, ntz", [
    # what Spark 4.0.1's try_cast(trim(text) AS date / timestamp / timestamp_ntz) gives (session zone UTC)
    ("2020-01-05", 18266, 1578182400000000, 1578182400000000),
    ("\t2020-1-5\n", 18266, 1578182400000000, 1578182400000000),
    ("2020", 18262, 1577836800000000, 1577836800000000),
    ("+2020-01-05", 18266, 1578182400000000, 1578182400000000),
    ("-0044-03-15", -735525, -63549360000000000, -63549360000000000),
    ("1234567-01-01", 450196810, None, None),
    ("999-01-01", None, None, None),
    ("2020-01-05 garbage", 18266, None, None),
    ("2020-01-05x", None, None, None),
    ("2020-01-05\xa0", None, None, None),
    ("2020-01-05T10:00:00.123456789Z", 18266, 1578218400123456, 1578218400123456),
    ("2020-01-05 10:00:00+2:00", 18266, 1578211200000000, 1578218400000000),
    ("2020-01-05 10:00:00+02:0", 18266, 1578211200000000, 1578218400000000),
    ("2020-01-05T10:00:00UTC+0530", 18266, 1578198600000000, 1578218400000000),
    ("2020-01-05 10:00:00 PST", 18266, 1578247200000000, 1578218400000000),
    ("2020-01-05 10:00:00 EST", 18266, 1578236400000000, 1578218400000000),
    ("2020-03-08 02:30:00 America/New_York", 18329, 1583652600000000, 1583634600000000),  # in the spring gap
    ("2020-11-01 01:30:00 America/New_York", 18567, 1604208600000000, 1604194200000000),  # twice that night
    ("1800-01-01 00:00:00 Europe/Paris", -62091, -5364662961000000, -5364662400000000),  # local mean time
    ("2020-01-05 10:00:00 utc", 18266, None, None),
    ("2020-01-05 10:00:00+19:00", 18266, None, None),
    ("2020-01-05 10:00Z", 18266, None, None),
    ("2020-01-05T24:00:00", 18266, None, None),
    ("2020-01-05  10:00:00", 18266, None, None),
    ("2020-01-05 1:2:3", 18266, 1578186123000000, 1578186123000000),
    ("", None, None, None),
])
def test_text_is_read_as_sparks_cast_reads_it(text, date, timestamp, ntz):
    from spark_synth.schema import ColumnType
    from spark_synth.schema.text_casts import spark_date_days, spark_timestamp_micros

    assert spark_date_days(text) == date
    assert spark_timestamp_micros(text, ColumnType.TIMESTAMP) == timestamp
    assert spark_timestamp_micros(text, ColumnType.TIMESTAMP_NTZ) == ntz


def test_text_booleans_are_sparks_spellings_and_nothing_else():
    from spark_synth.schema.text_casts import spark_boolean

    for word in ("true", "TRUE", "tRuE", " t ", "T", "yes", "YES", "y", "Y", "1", "\ttrue\n", "\x00true"):
        assert spark_boolean(word) is True, word
    for word in ("false", "False", "f", "F", "no", "No", "n", "N", "0", " false "):
        assert spark_boolean(word) is False, word
    for word in ("", " ", "tru", "1.0", "0.0", "on", "off", "2", "-1", "null", "nan", "\u2003true"):
        assert spark_boolean(word) is None, word
