import numpy as np
import pandas as pd
import pytest

from spark_synth.schema import OutOfDomainPolicy, decode_codes, encode_frame
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


def test_nulls_in_non_nullable_column_are_rejected_under_any_policy():
    schema = tiny_schema(nullable=False)
    frame = pd.DataFrame({"colour": [None], "size": [1], "age": [1], "score": [0.5]})
    for policy in (CLIP, ERROR):
        _, rejected = encode_frame(frame, schema, policy)
        assert rejected.tolist() == [True, False, False, False]


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
