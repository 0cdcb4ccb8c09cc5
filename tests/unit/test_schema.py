import json

import numpy as np
import pytest

from spark_synth.errors import SchemaError
from spark_synth.schema import Column, ColumnType, Schema, load_schema, schema_from_dict
from tests.conftest import BUNDLED


def test_reads_shared_json_format():
    schema = load_schema(BUNDLED / "adult_sample.schema.json")
    assert schema.target == "income" and len(schema) == 15
    age = schema["age"]
    assert age.type is ColumnType.INTEGER and (age.min, age.max) == (17, 90)
    assert schema["education-num"].categories[:3] == (1, 2, 3)
    assert schema["sex"].categories == ("Female", "Male")


def test_yaml_equivalent_to_json(tmp_path):
    import yaml

    raw = json.loads((BUNDLED / "adult_sample.schema.json").read_text())
    path = tmp_path / "adult.yaml"
    path.write_text(yaml.safe_dump(raw))
    assert load_schema(path) == load_schema(BUNDLED / "adult_sample.schema.json")


def test_objects_are_immutable():
    column = Column("a", ColumnType.CATEGORICAL, categories=("x",))
    with pytest.raises(Exception):
        column.name = "b"


@pytest.mark.parametrize(
    "column, fragment",
    [
        ({"name": "a", "type": "text"}, "unknown type 'text'"),
        ({"name": "a", "type": "integer", "min": 0}, "finite public 'max'"),
        ({"name": "a", "type": "continuous", "min": 5, "max": 1}, "must be below"),
        ({"name": "a", "type": "categorical"}, "'categories' list"),
        ({"name": "a", "type": "categorical", "categories": ["x", "x"]}, "twice"),
        ({"name": "a", "type": "categorical", "categories": ["x", 1]}, "all strings"),
        ({"name": "a", "type": "integer", "min": 0, "max": 1.5}, "whole numbers"),
        ({"name": "a", "type": "integer", "min": 0, "max": 5, "catgories": []}, "unknown keys ['catgories']"),
        ({"name": "a", "type": "continuous", "min": -1e308, "max": 1e308}, "at most 1e+300"),
        ({"name": "a", "type": "integer", "min": 0, "max": 10**400}, "finite public 'max'"),
        ({"name": "a", "type": "continuous", "min": float("-inf"), "max": 0}, "finite public 'min'"),
        ({"name": "a", "type": "continuous", "min": 0, "max": 2e300}, "at most 1e+300"),
        ({"name": "a", "type": "integer", "min": 2**60, "max": 2**60 + 1}, "must be below"),  # equal as float64
    ],
)
def test_bad_columns_are_named(column, fragment):
    with pytest.raises(SchemaError, match="'a'") as info:
        schema_from_dict({"columns": [column]})
    assert fragment in str(info.value)


def test_duplicate_and_missing_target():
    col = {"name": "a", "type": "categorical", "categories": ["x"]}
    with pytest.raises(SchemaError, match="more than once"):
        schema_from_dict({"columns": [col, col]})
    with pytest.raises(SchemaError, match="target 'b'"):
        schema_from_dict({"columns": [col], "target": "b"})


def test_missing_schema_file(tmp_path):
    with pytest.raises(SchemaError, match="does not exist"):
        load_schema(tmp_path / "nope.json")


def test_domain_sizes_and_bins():
    age = Column("age", ColumnType.INTEGER, min=17, max=90)
    assert age.n_values == 74 and age.size == 75 and age.null_code == 74
    wide = Column("gain", ColumnType.INTEGER, min=0, max=99999)
    assert wide.n_values == 64
    assert np.isclose(wide.bin_edges[0], -0.5) and np.isclose(wide.bin_edges[-1], 99999.5)
    cont = Column("x", ColumnType.CONTINUOUS, min=0.0, max=1.0, bins=4, nullable=False)
    assert cont.size == 4 and cont.null_code is None
    assert np.allclose(cont.bin_edges, [0, 0.25, 0.5, 0.75, 1.0])


def test_round_trip_to_dict():
    schema = load_schema(BUNDLED / "adult_sample.schema.json")
    assert schema_from_dict(schema.to_dict()) == schema
    assert Schema(columns=schema.columns) == schema_from_dict({"columns": schema.to_dict()["columns"]})


def test_extreme_bounds_are_refused_before_any_row_is_read():
    """Regression: ±1e308 passed validation, and the embedding's inf/inf = NaN became INT64_MIN sums."""
    with pytest.raises(SchemaError, match="'x'.*finite"):
        Column("x", ColumnType.CONTINUOUS, min=-1e308, max=1e308)
    wide = Column("x", ColumnType.CONTINUOUS, min=-5e299, max=5e299)  # the widest span accepted
    assert np.isfinite(wide.bin_edges).all() and np.all(np.diff(wide.bin_edges) > 0)
