"""Read a :class:`Schema` from the JSON schema format (``*.schema.json``) or the equivalent YAML."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from ..errors import SchemaError
from .columns import Column, ColumnType, HierarchyLevel, Schema
from .cost import PrepassCost

_COLUMN_KEYS = {"name", "type", "categories", "min", "max", "bins", "nullable", "description", "hierarchy", "decimals"}
_TYPES = ", ".join(t.value for t in ColumnType)


def load_schema(path: str | Path) -> Schema:
    """Read a schema file: ``.json`` in the shared schema format, or ``.yaml``/``.yml``."""
    path = Path(path)
    if path.is_dir():
        raise SchemaError(f"schema file '{path}' is a folder; pass the path of a .json or .yaml schema file")
    if not path.is_file():
        raise SchemaError(f"schema file '{path}' does not exist; pass the path of a .json or .yaml schema")
    is_yaml = path.suffix.lower() in (".yaml", ".yml")
    kind = "YAML" if is_yaml else "JSON"
    try:
        text = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SchemaError(f"schema file '{path}' is not UTF-8 text (byte {exc.start + 1} is not UTF-8); save it as "
                          f"UTF-8 {kind}") from None
    except OSError as exc:
        raise SchemaError(f"schema file '{path}' cannot be read ({exc.strerror or type(exc).__name__}); check its "
                          f"permissions") from None
    try:
        raw = yaml.safe_load(text) if is_yaml else json.loads(text)
    except json.JSONDecodeError as exc:
        raise SchemaError(f"schema file '{path}' is not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}; "
                          f"fix the syntax there") from None
    except yaml.YAMLError as exc:
        raise SchemaError(f"schema file '{path}' is not valid YAML: {_yaml_problem(exc)}; fix the syntax there") from None
    except RecursionError:
        raise SchemaError(f"schema file '{path}' is nested too deeply to be a schema; see the schema format") from None
    try:
        return schema_from_dict(raw, source=str(path))
    except SchemaError as exc:  # name the file in every message (Column's own checks do not know it)
        if str(path) in str(exc):
            raise
        raise SchemaError(f"{path}: {exc}") from None


def _yaml_problem(exc: yaml.YAMLError) -> str:
    """PyYAML's multi-line error as one line: the problem and where it is."""
    problem = getattr(exc, "problem", None) or getattr(exc, "context", None) or type(exc).__name__
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    where = f" at line {mark.line + 1} column {mark.column + 1}" if mark is not None else ""
    context = getattr(exc, "context", None)
    detail = f" ({context})" if context and context != problem else ""
    return " ".join(f"{problem}{where}{detail}".split())


def schema_from_dict(raw: object, source: str = "schema") -> Schema:
    """Build a :class:`Schema` from the parsed JSON/YAML mapping."""
    if not isinstance(raw, dict) or not isinstance(raw.get("columns"), list):
        raise SchemaError(f"{source}: expected a mapping with a 'columns' list")
    shared = raw.get("hierarchies", {})
    if not isinstance(shared, dict):
        raise SchemaError(f"{source}: 'hierarchies' must map a hierarchy's name to its list of levels")
    columns = [_column_from_dict(c, i, source, shared) for i, c in enumerate(raw["columns"])]
    return Schema(
        columns=tuple(columns),
        name=raw.get("name"),
        target=raw.get("target"),
        task=raw.get("task"),
        prepass=None if raw.get("dp_prepass") is None else PrepassCost.from_dict(raw["dp_prepass"], source),
    )


