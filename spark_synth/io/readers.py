"""Read the private input: CSV, Parquet, a Delta path, or a catalog table name.

Every way an input can be wrong before a row is read — absent, empty, not the format its name
says, a folder of mixed files, a CSV that is binary, not UTF-8 or has duplicate column names —
is one :class:`~spark_synth.errors.UserInputError` naming the input and the fix, never Spark's
exception text (which may quote file contents). The checks look at file names, sizes and a CSV's
header row only (column names, which the schema already declares), never at data rows.
"""

from __future__ import annotations

import codecs
import csv
import posixpath

from ..errors import DataValidationError, InputNotFoundError
from . import filesystem
from .locations import format_from_extension, is_table_name

#: Formats spark-synth reads, by data-file extension.
_READABLE = {".csv": "csv", ".parquet": "parquet"}
#: Compression suffixes Spark decompresses transparently (``part-0.csv.gz`` is a CSV file).
_COMPRESSED = (".gz", ".bz2", ".deflate", ".lz4", ".snappy", ".zst", ".zstd", ".br", ".xz")
#: At most this many files of an input folder are looked at (their names only).
_MAX_LISTED_FILES = 1000
#: Bytes of a CSV file read to check its header row.
_HEAD_BYTES = 64 * 1024
_HELP = "pass a CSV/Parquet file, a folder of one of them, a Delta table's folder or a catalog table name"


def read_input(spark, source: str):
    """A lazy DataFrame of ``source``.

    CSV is read with a header and every column as a string (empty cells are nulls); the encoder
    parses values against the schema, so a malformed value is handled by the out-of-domain policy
    and never echoed in an error message. A quoted field may hold newlines: one record is one row
    however many lines it spans (``multiLine``; each file is then read by one task).
    A folder is read by the format of its files (``.csv`` or ``.parquet``; files without an
    extension are read as Parquet) unless it is a Delta table (it has a ``_delta_log``).
    """
    fmt = format_from_extension(source)
    if fmt is None and is_table_name(source) and not filesystem.exists(spark, source):
        return _read_table(spark, source)
    if not filesystem.exists(spark, source):
        raise InputNotFoundError(f"input '{source}' does not exist; {_HELP}")
    folder = filesystem.is_directory(spark, source)
    has_log = folder and filesystem.exists(spark, source.rstrip("/") + "/_delta_log")
    if fmt == "delta" or has_log:
        if not has_log:
            kinds = _file_kinds(spark, source) if folder else set()
            what = "a file" if not folder else ("an empty folder" if not kinds else f"a folder of {_listed(kinds)} files")
            raise InputNotFoundError(f"input '{source}' is not a Delta table: it is {what} without a _delta_log; "
                                     f"point --input at a Delta table's folder, or name the file by its real format")
        return _load(lambda: spark.read.format("delta").load(source), source, "a Delta table")
    if folder:
        fmt = _folder_format(spark, source, fmt)
    elif fmt is None:
        raise InputNotFoundError(
            f"cannot tell the format of input '{source}': use a .csv or .parquet extension, a Delta folder, or a table name"
        )
    if fmt == "csv":
        _check_csv_head(spark, source, folder)
        return _load(lambda: spark.read.options(header=True, inferSchema=False, mode="PERMISSIVE", multiLine=True)
                     .csv(source), source, "CSV")
    return _load(lambda: spark.read.parquet(source), source, "Parquet")


def _read_table(spark, name: str):
    try:
        exists = bool(spark.catalog.tableExists(name))
    except Exception as exc:  # an unknown catalog or a malformed name: the table is not there
        if not _is_spark_error(exc):
            raise
        exists = False
    if not exists:
        raise InputNotFoundError(f"input '{name}' is neither an existing path nor a table in the catalog; {_HELP} "
                                 f"(a table as db.table)")
    return _load(lambda: spark.table(name), name, "a catalog table")


# ---- folders --------------------------------------------------------------------------------------
def _data_files(spark, folder: str) -> list[tuple[str, int]]:
    """(relative path, size) of up to :data:`_MAX_LISTED_FILES` data files under ``folder``."""
    return filesystem.data_files(spark, folder, _MAX_LISTED_FILES)


def _kind(name: str) -> str:
    """The format extension of a data file: ``part-0.snappy.parquet`` → .parquet, ``a.csv.gz`` → .csv."""
    base = posixpath.basename(name).lower()
    while True:
        stem, ext = posixpath.splitext(base)
        if ext in _COMPRESSED and stem:
            base = stem
            continue
        return ext


def _file_kinds(spark, folder: str) -> set[str]:
    return {_kind(name) or "(no extension)" for name, _ in _data_files(spark, folder)}


def _listed(kinds) -> str:
    return ", ".join(sorted(kinds))


def _folder_format(spark, folder: str, declared: str | None) -> str:
    kinds = {_kind(name) for name, _ in _data_files(spark, folder)}
    if not kinds:
        raise InputNotFoundError(f"input '{folder}' is an empty folder: no data files and no _delta_log; {_HELP}")
    named = kinds - {""}
    if len(named) > 1:
        raise InputNotFoundError(f"input '{folder}' is a folder holding files of several formats ({_listed(named)}); "
                                 f"point --input at one file or a folder of one format")
    if not named:  # files without an extension (e.g. Hive's 000000_0): the folder's name, else Parquet
        return declared or "parquet"
    kind = named.pop()
    if kind not in _READABLE:
        raise InputNotFoundError(f"input '{folder}' is a folder of {kind} files, which spark-synth does not read; "
                                 f"convert them to CSV or Parquet, or write a Delta table")
    if declared is not None and _READABLE[kind] != declared:
        raise InputNotFoundError(f"input '{folder}' is named as {declared} but holds {kind} files; rename it or point "
                                 f"--input at the right folder")
    return _READABLE[kind]


