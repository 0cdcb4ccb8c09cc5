"""MLflow tracking: one run per fit/run, with parameters, budget, computation report and timings.

The store is ``$MLFLOW_TRACKING_URI`` when set; on Databricks (``$DATABRICKS_RUNTIME_VERSION`` set)
it is the workspace's own tracking server and Unity Catalog registry; otherwise a local SQLite
database, ``mlflow.db`` in :func:`~spark_synth.session.store_home` (``$SPARK_SYNTH_HOME``, else
``~/.spark-synth``: per user, not per working directory; artifacts beside it). The SQLite database is
also the model registry there, so ``spark-synth release`` and ``models:/NAME/VERSION`` work offline,
and it holds every table's budget ledger (:mod:`spark_synth.track.ledger`).
"""

from __future__ import annotations

import math

import os
from contextlib import contextmanager
from pathlib import Path

from ..errors import UserInputError
from ..privacy import PrivacyReport

EXPERIMENT = "spark-synth"
#: Run tags: the fit a run holds (one per run), and its logged model's URI.
FIT_ID_TAG = "spark_synth.fit_id"
#: "true" when the whole fit is covered by the DP guarantee, "false" after an opt-in that is not.
DP_TAG = "spark_synth.dp"
#: What was not covered (the report's not_covered entries), on runs where DP_TAG is "false".
NOT_COVERED_TAG = "spark_synth.not_covered_by_dp"
MODEL_URI_TAG = "spark_synth.model_uri"
#: Tags of an evaluation run: it is not private, and which fit run it evaluates.
EVALUATION_TAG = "spark_synth.evaluation"
NOT_PRIVATE = "not private: reads real rows"
EVALUATED_RUN_TAG = "spark_synth.fit_run_id"


def on_databricks() -> bool:
    """True inside a Databricks runtime (notebook, job or cluster-mode spark-submit)."""
    return bool(os.environ.get("DATABRICKS_RUNTIME_VERSION"))


def default_tracking_uri(home: Path) -> str:
    if os.environ.get("MLFLOW_TRACKING_URI"):
        return os.environ["MLFLOW_TRACKING_URI"]
    if on_databricks():
        return "databricks"
    return f"sqlite:///{home / 'mlflow.db'}"


def check_sql_store(uri: str) -> None:
    """Fail with the fix when the SQL store ``uri`` needs what ``mlflow-skinny`` lacks (SQLAlchemy)."""
    import importlib.util

    if importlib.util.find_spec("sqlalchemy") is None:
        raise UserInputError(f"MLflow store {uri} needs the full mlflow package (mlflow-skinny has no SQL store): "
                             "install spark-synth[local] or mlflow, point $MLFLOW_TRACKING_URI at your tracking "
                             "server (or a file: store), or pass --no-mlflow")


def use_store(home: Path | None = None) -> str:
    """Point MLflow at spark-synth's store (see the module docstring); returns the tracking URI.

    On Databricks the registry is Unity Catalog (``catalog.schema.model`` names) unless
    ``$MLFLOW_REGISTRY_URI`` says otherwise; elsewhere the registry is the tracking store.
    """
    import mlflow

    if home is None:
        from ..session import store_home

        home = store_home()
    uri = default_tracking_uri(home)
    if uri.startswith("sqlite:"):
        check_sql_store(uri)
        home.mkdir(parents=True, exist_ok=True)
        warn_of_directory_store(home)
    quiet_store_creation()  # a SQL store's first use creates its tables: no INFO lines for that
    mlflow.set_tracking_uri(uri)
    if on_databricks() and not os.environ.get("MLFLOW_REGISTRY_URI"):
        mlflow.set_registry_uri("databricks-uc")
    return uri


#: Loggers that announce, at INFO, each step of creating or migrating a SQL store's tables (MLflow's
#: ``Creating initial MLflow database tables...`` and Alembic's migration steps).
_STORE_CREATION_LOGGERS = ("mlflow.store.db.utils", "alembic")


def quiet_store_creation() -> None:
    """Keep the SQL store's table creation and migrations off the console: their loggers report
    WARNING and above (a level the user set on them is kept)."""
    import logging

    for name in _STORE_CREATION_LOGGERS:
        logger = logging.getLogger(name)
        if logger.level == logging.NOTSET:
            logger.setLevel(logging.WARNING)


_WARNED_STORES: set[Path] = set()


