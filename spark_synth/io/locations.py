"""Where data lives: paths (local or remote URIs) vs catalog table names, and output formats."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

from ..errors import OutputError

_TABLE_NAME = re.compile(r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*){0,2}$")
_FORMATS = {".csv": "csv", ".parquet": "parquet", ".delta": "delta"}


@dataclass(frozen=True)
class Location:
    """A data location: a catalog table (``db.table``) or a path, with its storage format."""

    target: str
    is_table: bool
    format: str  # "delta", "parquet" or "csv"


def is_table_name(target: str) -> bool:
    """``name``, ``db.name`` or ``catalog.db.name`` without a file extension is a table name."""
    return bool(_TABLE_NAME.match(target)) and format_from_extension(target) is None


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
