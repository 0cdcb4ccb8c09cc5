"""The commands behind the CLI and the jobs: ``run`` (read → fit → sample → write → MLflow), ``fit``
(fit and save) and ``sample`` (load and write). Each returns the one-line JSON summary as a dict.
"""

from __future__ import annotations

import json
import os
import re
import sys
import time
from contextlib import contextmanager
from pathlib import Path

from ._version import __version__
from .config import RunConfig, check_output_apart, check_rows, check_seed
from .engines.choice import resolve_engine
from .errors import ParameterError
from .io.locations import dataset_key
from .logs import layer
from .pipeline import MODEL_FILE, Synthesizer
from .privacy import PrivacyBudget, PrivacyReport
from .schema import Schema, load_schema


def run(config: RunConfig, spark=None, evaluate: dict | None = None) -> dict:
    """Read → fit → charge → sample → write (→ MLflow). Returns the one-line summary as a dict.

    With MLflow on, the fit is charged to its dataset's budget ledger (``config.dataset_id``, default
    the input): reserved before a row is read — past the dataset's cap it raises
    :class:`~spark_synth.errors.BudgetExhausted` and writes nothing — and a charge from the moment
    noise is drawn, so an interrupted write or log leaves it counted (``Synthesizer.fit``'s
    ``dataset_id``). With MLflow off nothing is recorded.
    ``evaluate`` (options ``out``, ``target``, ``holdout_fraction``, ``seed``; ``{}`` for defaults) splits
    the input deterministically, fits on the train part only, and evaluates the written output against
    the train and hold-out parts (NOT private: see :mod:`spark_synth.evaluate`), logged in its own
    MLflow run nested under the fit's.
    """
    from .io import check_output
    from .session import get_spark

    started = time.perf_counter()
    schema = load_schema(config.schema)
    shape = _sample_shape(schema, config.where, config.rows_per, evaluate)  # a bad condition fails before the fit spends anything
    if evaluate is not None:
        from .evaluate.command import check_request

        evaluate = check_request(evaluate, schema, config.output, config.overwrite)
    check_before_spark(spark, config.spark_profile, input=config.input, output=config.output, overwrite=config.overwrite)
    engine, engine_options, choice = resolve_engine(config.engine, len(schema), config.engine_options)
    synth = Synthesizer(engine, epsilon=config.epsilon, delta=config.delta, out_of_domain=config.out_of_domain,
                        engine_options=engine_options, privacy_unit=config.privacy_unit,
                        max_rows_per_unit=config.max_rows_per_unit)  # before Spark starts: a bad engine fails fast
    spark = spark or get_spark(config.spark_profile)
    location = check_output(spark, config.output, config.overwrite)
    dataset = dataset_key(config.dataset_id, config.input)
    params = _run_params(config, synth, schema, dataset)
    with _tracking(config.mlflow, f"run-{engine}", dataset) as tracker:
        tracker.check_room(synth)
        if evaluate is None:
            _fit_from_input(synth, spark, config.input, schema, tracker.dataset, choice)
        else:  # fair protocol: the synthesizer only ever sees the train part
            from .evaluate import train_holdout_split
            from .io import read_input

            train, holdout = train_holdout_split(read_input(spark, config.input), evaluate["holdout_fraction"], evaluate["seed"],
                                                 unit=config.privacy_unit)  # by person under a privacy unit
            _fit(synth, train, schema, tracker.dataset, choice)
            params["fit_on"] = "train part (evaluate)"
            if config.privacy_unit is not None and config.privacy_unit not in schema.names:  # compared on the schema's columns
                train, holdout = train.drop(config.privacy_unit), holdout.drop(config.privacy_unit)
        synth.mlflow_run_id_ = tracker.run_id  # recorded on the output (None without MLflow)
        # the fit is charged already (and stays charged): logging and writing cannot undo it
        warnings = synth.check_columns()  # an output that would hide a failure is refused before anything is logged
        tracker.log_fit(params, synth.privacy_report_, synth.timings_, synth.model_.fit_summary(), synth.model_.loss_curves())
        tracker.log_columns(synth.column_shares_, warnings)
        tracker.log_model(synth, dataset)  # the pyfunc model `spark-synth release` registers
        write_started = time.perf_counter()
        written = synth.write_to(location, config.rows, config.seed, config.overwrite, spark, **shape)
        timings = {"sample_and_write": time.perf_counter() - write_started, "total": time.perf_counter() - started}
        tracker.log_output(written, config.rows, synth.last_seed_, timings, _sampling(synth), synth.last_condition_)
        evaluation = None
        if evaluate is not None:
            from .evaluate.command import evaluate_after_run

            evaluation = evaluate_after_run(spark, written, train, holdout, schema, synth.privacy_report_, evaluate,
                                            fit_run_id=tracker.run_id, table=config.input)
    report = synth.privacy_report_
    extra = {"evaluation": evaluation} if evaluation is not None else {}
    if choice is not None:
        extra["engine_choice"] = choice.as_dict()
    return {
        "engine": engine,
        "epsilon": config.epsilon,
        "delta": config.delta,
        "epsilon_spent": report.epsilon_spent,
        "rho_spent": report.rho_spent,
        "dp_guarantee": report.dp_guarantee,
        **_relation(report),
        **_schema_delta(report),
        **_not_covered(report),
        "fit_id": report.fit_id,
        "rows": config.rows,
        "output": written,
        "output_kind": output_kind(config.output),
        "seed": synth.last_seed_,
        **synth.last_condition_,
        "seconds": round(timings["total"], 3),
        # one entry per scan of the table in measure_pass_seconds; timings are NOT covered (docs/privacy.md, "What is not covered")
        "timings": {**{k: round(v, 3) for k, v in {**synth.timings_, **timings}.items()},
                    "measure_pass_seconds": [round(s, 3) for s in synth.measure_pass_seconds_]},
        "measure_passes": synth.measure_passes_,
        "mlflow_run_id": tracker.run_id,
        "dataset_id": dataset,
        "ledger": synth.ledger_,
        **_columns(synth, warnings),
        **_sampling(synth),
        **extra,
    }


