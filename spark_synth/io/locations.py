"""Where data lives: paths (local or remote URIs) vs catalog table names, and output formats.

A table name has one to three parts (``table``, ``schema.table``, ``catalog.schema.table``), each a
plain identifier (letters, digits, ``_``; not starting with a digit) or any text in backticks, with
a backtick inside written twice — as in Spark SQL and Unity Catalog: ``main.default.`my-table```.
Anything else (``/x``, ``./x``, ``dbfs:/x``, ``s3://b/x``, ``x.csv``) is a path.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from ..errors import OutputError, ParameterError, UserInputError

_PLAIN_PART = re.compile(r"[A-Za-z_]\w*")
_MAX_PARTS = 3
_FORMATS = {".csv": "csv", ".parquet": "parquet", ".delta": "delta"}
_QUOTING_HELP = ("quote each part of a table name that is not a plain identifier in backticks, writing a backtick "
                 "inside it twice (e.g. main.default.`my-table`)")


@dataclass(frozen=True)
class Location:
    """A data location: a catalog table (``db.table``) or a path, with its storage format."""

    target: str
    is_table: bool
    format: str  # "delta", "parquet" or "csv"

    @property
    def identifier(self) -> str:
        """How Spark SQL names a Delta output: the table's name, each part in backticks, or ``delta.`path```
        (Delta takes a path there only when it is absolute or a URI: qualify a relative one first)."""
        if self.is_table:
            return quote_table_name(self.target)
        return f"delta.{_quote(self.target.rstrip('/') or '/')}"


def parse_table_name(target: str) -> tuple[str, ...] | None:
    """The parts of table name ``target`` (backticks removed), or None when it is a path.

    A name written with backticks that does not parse (an unpaired backtick, an empty part, more
    than three parts) is a :class:`~spark_synth.errors.UserInputError`, not a path, unless it holds
    a ``/`` or ``:`` outside backticks (then it is a path that happens to contain a backtick)."""
    parsed = _split(target)
    if parsed is not None:
        parts, last_quoted = parsed
        if len(parts) == 2 and parts[0].lower() == "delta" and last_quoted and "/" in parts[1]:
            raise UserInputError(f"'{target}' names a Delta table by its path: pass the path itself ('{parts[1]}')")
        if len(parts) <= _MAX_PARTS and (last_quoted or format_from_extension(target) is None):
            return tuple(parts)
    if "`" in target and not _outside_backticks(target, "/:"):
        why = ("its backticks do not quote whole parts" if parsed is None else
               f"more than {_MAX_PARTS} parts" if len(parsed[0]) > _MAX_PARTS else "it ends in a file extension")
        raise UserInputError(f"'{target}' is not a valid table name ({why}); {_QUOTING_HELP}")
    return None


def is_table_name(target: str) -> bool:
    """``name``, ``db.name`` or ``catalog.db.name`` (parts plain or in backticks), not ending in a file extension."""
    return parse_table_name(target) is not None


def quote_table_name(name: str | tuple[str, ...]) -> str:
    """A table name for SQL: every part in backticks (a backtick inside doubled): ``a.`b-c``` → ```a`.`b-c```."""
    parts = name if isinstance(name, tuple) else parse_table_name(name)
    if not parts:
        raise UserInputError(f"'{name}' is not a table name; {_QUOTING_HELP}")
    return ".".join(_quote(part) for part in parts)


def canonical_table_name(parts: tuple[str, ...]) -> str:
    """One spelling per name: plain parts as they are, any other part in backticks (``a.`b-c```)."""
    return ".".join(part if _PLAIN_PART.fullmatch(part) else _quote(part) for part in parts)


def _quote(text: str) -> str:
    return "`" + text.replace("`", "``") + "`"


def _split(target: str) -> tuple[list[str], bool] | None:
    """``target`` split on the dots outside backticks into unquoted parts, and whether the last part
    was quoted; None unless every part is a plain identifier or one whole backtick-quoted text."""
    parts, i, quoted = [], 0, False
    while True:
        if target.startswith("`", i):
            text, i = _quoted_part(target, i)
            if text is None:
                return None
            quoted = True
        else:
            match = _PLAIN_PART.match(target, i)
            if not match:
                return None
            text, i, quoted = match.group(), match.end(), False
        parts.append(text)
        if i == len(target):
            return parts, quoted
        if target[i] != ".":
            return None
        i += 1


def _quoted_part(target: str, start: int) -> tuple[str | None, int]:
    """The text of the backtick-quoted part at ``start`` and the index after it; None if unpaired or empty."""
    text, i = [], start + 1
    while i < len(target):
        if target[i] == "`":
            if target.startswith("``", i):
                text.append("`")
                i += 2
                continue
            return ("".join(text) or None), i + 1
        text.append(target[i])
        i += 1
    return None, i


def _outside_backticks(target: str, characters: str) -> bool:
    """Whether any of ``characters`` occurs in ``target`` outside backtick-quoted text."""
    inside = False
    for char in target:
        if char == "`":
            inside = not inside  # a doubled backtick toggles twice: still inside
        elif not inside and char in characters:
            return True
    return False


def format_from_extension(target: str) -> str | None:
    lower = target.rstrip("/").lower()
    for ext, fmt in _FORMATS.items():
        if lower.endswith(ext):
            return fmt
    return None


def output_location(target: str) -> Location:
    """Output format from the extension (``.csv``, ``.parquet``); otherwise a Delta table/path.

    A local path that is an existing file cannot hold a Delta table (a folder): refused here."""
    if is_table_name(target):
        return Location(target, True, "delta")
    location = Location(target, False, format_from_extension(target) or "delta")
    if location.format == "delta" and is_local_path(target) and os.path.isfile(target):
        raise OutputError(f"output '{target}' is an existing file, but a Delta output is a folder; choose a folder "
                          f"path, or end the name in .csv or .parquet")
    return location


def is_local_path(target: str) -> bool:
    """A path on this machine's file system (no ``scheme://`` and no ``dbfs:``)."""
    return "://" not in target and not target.startswith(("dbfs:", "file:"))


def dataset_key(dataset_id: str | None, source: str) -> str:
    """The name of the ledger a fit or a schema pre-pass is charged to: the declared dataset id, else
    the input's :func:`source_key`."""
    if dataset_id is not None and (not isinstance(dataset_id, str) or not dataset_id.strip()):
        raise ParameterError("dataset_id (--dataset-id)", "a non-empty dataset id naming the table's budget ledger", dataset_id)
    return source_key(dataset_id if dataset_id is not None else source)


def source_key(source: str) -> str:
    """A stable name for a source table: table names in lower case (backticks only around parts that
    need them, so ``Main.`Sales`.t`` and ``main.sales.t`` are one table), paths made absolute."""
    source = source.strip()
    try:
        parts = parse_table_name(source)
    except UserInputError:  # not a table name (e.g. a free-form --dataset-id): as before
        parts = None
    if parts is not None:
        return canonical_table_name(parts).lower()
    if "://" in source or ":/" in source:  # s3://…, abfss://…, dbfs:/…, file:/…
        return source.rstrip("/")
    if "/" in source or source.startswith(".") or Path(source).suffix in (".csv", ".parquet"):
        return str(Path(source).expanduser().resolve())
    return source.lower()
