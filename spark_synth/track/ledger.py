"""The cumulative privacy budget of a source table (or declared dataset), across all its fits.

**Where the ledger lives.** One MLflow experiment per source table, named ``<prefix><table>``
(prefix ``spark-synth-budget:`` by default; ``/Shared/spark-synth-budget-`` on Databricks, where
experiments are workspace paths; ``$SPARK_SYNTH_LEDGER_PREFIX`` or ``--ledger-prefix`` to
change it), in spark-synth's MLflow store: ``$MLFLOW_TRACKING_URI``, the workspace on Databricks,
else ``~/.spark-synth/mlflow.db`` (``$SPARK_SYNTH_HOME/mlflow.db`` when that is set) — per user,
never per working directory (:mod:`spark_synth.track.mlflow_tracking`). The table is named by its
declared dataset id (``--dataset-id``, ``Synthesizer.fit(..., dataset_id=...)``) or, by default, by
``source_key`` of its input. Each charge is one run in it — a ``fit`` entry when a fit is charged as
it is made (``spark-synth run``/``fit``, the Python API with a dataset id), a ``release`` entry when
``spark-synth release`` registers one, a ``schema`` entry for a DP schema pre-pass — with the cost's
ρ, ε and δ as metrics and the fit id, fit run, registered model and version as tags; the table's
cap is a tag of the experiment.
Why MLflow rather than a Delta table or tags on a registered model: the people who release
synthetic data already work in MLflow (fits are MLflow runs, releases are registry versions), so
the ledger appears where they look — the experiment's run list *is* the table's spending history,
permissioned like any experiment — and recording a charge needs no Spark session (``release``
is a short CLI call) and works the same on the local SQLite store and a Databricks workspace.
Tags on a registered model would miss releases of the same table under other model names; a
Delta table would need a cluster for every release and a second place to look.

**Composition** — how entries add up per relation (one row, or one unit of a column) and when a
cap admits a charge — is :mod:`spark_synth.track.composition`'s.

**Concurrency.** A charge is recorded first (a RUNNING ledger run) and verified second: the sum
includes every RUNNING and FINISHED entry, so two charges racing for the last of a budget both
see each other and at worst both are refused — never both admitted.

**A reservation becomes a charge.** A recorded entry is a reservation until something derived from
the spend may leave the process — the noise is drawn, a model is logged or registered — and the
caller binds it (:meth:`Charge.bind`). A refused reservation, or one whose body fails before it is
bound, ends FAILED and does not count (nothing was released). A bound charge ends FINISHED whatever
happens next (an interruption is tagged ``spark_synth.interrupted``): it never stops counting. A
process that dies mid-charge leaves its entry RUNNING, which keeps counting until someone marks that
run FAILED (MLflow UI or ``MlflowClient.set_terminated``) — do that only when nothing was released.
"""

from __future__ import annotations

import hashlib
import os
import re
import time
from contextlib import contextmanager
from dataclasses import dataclass

from ..errors import BudgetExhausted, ParameterError, UserInputError
from ..io.locations import source_key
from .composition import FIT, RELEASE, SCHEMA, check_cap, over_cap, relation_totals, rho_cap
from .mlflow_tracking import FIT_ID_TAG, ensure_experiment, on_databricks

ENTRY_TAG = "spark_synth.ledger_entry"
ENTRY_KINDS = (FIT, RELEASE, SCHEMA)
SOURCE_TAG = "spark_synth.source_table"
FIT_RUN_TAG = "spark_synth.fit_run_id"
CAP_EPSILON_TAG = "spark_synth.budget_cap_epsilon"
CAP_DELTA_TAG = "spark_synth.budget_cap_delta"
COUNTED = ("RUNNING", "SCHEDULED", "FINISHED")
#: The privacy unit an entry was charged under ('' row level) and its row bound K.
UNIT_TAG = "spark_synth.privacy_unit"
UNIT_ROWS_TAG = "spark_synth.max_rows_per_unit"
#: Tag of a bound charge whose caller failed or was interrupted after binding (it still counts).
INTERRUPTED_TAG = "spark_synth.interrupted"


def default_prefix() -> str:
    if os.environ.get("SPARK_SYNTH_LEDGER_PREFIX"):
        return os.environ["SPARK_SYNTH_LEDGER_PREFIX"]
    return "/Shared/spark-synth-budget-" if on_databricks() else "spark-synth-budget:"


