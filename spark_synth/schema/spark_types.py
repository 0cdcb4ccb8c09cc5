"""Spark types for a :class:`Schema`: what the synthetic output holds, what inputs may hold."""

from __future__ import annotations

from .columns import Column, ColumnType, Schema


def _special_types() -> dict:
    """The Spark type of each schema type that has exactly one."""
    from pyspark.sql import types as T

    return {ColumnType.BOOLEAN: T.BooleanType, ColumnType.DATE: T.DateType, ColumnType.TIMESTAMP: T.TimestampType,
            ColumnType.TIMESTAMP_NTZ: T.TimestampNTZType}


def output_type(column: Column):
    """The Spark type a column is written with: strings, longs, doubles, booleans, dates or timestamps
    (TimestampType for ``timestamp``, TimestampNTZType for ``timestamp_ntz``)."""
    from pyspark.sql import types as T

    special = _special_types()
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
    """Whether an input column of Spark type ``data_type`` can be read as ``column``.

    Text (a CSV's columns) is accepted for every type: numbers and categories are parsed by the
    encoder, booleans, dates and timestamps by Spark as the column is measured
    (:func:`measured_column`) — a value that does not parse is a null, like a non-number."""
    from pyspark.sql import types as T

    integral = (T.ByteType, T.ShortType, T.IntegerType, T.LongType)
    numeric = integral + (T.FloatType, T.DoubleType, T.DecimalType)
    special = _special_types()
    if column.type in special:
        return isinstance(data_type, (special[column.type], T.StringType))
    kind = column.category_kind
    if kind == "string":
        return isinstance(data_type, T.StringType)
    if kind == "integer" or column.type is ColumnType.INTEGER:
        return isinstance(data_type, integral + (T.StringType,))
    return isinstance(data_type, numeric + (T.StringType,))


def schema_type_for(data_type) -> ColumnType | None:
    """The schema type that reads a boolean / date / timestamp / timestamp_ntz Spark column (None
    for other Spark types): what a mismatch error suggests declaring."""
    for kind, spark_type in _special_types().items():
        if isinstance(data_type, spark_type):
            return kind
    return None


def measured_column(column: Column, data_type, expression):
    """The Spark expression the measure layer reads ``column`` through: text (a CSV's) parsed to
    the column's boolean / date / timestamp type (:func:`parsed_text`), then :func:`epoch_number`."""
    from pyspark.sql import types as T

    if column.type in _special_types() and isinstance(data_type, T.StringType):
        expression, data_type = parsed_text(column.type, expression), _special_types()[column.type]()
    return epoch_number(column.type, data_type, expression)


def parsed_text(kind: ColumnType, expression):
    """Text read as a boolean / date / timestamp / timestamp_ntz the way Spark casts it (``try_cast``:
    a value that does not parse is null, never an error that would echo it): booleans
    ``true``/``false`` (also ``t``/``f``, ``yes``/``no``, ``1``/``0``, any case), dates
    ``YYYY-MM-DD``, timestamps ISO 8601 (without an offset: the session time zone, UTC in the
    packaged profiles), timestamp_ntz ISO 8601 as a wall-clock time."""
    name = {ColumnType.BOOLEAN: "boolean", ColumnType.DATE: "date", ColumnType.TIMESTAMP: "timestamp",
            ColumnType.TIMESTAMP_NTZ: "timestamp_ntz"}[kind]
    trimmed = _trim(expression)
    return trimmed.try_cast(name) if hasattr(trimmed, "try_cast") else trimmed.cast(name)  # pyspark < 4: non-ANSI cast


def _trim(expression):
    from pyspark.sql import functions as F

    return F.trim(expression)


def parse_ddl(text: str, flag: str = "--types"):
    """A Spark DDL string (``"age INT, joined DATE"``) as a ``StructType``; a :class:`ParameterError`
    naming ``flag`` with Spark's parse message when it is not one (or lists a name twice)."""
    from pyspark.sql import types as T

    from ..errors import ParameterError

    if not isinstance(text, str) or not text.strip():
        raise ParameterError(flag, "a Spark DDL string of column names and types, e.g. \"age INT, joined DATE\"", text)
    try:
        parsed = T.DataType.fromDDL(text) if hasattr(T.DataType, "fromDDL") else T._parse_datatype_string(text)
    except Exception as exc:  # Spark's ParseException (its message points at the error)
        message = " ".join(str(getattr(exc, "getMessage", lambda: exc)() or exc).split())
        raise ParameterError(flag, f"a Spark DDL string of column names and types, e.g. \"age INT, joined DATE\" "
                                   f"(names with spaces or dots in backticks); Spark could not parse it: {message[:500]}",
                             _short(text)) from None
    if not isinstance(parsed, T.StructType):
        raise ParameterError(flag, "column names with their types, e.g. \"age INT, joined DATE\" (not a bare type)",
                             _short(text))
    names = [f.name for f in parsed.fields]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise ParameterError(flag, "each column once", f"{twice} listed more than once")
    return parsed


def _short(text: str) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= 200 else text[:200] + "…"


def epoch_number(kind: ColumnType, data_type, expression):
    """A date as whole days since 1970-01-01, a timestamp as seconds since 1970-01-01 UTC, a
    timestamp_ntz as seconds since 1970-01-01 00:00 on its wall clock — none of them depends on the
    session time zone; any other (schema type, Spark type) pair as it is.

    A timestamp_ntz is split into its calendar date and time of day, which Spark reads without a
    time zone (casting it to a timestamp, or ``timestamp_diff``, would go through the session
    zone and shift wall-clock times that do not exist there, e.g. in a daylight-saving gap)."""
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    if kind is ColumnType.DATE and isinstance(data_type, T.DateType):
        return F.unix_date(expression)
    if kind is ColumnType.TIMESTAMP and isinstance(data_type, T.TimestampType):
        return F.unix_micros(expression) / F.lit(1_000_000.0)
    if kind is ColumnType.TIMESTAMP_NTZ and isinstance(data_type, T.TimestampNTZType):
        micros = (F.unix_date(expression.cast("date")).cast("long") * F.lit(86_400_000_000)
                  + F.hour(expression).cast("long") * F.lit(3_600_000_000)
                  + F.minute(expression).cast("long") * F.lit(60_000_000)
                  + (F.extract(F.lit("SECOND"), expression) * F.lit(1_000_000)).cast("long"))
        return micros / F.lit(1_000_000.0)
    return expression
