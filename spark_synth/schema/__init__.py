"""Public domain of a table: columns, schema files, and the raw ⇄ code encoding."""

from .columns import Column, ColumnType, HierarchyLevel, Schema
from .encoding import OutOfDomainPolicy, decode_codes, encode_frame
from .readers import load_schema, schema_from_dict

__all__ = ["Column", "ColumnType", "HierarchyLevel", "Schema", "load_schema", "schema_from_dict", "encode_frame", "decode_codes", "OutOfDomainPolicy"]
