"""``spark-synth schema init``: draft a schema file from a table's declared types (a CSV's from a
``--types`` Spark DDL), optionally with a DP pre-pass for types, bounds and categories
(``--dp-bounds``) or a CSV's types only (``--dp-types``), written atomically. Returns the one-line
JSON summary."""

from __future__ import annotations

import os
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

from .errors import OutputError, ParameterError
from .logs import layer
from .schema.draft import declared_columns, draft_column, pick_columns, render_yaml

_LOG = layer("schema")


def init_schema(*, input: str, output: str, columns: list[str] | None = None, exclude: list[str] | None = None,
                dp_epsilon: float | None = None, dp_delta: float | None = None, overwrite: bool = False,
                mlflow: bool = True, dataset_id: str | None = None, spark_profile: str = "local", spark=None,
                types: str | None = None, dp_types: float | None = None, privacy_unit: str | None = None,
                max_rows_per_unit: int | None = None) -> dict:
    """Draft a schema for ``input`` and write it to ``output`` (a .yaml file).

    Without ``dp_epsilon`` / ``dp_types`` only the declared names and types are read (no data row).
    ``types`` (a CSV only): a Spark DDL string (``"age INT, joined DATE"``, or ``"@FILE"`` holding
    one) declaring some or all of the CSV's columns — they draft as a Parquet column of that type
    would, the rest stay text (``type: TODO``); with a DP pre-pass their values are read through
    it (``try_cast``: what does not parse is null). With ``dp_epsilon`` (``--dp-bounds``) a DP
    pre-pass (:mod:`spark_synth.prepass`) at (``dp_epsilon``, ``dp_delta``) fills in types, bounds
    and categories; with ``dp_types`` (``--dp-types``) one at (``dp_types``, ``dp_delta``) decides
    only the types of a CSV's undeclared (text) columns. Bounds to check by hand are named in
    ``warnings`` (also comments in the file and warning records on stderr); a pre-pass's cost is
    recorded in the file and, with MLflow on, charged to the table's ledger: reserved before any row
    is read, a charge once noise is drawn (it then counts even if the file is never written).
    ``privacy_unit`` (``--privacy-unit``) leaves that column out of the schema; with a DP pre-pass it
    needs ``max_rows_per_unit`` and the pre-pass runs under the unit (at most K rows of each unit
    read, noise for one unit of K rows), so fits under the same unit may use the drafted schema.
    """
    from .io import read_input
    from .session import get_spark

    started = time.perf_counter()
    target = check_schema_output(output, overwrite)
    flag = "--dp-types" if dp_types is not None else "--dp-bounds"
    if dp_types is not None and dp_epsilon is not None:
        raise ParameterError("--dp-types", "given without --dp-bounds: --dp-bounds decides a CSV column's type in its "
                             "own pass (a fifth of the column's share), then its bounds or categories — pass one of them",
                             dp_types)
    epsilon = dp_types if dp_types is not None else dp_epsilon
    if epsilon is None and dp_delta is not None:
        raise ParameterError("--dp-delta", "given together with --dp-bounds or --dp-types EPSILON", dp_delta)
    if epsilon is not None:  # both checked before any read
        if isinstance(epsilon, bool) or not isinstance(epsilon, (int, float)) or not 0 < epsilon < float("inf"):
            raise ParameterError(flag, "a finite epsilon > 0 for the DP pre-pass", epsilon)
        if dp_delta is not None and (isinstance(dp_delta, bool) or not isinstance(dp_delta, (int, float))
                                     or not 0 < dp_delta < 1):
            raise ParameterError("--dp-delta", "a number in the open interval (0, 1), e.g. 1e-9", dp_delta)
    unit = _unit(privacy_unit, max_rows_per_unit, epsilon is not None)
    ddl = _ddl_text(types) if types is not None else None  # an @FILE is read before Spark starts
    spark = spark or get_spark(spark_profile)
    df = read_input(spark, input)
    from_csv = _is_csv(spark, df, input)
    ddl_columns = None
    if ddl is not None:
        if not from_csv:
            raise ParameterError("--types", "used with a CSV input only (a Parquet/Delta/catalog table declares its own "
                                 "storage types, which schema init reads; drop --types)", input)
        df, declared, ddl_columns = _typed(df, ddl)
    else:
        declared = declared_columns(df.schema, from_csv)
        if from_csv and epsilon is None:
            _LOG.info("schema init: a CSV declares no types, so its columns draft as 'type: TODO'; declare them with "
                      "--types \"name TYPE, ...\" (a Spark DDL, public), or let --dp-types EPSILON decide them (a DP "
                      "pass, charged)")
    if privacy_unit is not None:
        if privacy_unit not in df.columns:
            raise ParameterError("--privacy-unit", f"a column of the input {list(df.columns)}", privacy_unit)
        declared = [c for c in declared if c.name != privacy_unit]  # a person's id is not modelled
    picked = pick_columns(declared, columns, exclude)
    if ddl_columns is not None:
        ddl_columns = [c.name for c in picked if c.name in set(ddl_columns)]
    drafted = [draft_column(c) for c in picked]
    notes = {c.name: _declared_note(c, from_csv, ddl_columns) for c in picked}
    prepass, ledger, warnings = None, None, {}
    if epsilon is not None:
        from .io.locations import dataset_key
        from .prepass import DEFAULT_DELTA, plan_prepass, run_prepass

        dataset = dataset_key(dataset_id, input)
        plan = plan_prepass(picked, epsilon, DEFAULT_DELTA if dp_delta is None else dp_delta,
                            types_only=dp_types is not None, unit=unit)
        with _charge(dataset if mlflow else None, plan) as charge:  # reserved before any row is read
            import secrets

            from .measure.bounding import bound_contributions
            from .measure.profile import profile_columns

            read = bound_contributions(df, unit, secrets.randbits(63))  # K rows per unit (all rows without a unit)

            def profiles(requests, grid):
                answers = profile_columns(read, requests, grid)
                if charge is not None:
                    charge.bind()  # noise is drawn from here on: the charge counts whatever happens next
                return answers

            result = run_prepass(profiles, plan)
            if charge is not None:
                from .track.spending import charged

                charge.settle(rho=result.cost.rho, epsilon=result.cost.epsilon)
                ledger = charged(charge)
        drafted = [result.columns.get(c["name"], c) for c in drafted]
        notes, warnings = {**notes, **result.notes}, result.warnings
        prepass = {**result.cost.to_dict(), "input": str(input), "dataset_id": dataset, "method": plan.flag,
                   "epsilon_given": epsilon, "columns_read": [p.column.name for p in plan.columns],
                   "ledger": charge is not None}
    text = render_yaml(drafted, source=str(input), notes=notes, prepass=prepass, warnings=warnings,
                       ddl_columns=ddl_columns)
    _check_roundtrip(text, drafted)
    write_atomically(target, text)
    todo = [c["name"] for c in drafted if _has_todo(c)]
    flat = [line for name in warnings for line in warnings[name]]
    for line in flat:  # DP outputs (post-processing of the pre-pass's noise): fine to show
        _LOG.warning(line)
    summary = {"command": "schema init", "input": str(input), "output": str(target.resolve()), "columns": len(drafted),
               "todo": todo, "dp_prepass": prepass, "ledger": ledger, "warnings": flat,
               "seconds": round(time.perf_counter() - started, 3)}
    if ddl_columns is not None:
        summary["types_from_ddl"] = ddl_columns
    return summary


