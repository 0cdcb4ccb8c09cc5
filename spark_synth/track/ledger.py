"""The cumulative privacy budget of a source table, across all its releases.

**Where the ledger lives.** One MLflow experiment per source table, named ``<prefix><table>``
(prefix ``spark-synth-budget:`` by default; ``/Shared/spark-synth-budget-`` on Databricks, where
experiments are workspace paths; ``$SPARK_SYNTH_LEDGER_PREFIX`` or ``--ledger-prefix`` to
change it). Each release is one run in it, with the release's ρ, ε and δ as metrics and the fit
run, the registered model and version as tags; the table's cap is a tag of the experiment.
Why MLflow rather than a Delta table or tags on a registered model: the people who release
synthetic data already work in MLflow (fits are MLflow runs, releases are registry versions), so
the ledger appears where they look — the experiment's run list *is* the table's spending history,
permissioned like any experiment — and recording a release needs no Spark session (``release``
is a short CLI call) and works the same on the local SQLite store and a Databricks workspace.
Tags on a registered model would miss releases of the same table under other model names; a
Delta table would need a cluster for every release and a second place to look.

**Composition rule.** Every spark-synth release is ρᵢ-zCDP with respect to adding or removing one
row of its source table (the accountant works in zCDP; the (ε, δ) of a fit is a conversion of
its ρ). Releases of the same table compose by adding ρ: ``ρ_total = Σ ρᵢ``, counting each fit
once (registering the same fitted model twice publishes the same DP output: no new spend). The
total is shown as (ε, δ_L)-DP with ``ε = epsilon_from_rho(ρ_total, δ_L)`` (the tight conversion
of Canonne–Kamath–Steinke), where ``δ_L`` is the cap's δ when a cap is set, otherwise the
smallest δ any release of the table declared. Releases made at different δs therefore compose
without loss — a release's own δ only says at which δ its ρ was quoted. A cap (ε_cap, δ_cap)
admits a release exactly when ``ρ_total`` after it is at most ``rho_from_epsilon(ε_cap, δ_cap)``
(rounded down, so the reported cumulative ε never exceeds the cap).

**Concurrency.** A release is recorded first (a RUNNING ledger run) and verified second: the sum
includes every RUNNING and FINISHED entry, so two releases racing for the last of a budget both
see each other and at worst both are refused — never both admitted. A refused or failed release
ends FAILED and does not count. A process that dies mid-release leaves its entry RUNNING, which
keeps counting until someone marks that run FAILED (MLflow UI or ``MlflowClient.set_terminated``).
"""

from __future__ import annotations

import hashlib
import math
import os
import re
from contextlib import contextmanager
from dataclasses import dataclass

from ..errors import BudgetExhausted, ParameterError, UserInputError
from ..privacy import epsilon_from_rho, rho_from_epsilon
from .mlflow_tracking import ensure_experiment, on_databricks
from .pyfunc import source_key

ENTRY_TAG = "spark_synth.ledger_entry"
SOURCE_TAG = "spark_synth.source_table"
CAP_EPSILON_TAG = "spark_synth.budget_cap_epsilon"
CAP_DELTA_TAG = "spark_synth.budget_cap_delta"
COUNTED = ("RUNNING", "SCHEDULED", "FINISHED")


def default_prefix() -> str:
    if os.environ.get("SPARK_SYNTH_LEDGER_PREFIX"):
        return os.environ["SPARK_SYNTH_LEDGER_PREFIX"]
    return "/Shared/spark-synth-budget-" if on_databricks() else "spark-synth-budget:"


@dataclass(frozen=True)
class LedgerEntry:
    """One release of the table: which fit, its cost, and where it was registered."""

    run_id: str
    fit_run_id: str
    rho: float
    epsilon: float
    delta: float
    model: str
    version: str | None
    status: str
    released_at: int

    def to_dict(self) -> dict:
        return dict(self.__dict__)


