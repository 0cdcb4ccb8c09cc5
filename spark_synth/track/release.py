"""Releases: register a fitted synthesizer's MLflow model as a registry version, with its privacy
metadata as version tags, charged to its source table's budget ledger.

What ``spark-synth release`` does, in order — nothing is registered unless every step passes:

1. read the fit's MLflow run; refuse it unless it has a complete, self-consistent privacy report
   (``privacy_report.json``: relation, ε/δ/ρ requested and spent, one record per measurement whose
   ρ add up to the spend) and a spark-synth model whose metadata states the same fit id and spend;
2. charge the fit to the source table's ledger (:mod:`spark_synth.track.ledger`) by its fit id — a
   fit already charged (by ``run``/``fit``, or an earlier release) adds nothing — refusing it past
   the table's cap; a DP-drafted schema's pre-pass that the ledger does not hold yet (drafted with
   ``--no-mlflow``, under another dataset id, or fitted through the Python API) is recorded first, by
   its id (spent already: recorded even when the release is then refused);
3. register the model (``mlflow.register_model``: the local SQLite registry, or Unity Catalog for
   ``catalog.schema.model`` names on Databricks) and tag the version: the guarantee under
   ``spark_synth.*``, and evaluation metrics (which read real rows) only under ``not_private.*``;
4. with ``alias``, point that registered-model alias (e.g. ``champion``; MLflow's replacement for the
   deprecated stages) at the new version — if that fails, the version is deleted again (the charge
   stays: the version existed).
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

from ..errors import ParameterError, UserInputError
from ..privacy import MEASUREMENT, NEIGHBOURING_RELATION, NOT_COVERED, SELECTION, PrivacyReport, epsilon_from_rho
from ..privacy.unit import PrivacyUnit
from .ledger import RELEASE, BudgetLedger
from .mlflow_tracking import EVALUATED_RUN_TAG, EVALUATION_TAG, NOT_PRIVATE, dp_tags
from .pyfunc import TAG_MODEL_URI, TAG_SOURCE

#: Run metrics whose names start with this are copied to the version as (not private) evaluation tags.
EVAL_METRIC_PREFIX = "eval_"
#: Version tags of evaluation metrics start with this: they read real rows and are not covered by the guarantee.
NOT_PRIVATE_TAG_PREFIX = "not_private."
REPORT_FILE = "privacy_report.json"
_REPORT_NUMBERS = ("epsilon_requested", "delta", "rho_requested", "rho_spent", "epsilon_spent")
_ENTRY_FIELDS = ("name", "query", "mechanism", "rho")
#: Each kind of entry and the noise scale it must state (> 0).
_ENTRY_SCALE = {MEASUREMENT: "sigma", SELECTION: "scale"}
#: Entries of this kind (opt-in uses of real rows outside the guarantee) state no scale and spend nothing.


_ALIAS = re.compile(r"[A-Za-z0-9_-]{1,255}")
_VERSION_ALIAS = re.compile(r"[vV]\d+")


def check_alias(alias: str | None) -> str | None:
    """A registered-model alias as MLflow and Unity Catalog accept it, or None; else one ParameterError."""
    if alias is None:
        return None
    if (not isinstance(alias, str) or not _ALIAS.fullmatch(alias) or alias.lower() == "latest"
            or _VERSION_ALIAS.fullmatch(alias)):
        raise ParameterError("alias (--alias)", "1 to 255 letters, digits, '_' or '-', other than 'latest' and version "
                             "names such as 'v3' (e.g. champion)", alias)
    return alias


def check_privacy_report(report: object, where: str = "the run") -> PrivacyReport:
    """Refuse a privacy report (raw JSON) that is missing a field or does not add up; returns it typed."""
    if not isinstance(report, dict):
        raise UserInputError(f"{where} has no privacy report ({REPORT_FILE}); only runs of `spark-synth fit`/`run` "
                             "or spark_synth.track.log_synthesizer can be released")
    problems = [f"missing '{k}'" for k in ("neighbouring_relation", *_REPORT_NUMBERS, "releases") if k not in report]
    if not problems:
        try:
            relation = PrivacyUnit.from_dict(report.get("privacy_unit")).relation
        except (ValueError, UserInputError) as exc:
            problems.append(f"privacy_unit is malformed ({exc})")
            relation = NEIGHBOURING_RELATION
        if report["neighbouring_relation"] != relation:
            problems.append(f"neighbouring_relation is {report['neighbouring_relation']!r}, not {relation!r}")
        for key in _REPORT_NUMBERS:
            if not _number(report[key]):
                problems.append(f"'{key}' is not a finite number")
        releases = report["releases"]
        if not isinstance(releases, list) or not releases:
            problems.append("'releases' lists no measurements")
        else:
            for i, record in enumerate(releases):
                kind = record.get("kind", MEASUREMENT) if isinstance(record, dict) else None
                if kind == NOT_COVERED:
                    if record.get("rho") != 0 or not record.get("name"):
                        problems.append(f"entry {i} (not covered by DP) must name its use and spend rho 0")
                    continue
                scale = _ENTRY_SCALE.get(kind)
                absent = [f for f in (*_ENTRY_FIELDS, scale) if not isinstance(record, dict) or f not in record]
                if scale is None:
                    problems.append(f"entry {i} is of unknown kind {kind!r}")
                elif absent:
                    problems.append(f"entry {i} lacks {absent}")
                elif not (_number(record["rho"]) and record["rho"] >= 0 and _number(record[scale]) and record[scale] > 0):
                    problems.append(f"entry {i} has no valid {scale}/rho")
        if not problems:
            rho = report["rho_spent"]
            total = math.fsum(r["rho"] for r in releases)
            if not math.isclose(total, rho, rel_tol=1e-9, abs_tol=1e-15):
                problems.append(f"the measurements' rho add up to {total!r}, not rho_spent={rho!r}")
            if rho > report["rho_requested"] * (1 + 1e-12):
                problems.append("rho_spent exceeds rho_requested")
            if not (0 < report["delta"] < 1):
                problems.append("'delta' is not in (0, 1)")
            elif not math.isclose(epsilon_from_rho(rho, report["delta"]), report["epsilon_spent"], rel_tol=1e-6, abs_tol=1e-12):
                problems.append("epsilon_spent is not the conversion of rho_spent at delta")
    if problems:
        raise UserInputError(f"{where} has an incomplete privacy report ({'; '.join(problems)}); refusing to release it")
    return PrivacyReport.from_dict(report, where)


def _number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def read_metrics_file(path: str | Path) -> dict[str, float]:
    """Evaluation metrics from a JSON file: numeric leaves, nested keys joined with '.'."""
    try:
        raw = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ParameterError("metrics", "a readable JSON file of evaluation metrics", str(path)) from exc
    if not isinstance(raw, dict):
        raise ParameterError("metrics", "a JSON object (metric name -> number)", type(raw).__name__)
    out: dict[str, float] = {}

    def walk(prefix: str, value) -> None:
        if isinstance(value, dict):
            for key, inner in value.items():
                walk(f"{prefix}.{key}" if prefix else str(key), inner)
        elif _number(value):
            out[prefix] = float(value)

    walk("", raw)
    return out


def release(run_id: str, name: str, *, source: str | None = None, budget_cap: float | None = None,
            cap_delta: float | None = None, metrics: dict | str | Path | None = None,
            ledger_prefix: str | None = None, allow_non_dp: bool = False, alias: str | None = None) -> dict:
    """Register the synthesizer model of MLflow run ``run_id`` as a new version of ``name``.

    ``source`` (default: the run's ``spark_synth.source_table`` tag: its dataset id or input) names
    the table whose ledger is charged, once per fit id; ``budget_cap`` (ε, at ``cap_delta``, default
    the fit's δ) sets that table's cap before charging. Evaluation metrics — those of the run's
    latest evaluation run (``run --evaluate``), ``eval_*`` metrics of the run itself, and ``metrics``
    (a dict or a JSON file) — are tagged as ``not_private.eval_*``. Returns the release summary.
    A fit that used real rows outside the DP guarantee (an opt-in such as DGM's ``validator=real``)
    is refused unless ``allow_non_dp``; its version is then tagged ``spark_synth.dp=false``.
    ``alias`` (e.g. ``champion``) is then pointed at the new version (moved from any earlier one).
    Raises :class:`~spark_synth.errors.BudgetExhausted` past the cap and
    :class:`~spark_synth.errors.UserInputError` for a run that cannot be released.
    """
    import mlflow
    from mlflow.exceptions import MlflowException

    from .mlflow_tracking import use_store

    if not isinstance(name, str) or not name.strip():
        raise ParameterError("name", "a registered model name (e.g. adult_synth, or catalog.schema.model on Databricks)", name)
    alias = check_alias(alias)
    extra = read_metrics_file(metrics) if isinstance(metrics, (str, Path)) else dict(metrics or {})
    use_store()
    client = mlflow.MlflowClient()
    try:
        run = client.get_run(run_id)
    except MlflowException:
        raise UserInputError(f"no MLflow run with id '{run_id}' in {mlflow.get_tracking_uri()}; pass the mlflow_run_id "
                             "printed by `spark-synth fit` or `run`") from None
    where = f"run {run_id}"
    report = check_privacy_report(_load_report(run), where)
    if not report.dp_guarantee and not allow_non_dp:
        raise UserInputError(f"{where} is NOT covered by the DP guarantee ({'; '.join(e.name for e in report.not_covered)}); "
                             "refusing to release it — pass --allow-non-dp to release it labelled as such")
    model_uri = run.data.tags.get(TAG_MODEL_URI)
    if not model_uri:
        raise UserInputError(f"{where} has no spark-synth model; fit with MLflow on (`spark-synth fit`, without "
                             "--no-mlflow) or log one with spark_synth.track.log_synthesizer")
    stated = (mlflow.models.get_model_info(model_uri).metadata or {}).get("spark_synth", {}).get("privacy", {})
    if (stated.get("rho") != report.rho_spent or stated.get("delta") != report.delta
            or stated.get("fit_id", "") != report.fit_id):
        raise UserInputError(f"{where}: the model's privacy metadata does not match the run's privacy report; refusing to release it")
    source = source or run.data.tags.get(TAG_SOURCE)
    if not source:
        raise ParameterError("source table (--source-table)", "the table the model was fitted on", None)
    evaluation_run = _latest_evaluation(client, run)
    evaluation = {**_eval_metrics(run), **(_eval_metrics(evaluation_run) if evaluation_run else {}), **extra}

    ledger = BudgetLedger(source, prefix=ledger_prefix)
    if budget_cap is not None:
        ledger.set_cap(budget_cap, report.delta if cap_delta is None else cap_delta)
    elif cap_delta is not None:
        raise ParameterError("cap delta (--cap-delta)", "given together with --budget-cap", cap_delta)
    prepass = report.schema_prepass
    if prepass is not None:  # spent when the schema was drafted: in this ledger once, whoever records it
        ledger.record_prepass(prepass, run_id)
    with ledger.reserve(fit_run_id=run_id, fit_id=report.fit_id, rho=report.rho_spent, epsilon=report.epsilon_spent,
                        delta=report.delta, model=name, kind=RELEASE, unit=report.privacy_unit.ledger_key,
                        rows_per_unit=report.privacy_unit.max_rows) as reservation:
        total, cap = reservation.cumulative, reservation.cap
        tags = {
            "spark_synth.source_table": ledger.source,
            "spark_synth.engine": run.data.tags.get("spark_synth.engine", ""),
            "spark_synth.fit_run_id": run_id,
            "spark_synth.fit_id": report.fit_id,
            "spark_synth.epsilon": repr(report.epsilon_spent),
            # the fit's δ plus a DP-drafted schema's δ_approx (its ρ is a ledger entry of its own)
            "spark_synth.delta": repr(report.delta + report.delta_approx),
            **({"spark_synth.schema_prepass_id": report.schema_prepass.id,
                "spark_synth.schema_prepass_rho": repr(report.schema_prepass.rho),
                "spark_synth.schema_prepass_delta_approx": repr(report.schema_prepass.delta_approx)}
               if report.schema_prepass is not None else {}),
            "spark_synth.rho": repr(report.rho_spent),
            "spark_synth.neighbouring_relation": report.neighbouring_relation,
            "spark_synth.guarantee": ("(epsilon, delta)-DP / rho-zCDP for the model and all rows sampled from it; "
                                      + ("schema drafted by a DP pre-pass (composed in the table's ledger)"
                                         if report.schema_prepass is not None else "schema is public")
                                      if report.dp_guarantee else "NOT covered by a DP guarantee: "
                                      + "; ".join(e.name for e in report.not_covered) + " (released with --allow-non-dp)"),
            **dp_tags(report),
            "spark_synth.sampling_spends_budget": "false",
            "spark_synth.cumulative_rho": repr(total["rho"]),
            "spark_synth.cumulative_epsilon": repr(total["epsilon"]),
            "spark_synth.cumulative_delta": repr(total["delta"]),
            "spark_synth.ledger_experiment": ledger.experiment_name,
            **({"spark_synth.budget_cap_epsilon": repr(cap[0]), "spark_synth.budget_cap_delta": repr(cap[1])} if cap else {}),
            **_evaluation_tags(evaluation, evaluation_run),
        }
        version = mlflow.register_model(model_uri, name, tags=tags)
        reservation.bind()  # a version exists: the charge counts whatever happens next
        if alias is not None:
            _set_alias(client, name, alias, version.version)
        reservation.confirm(version.version)
    return {
        "model": name,
        "version": str(version.version),
        "model_uri": f"models:/{name}/{version.version}",
        "run_id": run_id,
        "fit_id": report.fit_id,
        "source_table": ledger.source,
        "epsilon": report.epsilon_spent,
        "delta": report.delta,
        "rho": report.rho_spent,
        "cumulative": {"rho": total["rho"], "epsilon": total["epsilon"], "delta": total["delta"],
                       "releases": total["releases"],
                       "cap_epsilon": cap[0] if cap else None, "cap_delta": cap[1] if cap else None},
        "ledger_experiment": ledger.experiment_name,
        "evaluation": evaluation,
        "evaluation_run_id": evaluation_run.info.run_id if evaluation_run else None,
        "alias": alias,
        **({"alias_uri": f"models:/{name}@{alias}"} if alias else {}),
    }


def _set_alias(client, name: str, alias: str, version) -> None:
    """Point ``alias`` of model ``name`` at ``version``; if the registry refuses, delete that version
    again (then the release fails as a whole; its ledger entry still counts, as the version existed)."""
    from mlflow.exceptions import MlflowException

    try:
        client.set_registered_model_alias(name, alias, str(version))
    except MlflowException as exc:
        client.delete_model_version(name, str(version))
        reason = str(exc.message if hasattr(exc, "message") else exc).splitlines()[0]
        raise UserInputError(f"the registry refused alias '{alias}' for model '{name}' ({reason}); nothing was "
                             "released — check the alias and your permissions on the model") from None


def _eval_metrics(run) -> dict[str, float]:
    """A run's ``eval_*`` metrics, without the prefix."""
    return {k[len(EVAL_METRIC_PREFIX):]: v for k, v in run.data.metrics.items() if k.startswith(EVAL_METRIC_PREFIX)}


def _latest_evaluation(client, run):
    """The latest finished evaluation run of fit run ``run`` (``run --evaluate`` logs one), or None."""
    found = client.search_runs([run.info.experiment_id], max_results=1, order_by=["attributes.start_time DESC"],
                               filter_string=f"tags.`{EVALUATED_RUN_TAG}` = '{run.info.run_id}' and "
                                             f"tags.`{EVALUATION_TAG}` = '{NOT_PRIVATE}' and attributes.status = 'FINISHED'")
    return found[0] if found else None


def _evaluation_tags(evaluation: dict[str, float], evaluation_run) -> dict[str, str]:
    """Version tags of evaluation metrics, all under ``not_private.``: apart from the guarantee's tags."""
    if not evaluation:
        return {}
    tags = {f"{NOT_PRIVATE_TAG_PREFIX}eval_{k}": repr(v) for k, v in sorted(evaluation.items())}
    tags[f"{NOT_PRIVATE_TAG_PREFIX}evaluation"] = "evaluation metrics read real rows: NOT covered by the DP guarantee"
    if evaluation_run is not None:
        tags[f"{NOT_PRIVATE_TAG_PREFIX}evaluation_run_id"] = evaluation_run.info.run_id
    return tags


def budget(source: str, *, budget_cap: float | None = None, cap_delta: float | None = None,
           ledger_prefix: str | None = None) -> dict:
    """The ledger of ``source`` (cumulative spend, cap, releases); optionally set its cap first."""
    from .mlflow_tracking import use_store

    use_store()
    ledger = BudgetLedger(source, prefix=ledger_prefix)
    if budget_cap is not None:
        if cap_delta is None:
            raise ParameterError("cap delta (--cap-delta)", "the delta of the cap, e.g. 1e-9, given with --budget-cap", None)
        ledger.set_cap(budget_cap, cap_delta)
    elif cap_delta is not None:
        raise ParameterError("cap delta (--cap-delta)", "given together with --budget-cap", cap_delta)
    return ledger.summary()


def _load_report(run) -> dict | None:
    import mlflow

    try:
        return mlflow.artifacts.load_dict(f"{run.info.artifact_uri.rstrip('/')}/{REPORT_FILE}")
    except Exception:
        return None
