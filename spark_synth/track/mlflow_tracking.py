"""MLflow tracking: one run per fit/run, with parameters, budget, computation report and timings.

The store is ``$MLFLOW_TRACKING_URI`` when set, otherwise a local SQLite database under the
spark-synth home directory (artifacts beside it).
"""

from __future__ import annotations

import os
from contextlib import contextmanager
from pathlib import Path

EXPERIMENT = "spark-synth"


def default_tracking_uri(home: Path) -> str:
    return os.environ.get("MLFLOW_TRACKING_URI") or f"sqlite:///{home / 'mlflow.db'}"


@contextmanager
def tracked_run(home: Path, run_name: str, experiment: str = EXPERIMENT):
    """Start an MLflow run (ended FAILED if the body raises); yields the active run."""
    import mlflow

    home.mkdir(parents=True, exist_ok=True)
    uri = default_tracking_uri(home)
    mlflow.set_tracking_uri(uri)
    if mlflow.get_experiment_by_name(experiment) is None:
        artifacts = (home / "mlartifacts").resolve().as_uri() if uri.startswith("sqlite:") else None
        mlflow.create_experiment(experiment, artifact_location=artifacts)
    mlflow.set_experiment(experiment)
    with mlflow.start_run(run_name=run_name) as run:
        yield run


def log_fit(params: dict, privacy_report: dict, timings: dict) -> None:
    """Log a fit's parameters, privacy spend, computation report and stage timings."""
    import mlflow

    mlflow.log_params({k: ("" if v is None else v) for k, v in params.items()})
    mlflow.log_metrics(
        {
            "epsilon_requested": privacy_report["epsilon_requested"],
            "epsilon_spent": privacy_report["epsilon_spent"],
            "delta": privacy_report["delta"],
            "rho_requested": privacy_report["rho_requested"],
            "rho_spent": privacy_report["rho_spent"],
            "n_releases": len(privacy_report["releases"]),
        }
    )
    mlflow.log_metrics({f"seconds_{stage}": value for stage, value in timings.items()})
    mlflow.set_tags(
        {"spark_synth.neighbouring_relation": privacy_report["neighbouring_relation"], "spark_synth.dp": "true"}
    )
    mlflow.log_dict(privacy_report, "privacy_report.json")


def log_output(location: str, rows: int, seed: int, timings: dict) -> None:
    import mlflow

    mlflow.log_params({"output_location": location, "sample_seed": seed})
    mlflow.log_metric("rows_written", rows)
    mlflow.log_metrics({f"seconds_{stage}": value for stage, value in timings.items()})
