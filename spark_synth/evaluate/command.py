"""What ``spark-synth evaluate`` and ``spark-synth run --evaluate`` do: read, evaluate, write, log.

**Not private**: reads real rows. Files: ``metrics.json`` and ``report.html`` in the output
directory; with MLflow on, the numeric metrics (``eval_…`` names) and both files (artifacts under
``evaluation/``) go to an evaluation run tagged ``spark_synth.evaluation=not private: reads real
rows`` — for ``run --evaluate`` (or ``evaluate --mlflow-run-id`` of a fit run) a run nested under
the fit's and linked to it by ``spark_synth.fit_run_id``, never the run holding the DP model.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from ..errors import ParameterError
from ..schema import Schema, load_schema
from .core import Evaluation, check_out_dir, evaluate, load_privacy_report, table_label
from .split import check_fraction, check_seed
from .utility import check_target

#: MLflow metric names of an evaluation start with this (``spark-synth release`` tags them ``not_private.eval_…``).
METRIC_PREFIX = "eval_"


def headline(evaluation: Evaluation) -> dict:
    """The few numbers printed in the one-line JSON summary."""
    m = evaluation.metrics
    out = {"tvd_1way_mean": m["marginals"]["1way"]["tvd_mean"], "tvd_2way_mean": m["marginals"]["2way"]["tvd_mean"],
           "tvd_3way_mean": m["marginals"]["3way"]["tvd_mean"], "sliced_w1": m["distance"]["sliced_w1"],
           "mmd": m["distance"]["mmd"], "association_diff_mean": m["association"]["abs_diff_mean"],
           "share_closer_to_train": m["privacy_proxies"]["share_closer_to_train"],
           "membership_auc": m["privacy_proxies"]["membership_auc"]}
    util = m.get("utility") or {}
    if "best" in util:
        p = util["primary_metric"]
        out[f"tstr_best_{p}"] = util["best"]["tstr"][p]
        out[f"trtr_best_{p}"] = util["best"]["trtr"][p]
    return out


def mlflow_metrics(evaluation: Evaluation) -> dict[str, float]:
    return {METRIC_PREFIX + k[len("eval."):]: v for k, v in evaluation.flat_metrics().items()}


@dataclass(frozen=True)
class EvaluateRequest:
    """``run --evaluate``'s options, checked: where the report goes, the TSTR target (None: none),
    the hold-out share and the split's seed."""

    out: str
    target: str | None
    holdout_fraction: float
    seed: int


def check_request(request: dict, schema: Schema, output: str, overwrite: bool) -> EvaluateRequest:
    """Validate ``run --evaluate`` options before anything is computed; fills the default directory."""
    allowed = {"out", "target", "holdout_fraction", "seed"}
    unknown = sorted(set(request) - allowed)
    if unknown:
        raise ParameterError("evaluate options", f"among {sorted(allowed)}", unknown)
    out = request.get("out") or default_out_dir(output)
    check_out_dir(out, overwrite)
    target = request.get("target")
    if target is not None or schema.target is not None:
        target = check_target(schema, target)
    return EvaluateRequest(str(out), target, check_fraction(request.get("holdout_fraction", 0.2)),
                           check_seed(request.get("seed", 0), "split seed"))


def default_out_dir(output: str) -> Path:
    """``OUT_evaluation`` beside a path output; ``$SPARK_SYNTH_HOME/evaluation/NAME`` for a table or remote URI."""
    from ..io.locations import is_table_name
    from ..session import spark_synth_home

    target = output.rstrip("/")
    if is_table_name(target) or "://" in target or target.startswith("dbfs:"):
        return spark_synth_home() / "evaluation" / target.replace("/", "_").replace(":", "_")
    path = Path(target)
    stem = path.name[: -len(path.suffix)] if path.suffix in (".csv", ".parquet", ".delta") else path.name
    return path.with_name(f"{stem}_evaluation")


def evaluate_after_run(spark, written: str, train, holdout, schema: Schema, privacy_report, request: EvaluateRequest,
                       fit_run_id: str | None, progress: bool = True, table: str | None = None) -> dict:
    """The ``run --evaluate`` step: the run's own output vs the real train / hold-out parts.

    With ``fit_run_id`` (MLflow on) it is logged in a new run nested under that fit run. ``table``
    (the run's ``--input``) names the report; without it, the name of the files ``train`` was read from.
    """
    from ..io import read_input

    started = time.perf_counter()
    synthetic = read_input(spark, written)
    evaluation = evaluate(train, synthetic, schema, holdout=holdout, target=request.target, seed=request.seed,
                          privacy_report=privacy_report, progress=progress, table=table_label(table) if table else None)
    evaluation.metrics["split"] = {"mode": "split", "holdout_fraction": request.holdout_fraction, "seed": request.seed}
    files = evaluation.write(request.out, overwrite=True)
    run_id = None
    if fit_run_id:
        from ..track.mlflow_tracking import evaluation_child_run, log_evaluation

        with evaluation_child_run(fit_run_id) as active:
            log_evaluation(mlflow_metrics(evaluation), files, {"holdout_fraction": request.holdout_fraction,
                                                               "split_seed": request.seed, "target": request.target})
            run_id = active.info.run_id
    return {**files, **headline(evaluation), "not_private": True, "seconds": round(time.perf_counter() - started, 3),
            "mlflow_run_id": run_id}


def evaluate_tables(*, real: str, synthetic: str, schema: str, out: str, target: str | None = None,
                    holdout: str | None = None, holdout_fraction: float = 0.2, seed: int = 0,
                    privacy_report: str | None = None, overwrite: bool = False, mlflow: bool = True,
                    mlflow_run_id: str | None = None, spark_profile: str = "local", spark=None,
                    progress: bool = True, **options) -> dict:
    """The ``spark-synth evaluate`` command (see :func:`spark_synth.evaluate.evaluate` for the metrics)."""
    from ..io import read_input
    from ..session import get_spark, store_home

    started = time.perf_counter()
    parsed = load_schema(schema)
    check_out_dir(out, overwrite)
    if target is not None:
        check_target(parsed, target)
    check_fraction(holdout_fraction)
    check_seed(seed)
    report = load_privacy_report(privacy_report) if privacy_report else None
    spark = spark or get_spark(spark_profile)
    real_df, synthetic_df = read_input(spark, real), read_input(spark, synthetic)
    holdout_df = read_input(spark, holdout) if holdout else None
    evaluation = evaluate(real_df, synthetic_df, parsed, target=target, holdout=holdout_df,
                          holdout_fraction=holdout_fraction, seed=seed, privacy_report=report, progress=progress,
                          table=options.pop("table", None) or table_label(real), **options)
    files = evaluation.write(out, overwrite=overwrite)
    run_id = None
    if mlflow:
        from ..track.mlflow_tracking import evaluation_run, log_evaluation

        with evaluation_run(store_home(), run_id=mlflow_run_id) as active:
            log_evaluation(mlflow_metrics(evaluation), files, {"real": real, "synthetic": synthetic, "holdout": holdout,
                                                               "schema": schema, "target": evaluation.metrics["target"],
                                                               "seed": seed})
            run_id = active.info.run_id
    return {"real": real, "synthetic": synthetic, **files, **headline(evaluation),
            "not_private": True, "seconds": round(time.perf_counter() - started, 3), "mlflow_run_id": run_id}