def fit_and_save(*, input: str, schema: str, engine: str, epsilon: float, delta: float, model: str,
                 out_of_domain: str = "clip", mlflow: bool = True, spark_profile: str = "local", spark=None,
                 engine_options=None, dataset_id: str | None = None, privacy_unit: str | None = None,
                 max_rows_per_unit: int | None = None) -> dict:
    """Fit on ``input`` and save the synthesizer to directory ``model`` (the CLI's ``fit``).

    With MLflow on, the fit is charged to the ledger of ``dataset_id`` (default: the input) as it is
    made (see :func:`run`); past the dataset's cap it raises :class:`~spark_synth.errors.BudgetExhausted`.
    """
    from .session import get_spark

    started = time.perf_counter()
    check_output_apart(str(input), str(model), output_flag="--model")
    if (Path(model) / MODEL_FILE).exists():
        raise ParameterError("model", "a directory without a saved synthesizer (choose a new path)", model)
    parsed = load_schema(schema)
    check_before_spark(spark, spark_profile, input=input)
    engine, engine_options, choice = resolve_engine(engine, len(parsed), engine_options)
    synth = Synthesizer(engine, epsilon=epsilon, delta=delta, out_of_domain=out_of_domain, engine_options=engine_options,
                        privacy_unit=privacy_unit, max_rows_per_unit=max_rows_per_unit)
    dataset = dataset_key(dataset_id, input)
    spark = spark or get_spark(spark_profile)
    params = {**_fit_params(synth, input, schema, parsed, dataset), "model": model}
    with _tracking(mlflow, f"fit-{engine}", dataset) as tracker:
        tracker.check_room(synth)
        _fit_from_input(synth, spark, input, parsed, tracker.dataset, choice)
        synth.mlflow_run_id_ = tracker.run_id  # saved with the model: `sample` records it on its outputs
        warnings = synth.check_columns()  # a model whose output would hide a failure is not saved
        tracker.log_fit(params, synth.privacy_report_, synth.timings_, synth.model_.fit_summary(), synth.model_.loss_curves())
        tracker.log_columns(synth.column_shares_, warnings)
        saved = synth.save(model)
        tracker.log_model_dir(saved)
        tracker.log_model(synth, dataset)  # the pyfunc model `spark-synth release` registers
    report = synth.privacy_report_
    return {"engine": engine, "epsilon": epsilon, "delta": delta, "epsilon_spent": report.epsilon_spent,
            "rho_spent": report.rho_spent, "dp_guarantee": report.dp_guarantee, **_relation(report), **_schema_delta(report),
            **_not_covered(report),
            "fit_id": report.fit_id, "measure_passes": synth.measure_passes_, "model": str(saved.resolve()),
            "seconds": round(time.perf_counter() - started, 3), "mlflow_run_id": tracker.run_id, "dataset_id": dataset,
            "ledger": synth.ledger_, **_columns(synth, warnings),
            **({"engine_choice": choice.as_dict()} if choice is not None else {})}


