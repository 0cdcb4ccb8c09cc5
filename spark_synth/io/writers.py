"""Write the synthetic table without ever leaving partial output — even when the process is killed.

At every instant, reading the target gives either nothing (it does not exist) or one complete
output: the previous one or the new one, never a subset of rows.

* Table names, and existing Delta paths with ``overwrite``: one Delta transaction. Data files are
  written first and become visible only with the atomic commit to ``_delta_log`` (a commit is
  written to a hidden temporary file and renamed into place, so a half-written one is never read);
  files of a write that was killed stay unreferenced and invisible. An existing non-empty folder
  that is not a Delta table is refused by :func:`check_output`: Delta files are never mixed into it.
* New paths (any format): written to a hidden sibling ``.<name>.staging-<id>``, then renamed into
  place. With ``overwrite``, the previous output is first renamed away to a hidden sibling
  ``.<name>.replaced-<id>``, and deleted only once the new one is in place — a recursive delete is
  not atomic, so the target itself is never deleted. A rename is atomic on local disks and HDFS;
  on object stores (S3, GCS, ABFS without hierarchical namespace) it is a copy: write Delta there.
* On an error the staging directory is removed (and a replaced output put back). A killed process
  leaves its hidden siblings behind; they never make a later write fail and can be deleted.
* A new table whose create was killed after its Delta commit but before the catalog registered it
  is moved aside (``.<name>.unregistered-<id>`` next to it) by the next write to that name.

Every Delta output (a path or a table) is written by one create (or create-or-replace) as select,
which carries its :class:`~spark_synth.io.provenance.Provenance` in that same commit: the table
properties ``spark_synth.*``, the table comment and the commit's ``userMetadata``. A replaced table
keeps none of its previous properties, so they always describe the rows readers see.
"""

from __future__ import annotations

import json
import os
import re
import uuid
from pathlib import Path

from ..errors import OutputError
from ..interrupt import note_output
from . import filesystem
from .locations import Location, output_location, parse_table_name
from .provenance import Provenance

#: Characters Delta refuses in column names unless the table maps columns by name.
DELTA_NAME_CHARACTERS = frozenset(" ,;{}()\n\t=")
#: Session setting Delta reads a commit's ``userMetadata`` from (the writer option is not used by a create).
USER_METADATA_CONF = "spark.databricks.delta.commitInfo.userMetadata"


def check_output(spark, target: str, overwrite: bool = False) -> Location:
    """Fail early (before any computation) if ``target`` cannot be written."""
    location = output_location(target)
    if location.is_table:
        if spark.catalog.tableExists(location.target) and not overwrite:
            raise OutputError(f"output table '{target}' already exists; choose another name or pass --overwrite")
        return location
    if filesystem.exists(spark, target) and not overwrite:
        raise OutputError(f"output '{target}' already exists; choose another path or pass --overwrite")
    if overwrite and location.format == "delta" and filesystem.is_directory(spark, target):
        entries = filesystem.list_names(spark, target)
        if entries and "_delta_log" not in entries:  # Delta would write its files into a foreign folder
            raise OutputError(f"output '{target}' is a non-empty folder that is not a Delta table (no _delta_log), so "
                              f"--overwrite cannot replace it; choose another path, remove the folder, or end the name "
                              f"in .csv or .parquet")
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


def needs_column_mapping(names) -> bool:
    """Whether a Delta table with these column names must map columns by name (a name holds a
    character Delta refuses otherwise)."""
    return any(DELTA_NAME_CHARACTERS & set(name) for name in names)


def _hidden_sibling(target: str, kind: str) -> str:
    """A fresh hidden path next to ``target`` (``.<name>.<kind>-<id>``): Spark and Delta readers skip it."""
    parent, name = os.path.split(target.rstrip("/"))
    return os.path.join(parent, f".{name}.{kind}-{uuid.uuid4().hex[:12]}")


def write_output(spark, df, location: Location, overwrite: bool = False, provenance: Provenance | None = None,
                 column_names: list[str] | None = None) -> str:
    """Write ``df`` to ``location``; returns where it was written. A Delta output records
    ``provenance`` (when given) in its table properties, comment and commit; CSV and Parquet do not.
    ``column_names``: ``df``'s columns when the caller knows them — then ``df`` is not analysed
    before it runs (under Spark Connect, asking an observed DataFrame for its columns loses the
    observation's metrics, e.g. the sampler's filled rows)."""
    written = _write(spark, df, location, overwrite, provenance, column_names)
    note_output(written)  # what a Ctrl-C from now on reports as written
    return written