def warn_of_directory_store(home: Path) -> None:
    """Say once (per process) that ``./.spark-synth/mlflow.db`` — the per-directory default store of
    spark-synth before the store moved to ``~/.spark-synth`` — holds ledgers this store does not count."""
    if os.environ.get("SPARK_SYNTH_HOME"):
        return  # chosen explicitly
    old = (Path.cwd() / ".spark-synth").resolve()
    if old == home.resolve() or old in _WARNED_STORES or not (old / "mlflow.db").is_file():
        return
    _WARNED_STORES.add(old)
    from ..logs import layer

    layer("track").warning(
        "WARNING: %s holds an MLflow store of an older spark-synth (the store was per working directory then): its "
        "runs and budget ledgers are NOT counted in this one (%s). Run with SPARK_SYNTH_HOME=%s to use it, or merge "
        "it by hand; `spark-synth budget --source-table T` shows a table's total in the store it runs against",
        old / "mlflow.db", home / "mlflow.db", old)


def ensure_experiment(name: str, home: Path | None = None) -> str:
    """The id of experiment ``name``, created (artifacts under the home dir for SQLite) if absent."""
    import mlflow

    if home is None:
        from ..session import store_home

        home = store_home()
    existing = mlflow.get_experiment_by_name(name)
    if existing is not None:
        return existing.experiment_id
    uri = mlflow.get_tracking_uri()
    artifacts = (home / "mlartifacts").resolve().as_uri() if uri.startswith("sqlite:") else None
    try:
        return mlflow.create_experiment(name, artifact_location=artifacts)
    except Exception:  # created concurrently by another release
        existing = mlflow.get_experiment_by_name(name)
        if existing is None:
            raise
        return existing.experiment_id


@contextmanager
def tracked_run(home: Path, run_name: str, experiment: str = EXPERIMENT):
    """Start an MLflow run (ended FAILED if the body raises); yields the active run."""
    import mlflow

    home.mkdir(parents=True, exist_ok=True)
    use_store(home)
    if on_databricks() and not experiment.startswith("/"):
        # Databricks experiments are workspace paths: keep the notebook's / job's experiment.
        experiment = os.environ.get("MLFLOW_EXPERIMENT_NAME", "")
    if experiment:
        mlflow.set_experiment(experiment_id=ensure_experiment(experiment, home))
    with mlflow.start_run(run_name=run_name) as run:
        yield run


@contextmanager
def mlflow_run(run_name: str = "spark-synth", experiment: str = EXPERIMENT):
    """An MLflow run in spark-synth's store (for notebooks and the Python API).

    Continues the active run if there is one (e.g. a notebook's own ``mlflow.start_run()``);
    otherwise starts one like the CLI does (local SQLite store, or the notebook's experiment on
    Databricks). Log a fitted synthesizer into it with :func:`spark_synth.track.log_synthesizer`.
    """
    import mlflow

    active = mlflow.active_run()
    if active is not None:
        yield active
        return
    from ..session import store_home

    with tracked_run(store_home(), run_name=run_name, experiment=experiment) as run:
        yield run


def held_fit(run_id: str) -> str | None:
    """The fit id MLflow run ``run_id`` holds (``""`` for a model logged without one), or None."""
    import mlflow

    tags = mlflow.MlflowClient().get_run(run_id).data.tags
    if FIT_ID_TAG in tags:
        return tags[FIT_ID_TAG]
    return "" if MODEL_URI_TAG in tags else None


def check_one_fit_per_run(fit_id: str) -> None:
    """Refuse logging fit ``fit_id`` into the active run when it already holds another fit."""
    import mlflow

    run = mlflow.active_run()
    held = held_fit(run.info.run_id) if run is not None else None
    if held is not None and held != fit_id:
        raise UserInputError(
            f"MLflow run {run.info.run_id} already holds fit {held or '(a model without a fit id)'}; one run holds one "
            f"synthesizer (budgets are charged per fit): log fit {fit_id} into a new run (end this one, or "
            "mlflow.start_run(nested=True))"
        )


def dp_tags(report: PrivacyReport) -> dict[str, str]:
    """Whether a fit is covered by the DP guarantee (and, when not, which opt-ins it used), and its
    privacy unit when it has one, as tags."""
    tags = {DP_TAG: "true" if report.dp_guarantee else "false"}
    if report.not_covered:
        tags[NOT_COVERED_TAG] = "; ".join(entry.name for entry in report.not_covered)
    if not report.privacy_unit.is_row:  # the relation is a tag too; these two are for filtering runs
        tags["spark_synth.privacy_unit"] = report.privacy_unit.column
        tags["spark_synth.max_rows_per_unit"] = str(report.privacy_unit.max_rows)
    return tags