def load_and_sample(*, model: str, rows: int, output: str, seed: int | None = None, overwrite: bool = False,
                    spark_profile: str = "local", spark=None, mlflow: bool = True, where: str | None = None,
                    rows_per: str | None = None) -> dict:
    """Load a synthesizer and write ``rows`` rows (the CLI's ``sample``; spends no budget).

    ``model`` is a directory saved by ``fit``, or an MLflow model URI (``models:/NAME/VERSION``,
    ``models:/NAME@ALIAS``, ``runs:/RUN_ID/model``; read from spark-synth's MLflow store): then the
    output also records that model and the registered version it resolved to, as
    :func:`spark_synth.track.write_model_sample` does. Sampling logs nothing to MLflow: ``mlflow=False``
    (``--no-mlflow``) changes nothing for a directory and refuses a model URI."""
    from .session import get_spark
    from .track.model_source import is_model_uri

    started = time.perf_counter()
    check_rows(rows)
    check_seed(seed)
    source = None
    if is_model_uri(model) and not mlflow:
        raise ParameterError("model (--model)", "a directory saved by `spark-synth fit` when MLflow is off "
                                                "(--no-mlflow): a models:/ or runs:/ URI is read from MLflow", model)
    if not is_model_uri(model):
        check_output_apart(str(model), str(output), source_name="model")
    check_before_spark(spark, spark_profile, output=output, overwrite=overwrite)
    if is_model_uri(model):
        from .io import check_output
        from .track import use_store
        from .track.model_source import load_model_synthesizer

        spark = spark or get_spark(spark_profile)
        check_output(spark, output, overwrite)  # before loading the model
        use_store()
        synth, source = load_model_synthesizer(model)
    else:
        synth = Synthesizer.load(model)
    shape = _sample_shape(synth.schema_, where, rows_per)
    written = synth.write(rows, output, seed=seed, overwrite=overwrite, spark=spark or get_spark(spark_profile),
                          source_model=source, **shape)
    origin = {} if source is None else {"model_uri": source.uri, "registered_model": source.registered_model,
                                        "model_version": source.version, "fit_id": synth.privacy_report_.fit_id}
    report = synth.privacy_report_  # sampling spends nothing; the rows carry the fit's guarantee, or its lack
    return {"engine": synth.engine, "rows": rows, "output": written, "output_kind": output_kind(output), "seed": synth.last_seed_,
            **synth.last_condition_,
            "epsilon_spent": 0.0, "dp_guarantee": report.dp_guarantee, **_not_covered(report), **origin,
            "seconds": round(time.perf_counter() - started, 3), **_columns(synth, synth.check_columns()), **_sampling(synth)}


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

    if where is not None and evaluate is not None:
        raise ConditionError("--where and --evaluate: the evaluation compares the output with the whole real table, "
                             "which a conditioned sample does not follow; evaluate a plain sample")
    if rows_per is not None and rows_per not in schema.names:
        raise ConditionError(f"--rows-per: the schema has no column {rows_per!r}; its columns are {', '.join(schema.names)}")
    return {"conditions": None if where is None else parse_condition(where, schema), "rows_per": rows_per}


def _columns(synth: Synthesizer, warnings: list[str]) -> dict:
    """The summary's ``null_share`` (each nullable column's share of nulls in what the model writes;
    DP) and its ``warnings`` when there are any (:meth:`Synthesizer.check_columns`)."""
    return {"null_share": synth.column_shares_.null, **({"warnings": warnings} if warnings else {})}


def _sampling(synth: Synthesizer) -> dict:
    """The model's sampling report under its name (dgm: ``{"join": {acceptance, filled_rows}}``), when it made one."""
    report = synth.last_sampling_
    return {synth.model_.sampling_report_name: report} if report is not None else {}



def _fit_from_input(synth: Synthesizer, spark, source: str, schema: Schema, dataset: str | None, choice=None) -> None:
    from .io import read_input

    _fit(synth, read_input(spark, source), schema, dataset, choice)


def _fit(synth: Synthesizer, df, schema: Schema, dataset: str | None, choice=None) -> None:
    """Fit charged to ledger ``dataset``; ``None`` is ``--no-mlflow``, an explicit opt-out (no warning).
    ``choice``: what ``--engine auto`` chose, said first (after the input was found)."""
    if choice is not None:
        layer("engines").info("engine: auto chose %s (%s)", choice.engine, choice.reason)
    if dataset is not None:
        synth.fit(df, schema, dataset_id=dataset)
        return
    import warnings

    from .errors import UnrecordedSpendWarning

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UnrecordedSpendWarning)
        synth.fit(df, schema)