@dataclass(frozen=True)
class LedgerEntry:
    """One charge to the table: which fit, its cost, and (for a release) where it was registered."""

    run_id: str
    fit_run_id: str
    rho: float
    epsilon: float
    delta: float
    model: str
    version: str | None
    status: str
    released_at: int
    fit_id: str = ""
    kind: str = RELEASE
    delta_approx: float = 0.0  # δ of approximate-zCDP parts (a schema pre-pass's thresholds), added to the stated δ
    unit: str = ""  # the privacy unit's column; "" for row level
    rows_per_unit: int = 1  # its row bound K

    @property
    def fit_key(self) -> str:
        """What the entry is de-duplicated on: the fit id (the fit run for entries without one)."""
        return self.fit_id or f"run:{self.fit_run_id}"

    def to_dict(self) -> dict:
        return dict(self.__dict__)


class BudgetLedger:
    """The MLflow-backed spending record of one source table (see the module docstring).

    >>> ledger = BudgetLedger("main.sales.customers")
    >>> ledger.set_cap(3.0, 1e-9)
    >>> ledger.summary()["cumulative"]["epsilon"]
    """

    def __init__(self, source: str, *, prefix: str | None = None):
        if not isinstance(source, str) or not source.strip():
            raise ParameterError("source table", "a non-empty table name, path or dataset id", source)
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
        """Charges that count (finished, or in progress), oldest first.

        An entry still without its charge (ρ, ε, δ, logged in one batch) is skipped: it has not been verified yet, and it sees this
        caller's entry when it is (each charge logs its ρ before it verifies).
        """
        experiment = self._experiment()
        if experiment is None:
            return []
        client, out, token = self._client(), [], None
        while True:
            page = client.search_runs([experiment.experiment_id], max_results=1000, page_token=token)
            out.extend(_entry(run) for run in page if run.info.status in COUNTED
                       and run.data.tags.get(ENTRY_TAG) in ENTRY_KINDS and _CHARGE_METRICS <= run.data.metrics.keys())
            token = page.token
            if not token:
                break
        return sorted(out, key=lambda e: (e.released_at, e.run_id))

    def summary(self) -> dict:
        """What the table has spent (and may still spend) — what ``spark-synth budget`` prints."""
        cap = self.cap()
        entries = self.entries()
        totals = relation_totals(entries, cap[1] if cap else None)
        total = totals[""]
        out = {"source_table": self.source, "ledger_experiment": self.experiment_name, "store": store_location(),
               "cumulative": total, "cap": None, "releases": [e.to_dict() for e in entries]}
        if len(totals) > 1:  # unit-level entries: the total per unit of each column, beside the row-level one
            out["cumulative_per_unit"] = {unit: t for unit, t in totals.items() if unit}
        if cap:
            most = rho_cap(cap, total["delta_approx"])
            out["cap"] = {"epsilon": cap[0], "delta": cap[1], "rho": max(most, 0.0), "rho_left": max(0.0, most - total["rho"])}
        return out

    # ---- writing ----------------------------------------------------------------------------
    def set_cap(self, epsilon: float, delta: float) -> None:
        """Set (or change) the table's cap; later charges are refused past it."""
        epsilon, delta = check_cap(epsilon, delta)
        experiment = self._experiment(create=True)
        client = self._client()
        client.set_experiment_tag(experiment.experiment_id, CAP_EPSILON_TAG, repr(epsilon))
        client.set_experiment_tag(experiment.experiment_id, CAP_DELTA_TAG, repr(delta))

    def check_room(self, rho: float, what: str, delta_approx: float = 0.0, unit: str = "", rows_per_unit: int = 1) -> None:
        """Refuse early (recording nothing) when ``rho`` (and ``delta_approx``) more, charged under
        privacy unit ``unit`` ('' rows), would pass the cap; :meth:`reserve` decides."""
        cap = self.cap()
        if cap is None:
            return
        entries = self.entries()
        planned = LedgerEntry("", "", rho, 0.0, cap[1], "", None, "RUNNING", 0, "planned charge", FIT, float(delta_approx),
                              unit, rows_per_unit)
        after = relation_totals([*entries, planned], cap[1], unit)
        reason = over_cap(after, cap)
        if reason is not None:
            before = relation_totals(entries, cap[1], unit)[unit]
            raise BudgetExhausted(self._refusal(what, rho, after[unit], before, cap, "nothing was measured or written", reason))

    def holds(self, fit_id: str) -> bool:
        """Whether a counted entry (finished or in progress) already holds fit or pre-pass ``fit_id``."""
        return any(e.fit_id == fit_id for e in self.entries())

    def record_prepass(self, prepass, fit_run_id: str = "") -> bool:
        """Record a DP-drafted schema's pre-pass (``schema.prepass``: a spend that has already happened)
        as a ``schema`` entry unless an entry holds its id already. Never refused — the budget is spent
        — and it counts at once (a cap it passes refuses the next charge). Returns whether it was added."""
        if self.holds(prepass.id):
            return False
        client = self._client()
        mine = self._record(client, LedgerEntry("", fit_run_id, prepass.rho, prepass.epsilon, prepass.delta_conversion, "",
                                                None, "RUNNING", 0, prepass.id, SCHEMA, float(prepass.delta_approx),
                                                prepass.unit_column or "", prepass.unit_max_rows))
        client.set_terminated(mine.run_id, "FINISHED")
        return True

    @contextmanager
    def reserve(self, *, fit_run_id: str, rho: float, epsilon: float, delta: float, model: str = "",
                fit_id: str = "", kind: str = RELEASE, delta_approx: float = 0.0, unit: str = "", rows_per_unit: int = 1):
        """Record a charge of fit ``fit_id`` (under privacy unit ``unit`` of ``rows_per_unit`` rows; ''
        for rows), verify it fits under the cap, and yield it as a :class:`Charge` (record-then-verify;
        see "A reservation becomes a charge" above).

        Raises :class:`~spark_synth.errors.BudgetExhausted` (entry ended FAILED) when the table's
        cumulative ρ would pass its cap. If the body raises before ``charge.bind()``, the entry ends
        FAILED and does not count; once bound it ends FINISHED whatever happens. A release's body
        should call ``charge.confirm(version)``.
        """
        if kind not in ENTRY_KINDS:
            raise ParameterError("ledger entry kind", f"one of {list(ENTRY_KINDS)}", kind)
        client = self._client()
        mine = self._record(client, LedgerEntry("", fit_run_id, rho, epsilon, delta, model, None, "RUNNING", 0,
                                                fit_id, kind, float(delta_approx), unit, int(rows_per_unit)))
        charge = None
        try:
            total, cap = self._verify(mine)
            charge = Charge(self, client, mine, total, cap)
            yield charge
        except BaseException as exc:
            if charge is None or not charge.bound:
                client.set_terminated(mine.run_id, "FAILED")
                raise
            client.set_tag(mine.run_id, INTERRUPTED_TAG, type(exc).__name__)
            client.set_terminated(mine.run_id, "FINISHED")  # something was released: it keeps counting
            raise
        for key, value in (("cumulative_rho", charge.cumulative["rho"]), ("cumulative_epsilon", charge.cumulative["epsilon"])):
            client.log_metric(mine.run_id, key, value)
        client.set_terminated(mine.run_id, "FINISHED")

    def _record(self, client, entry: LedgerEntry) -> LedgerEntry:
        """Create the RUNNING ledger run of ``entry`` (it counts from now on); returns it with its run id."""
        experiment = self._experiment(create=True)
        label = {RELEASE: f"release {entry.model}", SCHEMA: f"schema pre-pass {entry.fit_id}"}.get(
            entry.kind, f"fit {entry.fit_id or entry.fit_run_id}")
        tags = {ENTRY_TAG: entry.kind, FIT_RUN_TAG: entry.fit_run_id, FIT_ID_TAG: entry.fit_id,
                "spark_synth.model": entry.model, SOURCE_TAG: self.source, UNIT_TAG: entry.unit,
                UNIT_ROWS_TAG: str(entry.rows_per_unit)}
        run = client.create_run(experiment.experiment_id, run_name=label, tags=tags)
        try:
            from mlflow.entities import Metric

            stamp = int(time.time() * 1000)  # one batch: a concurrent reader sees all three or none
            client.log_batch(run.info.run_id, metrics=[Metric(key, float(value), stamp, 0) for key, value in
                                                       (("rho", entry.rho), ("epsilon", entry.epsilon), ("delta", entry.delta),
                                                        ("delta_approx", entry.delta_approx))])
        except BaseException:
            client.set_terminated(run.info.run_id, "FAILED")
            raise
        return LedgerEntry(run.info.run_id, entry.fit_run_id, entry.rho, entry.epsilon, entry.delta, entry.model,
                           None, "RUNNING", run.info.start_time, entry.fit_id, entry.kind, entry.delta_approx,
                           entry.unit, entry.rows_per_unit)

    def _verify(self, mine: LedgerEntry) -> tuple[dict, tuple[float, float] | None]:
        """The cumulative spend with ``mine`` counted; refuses it past the cap unless its fit is already held."""
        cap = self.cap()
        entries = self.entries()
        if all(e.run_id != mine.run_id for e in entries):  # a store that does not list it yet: count it anyway
            entries.append(mine)
        totals = relation_totals(entries, cap[1] if cap else None, mine.unit)
        total = totals[mine.unit]
        others = [e for e in entries if e.run_id != mine.run_id]
        held = any(e.fit_key == mine.fit_key and e.status == "FINISHED" for e in others)
        reason = None if cap is None or held else over_cap(totals, cap)
        if reason is not None:
            self._client().set_tag(mine.run_id, "spark_synth.refused", "budget cap")
            before = relation_totals(others, total["delta"], mine.unit)[mine.unit]
            what = (f"releasing fit {mine.fit_id or '(no fit id)'} of run {mine.fit_run_id}" if mine.kind == RELEASE
                    else f"charging schema pre-pass {mine.fit_id}" if mine.kind == SCHEMA
                    else f"charging fit {mine.fit_id} of run {mine.fit_run_id}")
            outcome = "nothing was registered" if mine.kind == RELEASE else "nothing was written"
            raise BudgetExhausted(self._refusal(what, mine.rho, total, before, cap, outcome, reason))
        return total, cap

    def _refusal(self, what: str, rho: float, total: dict, before: dict, cap: tuple[float, float], outcome: str,
                 reason: str) -> str:
        unbounded = any(total.get("unbounded_entries") for total in (total, before)) or "unbounded" in reason
        fix = ("charge this table's fits under one privacy unit, or keep separate ledgers (--dataset-id) for releases "
               "whose guarantees you do not compose" if unbounded else
               f"raise the cap with --budget-cap (spark-synth budget --source-table {self.source} --budget-cap E "
               "--cap-delta D) or spend nothing more on this table")
        return (f"source table '{self.source}' budget cap exceeded: {what} (rho={rho:.6g}) would break the cap "
                f"epsilon={cap[0]:g} at delta={cap[1]:g}: {reason} (already spent epsilon={before['epsilon']:.6g} over "
                f"{before['fits']} fit(s) under this charge's privacy unit); {outcome} — {fix}")


