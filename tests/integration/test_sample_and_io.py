"""Distributed sampling (reproducible, typed) and all-or-nothing output."""

import numpy as np
import pandas as pd
import pytest

from spark_synth.engines import IndependentModel
from spark_synth.errors import OutputError
from spark_synth.io import check_output, output_location, read_input, write_output
from spark_synth.sample import generate_rows
from tests.helpers import tiny_schema

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def model():
    schema = tiny_schema()
    return IndependentModel([np.linspace(1, 2, c.size) / np.linspace(1, 2, c.size).sum() for c in schema], 100.0)


def test_seed_reproduces_output(spark, model):
    schema = tiny_schema()
    a = generate_rows(spark, model, schema, 5000, seed=11, partitions=3).toPandas()
    b = generate_rows(spark, model, schema, 5000, seed=11, partitions=3).toPandas()
    c = generate_rows(spark, model, schema, 5000, seed=12, partitions=3).toPandas()
    pd.testing.assert_frame_equal(a, b)
    assert not a.equals(c)
    assert len(a) == 5000 and list(a.columns) == list(schema.names)


def test_output_types_and_domain(spark, model):
    schema = tiny_schema()
    df = generate_rows(spark, model, schema, 3000, seed=1)
    assert [f.dataType.simpleString() for f in df.schema.fields] == ["string", "bigint", "bigint", "double"]
    pdf = df.toPandas()
    assert set(pdf["colour"].dropna()) <= {"red", "green", "blue"}
    assert pdf["age"].dropna().between(0, 9).all() and pdf["score"].dropna().between(0, 1).all()
    assert pdf["colour"].isna().any()  # the null code has mass in this model


@pytest.mark.parametrize("name, fmt", [("out.parquet", "parquet"), ("out.csv", "csv"), ("out_dir/table", "delta")])
def test_write_formats(spark, model, tmp_path, name, fmt):
    target = str(tmp_path / name)
    location = check_output(spark, target)
    assert location.format == fmt
    write_output(spark, generate_rows(spark, model, tiny_schema(), 100, seed=0), location)
    assert read_input(spark, target).count() == 100
    with pytest.raises(OutputError, match="already exists"):
        check_output(spark, target)
    # overwrite replaces
    write_output(spark, generate_rows(spark, model, tiny_schema(), 50, seed=0), check_output(spark, target, True), True)
    assert read_input(spark, target).count() == 50


@pytest.mark.parametrize("target", ["spaced/table", "spaced_table"])
def test_delta_output_keeps_column_names_delta_refuses(spark, tmp_path, target):
    """Regression: a column name with a space (credit_default's "default payment next month") made
    the final Delta write fail, after the budget was spent; such a table now maps columns by name."""
    spaced = spark.createDataFrame([(1, "a", 2.0)], "`default payment next month` long, `x=y;z` string, plain double")
    target = str(tmp_path / target) if "/" in target else target
    write_output(spark, spaced, check_output(spark, target))
    identifier = output_location(target).identifier
    back = spark.read.table(identifier)
    assert back.columns == ["default payment next month", "x=y;z", "plain"] and back.count() == 1
    details = spark.sql(f"DESCRIBE DETAIL {identifier}").first()
    assert details["properties"].get("delta.columnMapping.mode") == "name"
    plain = str(tmp_path / "plain_table")
    write_output(spark, spaced.select("plain"), check_output(spark, plain))
    assert "delta.columnMapping.mode" not in spark.sql(f"DESCRIBE DETAIL {output_location(plain).identifier}").first()["properties"]
    if "/" not in target:
        spark.sql(f"DROP TABLE {target}")


def test_csv_record_with_quoted_newlines_is_one_row(spark, tmp_path):
    """Regression: CSV was read one physical line per row, so such a record counted twice (or more)."""
    path = tmp_path / "multi.csv"
    path.write_bytes(b'colour,size,age,score\r\n"red\nish",1,2,0.5\r\nblue,2,3,"0.25"\r\n"gr\n\neen",3,4,\r\n')
    frame = read_input(spark, str(path)).toPandas()
    assert len(frame) == 3
    assert frame["colour"].tolist() == ["red\nish", "blue", "gr\n\neen"]
    assert frame["size"].tolist() == ["1", "2", "3"] and frame["score"].tolist() == ["0.5", "0.25", None]


def test_table_names_are_delta_tables():
    assert output_location("synth_db.adult").is_table
    assert not output_location("./adult").is_table
    assert output_location("adult.parquet").format == "parquet"


def test_failed_write_leaves_nothing(spark, tmp_path):
    def explode(batches):
        for batch in batches:
            if batch["id"].max() > 500:
                raise RuntimeError("simulated executor failure")
            yield batch

    failing = spark.range(0, 1000, numPartitions=4).mapInPandas(explode, "id long")
    target = tmp_path / "never.parquet"
    with pytest.raises(Exception):
        write_output(spark, failing, check_output(spark, str(target)))
    assert not target.exists()
    assert list(tmp_path.iterdir()) == []  # staging directory removed too


def test_unwritable_output_is_refused(spark, tmp_path):
    blocker = tmp_path / "a_file"
    blocker.write_text("x")
    with pytest.raises(OutputError, match="is a file"):
        check_output(spark, str(blocker / "out.parquet"))
