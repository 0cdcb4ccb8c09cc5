"""MLflow tracking of the commands: the run a fit logs into, its ledger charge, its parameters,
public fit facts, column shares, model and output; nothing when MLflow is off (``--no-mlflow``).
"""

from __future__ import annotations

import json
import time
from contextlib import contextmanager
from pathlib import Path

from ._version import __version__
from .config import RunConfig
from .pipeline import Synthesizer
from .privacy import PrivacyBudget, PrivacyReport
from .schema import Schema


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