_CHARGE_METRICS = {"rho", "epsilon", "delta"}


def _entry(run) -> LedgerEntry:
    m, t = run.data.metrics, run.data.tags
    return LedgerEntry(run.info.run_id, t.get(FIT_RUN_TAG, ""), m["rho"], m["epsilon"], m["delta"], t.get("spark_synth.model", ""),
                       t.get("spark_synth.model_version"), run.info.status, run.info.start_time, t.get(FIT_ID_TAG, ""),
                       t[ENTRY_TAG], float(m.get("delta_approx", 0.0)), t.get(UNIT_TAG, ""), int(t.get(UNIT_ROWS_TAG) or 1))


class Charge:
    """A recorded ledger entry (it counts): a reservation until :meth:`bind`, a charge from then on."""

    def __init__(self, ledger: BudgetLedger, client, entry: LedgerEntry, cumulative: dict, cap):
        self.ledger, self.client, self.entry = ledger, client, entry
        self.run_id, self.cumulative, self.cap = entry.run_id, cumulative, cap
        self.bound = False

    def bind(self) -> None:
        """Something derived from the spend may now leave the process (noise drawn, a model logged or
        registered): from now on the entry counts whatever happens."""
        self.bound = True

    def settle(self, *, rho: float, epsilon: float) -> None:
        """Lower the reserved cost to what was spent (never more: a concurrent reader counted at least
        this much all along); refreshes ``cumulative``."""
        if rho > self.entry.rho:
            from ..errors import InternalError

            raise InternalError(f"a fit spent rho={rho!r}, more than the {self.entry.rho!r} it reserved in the ledger")
        from mlflow.entities import Metric

        stamp = int(time.time() * 1000)  # step 1: read as the entry's latest value, in one batch
        self.client.log_batch(self.run_id, metrics=[Metric("rho", float(rho), stamp, 1), Metric("epsilon", float(epsilon), stamp, 1)])
        self.cumulative = relation_totals(self.ledger.entries(), self.cap[1] if self.cap else None,
                                          self.entry.unit)[self.entry.unit]

    def confirm(self, version: str) -> None:
        self.client.set_tag(self.run_id, "spark_synth.model_version", str(version))


def store_location() -> str:
    """The MLflow store the ledgers are read from and written to (tracking URI)."""
    import mlflow

    return mlflow.get_tracking_uri()