def _unit(column: str | None, max_rows: int | None, dp: bool):
    """The pre-pass's privacy unit: ``--privacy-unit`` alone only leaves its column out (nothing is
    read without a DP pre-pass); with a pre-pass it needs ``--max-rows-per-unit``."""
    from .privacy.unit import ROW, PrivacyUnit

    if column is not None and not dp:
        if max_rows is not None:
            PrivacyUnit.of(column, max_rows)  # validates K
        return ROW
    return PrivacyUnit.of(column, max_rows)


def _ddl_text(types: str) -> str:
    """``--types``: a DDL string, or ``@FILE`` naming a UTF-8 file that holds one."""
    if not isinstance(types, str) or not types.strip():
        raise ParameterError("--types", "a Spark DDL string of column names and types, e.g. \"age INT, joined DATE\", "
                             "or @FILE", types)
    if not types.startswith("@"):
        return types
    path = Path(types[1:])
    if not path.is_file():
        raise ParameterError("--types", f"a Spark DDL string, or @FILE naming a file that holds one; file '{path}' "
                             f"does not exist", types)
    try:
        text = path.read_bytes().decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ParameterError("--types", f"@FILE naming a readable UTF-8 file; '{path}' cannot be read "
                             f"({type(exc).__name__})", types) from None
    text = " ".join(line.split("--", 1)[0] for line in text.splitlines())  # DDL files may hold -- comments
    if not text.strip():
        raise ParameterError("--types", f"@FILE naming a file that holds a Spark DDL string; '{path}' is empty", types)
    return text


