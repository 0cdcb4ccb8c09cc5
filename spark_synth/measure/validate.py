"""Check a DataFrame's structure against the schema before any row is read (metadata only)."""

from __future__ import annotations

from ..errors import DataValidationError
from ..schema import Schema
from ..schema.spark_types import accepts, output_type, schema_type_for


def check_structure(df, schema: Schema) -> None:
    """Raise one :class:`DataValidationError` listing every missing, extra or mistyped column."""
    actual = {f.name: f.dataType for f in df.schema.fields}
    problems = []
    missing = [c.name for c in schema if c.name not in actual]
    if missing:
        problems.append(f"missing columns {missing} (declared in the schema, absent from the data: add them to the "
                        f"data or remove them from the schema)")
    extra = [name for name in actual if name not in schema.names]
    if extra:
        problems.append(f"extra columns {extra} (in the data, not in the schema: drop them or declare them)")
    for column in schema:
        data_type = actual.get(column.name)
        if data_type is not None and not accepts(column, data_type):
            wanted = f"{column.category_kind} categories" if column.type.is_discrete else column.type.value
            fix = "cast the column or fix the schema"
            suggested = schema_type_for(data_type)
            if suggested is not None and column.type.is_temporal and suggested.is_temporal:
                fix = (f"declare it 'type: {suggested.value}' in the schema, or cast the column to "
                       f"{output_type(column).simpleString()}")
            problems.append(
                f"column '{column.name}' has Spark type {data_type.simpleString()} but the schema declares "
                f"{column.type.value} ({wanted}): {fix}"
            )
    if problems:
        raise DataValidationError("the data does not match the schema: " + "; ".join(problems))
