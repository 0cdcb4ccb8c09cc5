"""Checks a command makes before Spark starts or the fit spends anything: a missing local input, an
existing local output, an output that is a catalog table (said on stderr, and the JSON line's
``output_kind``), and ``--where`` / ``--rows-per`` against the schema.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

from .logs import layer
from .schema import Schema


def output_kind(target: str) -> str:
    """``"table"`` for a catalog table name (``out1``, ``db.out1``, ``main.db.`my-t```), else ``"path"``
    (anything with a ``/`` or a scheme, or ending in ``.csv``/``.parquet``): the JSON line's
    ``output_kind``, so a bare name is never silently a table."""
    from .io.locations import is_table_name

    return "table" if is_table_name(target) else "path"


def check_before_spark(spark, spark_profile, *, input: str | None = None, output: str | None = None,
                       overwrite: bool = False) -> None:
    """Before a Spark session starts (16-18 s on a laptop): say so when ``output`` is a catalog table
    (one ``spark-synth: output: …`` line), and refuse a missing local ``input`` or an existing local
    ``output`` (without ``overwrite``) with the errors the Spark-side checks give.

    Only paths on this machine are looked at, and only when the session that will read them is a
    local one started here (no ``spark`` given or active, a ``local*`` master, no Hadoop
    configuration that could make a plain path mean HDFS): a URI (``s3://``, ``dbfs:/``, ``hdfs:``)
    or a catalog table name is checked, as before, once Spark is up."""
    if output is not None:
        _announce_output(output)
    if not _paths_are_local(spark, spark_profile):
        return
    if input is not None:
        _check_local_input(input)
    if output is not None:
        _check_local_output(output, overwrite)


def _announce_output(target: str) -> None:
    """One progress line when ``target`` is a catalog table: a bare name such as ``out1`` is one,
    which a user expecting a folder would not guess (a path says what it is)."""
    if output_kind(target) == "table":
        layer("io").info("output: catalog table %s (Delta; a name without '/' is a table in Spark's catalog: "
                         "write ./%s for a folder)", target, target)


def _paths_are_local(spark, spark_profile) -> bool:
    """Whether the session that will read and write is a local one this process starts, reading
    plain paths from this machine's file system."""
    from .session import load_profile

    if spark is not None or os.environ.get("PYSPARK_GATEWAY_PORT"):
        return False  # a given session, or spark-submit's: its file system may be anything
    remote = os.environ.get("SPARK_REMOTE")
    if remote and not remote.startswith("local"):
        return False
    if os.environ.get("HADOOP_CONF_DIR") or os.environ.get("YARN_CONF_DIR"):
        return False  # fs.defaultFS may make /data/x an HDFS path
    if "pyspark.sql" in sys.modules:  # only then can a session (a notebook's, a test's) be active already
        from pyspark import SparkContext
        from pyspark.sql import SparkSession

        if SparkContext._active_spark_context is not None or SparkSession.getActiveSession() is not None:
            return False
    settings = load_profile(spark_profile)
    if not str(settings["master"] or "").startswith("local"):
        return False
    return not any(key in settings["spark"] for key in ("spark.hadoop.fs.defaultFS", "spark.hadoop.fs.default.name"))


_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:")


def _local_path(target: str) -> str | None:
    """``target`` as a path on this machine (``file:`` URIs included), or None for another scheme."""
    if target.startswith("file:"):
        return "/" + target[len("file:"):].lstrip("/")
    return None if _SCHEME.match(target) else target


def _check_local_input(source: str) -> None:
    from .errors import InputNotFoundError
    from .io.locations import format_from_extension, is_table_name
    from .io.readers import _HELP

    if format_from_extension(source) is None and is_table_name(source) and not os.path.exists(source):
        return  # a catalog table: looked up once Spark is up
    path = _local_path(source)
    if path is not None and not os.path.exists(path):
        raise InputNotFoundError(f"input '{source}' does not exist; {_HELP}")


def _check_local_output(target: str, overwrite: bool) -> None:
    """:func:`spark_synth.io.check_output`'s checks of a local path, without Spark."""
    from .errors import OutputError
    from .io.locations import output_location
    from .io.writers import _check_local_parent

    location = output_location(target)  # refuses a Delta output on an existing file
    if location.is_table and "`" not in target and os.path.lexists(target):
        what = "folder" if os.path.isdir(target) else "file"
        raise OutputError(f"output '{target}' names a catalog table, and there is also a {what} '{target}' here: "
                          f"write ./{target} for the {what}, or qualify the table (db.{target}) to write the table")
    path = None if location.is_table else _local_path(target)
    if path is None:
        return
    if os.path.lexists(path) and not overwrite:
        raise OutputError(f"output '{target}' already exists; choose another path or pass --overwrite")
    if overwrite and location.format == "delta" and os.path.isdir(path):
        entries = os.listdir(path)
        if entries and "_delta_log" not in entries:
            raise OutputError(f"output '{target}' is a non-empty folder that is not a Delta table (no _delta_log), so "
                              f"--overwrite cannot replace it; choose another path, remove the folder, or end the name "
                              f"in .csv or .parquet")
    _check_local_parent(Path(path))


def _sample_shape(schema: Schema, where: str | None, rows_per: str | None, evaluate: dict | None = None) -> dict:
    """``--where`` parsed against the schema and ``--rows-per`` checked (before Spark starts or the fit
    spends anything), as the keywords of ``Synthesizer.write``."""
    from .sample.conditions import ConditionError, parse_condition
    from .sample.plan import stratum_column

    if where is not None and evaluate is not None:
        raise ConditionError("--where and --evaluate: the evaluation compares the output with the whole real table, "
                             "which a conditioned sample does not follow; evaluate a plain sample")
    if rows_per is not None:
        stratum_column(rows_per, schema)
    return {"conditions": None if where is None else parse_condition(where, schema), "rows_per": rows_per}
