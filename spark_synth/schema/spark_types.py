"""Spark types for a :class:`Schema`: what the synthetic output holds, what inputs may hold."""

from __future__ import annotations

from .columns import Column, ColumnType, Schema


def output_type(column: Column):
    """The Spark type a column is written with: strings, longs, doubles, booleans, dates or timestamps."""
    from pyspark.sql import types as T

    special = {ColumnType.BOOLEAN: T.BooleanType, ColumnType.DATE: T.DateType, ColumnType.TIMESTAMP: T.TimestampType}
    if column.type in special:
        return special[column.type]()
    if column.type.is_discrete:
        return {"string": T.StringType(), "integer": T.LongType(), "float": T.DoubleType()}[column.category_kind]
    return T.LongType() if column.type is ColumnType.INTEGER else T.DoubleType()


def output_struct(schema: Schema):
    """StructType of the synthetic table (all fields nullable, in schema order)."""
    from pyspark.sql import types as T

    return T.StructType([T.StructField(c.name, output_type(c), nullable=True) for c in schema])


def accepts(column: Column, data_type) -> bool:
    """Whether an input column of Spark type ``data_type`` can be read as ``column``."""
    from pyspark.sql import types as T

    integral = (T.ByteType, T.ShortType, T.IntegerType, T.LongType)
    numeric = integral + (T.FloatType, T.DoubleType, T.DecimalType)
    special = {ColumnType.BOOLEAN: T.BooleanType, ColumnType.DATE: T.DateType, ColumnType.TIMESTAMP: T.TimestampType}
    if column.type in special:
        return isinstance(data_type, special[column.type])
    kind = column.category_kind
    if kind == "string":
        return isinstance(data_type, T.StringType)
    if kind == "integer" or column.type is ColumnType.INTEGER:
        return isinstance(data_type, integral + (T.StringType,))
    return isinstance(data_type, numeric + (T.StringType,))


def measured_column(column: Column, data_type, expression):
    """The Spark expression the measure layer reads ``column`` through: a date as whole days and a
    timestamp as seconds since 1970-01-01 UTC (whatever the session time zone); others as they are."""
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    if column.type is ColumnType.DATE and isinstance(data_type, T.DateType):
        return F.unix_date(expression)
    if column.type is ColumnType.TIMESTAMP and isinstance(data_type, T.TimestampType):
        return F.unix_micros(expression) / F.lit(1_000_000.0)
    return expression
