"""Table names vs paths (no Spark): plain and backtick-quoted Unity Catalog names, and their SQL quoting."""

import pytest

from spark_synth.errors import UserInputError
from spark_synth.io import Location, output_location, parse_table_name, quote_table_name
from spark_synth.io.locations import is_table_name


@pytest.mark.parametrize("name, parts", [
    ("adult", ("adult",)),
    ("synth_db.adult", ("synth_db", "adult")),
    ("main.default.adult_2", ("main", "default", "adult_2")),
    ("main.default.`my-table`", ("main", "default", "my-table")),
    ("`my-catalog`.`my schema`.`t`", ("my-catalog", "my schema", "t")),
    ("`a``b`.c", ("a`b", "c")),                      # a doubled backtick is one backtick of the name
    ("db.`x.parquet`", ("db", "x.parquet")),          # quoted: a table, whatever its name ends in
    ("`db.t`", ("db.t",)),                             # one part holding a dot
    ("main.`sales/2024`", ("main", "sales/2024")),     # a slash inside backticks is part of the name
    ("`ünïcode`.t", ("ünïcode", "t")),
])
def test_table_names_parse_into_parts(name, parts):
    assert parse_table_name(name) == parts
    assert is_table_name(name)
    assert output_location(name) == Location(name, True, "delta")


@pytest.mark.parametrize("path", [
    "/x", "./x", "../x", "x/", "dbfs:/x", "file:/tmp/x", "s3://bucket/x", "abfss://c@a.dfs.core.windows.net/x",
    "x.parquet", "x.csv", "db.x.delta", "out_dir/table", "a.b.c.d",     # four plain parts: a relative path
    "/data/`odd`", "s3://b/`k`", "C:\\data\\x", "2024_sales", "-x", "",
])
def test_paths_stay_paths(path):
    assert parse_table_name(path) is None and not is_table_name(path)


@pytest.mark.parametrize("name, why", [
    ("main.default.`my-table", "its backticks do not quote whole parts"),     # unpaired
    ("main.``.t", "its backticks do not quote whole parts"),                   # empty part
    ("main.`a`b", "its backticks do not quote whole parts"),                   # text after the closing backtick
    ("main.default.my-table`", "its backticks do not quote whole parts"),
    ("`a`.`b`.`c`.`d`", "more than 3 parts"),
    ("`db`.x.parquet", "it ends in a file extension"),
])
def test_malformed_quoted_names_are_one_clear_error(name, why):
    with pytest.raises(UserInputError) as info:
        parse_table_name(name)
    message = str(info.value)
    assert f"'{name}' is not a valid table name ({why})" in message and "backticks" in message and "\n" not in message


def test_a_delta_path_identifier_is_refused_with_the_path_to_pass():
    with pytest.raises(UserInputError, match=r"names a Delta table by its path: pass the path itself \('/tmp/x'\)"):
        output_location("delta.`/tmp/x`")


@pytest.mark.parametrize("name, sql", [
    ("adult", "`adult`"),
    ("main.default.`my-table`", "`main`.`default`.`my-table`"),
    ("`a``b`.c", "`a``b`.`c`"),
    (("x`y", "z w"), "`x``y`.`z w`"),
])
def test_sql_quotes_every_part_and_doubles_backticks(name, sql):
    assert quote_table_name(name) == sql
    assert parse_table_name(sql) == (name if isinstance(name, tuple) else parse_table_name(name))  # round trip


def test_delta_identifiers_for_tables_and_paths():
    assert output_location("main.default.`my-table`").identifier == "`main`.`default`.`my-table`"
    assert output_location("/tmp/out/").identifier == "delta.`/tmp/out`"
    assert output_location("s3://b/we`ird").identifier == "delta.`s3://b/we``ird`"
    with pytest.raises(UserInputError, match="is not a table name"):
        quote_table_name("/tmp/x")


def test_an_output_naming_the_input_table_with_backticks_is_still_the_input():
    from spark_synth.config import check_output_apart
    from spark_synth.errors import OutputError

    with pytest.raises(OutputError, match="is the input"):
        check_output_apart("Sales.Customers", "`sales`.`customers`")
    check_output_apart("sales.customers", "sales.`customers-synthetic`")  # another table: fine


def test_one_table_spelled_two_ways_has_one_budget_ledger():
    from spark_synth.track import source_key

    assert source_key("Main.`Sales`.`customers`") == source_key("main.sales.customers") == "main.sales.customers"
    assert source_key("main.default.`My-Table`") == "main.default.`my-table`"
    assert source_key("sales ` dataset") == "sales ` dataset"  # a free-form --dataset-id stays as it is
    assert source_key("./data/a.csv").endswith("/data/a.csv")