def _write(spark, df, location: Location, overwrite: bool, provenance: Provenance | None,
           column_names: list[str] | None) -> str:
    if location.is_table:
        _set_aside_unregistered_table(spark, location.target)
        try:
            _write_delta(spark, df, location.identifier, overwrite, provenance, column_names)
        except Exception as exc:
            if _condition(exc) == "INVALID_SCHEMA_OR_RELATION_NAME":  # e.g. a hyphen, outside Unity Catalog
                raise OutputError(f"output table '{location.target}' is not a valid table name in this catalog (it "
                                  f"takes letters, digits and _ only); choose another name") from None
            raise
        return location.target
    target = location.target.rstrip("/")
    if location.format == "delta" and overwrite and filesystem.exists(spark, target):
        _write_delta(spark, df, _path_identifier(spark, target), True, provenance, column_names)
        return filesystem.qualified(spark, target)
    staging = _hidden_sibling(target, "staging")
    replaced = None
    try:
        if location.format == "csv":
            df.write.mode("error").option("header", True).csv(staging)
        elif location.format == "delta":
            _write_delta(spark, df, _path_identifier(spark, staging), False, provenance, column_names)
        else:
            df.write.mode("error").format(location.format).save(staging)
        if overwrite and filesystem.exists(spark, target):
            replaced = _hidden_sibling(target, "replaced")
            if not filesystem.rename(spark, target, replaced):
                raise OutputError(f"could not move the previous output at '{target}' aside to replace it")
        _move_into_place(spark, staging, target)
    except BaseException:
        if replaced is not None and not filesystem.exists(spark, target):
            filesystem.rename(spark, replaced, target)  # put the previous output back
            replaced = None
        raise
    finally:
        filesystem.delete(spark, staging)
        if replaced is not None:
            filesystem.delete(spark, replaced)
    return filesystem.qualified(spark, target)


def _path_identifier(spark, path: str) -> str:
    """``delta.`<path>``` with the path qualified as the file system resolves it (Delta reads a
    relative one as a table name)."""
    return Location(filesystem.qualified(spark, path), False, "delta").identifier


def _write_delta(spark, df, identifier: str, replace: bool, provenance: Provenance | None,
                 column_names: list[str] | None = None) -> None:
    """One Delta commit creating (or replacing) ``identifier`` with ``df``'s rows and ``provenance``.

    SQL and DataFrame APIs only (no JVM access), so it works under Spark Connect too. The commit's
    ``userMetadata`` is set through the session for this write only, then put back as it was.
    A column name with a character Delta refuses (a space, as in credit_default's ``default payment
    next month``) turns on column mapping by name (readers need Delta reader version 2); other
    tables keep the default protocol, which every Delta reader reads."""
    writer = df.writeTo(identifier).using("delta")
    if needs_column_mapping(df.columns if column_names is None else column_names):
        writer = writer.tableProperty("delta.columnMapping.mode", "name")
    if provenance is None:
        (writer.createOrReplace if replace else writer.create)()
        return
    for key, value in provenance.to_properties().items():
        writer = writer.tableProperty(key, value)
    writer = writer.tableProperty("comment", provenance.comment()).option("userMetadata", provenance.user_metadata())
    previous = spark.conf.get(USER_METADATA_CONF, None)
    spark.conf.set(USER_METADATA_CONF, provenance.user_metadata())
    try:
        (writer.createOrReplace if replace else writer.create)()
    finally:
        if previous is None:
            spark.conf.unset(USER_METADATA_CONF)
        else:
            spark.conf.set(USER_METADATA_CONF, previous)


def _condition(exc: BaseException) -> str:
    """Spark's error condition of ``exc`` (e.g. ``INVALID_SCHEMA_OR_RELATION_NAME``), or ''."""
    getter = getattr(exc, "getCondition", None) or getattr(exc, "getErrorClass", None)
    try:
        return str(getter() or "") if getter else ""
    except Exception:
        return ""


_COMMIT = re.compile(r"^\d+\.json$")  # a committed version in a _delta_log


def _set_aside_unregistered_table(spark, name: str) -> None:
    """Creating a managed table commits its Delta log, then registers the table in the catalog. A
    process killed between the two leaves a committed table at the name's default location that the
    catalog does not know — and Delta refuses every later create there
    (``DELTA_CREATE_TABLE_WITH_NON_EMPTY_LOCATION``). That table was never reported written: move it
    aside to a hidden sibling so the new one can be created. Only exactly that is moved: a log whose
    one commit (version 0) created a *managed* table; anything else (an external table's files, a
    table with history) is left for the create to refuse. (Data files of a create killed
    *before* its commit are no obstacle: Delta leaves them unreferenced.) Best effort: anything
    unexpected (another catalog, no such database, storage that cannot be read) changes nothing."""
    parts = parse_table_name(name)
    if len(parts) > 2:
        return  # a three-part name: another catalog, with its own storage layout
    try:
        if spark.catalog.tableExists(name):
            return
        database = parts[0] if len(parts) == 2 else spark.catalog.currentDatabase()
        root = spark.catalog.getDatabase(database).locationUri
        if not root:
            return
        location = f"{root.rstrip('/')}/{parts[-1].lower()}"
        log = f"{location}/_delta_log"
        if sorted(e for e in filesystem.list_names(spark, log) if _COMMIT.match(e)) != [f"{0:020d}.json"]:
            return
        for line in filesystem.first_lines(spark, f"{log}/{0:020d}.json", 3):
            info = json.loads(line).get("commitInfo")
            if info is not None:
                if str((info.get("operationParameters") or {}).get("isManaged")).lower() == "true":
                    filesystem.rename(spark, location, _hidden_sibling(location, "unregistered"))
                return
    except Exception:
        return


def _move_into_place(spark, staging: str, target: str) -> None:
    # Renaming onto an existing directory would move the output *into* it (HDFS) or copy it there
    # (local disks) and still report success: refuse instead.
    if filesystem.exists(spark, target):
        raise OutputError(f"output '{target}' appeared while it was being written; nothing was replaced")
    if not filesystem.rename(spark, staging, target):
        raise OutputError(f"could not move the finished output into place at '{target}'")
