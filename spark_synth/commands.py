"""The commands behind the CLI and the jobs: ``run`` (read → fit → sample → write → MLflow), ``fit``
(fit and save) and ``sample`` (load and write). Each returns the one-line JSON summary as a dict.

Their checks before Spark starts are in :mod:`spark_synth.commands_preflight`, their MLflow tracking in
:mod:`spark_synth.commands_tracking`, the summary's report fields in :mod:`spark_synth.commands_summary`.
"""

from __future__ import annotations

import time
from pathlib import Path

from .commands_preflight import _sample_shape, check_before_spark, output_kind  # noqa: F401 (output_kind: re-exported)
from .commands_summary import _columns, _not_covered, _relation, _sampling, _schema_delta
from .commands_tracking import _fit_params, _run_params, _tracking
from .config import RunConfig, check_output_apart, check_rows, check_seed
from .engines.choice import resolve_engine
from .errors import ParameterError
from .io.locations import dataset_key
from .logs import layer
from .pipeline import MODEL_FILE, Synthesizer
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
    engine, engine_options, choice = resolve_engine(config.engine, schema, config.engine_options, config.epsilon)
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

            train, holdout = train_holdout_split(read_input(spark, config.input), evaluate.holdout_fraction, evaluate.seed,
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
    engine, engine_options, choice = resolve_engine(engine, parsed, engine_options, epsilon)
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
