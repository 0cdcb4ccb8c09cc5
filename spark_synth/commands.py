"""The commands behind the CLI and the jobs: ``run`` (read → fit → sample → write → MLflow), ``fit``
(fit and save) and ``sample`` (load and write). Each returns the one-line JSON summary as a dict.
"""

from __future__ import annotations

import json
import time
from contextlib import contextmanager
from pathlib import Path

from ._version import __version__
from .config import RunConfig, check_output_apart, check_rows, check_seed
from .errors import ParameterError
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
    if evaluate is not None:
        from .evaluate.command import check_request

        evaluate = check_request(evaluate, schema, config.output, config.overwrite)
    synth = Synthesizer(config.engine, epsilon=config.epsilon, delta=config.delta, out_of_domain=config.out_of_domain,
                        engine_options=config.engine_options)  # before Spark starts: a bad engine fails fast
    spark = spark or get_spark(config.spark_profile)
    location = check_output(spark, config.output, config.overwrite)
    dataset = dataset_key(config.dataset_id, config.input)
    params = _run_params(config, synth, schema, dataset)
    with _tracking(config.mlflow, f"run-{config.engine}", dataset) as tracker:
        tracker.check_room(synth)
        if evaluate is None:
            _fit_from_input(synth, spark, config.input, schema, tracker.dataset)
        else:  # fair protocol: the synthesizer only ever sees the train part
            from .evaluate import train_holdout_split
            from .io import read_input

            train, holdout = train_holdout_split(read_input(spark, config.input), evaluate["holdout_fraction"], evaluate["seed"])
            _fit(synth, train, schema, tracker.dataset)
            params["fit_on"] = "train part (evaluate)"
        synth.mlflow_run_id_ = tracker.run_id  # recorded on the output (None without MLflow)
        # the fit is charged already (and stays charged): logging and writing cannot undo it
        warnings = synth.check_columns()  # an output that would hide a failure is refused before anything is logged
        tracker.log_fit(params, synth.privacy_report_, synth.timings_, synth.model_.fit_summary(), synth.model_.loss_curves())
        tracker.log_columns(synth.column_shares_, warnings)
        tracker.log_model(synth, dataset)  # the pyfunc model `spark-synth release` registers
        write_started = time.perf_counter()
        written = synth.write_to(location, config.rows, config.seed, config.overwrite, spark)
        timings = {"sample_and_write": time.perf_counter() - write_started, "total": time.perf_counter() - started}
        tracker.log_output(written, config.rows, synth.last_seed_, timings, synth.last_join_)
        evaluation = None
        if evaluate is not None:
            from .evaluate.command import evaluate_after_run

            evaluation = evaluate_after_run(spark, written, train, holdout, schema, synth.privacy_report_, evaluate,
                                            fit_run_id=tracker.run_id)
    report = synth.privacy_report_
    extra = {"evaluation": evaluation} if evaluation is not None else {}
    return {
        "engine": config.engine,
        "epsilon": config.epsilon,
        "delta": config.delta,
        "epsilon_spent": report.epsilon_spent,
        "rho_spent": report.rho_spent,
        "dp_guarantee": report.dp_guarantee,
        **_schema_delta(report),
        **_not_covered(report),
        "fit_id": report.fit_id,
        "rows": config.rows,
        "output": written,
        "seed": synth.last_seed_,
        "seconds": round(timings["total"], 3),
        # one entry per scan of the table in measure_pass_seconds; timings are NOT covered (README, "Guarantee")
        "timings": {**{k: round(v, 3) for k, v in {**synth.timings_, **timings}.items()},
                    "measure_pass_seconds": [round(s, 3) for s in synth.measure_pass_seconds_]},
        "measure_passes": synth.measure_passes_,
        "mlflow_run_id": tracker.run_id,
        "dataset_id": dataset,
        "ledger": synth.ledger_,
        **_columns(synth, warnings),
        **_join(synth),
        **extra,
    }


def fit_and_save(*, input: str, schema: str, engine: str, epsilon: float, delta: float, model: str,
                 out_of_domain: str = "clip", mlflow: bool = True, spark_profile: str = "local", spark=None,
                 engine_options: dict | None = None, dataset_id: str | None = None) -> dict:
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
    synth = Synthesizer(engine, epsilon=epsilon, delta=delta, out_of_domain=out_of_domain, engine_options=engine_options)
    dataset = dataset_key(dataset_id, input)
    spark = spark or get_spark(spark_profile)
    params = {**_fit_params(synth, input, schema, parsed, dataset), "model": model}
    with _tracking(mlflow, f"fit-{engine}", dataset) as tracker:
        tracker.check_room(synth)
        _fit_from_input(synth, spark, input, parsed, tracker.dataset)
        synth.mlflow_run_id_ = tracker.run_id  # saved with the model: `sample` records it on its outputs
        warnings = synth.check_columns()  # a model whose output would hide a failure is not saved
        tracker.log_fit(params, synth.privacy_report_, synth.timings_, synth.model_.fit_summary(), synth.model_.loss_curves())
        tracker.log_columns(synth.column_shares_, warnings)
        saved = synth.save(model)
        tracker.log_model_dir(saved)
        tracker.log_model(synth, dataset)  # the pyfunc model `spark-synth release` registers
    report = synth.privacy_report_
    return {"engine": engine, "epsilon": epsilon, "delta": delta, "epsilon_spent": report.epsilon_spent,
            "rho_spent": report.rho_spent, "dp_guarantee": report.dp_guarantee, **_schema_delta(report), **_not_covered(report),
            "fit_id": report.fit_id, "measure_passes": synth.measure_passes_, "model": str(saved.resolve()),
            "seconds": round(time.perf_counter() - started, 3), "mlflow_run_id": tracker.run_id, "dataset_id": dataset,
            "ledger": synth.ledger_, **_columns(synth, warnings)}


