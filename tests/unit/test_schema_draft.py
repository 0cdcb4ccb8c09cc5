"""`schema init` drafts from declared types only; the loader refuses a TODO left in, naming the column."""

import pytest
import yaml

from spark_synth.errors import OutputError, ParameterError, SchemaError
from spark_synth.schema import load_schema
from spark_synth.schema.draft import DeclaredColumn, draft_column, pick_columns, render_yaml
from spark_synth.schema_init import check_schema_output, init_schema, write_atomically

DECLARED = [DeclaredColumn("age", "bigint"), DeclaredColumn("score", "double", nullable=False),
            DeclaredColumn("price", "decimal(10,2)"), DeclaredColumn("city name", "string"),
            DeclaredColumn("code", "varchar(4)"), DeclaredColumn("note: x", "undeclared")]


def test_declared_types_map_to_drafted_columns_with_todos():
    drafted = [draft_column(c) for c in DECLARED]
    assert drafted == [
        {"name": "age", "type": "integer", "min": "TODO", "max": "TODO"},
        {"name": "score", "type": "continuous", "min": "TODO", "max": "TODO", "nullable": False},
        {"name": "price", "type": "continuous", "min": "TODO", "max": "TODO", "decimals": 2},  # DECIMAL(10,2)
        {"name": "city name", "type": "categorical", "categories": "TODO"},
        {"name": "code", "type": "categorical", "categories": "TODO"},
        {"name": "note: x", "type": "TODO"},  # a CSV column: its type is not declared, so not guessed
    ]


def test_rendered_yaml_reads_back_and_says_everything_is_public(tmp_path):
    drafted = [draft_column(c) for c in DECLARED]
    text = render_yaml(drafted, source="t.parquet", notes={"age": "declared bigint"})
    assert yaml.safe_load(text)["columns"] == drafted
    assert "EVERYTHING IN THIS FILE IS TREATED AS PUBLIC" in text and "never its values" in text
    assert "  # age: declared bigint\n  - {name: age, type: integer, min: TODO, max: TODO}\n" in text


@pytest.mark.parametrize("index, key", [(0, "min"), (1, "max"), (3, "categories"), (5, "type")])
def test_loader_names_the_column_and_key_of_a_todo_left(tmp_path, index, key):
    filled = [{"name": "age", "type": "integer", "min": 0, "max": 120},
              {"name": "score", "type": "continuous", "min": 0.0, "max": 1.0},
              {"name": "price", "type": "continuous", "min": 0, "max": 1e6},
              {"name": "city name", "type": "categorical", "categories": ["a", "b"]},
              {"name": "code", "type": "categorical", "categories": ["x"]},
              {"name": "note: x", "type": "ordinal", "categories": [1, 2]}]
    path = tmp_path / "s.yaml"
    path.write_text(render_yaml(filled, source="t"))
    assert load_schema(path).names == tuple(c["name"] for c in filled)  # filled in: loads
    filled[index][key] = "TODO" if key != "categories" else ["a", "TODO"]
    path.write_text(render_yaml(filled, source="t"))
    with pytest.raises(SchemaError) as info:
        load_schema(path)
    message = str(info.value)
    assert "\n" not in message and f"column '{filled[index]['name']}'" in message and f"'{key}: TODO'" in message


def test_pick_columns_keeps_table_order_and_refuses_unknown_or_empty():
    assert [c.name for c in pick_columns(DECLARED, ["score", "age"], None)] == ["age", "score"]
    assert [c.name for c in pick_columns(DECLARED, None, ["age", "price"])] == ["score", "city name", "code", "note: x"]
    with pytest.raises(ParameterError, match="--columns.*'nope'"):
        pick_columns(DECLARED, ["age", "nope"], None)
    with pytest.raises(ParameterError, match="--exclude"):
        pick_columns(DECLARED, None, ["nope"])
    with pytest.raises(ParameterError, match="at least one column"):
        pick_columns(DECLARED, ["age"], ["age"])
    odd = [*DECLARED, DeclaredColumn("tags", "array<string>")]
    with pytest.raises(SchemaError, match=r"tags \(array<string>\).*--exclude"):
        pick_columns(odd, None, None)
    assert [c.name for c in pick_columns(odd, None, ["tags"])][-1] == "note: x"


def test_schema_output_is_checked_and_written_atomically(tmp_path):
    with pytest.raises(ParameterError, match="--output"):
        check_schema_output(str(tmp_path / "s.json"), False)
    with pytest.raises(OutputError, match="does not exist"):
        check_schema_output(str(tmp_path / "no" / "s.yaml"), False)
    target = tmp_path / "s.yaml"
    target.write_text("old")
    with pytest.raises(OutputError, match="--overwrite"):
        check_schema_output(str(target), False)
    write_atomically(check_schema_output(str(target), True), "new")
    assert target.read_text() == "new" and [p.name for p in tmp_path.iterdir()] == ["s.yaml"]  # no temp file left


@pytest.mark.parametrize("epsilon, delta, flag", [(0.0, None, "--dp-bounds"), (float("nan"), None, "--dp-bounds"),
                                                   (1.0, 1.5, "--dp-delta"), (None, 1e-9, "--dp-delta")])
def test_bad_dp_parameters_name_the_flag_before_anything_is_read(tmp_path, epsilon, delta, flag):
    with pytest.raises(ParameterError, match=f"'{flag}'"):
        init_schema(input=str(tmp_path / "absent.csv"), output=str(tmp_path / "s.yaml"), dp_epsilon=epsilon,
                    dp_delta=delta, spark=object())  # never used: refused first
    assert list(tmp_path.iterdir()) == []


def test_dp_warnings_render_as_check_comments_under_the_note():
    columns = [{"name": "flag", "type": "integer", "min": 0, "max": 1},
               {"name": "charge", "type": "continuous", "min": 0.0, "max": 16777216.0}]
    warning = "column 'charge': 'max: 16777216' comes from values 9 powers of two away ... edit 'max' by hand"
    text = render_yaml(columns, source="t.csv", notes={"flag": "DP bounds; a 0/1 column", "charge": "DP bounds"},
                       warnings={"charge": [warning, "second\nline"]})
    assert yaml.safe_load(text)["columns"] == columns
    assert (f"  # charge: DP bounds\n  # CHECK: {warning}\n  # CHECK: second line\n"
            "  - {name: charge, type: continuous, min: 0.0, max: 16777216.0}\n") in text
    assert "CHECK" not in text.split("# charge:")[0]  # the 0/1 column has none