def compose(entries: list[LedgerEntry], delta: float | None) -> dict:
    """Total ρ (each fit counted once) and its (ε, δ) at ``delta`` (default: smallest δ used)."""
    by_fit: dict[str, float] = {}
    for entry in entries:
        by_fit[entry.fit_run_id] = max(by_fit.get(entry.fit_run_id, 0.0), entry.rho)
    rho = math.fsum(by_fit.values())
    if delta is None:
        delta = min((e.delta for e in entries), default=None)
    epsilon = epsilon_from_rho(rho, delta) if delta is not None else 0.0
    return {"rho": rho, "epsilon": epsilon, "delta": delta, "releases": len(entries), "fits": len(by_fit)}


def check_cap(epsilon: object, delta: object) -> tuple[float, float]:
    """Validate a budget cap; returns it as floats."""
    if isinstance(epsilon, bool) or not isinstance(epsilon, (int, float)) or not math.isfinite(epsilon) or epsilon <= 0:
        raise ParameterError("budget cap epsilon (--budget-cap)", "a finite number > 0", epsilon)
    if isinstance(delta, bool) or not isinstance(delta, (int, float)) or not (0.0 < delta < 1.0):
        raise ParameterError("budget cap delta (--cap-delta)", "a number in the open interval (0, 1)", delta)
    return float(epsilon), float(delta)