def _column_from_dict(raw: object, index: int, source: str, shared: dict) -> Column:
    if not isinstance(raw, dict):
        raise SchemaError(f"{source}: column #{index} must be a mapping; got {type(raw).__name__}")
    name = raw.get("name", f"#{index}")
    unknown = sorted(set(raw) - _COLUMN_KEYS)
    if unknown:
        raise SchemaError(f"{source}: column '{name}' has unknown keys {unknown}; allowed: {sorted(_COLUMN_KEYS)}")
    _check_no_todo(raw, name, source)
    type_name = raw.get("type")
    try:
        col_type = ColumnType(type_name)
    except ValueError:
        raise SchemaError(f"{source}: column '{name}' has unknown type {type_name!r}; allowed types: {_TYPES}") from None
    nullable = raw.get("nullable", True)
    if not isinstance(nullable, bool):
        raise SchemaError(f"{source}: column '{name}': 'nullable' must be true or false; got {nullable!r}")
    if col_type is ColumnType.BOOLEAN:
        given = sorted(key for key in ("categories", "min", "max", "bins", "hierarchy", "decimals") if raw.get(key) is not None)
        if given:
            raise SchemaError(f"{source}: column '{name}' is boolean (categories false/true); remove {given}")
        return Column(name=name, type=col_type, nullable=nullable)
    if col_type.is_discrete:
        categories = raw.get("categories")
        if not isinstance(categories, list):
            raise SchemaError(f"{source}: column '{name}' is {col_type.value} and needs a 'categories' list")
        hierarchy = _hierarchy_from_dict(raw.get("hierarchy"), categories, f"{source}: column '{name}'", shared)
        return Column(name=name, type=col_type, categories=tuple(categories), nullable=nullable, hierarchy=hierarchy,
                      decimals=raw.get("decimals"))
    if raw.get("hierarchy") is not None:
        raise SchemaError(f"{source}: column '{name}' is {col_type.value}; only categorical/ordinal columns can "
                          f"declare a 'hierarchy'")
    if col_type.is_temporal:
        for key in ("min", "max"):
            if isinstance(raw.get(key), (int, float)):  # bool included: a bound here is a date, not a number
                written = {ColumnType.DATE: "YYYY-MM-DD", ColumnType.TIMESTAMP: "ISO 8601 (e.g. 2020-01-31T00:00:00Z)",
                           ColumnType.TIMESTAMP_NTZ: "ISO 8601 without a time zone (e.g. 2020-01-31T00:00:00)"}[col_type]
                raise SchemaError(f"{source}: column '{name}' is {col_type.value}; write its '{key}' as {written}, "
                                  f"not as a number; got {raw.get(key)!r}")
    return Column(
        name=name, type=col_type, min=raw.get("min"), max=raw.get("max"), bins=raw.get("bins"), nullable=nullable,
        decimals=raw.get("decimals"),
    )


def _hierarchy_from_dict(raw: object, categories: list, where: str, shared: dict) -> tuple[HierarchyLevel, ...]:
    """A column's ``hierarchy``: a list of levels ``{"name": …, "parents": {child: parent}}``, finest
    first, or the name of an entry of the schema's top-level ``hierarchies`` (whose levels may map
    more values than the column has: they are restricted to the column's)."""
    if raw is None:
        return ()
    named = isinstance(raw, str)
    if named:
        if raw not in shared:
            raise SchemaError(f"{where}: hierarchy '{raw}' is not defined under the schema's 'hierarchies' "
                              f"(defined: {sorted(shared)})")
        raw = shared[raw]
    if not isinstance(raw, list) or not raw:
        raise SchemaError(f"{where}: 'hierarchy' must be a non-empty list of levels "
                          f"{{\"name\": ..., \"parents\": {{value: parent}}}}, or a name under 'hierarchies'")
    levels, children = [], [str(c) for c in categories]
    by_text = {str(c): c for c in categories}
    for depth, level in enumerate(raw, start=1):
        if not isinstance(level, dict) or set(level) != {"name", "parents"} or not isinstance(level["parents"], dict):
            raise SchemaError(f"{where}: hierarchy level {depth} must be a mapping with exactly 'name' and "
                              f"'parents' (a mapping of each value of the level below to its parent)")
        mapping = level["parents"]
        if named:  # a shared hierarchy may cover values this column does not have
            mapping = {child: parent for child, parent in mapping.items() if str(child) in set(children)}
        parents = tuple((by_text.get(str(child), child), parent) for child, parent in mapping.items())
        # keep the children's order of the level below so group numbering is public and stable
        order = {c: i for i, c in enumerate(children)}
        parents = tuple(sorted(parents, key=lambda cp: order.get(str(cp[0]), len(order))))
        levels.append(HierarchyLevel(name=level["name"], parents=parents))
        children = [str(p) for p in dict.fromkeys(p for _, p in parents)]
        by_text = {c: c for c in children}
    return tuple(levels)


#: The placeholder ``spark-synth schema init`` leaves for what only the user can declare.
TODO = "TODO"


def _check_no_todo(raw: dict, name: object, source: str) -> None:
    """Refuse a drafted column whose ``TODO`` placeholders were not all filled in."""
    for key in ("type", "categories", "min", "max", "bins", "nullable"):
        value = raw.get(key)
        if value == TODO or (isinstance(value, list) and TODO in value):
            raise SchemaError(f"{source}: column '{name}' still has '{key}: {TODO}'; replace it with the column's public "
                              f"{_TODO_HELP[key]} (from public knowledge, never the data), or delete the column")


_TODO_HELP = {"type": "type (one of " + _TYPES + ")", "categories": "list of categories",
              "min": "lower bound (a date: YYYY-MM-DD; a timestamp: ISO 8601; a timestamp_ntz: ISO 8601 without a zone)",
              "max": "upper bound (a date: YYYY-MM-DD; a timestamp: ISO 8601; a timestamp_ntz: ISO 8601 without a zone)",
              "bins": "number of bins", "nullable": "nullability (true/false)"}