class _Tracker:
    """MLflow logging and ledger charging when enabled; does nothing when the user passed ``--no-mlflow``."""

    def __init__(self, run=None, dataset: str | None = None):
        self.run_id = run.info.run_id if run is not None else None
        self.dataset = dataset  # the ledger the fit is charged to (None without MLflow)

    def _ledger(self):
        from .track import BudgetLedger

        return BudgetLedger(self.dataset)

    def check_room(self, synth: Synthesizer) -> None:
        """Refuse before reading any row when the requested budget cannot fit under the dataset's cap."""
        if self.run_id:
            rho = PrivacyBudget(synth.epsilon, synth.delta).rho
            self._ledger().check_room(rho, f"a fit requesting epsilon={synth.epsilon:g} at delta={synth.delta:g}",
                                      unit=synth.unit.ledger_key, rows_per_unit=synth.unit.max_rows)

    def log_fit(self, params: dict, report: PrivacyReport, timings: dict, summary: dict, curves: dict) -> None:
        if self.run_id:
            from .track import log_fit

            log_fit(params, report, timings, curves)
            _log_fit_summary(summary)

    def log_columns(self, shares, warnings: list[str]) -> None:
        """``column_shares.json`` (null and substitute shares of what the model writes; DP) and the warnings."""
        if self.run_id:
            import mlflow

            mlflow.log_dict({**shares.to_dict(), "warnings": warnings}, "column_shares.json")
            if warnings:
                mlflow.set_tag("spark_synth.warnings", str(len(warnings)))

    def log_output(self, location: str, rows: int, seed: int, timings: dict, sampling: dict | None = None,
                   condition: dict | None = None) -> None:
        if self.run_id:
            from .track import log_output

            log_output(location, rows, seed, timings, sampling, condition)

    def log_model_dir(self, path: Path) -> None:
        if self.run_id:
            import mlflow

            mlflow.log_artifacts(str(path), artifact_path="synthesizer")

    def log_model(self, synth: Synthesizer, source: str) -> None:
        if self.run_id:
            from .track.pyfunc import log_synthesizer_model

            log_synthesizer_model(synth, source=source)


def _log_fit_summary(summary: dict) -> None:
    """The engine's public fit facts: numbers as ``fit.*`` metrics (lists of numbers as a metric's
    history, e.g. the per-round budget), everything in ``fit_summary.json``."""
    if not summary:
        return
    import mlflow
    from mlflow.entities import Metric

    def number(v) -> bool:
        return isinstance(v, (int, float)) and not isinstance(v, bool)

    stamp, metrics = int(time.time() * 1000), []
    for key, value in summary.items():
        if number(value):
            metrics.append(Metric(f"fit.{key}", float(value), stamp, 0))
        elif isinstance(value, list) and value and all(number(v) for v in value):
            metrics += [Metric(f"fit.{key}", float(v), stamp, step) for step, v in enumerate(value)]
    client, run_id = mlflow.tracking.MlflowClient(), mlflow.active_run().info.run_id
    for start in range(0, len(metrics), 1000):  # MLflow's batch limit
        client.log_batch(run_id, metrics=metrics[start:start + 1000])
    mlflow.log_dict(summary, "fit_summary.json")


@contextmanager
def _tracking(enabled: bool, run_name: str, dataset: str | None = None):
    if not enabled:
        yield _Tracker()
        return
    from .session import store_home
    from .track import tracked_run

    with tracked_run(store_home(), run_name=run_name) as active:
        yield _Tracker(active, dataset)


def _fit_params(synth: Synthesizer, source: str, schema_path: str, schema: Schema, dataset: str) -> dict:
    """MLflow parameters of a fit (shared by ``run`` and ``fit``)."""
    return {
        "engine": synth.engine,
        "epsilon": synth.epsilon,
        "delta": synth.delta,
        "input": source,
        "dataset_id": dataset,
        "schema": schema_path,
        "out_of_domain": synth.out_of_domain,
        "privacy_unit": synth.unit.column,
        "max_rows_per_unit": synth.unit.max_rows,
        "n_columns": len(schema),
        "engine_config": json.dumps(synth._engine.config(), sort_keys=True),
        "spark_synth_version": __version__,
    }


def _run_params(config: RunConfig, synth: Synthesizer, schema: Schema, dataset: str) -> dict:
    return {**_fit_params(synth, config.input, config.schema, schema, dataset),
            "rows": config.rows, "seed": config.seed, "output": config.output}


def _schema_delta(report) -> dict:
    """The summary's note of a DP-drafted schema: its δ_approx is added to the fit's δ."""
    if not report.delta_approx:
        return {}
    return {"delta_approx": report.delta_approx, "delta_total": report.delta + report.delta_approx,
            "schema_prepass_id": report.schema_prepass.id if report.schema_prepass is not None else None}


def _relation(report) -> dict:
    """The summary's statement of what the guarantee protects: one row, or one unit of K rows."""
    unit = report.privacy_unit
    return {"neighbouring_relation": report.neighbouring_relation,
            **({} if unit.is_row else {"privacy_unit": unit.column, "max_rows_per_unit": unit.max_rows})}


def _not_covered(report) -> dict:
    """The summary's note of uses of real rows outside the DP guarantee (opt-ins), when there are any."""
    return {"not_covered_by_dp": [entry.name for entry in report.not_covered]} if report.not_covered else {}