# ---- CSV header ------------------------------------------------------------------------------------
def _check_csv_head(spark, source: str, folder: bool) -> None:
    """Refuse a CSV whose header row cannot name the columns: an empty file, binary or non-UTF-8
    bytes, another delimiter, empty or duplicate names. Only the header row is looked at."""
    if folder:
        files = [(source.rstrip("/") + "/" + name, size) for name, size in _data_files(spark, source)
                 if posixpath.basename(name).lower().endswith(".csv")]
        if files and all(size == 0 for _, size in files):
            raise DataValidationError(f"input '{source}' holds only empty CSV files; each needs a header row naming "
                                      f"the columns, then one row per record")
        files = [(path, size) for path, size in files if size > 0][:1]
        shown = source
    else:
        files, shown = [(source, filesystem.size(spark, source))], source
        if files[0][1] == 0:
            raise DataValidationError(f"input '{source}' is an empty file; a CSV needs a header row naming the "
                                      f"columns, then one row per record")
    for path, _ in files:
        _check_header(filesystem.read_head(spark, path, _HEAD_BYTES), shown)


def _check_header(head: bytes, source: str) -> None:
    fix = "save it as comma-separated UTF-8 text with a header row"
    if head.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)) or head.startswith((codecs.BOM_UTF32_LE, codecs.BOM_UTF32_BE)):
        raise DataValidationError(f"input '{source}' is UTF-16/32 text, not UTF-8; {fix}")
    line = head.split(b"\n", 1)[0]
    if b"\x00" in line or any(b < 0x20 and b not in b"\t\r\f\v" for b in line):
        raise DataValidationError(f"input '{source}' is not a text CSV: its first line holds binary bytes (a binary "
                                  f"file, or UTF-16/32 text); {fix}, or give the file its real format's extension")
    if line.startswith(codecs.BOM_UTF8):  # Spark skips a UTF-8 byte-order mark
        line = line[len(codecs.BOM_UTF8):]
    try:
        text = codecs.getincrementaldecoder("utf-8")("strict").decode(line, final=b"\n" in head)
    except UnicodeDecodeError as exc:
        raise DataValidationError(f"input '{source}' is not UTF-8 text: its header row holds a byte that is not "
                                  f"UTF-8 (at byte {exc.start + 1}; Latin-1 or Windows-1252 text?); {fix}") from None
    if b"\n" not in head:  # the header row is longer than what was read: its names are not all here
        return
    names = next(csv.reader([text.rstrip("\r")]), [])
    if len(names) == 1:
        for delimiter, label in ((";", "';'"), ("\t", "tab"), ("|", "'|'")):
            if delimiter in names[0]:
                raise DataValidationError(f"input '{source}' looks {label}-separated (its header row is one field); "
                                          f"spark-synth reads comma-separated CSV: convert it")
    empty = [i + 1 for i, name in enumerate(names) if not name]
    if empty and names != [""]:
        raise DataValidationError(f"input '{source}' has an unnamed column in its header row (column {empty[0]}); "
                                  f"name every column as in the schema")
    lowered = [name.lower() for name in names]
    dupes = sorted({name for name in names if lowered.count(name.lower()) > 1})
    if dupes:
        raise DataValidationError(f"input '{source}' has duplicate column names {dupes} in its header row (names are "
                                  f"compared ignoring case); rename or drop them so each column appears once")


# ---- Spark's own errors ----------------------------------------------------------------------------
def _is_spark_error(exc: BaseException) -> bool:
    return type(exc).__module__.split(".")[0] in ("pyspark", "py4j")


def _load(read, source: str, what: str):
    """``read()``, with Spark's errors on opening the input turned into one line naming the input.

    The message is chosen from the error's condition only: Spark's text can quote file contents."""
    try:
        return read()
    except Exception as exc:
        if not _is_spark_error(exc):
            raise
        text = str(exc)
        java = getattr(exc, "java_exception", None)
        if java is not None:
            try:
                text += " " + str(java.toString())
            except Exception:  # pragma: no cover - the gateway is gone
                pass
        condition = _condition(exc)
        if "PATH_NOT_FOUND" in text or "FileNotFoundException" in text:
            raise InputNotFoundError(f"input '{source}' does not exist (or a file of it vanished); {_HELP}") from None
        if "DELTA_" in condition or "not a Delta table" in text or "DELTA_" in text:
            raise InputNotFoundError(f"input '{source}' is not a readable Delta table ({condition or 'no valid log'}); "
                                     f"point --input at a Delta table's folder") from None
        if "UNABLE_TO_INFER_SCHEMA" in text:
            raise DataValidationError(f"input '{source}' holds no {what} data files Spark can read; {_HELP}") from None
        if "not a Parquet file" in text or "FOOTER" in text or "magic number" in text:
            raise DataValidationError(f"input '{source}' is not valid Parquet (a file's footer cannot be read); check "
                                      f"the file, or give it the extension of its real format (e.g. .csv)") from None
        raise DataValidationError(f"input '{source}' cannot be read as {what} (Spark error "
                                  f"{condition or type(exc).__name__}); check that it is a valid {what}") from None


def _condition(exc: BaseException) -> str:
    """Spark's error condition (e.g. ``UNABLE_TO_INFER_SCHEMA``): a fixed identifier, never data."""
    for getter in ("getCondition", "getErrorClass"):
        try:
            value = getattr(exc, getter)()
        except Exception:
            continue
        if value:
            return str(value)
    return ""