def load_and_sample(*, model: str, rows: int, output: str, seed: int | None = None, overwrite: bool = False,
                    spark_profile: str = "local", spark=None) -> dict:
    """Load a synthesizer and write ``rows`` rows (the CLI's ``sample``; spends no budget).

    ``model`` is a directory saved by ``fit``, or an MLflow model URI (``models:/NAME/VERSION``,
    ``models:/NAME@ALIAS``, ``runs:/RUN_ID/model``; read from spark-synth's MLflow store): then the
    output also records that model and the registered version it resolved to, as
    :func:`spark_synth.track.write_model_sample` does."""
    from .session import get_spark
    from .track.model_source import is_model_uri

    started = time.perf_counter()
    check_rows(rows)
    check_seed(seed)
    source = None
    if is_model_uri(model):
        from .io import check_output
        from .track import use_store
        from .track.model_source import load_model_synthesizer

        spark = spark or get_spark(spark_profile)
        check_output(spark, output, overwrite)  # before loading the model
        use_store()
        synth, source = load_model_synthesizer(model)
    else:
        check_output_apart(str(model), str(output), source_name="model")
        synth = Synthesizer.load(model)
    written = synth.write(rows, output, seed=seed, overwrite=overwrite, spark=spark or get_spark(spark_profile),
                          source_model=source)
    origin = {} if source is None else {"model_uri": source.uri, "registered_model": source.registered_model,
                                        "model_version": source.version, "fit_id": synth.privacy_report_.fit_id}
    report = synth.privacy_report_  # sampling spends nothing; the rows carry the fit's guarantee, or its lack
    return {"engine": synth.engine, "rows": rows, "output": written, "seed": synth.last_seed_,
            "epsilon_spent": 0.0, "dp_guarantee": report.dp_guarantee, **_not_covered(report), **origin,
            "seconds": round(time.perf_counter() - started, 3), **_columns(synth, synth.check_columns()), **_join(synth)}


def _columns(synth: Synthesizer, warnings: list[str]) -> dict:
    """The summary's ``null_share`` (each nullable column's share of nulls in what the model writes;
    DP) and its ``warnings`` when there are any (:meth:`Synthesizer.check_columns`)."""
    return {"null_share": synth.column_shares_.null, **({"warnings": warnings} if warnings else {})}


def _join(synth: Synthesizer) -> dict:
    """``{"join": ...}`` for a model that joins pieces (dgm): its rule and the rows filled by random joins."""
    return {"join": synth.last_join_} if synth.last_join_ is not None else {}



def dataset_key(dataset_id: str | None, source: str) -> str:
    """The name of the ledger a fit is charged to: the declared dataset id, else the input's ``source_key``."""
    from .io.locations import source_key

    if dataset_id is not None and (not isinstance(dataset_id, str) or not dataset_id.strip()):
        raise ParameterError("dataset_id (--dataset-id)", "a non-empty dataset id naming the table's budget ledger", dataset_id)
    return source_key(dataset_id if dataset_id is not None else source)


def _fit_from_input(synth: Synthesizer, spark, source: str, schema: Schema, dataset: str | None) -> None:
    from .io import read_input

    _fit(synth, read_input(spark, source), schema, dataset)


def _fit(synth: Synthesizer, df, schema: Schema, dataset: str | None) -> None:
    """Fit charged to ledger ``dataset``; ``None`` is ``--no-mlflow``, an explicit opt-out (no warning)."""
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
            self._ledger().check_room(rho, f"a fit requesting epsilon={synth.epsilon:g} at delta={synth.delta:g}")

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

    def log_output(self, location: str, rows: int, seed: int, timings: dict, join: dict | None = None) -> None:
        if self.run_id:
            from .track import log_output

            log_output(location, rows, seed, timings, join)

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


def _not_covered(report) -> dict:
    """The summary's note of uses of real rows outside the DP guarantee (opt-ins), when there are any."""
    return {"not_covered_by_dp": [entry.name for entry in report.not_covered]} if report.not_covered else {}