def _typed(df, ddl: str):
    """The CSV's columns read through ``ddl`` (the DDL's columns cast to their types with
    ``try_cast``: a value that does not parse is null), their declared columns (the DDL's types;
    the others stay text, undeclared), and the DDL's column names in the CSV's order.

    Refuses — before any value is read — a DDL that does not parse, names a column the CSV's
    header does not have, or declares a type no schema column can hold."""
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    from .measure.answers import _quoted
    from .schema.draft import UNDECLARED, DeclaredColumn
    from .schema.spark_types import parse_ddl

    struct = parse_ddl(ddl, "--types")
    header = list(df.columns)
    by_name = {f.name: f for f in struct.fields}
    unknown = [n for n in by_name if n not in header]
    if unknown:
        folded = {h.lower(): h for h in header}
        hints = [f"'{n}' (the CSV has '{folded[n.lower()]}')" for n in unknown if n.lower() in folded]
        hint = f"; names are matched exactly: {', '.join(hints)}" if hints else ""
        raise ParameterError("--types", f"a DDL of the CSV's columns {header} (names in backticks when they hold spaces "
                             f"or dots){hint}", f"{unknown} not in the CSV's header")
    declared = [DeclaredColumn(h, by_name[h].dataType.simpleString() if h in by_name else UNDECLARED,
                               bool(by_name[h].nullable) if h in by_name else True) for h in header]
    unsupported = [f"{c.name} {c.spark_type}" for c in declared if c.name in by_name and c.kind is None]
    if unsupported:
        raise ParameterError("--types", "types a schema column can hold: integer types, float/double/decimal, "
                             "string/varchar/char, boolean, date, timestamp, timestamp_ntz", unsupported)
    text_types = (T.StringType, T.VarcharType, T.CharType) if hasattr(T, "VarcharType") else (T.StringType,)
    read = []
    for h in header:
        column = F.col(_quoted(h))
        if h in by_name and not isinstance(by_name[h].dataType, text_types):
            trimmed = F.trim(column)
            kind = by_name[h].dataType
            column = trimmed.try_cast(kind) if hasattr(trimmed, "try_cast") else trimmed.cast(kind)
        read.append(column.alias(h))
    return df.select(*read), declared, [h for h in header if h in by_name]


def _declared_note(column, from_csv: bool, ddl_columns: list[str] | None) -> str:
    if ddl_columns is not None and column.name in ddl_columns:
        return f"declared {column.spark_type} (--types)"
    if from_csv:
        return "declared as CSV text (type not declared)"
    return f"declared {column.spark_type}"


def check_schema_output(output: str, overwrite: bool) -> Path:
    """A writable ``.yaml``/``.yml`` path in an existing folder, not already there unless ``overwrite``."""
    path = Path(output)
    if path.suffix.lower() not in (".yaml", ".yml"):
        raise ParameterError("--output", "a .yaml or .yml file path (the schema is written as commented YAML)", output)
    if path.is_dir():
        raise OutputError(f"output '{output}' is a folder; pass a .yaml file path")
    if path.exists() and not overwrite:
        raise OutputError(f"output '{output}' exists already; pass --overwrite to replace it, or choose a new path")
    if not path.parent.is_dir():
        raise OutputError(f"output '{output}': folder '{path.parent}' does not exist; create it first")
    return path


def write_atomically(path: Path, text: str) -> None:
    """Write ``text`` to a hidden temporary file beside ``path``, then rename it into place."""
    handle, temp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write(text)
        os.replace(temp, path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise


def _is_csv(spark, df, source: str) -> bool:
    """Whether ``source`` was read as CSV (its declared types are then all text)."""
    from .io.locations import format_from_extension

    if format_from_extension(source) == "csv":
        return True
    files = df.inputFiles() if hasattr(df, "inputFiles") else []
    return bool(files) and all(".csv" in Path(f).name.lower() for f in files)


def _has_todo(column: dict) -> bool:
    from .schema.readers import TODO

    return any(v == TODO or (isinstance(v, list) and TODO in v) for v in column.values())


def _check_roundtrip(text: str, drafted: list[dict]) -> None:
    """The written text parses back to exactly the drafted columns (a rendering bug never ships)."""
    import yaml

    from .errors import InternalError

    if yaml.safe_load(text).get("columns") != drafted:
        raise InternalError("the drafted schema does not read back as drafted")


@contextmanager
def _charge(dataset: str | None, plan):
    """Reserve the pre-pass's planned cost (keyed by its id) in the table's ledger — refused past the
    cap before any row is read — or nothing (``None``) with MLflow off."""
    if dataset is None:
        yield None
        return
    from .track import BudgetLedger, use_store
    from .track.ledger import SCHEMA

    use_store()
    ledger = BudgetLedger(dataset)
    cost = plan.cost
    unit = cost.unit
    ledger.check_room(cost.rho, "the schema DP pre-pass", delta_approx=cost.delta_approx, unit=unit.ledger_key,
                      rows_per_unit=unit.max_rows)
    with ledger.reserve(kind=SCHEMA, fit_run_id="", fit_id=cost.id, rho=cost.rho, epsilon=cost.epsilon,
                        delta=cost.delta_conversion, delta_approx=cost.delta_approx, unit=unit.ledger_key,
                        rows_per_unit=unit.max_rows) as charge:
        yield charge
