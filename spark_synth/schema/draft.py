"""A schema draft from a table's *declared* storage types (names and types only, never values).

``spark-synth schema init`` reads a table's declared structure (Parquet/Delta/catalog types; a
CSV declares every column a string, unless ``--types`` gives a Spark DDL for some or all of its
columns, which then count as their declared types) and drafts a schema file: integer and floating-point columns
become ``integer`` / ``continuous`` with ``TODO`` bounds, string columns ``categorical`` with
``TODO`` categories, booleans ``boolean``, dates ``date``, timestamps ``timestamp`` and timestamps
without a time zone (Spark TimestampNTZ) ``timestamp_ntz``, with ``TODO`` bounds — and a CSV's
columns get ``type: TODO``, since guessing a type from the values would be a data-dependent
release. Everything drafted here is public by construction; the user fills the ``TODO``s from
public knowledge (or a DP pre-pass does: :mod:`spark_synth.prepass`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import yaml

from ..errors import ParameterError, SchemaError
from .columns import MAX_DECIMALS
from .readers import TODO

#: Declared Spark types (``DataType.simpleString()``) by the kind of schema column they draft.
_INTEGRAL = {"tinyint", "smallint", "int", "bigint", "byte", "short", "integer", "long"}
_FRACTIONAL = {"float", "double", "real"}
_STRING = {"string"}

#: Kinds a declared column can have: what its draft (and a DP pre-pass) may make of it.
STRING, INTEGRAL, FRACTIONAL, UNDECLARED = "string", "integral", "fractional", "undeclared"
BOOLEAN, DATE, TIMESTAMP, TIMESTAMP_NTZ = "boolean", "date", "timestamp", "timestamp_ntz"
#: Kinds whose draft is the schema type of the same name, with ``TODO`` bounds.
TEMPORAL = (DATE, TIMESTAMP, TIMESTAMP_NTZ)


@dataclass(frozen=True)
class DeclaredColumn:
    """A column's name and declared storage type as the table's metadata states them."""

    name: str
    spark_type: str
    nullable: bool = True

    @property
    def kind(self) -> str | None:
        """``string`` / ``integral`` / ``fractional`` / ``undeclared`` (a CSV's text) / ``boolean`` /
        ``date`` / ``timestamp`` / ``timestamp_ntz``, or None if unsupported."""
        t = self.spark_type.lower()
        if t in _INTEGRAL:
            return INTEGRAL
        if t in _FRACTIONAL or t.startswith("decimal"):
            return FRACTIONAL
        if t in _STRING or re.fullmatch(r"(var)?char\(\d+\)", t):
            return STRING
        if t in (UNDECLARED, BOOLEAN, *TEMPORAL):
            return t
        return None


def declared_columns(struct, from_csv: bool) -> list[DeclaredColumn]:
    """The declared columns of a Spark ``StructType`` (a CSV's columns are all ``undeclared``)."""
    return [DeclaredColumn(f.name, UNDECLARED if from_csv else f.dataType.simpleString(), bool(f.nullable))
            for f in struct.fields]


def pick_columns(declared: list[DeclaredColumn], columns: list[str] | None, exclude: list[str] | None) -> list[DeclaredColumn]:
    """The columns to draft: ``columns`` (in table order; default all) minus ``exclude``.

    Refuses unknown names, an empty selection, and columns of a type no schema column can hold."""
    names = [c.name for c in declared]
    for flag, given in (("--columns", columns), ("--exclude", exclude)):
        unknown = [n for n in (given or []) if n not in names]
        if unknown:
            raise ParameterError(flag, f"names of the table's columns {names}", unknown)
    keep = set(columns) if columns else set(names)
    keep -= set(exclude or [])
    picked = [c for c in declared if c.name in keep]
    if not picked:
        raise ParameterError("--columns/--exclude", "a selection that leaves at least one column", sorted(keep))
    unsupported = [f"{c.name} ({c.spark_type})" for c in picked if c.kind is None]
    if unsupported:
        raise SchemaError(f"columns {unsupported} have types no schema column can hold; leave them out with "
                          f"--exclude NAME")
    return picked


def declared_decimals(column: DeclaredColumn) -> dict:
    """``{"decimals": s}`` for a DECIMAL(p, s) column (its values are written to s places), else ``{}``."""
    scale = re.fullmatch(r"decimal\(\d+,\s*(\d+)\)", column.spark_type.strip().lower())
    return {"decimals": int(scale.group(1))} if scale is not None and int(scale.group(1)) <= MAX_DECIMALS else {}


def draft_column(column: DeclaredColumn) -> dict:
    """The schema-file entry of one declared column, with ``TODO`` for what only the user knows."""
    out: dict = {"name": column.name}
    if column.kind == STRING:
        out.update(type="categorical", categories=TODO)
    elif column.kind == INTEGRAL:
        out.update(type="integer", min=TODO, max=TODO)
    elif column.kind == FRACTIONAL:
        out.update(type="continuous", min=TODO, max=TODO, **declared_decimals(column))
    elif column.kind == BOOLEAN:
        out.update(type="boolean")
    elif column.kind in TEMPORAL:
        out.update(type=column.kind, min=TODO, max=TODO)
    elif column.kind == UNDECLARED:
        out.update(type=TODO)
    else:
        raise SchemaError(f"column '{column.name}' has type {column.spark_type}, which no schema column can hold")
    if not column.nullable:
        out["nullable"] = False
    return out


HEADER = """\
# Drafted by `spark-synth schema init` from {source}.
{read}# EVERYTHING IN THIS FILE IS TREATED AS PUBLIC: names, types, categories and bounds are not
# protected by the differential-privacy guarantee, so fill in each TODO from public knowledge
# (documentation, code lists, physical limits), never by looking at the data.
#   type: categorical (categories: [a, b, ...]) | ordinal (categories in order)
#       | integer / continuous (min: LOW, max: HIGH [, bins: N]) | boolean (false/true)
#       | date (min/max: 'YYYY-MM-DD') | timestamp (min/max: ISO 8601, UTC, e.g. '2020-01-31T00:00:00Z')
#       | timestamp_ntz (min/max: ISO 8601 wall-clock time, no time zone, e.g. '2020-01-31T00:00:00')
# `spark-synth run` refuses a schema that still holds a TODO, naming the column.
"""

#: What a draft without a DP pre-pass read (the ``{read}`` lines of :data:`HEADER`).
READ_DECLARED = "# Only the table's declared column names and storage types were read, never its values.\n"
READ_DDL = ("Only the CSV's header row (its column names) was read, never its values; the types of {typed} come "
            "from the Spark DDL given with --types (your declaration: public).")


def _wrapped(text: str, prefix: str = "# ") -> str:
    import textwrap

    return "".join(f"{line}\n" for line in textwrap.wrap(_one_line(text), width=100, initial_indent=prefix,
                                                         subsequent_indent=prefix, break_on_hyphens=False))


def _count(n: int, what: str = "column") -> str:
    return f"{n} {what}" + ("" if n == 1 else "s")


def read_lines(*, prepass: dict | None = None, ddl_columns: list[str] | None = None, n_columns: int = 0) -> str:
    """The header lines that say exactly what was read: names and declared types only; the CSV's
    header row and a --types DDL; or, after a DP pre-pass, which columns' values it read, what of
    them the file holds (DP outputs only), what it cost (ρ, and (ε, δ) as the code reports them) and
    where that cost was charged."""
    if prepass is None:
        if ddl_columns is None:
            return READ_DECLARED
        typed = (f"all {_count(n_columns)}" if len(ddl_columns) == n_columns else
                 f"{len(ddl_columns)} of its {n_columns} columns ({', '.join(ddl_columns)}; the others are text, "
                 f"type: TODO)")
        return _wrapped(READ_DDL.format(typed=typed))
    declared = ("the CSV's header row (column names), the Spark DDL given with --types for "
                f"{', '.join(ddl_columns)}" if ddl_columns is not None else "the table's declared column names and "
                "storage types (a CSV's header row)")
    read = prepass.get("columns_read") or []
    what = ("the kind of each value (0/1, other whole number, other number, ISO date, true/false, other text), "
            "as DP counts: the types whose notes say \"DP type decision\"" if prepass.get("method") == "--dp-types" else
            "DP counts of them: the types, bounds and categories whose notes say \"DP\"")
    what += " (covered by the pre-pass's own guarantee, stated here; runs then treat them as public like the rest)"
    ledger = (f"charged to the budget ledger of '{prepass.get('dataset_id')}'" if prepass.get("ledger") else
              "not charged to any ledger (MLflow was off): every fit or release using this file charges it, once, "
              "by its id")
    given = prepass.get("epsilon_given", prepass.get("epsilon"))
    deltas = (f"delta = {prepass['delta_conversion']:.6g} (conversion) + {prepass['delta_approx']:.6g} (thresholds, "
              f"added to the delta of every fit using this file)" if prepass["delta_approx"] else
              "all of it the conversion delta (nothing thresholded: fits using this file add no delta)")
    text = (f"Read: {declared}; and, by a differentially private pre-pass ({prepass.get('method', '--dp-bounds')} "
            f"{given:g}), the VALUES of {_count(len(read))}: "
            f"{', '.join(map(str, read))}. Only DP outputs of those values are in this file — {what}. "
            f"Cost: rho = {prepass['rho']:.6g} (zCDP), i.e. (epsilon = {prepass['epsilon']:.6g}, "
            f"delta = {prepass['delta']:.6g})-DP, {deltas}; {ledger}. The record: dp_prepass below.")
    return _wrapped(text)


def render_yaml(columns: list[dict], *, source: str, notes: dict[str, str] | None = None,
                prepass: dict | None = None, warnings: dict[str, list[str]] | None = None,
                ddl_columns: list[str] | None = None) -> str:
    """The schema file's text: the public-data header (what was read: :func:`read_lines`), then
    one entry per column with its note and a ``# CHECK:`` line for each of its ``warnings`` (bounds
    to edit by hand). ``ddl_columns``: the columns typed by a ``--types`` DDL."""
    notes, warnings = notes or {}, warnings or {}
    read = read_lines(prepass=prepass, ddl_columns=ddl_columns, n_columns=len(columns))
    parts = [HEADER.format(source=source, read=read)]
    if prepass is not None:
        parts.append(yaml.safe_dump({"dp_prepass": prepass}, sort_keys=False, width=10**6))
    parts.append("columns:\n")
    for column in columns:
        if column["name"] in notes:
            parts.append(f"  # {_one_line(column['name'])}: {notes[column['name']]}\n")
        for warning in warnings.get(column["name"], ()):
            parts.append(f"  # CHECK: {_one_line(warning)}\n")
        text = yaml.safe_dump([column], sort_keys=False, default_flow_style=None, width=10**6, allow_unicode=True)
        parts.append("".join(f"  {line}\n" for line in text.splitlines()))
    return "".join(parts)


def _one_line(text: str) -> str:
    return " ".join(str(text).split())
