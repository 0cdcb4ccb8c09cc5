"""Read the private input: CSV, Parquet, a Delta path, or a catalog table name."""

from __future__ import annotations

from ..errors import InputNotFoundError
from . import filesystem
from .locations import format_from_extension, is_table_name


def read_input(spark, source: str):
    """A lazy DataFrame of ``source``.

    CSV is read with a header and every column as a string (empty cells are nulls); the encoder
    parses values against the schema, so a malformed value is handled by the out-of-domain policy
    and never echoed in an error message. A quoted field may hold newlines: one record is one row
    however many lines it spans (``multiLine``; each file is then read by one task).
    """
    fmt = format_from_extension(source)
    if fmt is None and is_table_name(source) and not filesystem.exists(spark, source):
        if not spark.catalog.tableExists(source):
            raise InputNotFoundError(f"input '{source}' is neither an existing path nor a table in the catalog")
        return spark.table(source)
    if not filesystem.exists(spark, source):
        raise InputNotFoundError(f"input '{source}' does not exist; pass a CSV/Parquet file, a Delta path or a table name")
    if fmt == "csv":
        return spark.read.options(header=True, inferSchema=False, mode="PERMISSIVE", multiLine=True).csv(source)
    if fmt == "parquet":
        return spark.read.parquet(source)
    if fmt == "delta" or filesystem.exists(spark, source.rstrip("/") + "/_delta_log"):
        return spark.read.format("delta").load(source)
    if filesystem.is_directory(spark, source):
        return spark.read.parquet(source)
    raise InputNotFoundError(
        f"cannot tell the format of input '{source}': use a .csv or .parquet extension, a Delta directory, or a table name"
    )
