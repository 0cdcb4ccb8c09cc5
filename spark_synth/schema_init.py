"""``spark-synth schema init``: draft a schema file from a table's declared types (optionally with a
DP pre-pass for bounds and categories), written atomically. Returns the one-line JSON summary."""

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
                mlflow: bool = True, dataset_id: str | None = None, spark_profile: str = "local", spark=None) -> dict:
    """Draft a schema for ``input`` and write it to ``output`` (a .yaml file).

    Without ``dp_epsilon`` only the declared names and types are read (no data row). With it, a DP
    pre-pass (:mod:`spark_synth.prepass`) at (``dp_epsilon``, ``dp_delta``) fills in types, bounds and
    categories; bounds to check by hand are named in ``warnings`` (also comments in the file and
    warning records on stderr); its cost is recorded in the file and, with MLflow on, charged to the table's ledger:
    reserved before any row is read, a charge once noise is drawn (it then counts even if the file
    is never written).
    """
    from .io import read_input
    from .session import get_spark

    started = time.perf_counter()
    target = check_schema_output(output, overwrite)
    if dp_epsilon is None and dp_delta is not None:
        raise ParameterError("--dp-delta", "given together with --dp-bounds EPSILON", dp_delta)
    if dp_epsilon is not None:  # both checked before any read
        if isinstance(dp_epsilon, bool) or not isinstance(dp_epsilon, (int, float)) or not 0 < dp_epsilon < float("inf"):
            raise ParameterError("--dp-bounds", "a finite epsilon > 0 for the DP pre-pass", dp_epsilon)
        if dp_delta is not None and (isinstance(dp_delta, bool) or not isinstance(dp_delta, (int, float))
                                     or not 0 < dp_delta < 1):
            raise ParameterError("--dp-delta", "a number in the open interval (0, 1), e.g. 1e-9", dp_delta)
    spark = spark or get_spark(spark_profile)
    df = read_input(spark, input)
    from_csv = _is_csv(spark, df, input)
    picked = pick_columns(declared_columns(df.schema, from_csv), columns, exclude)
    drafted = [draft_column(c) for c in picked]
    notes = {c.name: f"declared {'as CSV text (type not declared)' if from_csv else c.spark_type}" for c in picked}
    prepass, ledger, warnings = None, None, {}
    if dp_epsilon is not None:
        from .commands import dataset_key
        from .prepass import DEFAULT_DELTA, plan_prepass, run_prepass

        dataset = dataset_key(dataset_id, input)
        plan = plan_prepass(picked, dp_epsilon, DEFAULT_DELTA if dp_delta is None else dp_delta)
        with _charge(dataset if mlflow else None, plan) as charge:  # reserved before any row is read
            from .measure.profile import profile_columns

            def profiles(requests, grid):
                answers = profile_columns(df, requests, grid)
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
        prepass = {**result.cost.to_dict(), "input": str(input), "dataset_id": dataset}
    text = render_yaml(drafted, source=str(input), notes=notes, prepass=prepass, warnings=warnings)
    _check_roundtrip(text, drafted)
    write_atomically(target, text)
    todo = [c["name"] for c in drafted if _has_todo(c)]
    flat = [line for name in warnings for line in warnings[name]]
    for line in flat:  # DP outputs (post-processing of the pre-pass's noise): fine to show
        _LOG.warning(line)
    return {"command": "schema init", "input": str(input), "output": str(target.resolve()), "columns": len(drafted),
            "todo": todo, "dp_prepass": prepass, "ledger": ledger, "warnings": flat,
            "seconds": round(time.perf_counter() - started, 3)}


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
    ledger.check_room(cost.rho, "the schema DP pre-pass", delta_approx=cost.delta_approx)
    with ledger.reserve(kind=SCHEMA, fit_run_id="", fit_id=cost.id, rho=cost.rho, epsilon=cost.epsilon,
                        delta=cost.delta_conversion, delta_approx=cost.delta_approx) as charge:
        yield charge