def log_fit(params: dict, privacy_report: PrivacyReport, timings: dict, curves: dict | None = None) -> None:
    """Log a fit's parameters, privacy spend, computation report and stage timings (one fit per run),
    and its loss curves (name → values) as step metrics ``fit.curve.NAME``."""
    import mlflow

    check_one_fit_per_run(privacy_report.fit_id)
    mlflow.log_params({k: ("" if v is None else v) for k, v in params.items()})
    mlflow.log_metrics(
        {
            "epsilon_requested": privacy_report.epsilon_requested,
            "epsilon_spent": privacy_report.epsilon_spent,
            "delta": privacy_report.delta,
            "rho_requested": privacy_report.rho_requested,
            "rho_spent": privacy_report.rho_spent,
            "n_releases": len(privacy_report.measurements),
            "n_selections": len(privacy_report.selections),
        }
    )
    mlflow.log_metrics({f"seconds_{stage}": value for stage, value in timings.items()})
    mlflow.set_tags({"spark_synth.neighbouring_relation": privacy_report.neighbouring_relation,
                     FIT_ID_TAG: privacy_report.fit_id, **dp_tags(privacy_report)})
    mlflow.log_dict(privacy_report.to_dict(), "privacy_report.json")
    if curves:
        _log_curves(curves)


def _log_curves(curves: dict) -> None:
    """One batch per 1000 points (MLflow's limit per ``log_batch``); steps 0, 1, 2, … per curve."""
    import time

    import mlflow
    from mlflow.entities import Metric

    run_id = mlflow.active_run().info.run_id
    now = int(time.time() * 1000)
    points = [Metric(f"fit.curve.{name}", float(value), now, step)
              for name, values in curves.items() for step, value in enumerate(values) if math.isfinite(value)]
    client = mlflow.MlflowClient()
    for start in range(0, len(points), 1000):
        client.log_batch(run_id, metrics=points[start:start + 1000])


def log_output(location: str, rows: int, seed: int, timings: dict, sampling: dict | None = None,
               condition: dict | None = None) -> None:
    """The written output: where, how many rows, the seed, stage timings; the numbers of the model's
    sampling report (``{name: report}``, e.g. dgm's ``join`` → metric ``join_filled_rows``); a shaped
    sample's ``where`` and ``rows_per`` (params ``sample_where``, ``sample_rows_per``) and its
    condition's model probability (metric ``condition_probability``)."""
    import mlflow

    mlflow.log_params({"output_location": location, "sample_seed": seed})
    if condition:
        mlflow.log_params({f"sample_{k}": "" if condition.get(k) is None else condition[k] for k in ("where", "rows_per")})
        if condition.get("condition_probability") is not None:
            mlflow.log_metric("condition_probability", condition["condition_probability"])
    mlflow.log_metric("rows_written", rows)
    for name, report in (sampling or {}).items():
        for key, value in report.items():
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                mlflow.log_metric(f"{name}_{key}", value)
    mlflow.log_metrics({f"seconds_{stage}": value for stage, value in timings.items()})


def log_evaluation(metrics: dict[str, float], files: dict[str, str], params: dict | None = None) -> None:
    """Log an evaluation into the active run: numeric metrics (names as given, e.g. ``eval_…``),
    ``metrics.json`` and ``report.html`` as artifacts under ``evaluation/``, and a NOT-private tag.
    The run should be an evaluation run (:func:`evaluation_run`), never the one holding the DP model."""
    import mlflow

    if params:
        mlflow.log_params({f"evaluate_{k}": ("" if v is None else v) for k, v in params.items()})
    if metrics:
        mlflow.log_metrics(metrics)
    for path in files.values():
        mlflow.log_artifact(path, artifact_path="evaluation")
    mlflow.set_tags({EVALUATION_TAG: NOT_PRIVATE})


@contextmanager
def evaluation_child_run(fit_run_id: str, run_name: str = "evaluate (not private)"):
    """A new run for evaluating fit run ``fit_run_id``: nested under it, tagged not private, linked by a tag.

    Evaluation reads real rows, so it never logs into the run that holds the DP model.
    """
    import mlflow

    client = mlflow.MlflowClient()
    parent = client.get_run(fit_run_id)
    tags = {"mlflow.parentRunId": fit_run_id, EVALUATION_TAG: NOT_PRIVATE, EVALUATED_RUN_TAG: fit_run_id}
    child = client.create_run(parent.info.experiment_id, run_name=run_name, tags=tags)
    with mlflow.start_run(run_id=child.info.run_id, nested=mlflow.active_run() is not None) as run:
        yield run


@contextmanager
def evaluation_run(home: Path, run_id: str | None = None, run_name: str = "evaluate", experiment: str = EXPERIMENT):
    """The run an evaluation logs into: ``run_id`` or the active run — or a child of it when that run
    holds a fit (:func:`evaluation_child_run`) — else a new one."""
    import mlflow

    active = mlflow.active_run()
    if run_id is None and active is None:
        with tracked_run(home, run_name=run_name, experiment=experiment) as run:
            yield run
        return
    if run_id is not None:
        home.mkdir(parents=True, exist_ok=True)
        use_store(home)
    target = run_id or active.info.run_id
    if held_fit(target) is not None:
        with evaluation_child_run(target) as run:
            yield run
    elif run_id is None:
        yield active
    else:
        with mlflow.start_run(run_id=run_id, nested=active is not None) as run:
            yield run
