"""Read a :class:`Schema` from the JSON schema format (``*.schema.json``) or the equivalent YAML."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from ..errors import SchemaError
from .columns import Column, ColumnType, Schema

_COLUMN_KEYS = {"name", "type", "categories", "min", "max", "bins", "nullable", "description"}
_TYPES = ", ".join(t.value for t in ColumnType)


def load_schema(path: str | Path) -> Schema:
    """Read a schema file: ``.json`` in the shared schema format, or ``.yaml``/``.yml``."""
    path = Path(path)
    if not path.is_file():
        raise SchemaError(f"schema file '{path}' does not exist; pass the path of a .json or .yaml schema")
    text = path.read_text(encoding="utf-8")
    try:
        if path.suffix.lower() in (".yaml", ".yml"):
            raw = yaml.safe_load(text)
        else:
            raw = json.loads(text)
    except (json.JSONDecodeError, yaml.YAMLError) as exc:
        raise SchemaError(f"schema file '{path}' is not valid {path.suffix.lstrip('.').upper() or 'JSON'}: {exc}") from None
    return schema_from_dict(raw, source=str(path))


def schema_from_dict(raw: object, source: str = "schema") -> Schema:
    """Build a :class:`Schema` from the parsed JSON/YAML mapping."""
    if not isinstance(raw, dict) or not isinstance(raw.get("columns"), list):
        raise SchemaError(f"{source}: expected a mapping with a 'columns' list")
    columns = [_column_from_dict(c, i, source) for i, c in enumerate(raw["columns"])]
    return Schema(
        columns=tuple(columns),
        name=raw.get("name"),
        target=raw.get("target"),
        task=raw.get("task"),
    )


def _column_from_dict(raw: object, index: int, source: str) -> Column:
    if not isinstance(raw, dict):
        raise SchemaError(f"{source}: column #{index} must be a mapping; got {type(raw).__name__}")
    name = raw.get("name", f"#{index}")
    unknown = sorted(set(raw) - _COLUMN_KEYS)
    if unknown:
        raise SchemaError(f"{source}: column '{name}' has unknown keys {unknown}; allowed: {sorted(_COLUMN_KEYS)}")
    type_name = raw.get("type")
    try:
        col_type = ColumnType(type_name)
    except ValueError:
        raise SchemaError(f"{source}: column '{name}' has unknown type {type_name!r}; allowed types: {_TYPES}") from None
    nullable = raw.get("nullable", True)
    if not isinstance(nullable, bool):
        raise SchemaError(f"{source}: column '{name}': 'nullable' must be true or false; got {nullable!r}")
    if col_type.is_discrete:
        categories = raw.get("categories")
        if not isinstance(categories, list):
            raise SchemaError(f"{source}: column '{name}' is {col_type.value} and needs a 'categories' list")
        return Column(name=name, type=col_type, categories=tuple(categories), nullable=nullable)
    return Column(
        name=name, type=col_type, min=raw.get("min"), max=raw.get("max"), bins=raw.get("bins"), nullable=nullable
    )
