"""Spark types for a :class:`Schema`: what the synthetic output holds, what inputs may hold."""

from __future__ import annotations

from .columns import Column, ColumnType, Schema


def output_type(column: Column):
    """The Spark type a column is written with: strings, longs or doubles."""
    from pyspark.sql import types as T

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
    kind = column.category_kind
    if kind == "string":
        return isinstance(data_type, T.StringType)
    if kind == "integer" or column.type is ColumnType.INTEGER:
        return isinstance(data_type, integral + (T.StringType,))
    return isinstance(data_type, numeric + (T.StringType,))
