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