class BudgetLedger:
    """The MLflow-backed spending record of one source table (see the module docstring).

    >>> ledger = BudgetLedger("main.sales.customers")
    >>> ledger.set_cap(3.0, 1e-9)
    >>> ledger.summary()["cumulative"]["epsilon"]
    """

    def __init__(self, source: str, *, prefix: str | None = None):
        if not isinstance(source, str) or not source.strip():
            raise ParameterError("source table", "a non-empty table name or path", source)
        self.source = source_key(source)
        self.prefix = default_prefix() if prefix is None else prefix
        label = re.sub(r"[^A-Za-z0-9._:-]", "_", self.source)
        if label != self.source:
            label = f"{label.strip('_')}-{hashlib.sha1(self.source.encode()).hexdigest()[:8]}"
        self.experiment_name = f"{self.prefix}{label}"

    # ---- reading ----------------------------------------------------------------------------
    def _client(self):
        from mlflow import MlflowClient

        return MlflowClient()

    def _experiment(self, create: bool = False):
        client = self._client()
        experiment = client.get_experiment_by_name(self.experiment_name)
        if experiment is None and create:
            experiment = client.get_experiment(ensure_experiment(self.experiment_name))
            client.set_experiment_tag(experiment.experiment_id, SOURCE_TAG, self.source)
            experiment = client.get_experiment(experiment.experiment_id)
        if experiment is not None:
            recorded = experiment.tags.get(SOURCE_TAG)
            if recorded not in (None, self.source):
                raise UserInputError(
                    f"ledger experiment '{self.experiment_name}' belongs to source '{recorded}', not '{self.source}'; "
                    "pass a different --ledger-prefix"
                )
        return experiment

    def cap(self) -> tuple[float, float] | None:
        """The table's cap (ε, δ), or None when no cap is set."""
        experiment = self._experiment()
        if experiment is None or CAP_EPSILON_TAG not in experiment.tags:
            return None
        return float(experiment.tags[CAP_EPSILON_TAG]), float(experiment.tags[CAP_DELTA_TAG])

    def entries(self) -> list[LedgerEntry]:
        """Releases that count (finished, or in progress), oldest first."""
        experiment = self._experiment()
        if experiment is None:
            return []
        client, out, token = self._client(), [], None
        while True:
            page = client.search_runs([experiment.experiment_id], filter_string=f"tags.`{ENTRY_TAG}` = 'release'",
                                      max_results=1000, page_token=token)
            for run in page:
                if run.info.status not in COUNTED:
                    continue
                m, t = run.data.metrics, run.data.tags
                out.append(LedgerEntry(run.info.run_id, t["spark_synth.fit_run_id"], m["rho"], m["epsilon"], m["delta"],
                                       t.get("spark_synth.model", ""), t.get("spark_synth.model_version"),
                                       run.info.status, run.info.start_time))
            token = page.token
            if not token:
                break
        return sorted(out, key=lambda e: (e.released_at, e.run_id))

    def summary(self) -> dict:
        """What the table has spent (and may still spend) — what ``spark-synth budget`` prints."""
        cap = self.cap()
        entries = self.entries()
        total = compose(entries, cap[1] if cap else None)
        out = {"source_table": self.source, "ledger_experiment": self.experiment_name, "cumulative": total,
               "cap": None, "releases": [e.to_dict() for e in entries]}
        if cap:
            rho_cap = rho_from_epsilon(*cap)
            out["cap"] = {"epsilon": cap[0], "delta": cap[1], "rho": rho_cap, "rho_left": max(0.0, rho_cap - total["rho"])}
        return out

    # ---- writing ----------------------------------------------------------------------------
    def set_cap(self, epsilon: float, delta: float) -> None:
        """Set (or change) the table's cap; later releases are refused past it."""
        epsilon, delta = check_cap(epsilon, delta)
        experiment = self._experiment(create=True)
        client = self._client()
        client.set_experiment_tag(experiment.experiment_id, CAP_EPSILON_TAG, repr(epsilon))
        client.set_experiment_tag(experiment.experiment_id, CAP_DELTA_TAG, repr(delta))

    @contextmanager
    def reserve(self, *, fit_run_id: str, rho: float, epsilon: float, delta: float, model: str):
        """Record a release, verify it fits under the cap, and yield it (record-then-verify).

        Raises :class:`~spark_synth.errors.BudgetExhausted` (entry ended FAILED) when the table's
        cumulative ρ would pass its cap. If the body raises, the entry ends FAILED and does not
        count; otherwise it ends FINISHED. The body should call ``reservation.confirm(version)``.
        """
        experiment = self._experiment(create=True)
        client = self._client()
        run = client.create_run(experiment.experiment_id, run_name=f"release {model}",
                                tags={ENTRY_TAG: "release", "spark_synth.fit_run_id": fit_run_id,
                                      "spark_synth.model": model, SOURCE_TAG: self.source})
        run_id = run.info.run_id
        try:
            for key, value in (("rho", rho), ("epsilon", epsilon), ("delta", delta)):
                client.log_metric(run_id, key, value)
            cap = self.cap()
            entries = self.entries()
            total = compose(entries, cap[1] if cap else None)
            before = compose([e for e in entries if e.run_id != run_id], total["delta"])
            if cap is not None and total["rho"] > rho_from_epsilon(*cap):
                client.set_tag(run_id, "spark_synth.refused", "budget cap")
                raise BudgetExhausted(
                    f"source table '{self.source}' budget cap exceeded: releasing fit run {fit_run_id} (rho={rho:.6g}) "
                    f"would bring its cumulative spend to epsilon={total['epsilon']:.6g} (rho={total['rho']:.6g}) at "
                    f"delta={total['delta']:g}, over the cap epsilon={cap[0]:g} at delta={cap[1]:g} "
                    f"(already spent epsilon={before['epsilon']:.6g} over {before['releases']} release(s)); nothing was "
                    "registered — raise the cap with --budget-cap or release nothing more from this table"
                )
            reservation = _Reservation(client, run_id, total, cap)
            yield reservation
        except BaseException:
            client.set_terminated(run_id, "FAILED")
            raise
        for key, value in (("cumulative_rho", total["rho"]), ("cumulative_epsilon", total["epsilon"])):
            client.log_metric(run_id, key, value)
        client.set_terminated(run_id, "FINISHED")


class _Reservation:
    def __init__(self, client, run_id: str, cumulative: dict, cap):
        self.client, self.run_id, self.cumulative, self.cap = client, run_id, cumulative, cap

    def confirm(self, version: str) -> None:
        self.client.set_tag(self.run_id, "spark_synth.model_version", str(version))
