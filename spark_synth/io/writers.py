"""Write the synthetic table without ever leaving partial output.

* Delta paths and table names: Delta's transaction log makes each write all-or-nothing.
* New paths (any format): written to a hidden sibling directory, then renamed into place; on
  failure the temporary directory is removed.
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path

from ..errors import OutputError
from . import filesystem
from .locations import Location, output_location


def check_output(spark, target: str, overwrite: bool = False) -> Location:
    """Fail early (before any computation) if ``target`` cannot be written."""
    location = output_location(target)
    if location.is_table:
        if spark.catalog.tableExists(location.target) and not overwrite:
            raise OutputError(f"output table '{target}' already exists; choose another name or pass --overwrite")
        return location
    if filesystem.exists(spark, target) and not overwrite:
        raise OutputError(f"output '{target}' already exists; choose another path or pass --overwrite")
    if "://" not in target and not target.startswith("dbfs:"):
        _check_local_parent(Path(target))
    return location


def _check_local_parent(path: Path) -> None:
    ancestor = path.resolve().parent
    while not ancestor.exists():
        ancestor = ancestor.parent
    if not ancestor.is_dir():
        raise OutputError(f"output '{path}' cannot be created: '{ancestor}' is a file, not a directory")
    if not os.access(ancestor, os.W_OK | os.X_OK):
        raise OutputError(f"output '{path}' cannot be created: directory '{ancestor}' is not writable")


def write_output(spark, df, location: Location, overwrite: bool = False) -> str:
    """Write ``df`` to ``location``; returns where it was written."""
    if location.is_table:
        df.write.format("delta").mode("overwrite" if overwrite else "errorifexists").saveAsTable(location.target)
        return location.target
    target = location.target.rstrip("/")
    if location.format == "delta" and overwrite and filesystem.exists(spark, target):
        df.write.format("delta").mode("overwrite").option("overwriteSchema", "true").save(target)
        return filesystem.qualified(spark, target)
    parent, name = os.path.split(target)
    staging = os.path.join(parent, f".{name}.staging-{uuid.uuid4().hex[:12]}")
    try:
        writer = df.write.mode("errorifexists")
        if location.format == "csv":
            writer.option("header", True).csv(staging)
        else:
            writer.format(location.format).save(staging)
        if overwrite:
            filesystem.delete(spark, target)
        if not filesystem.rename(spark, staging, target):
            raise OutputError(f"could not move the finished output into place at '{target}'")
    finally:
        filesystem.delete(spark, staging)
    return filesystem.qualified(spark, target)
