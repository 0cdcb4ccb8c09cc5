"""Tracking layer: MLflow runs for fits, synthesizers as MLflow pyfunc models, and releases.

Public API (used by the CLI, the jobs and the notebooks)::

    with mlflow_run("my fit") as run:              # local SQLite store, or Databricks' own
        log_synthesizer(synth, source="main.sales.customers")   # params, privacy report, pyfunc model
    summary = release(run.info.run_id, "customers_synth", budget_cap=3.0)   # registry + ledger (once per fit)
    rows = sample_model(summary["model_uri"], 1_000_000, seed=7)            # Spark, spends nothing
    write_model_sample(summary["model_uri"], 1_000_000, "main.synth.customers", seed=7)  # + provenance

One run holds one fit (a second, different synthesizer logged into it is refused); the ledger
counts each fit once, by the ``fit_id`` of its privacy report. Charge a fit as it is made with
``Synthesizer(...).fit(df, schema, dataset_id="main.sales.customers")`` (:mod:`.spending`); a fit
without one is recorded by nothing until it is released, and warns so.
"""

from .composition import compose
from .ledger import BudgetLedger, LedgerEntry
from .mlflow_tracking import (
    default_tracking_uri,
    log_fit,
    log_output,
    mlflow_run,
    on_databricks,
    tracked_run,
    use_store,
)
from .pyfunc import (
    SynthesizerModel,
    load_synthesizer,
    log_synthesizer,
    log_synthesizer_model,
    model_signature,
    sample_model,
    source_key,
)
from .model_source import is_model_uri, load_model_synthesizer, resolve_model, write_model_sample
from .release import EVAL_METRIC_PREFIX, NOT_PRIVATE_TAG_PREFIX, budget, check_privacy_report, release

__all__ = [
    "default_tracking_uri",
    "log_fit",
    "log_output",
    "tracked_run",
    "mlflow_run",
    "on_databricks",
    "use_store",
    "SynthesizerModel",
    "log_synthesizer",
    "log_synthesizer_model",
    "load_synthesizer",
    "sample_model",
    "write_model_sample",
    "load_model_synthesizer",
    "resolve_model",
    "is_model_uri",
    "model_signature",
    "source_key",
    "release",
    "budget",
    "check_privacy_report",
    "EVAL_METRIC_PREFIX",
    "NOT_PRIVATE_TAG_PREFIX",
    "BudgetLedger",
    "LedgerEntry",
    "compose",
]
