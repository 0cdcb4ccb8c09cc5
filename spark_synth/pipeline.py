"""The one place that wires the layers for a fit: schema → measure + privacy (the oracle) → engine → sample.

:class:`Synthesizer` is the public API (``fit`` on a Spark DataFrame, ``sample`` rows, ``save`` /
``load``). The commands behind the CLI (``run``, ``fit``, ``sample``) are in :mod:`spark_synth.commands`.
"""

from __future__ import annotations

import json
import secrets
import time
from dataclasses import replace
from pathlib import Path

from ._version import __version__
from .config import check_policy, check_rows, check_seed
from .engines import Engine, TaskRunner, get_engine, model_class, typed_config
from .engines.options import changed_options
from .errors import NotFittedError, ParameterError, UserInputError
from .logs import layer
from .measure import answer_queries, check_structure
from .measure.bounding import bound_contributions
from .measure.rows import sample_codes
from .oracle import build_oracle
from .privacy import PrivacyBudget, PrivacyFilter, PrivacyReport
from .privacy.unit import PrivacyUnit
from .schema import Schema, load_schema, schema_from_dict

_log = layer("pipeline")

MODEL_FILE = "synthesizer.json"
FORMAT_VERSION = 1


class Synthesizer:
    """A DP synthesizer: ``fit`` measures a Spark DataFrame once (spending the budget), after which
    ``sample`` generates any number of rows for free (post-processing).

    >>> synth = Synthesizer("independent", epsilon=1.0, delta=1e-9).fit(df, schema)
    >>> synthetic = synth.sample(10_000, seed=7)
    """

    #: After a write of sampled rows, the model's sampling report (see :meth:`note_sampling`); else None.
    last_sampling_: dict | None = None
    #: Where the latest fit was charged (``fit(..., dataset_id=...)``): ledger, store, the table's total; else None.
    ledger_: dict | None = None
    _sampling_observation = None

    def __init__(self, engine: str = "independent", *, epsilon: float, delta: float,
                 out_of_domain: str = "clip", engine_options=None,
                 privacy_unit: str | None = None, max_rows_per_unit: int | None = None):
        """``engine_options``: the engine's typed config (e.g. ``FptConfig(one_way_error=0.05)``), or a
        mapping of option name -> value, turned into it here (checked once); None: the defaults."""
        self.engine = engine
        self.epsilon = epsilon
        self.delta = delta
        self.out_of_domain = out_of_domain
        #: What the guarantee protects: one row (default), or one value of ``privacy_unit`` with all its
        #: rows, at most ``max_rows_per_unit`` of them kept (see docs/privacy.md, "Person-level privacy").
        self.unit = PrivacyUnit.of(privacy_unit, max_rows_per_unit)
        self._budget = PrivacyBudget(epsilon, delta)
        self._policy = check_policy(out_of_domain)
        self._engine: Engine = get_engine(engine, typed_config(engine, engine_options))  # built once, from the config

    @property
    def engine_config(self):
        """The engine's typed config (its config dataclass: every option, defaults included)."""
        return self._engine.options

    @property
    def engine_options(self) -> dict:
        """The engine options that differ from the engine's defaults (saved with the model)."""
        return changed_options(self._engine.options)

    # ---- fit -----------------------------------------------------------------------------
    def fit(self, df, schema: Schema | str | Path, tasks: TaskRunner | None = None, *,
            dataset_id: str | None = None) -> "Synthesizer":
        """Measure ``df`` (a Spark DataFrame) with DP and fit the engine's model. Returns self.

        The engine measures through an oracle over ``df`` holding this synthesizer's whole budget;
        ``tasks`` (default: one Spark task per item on ``df``'s session) runs its parallel work.

        Under a privacy unit (``privacy_unit=``), ``df`` holds the unit column besides the schema's
        columns (it is modelled only when the schema declares it); the fit keeps at most
        ``max_rows_per_unit`` rows of each unit (:mod:`spark_synth.measure.bounding`) before any
        measurement, and every noise scale is K times the one-row one.

        ``dataset_id`` (the table's name or path) charges the fit to that table's budget ledger in
        spark-synth's MLflow store (the active run's store inside one), as ``spark-synth run`` does:
        reserved before a row is read (:class:`~spark_synth.errors.BudgetExhausted` past the table's
        cap), bound once noise is drawn, settled to the spend before ``fit`` returns; a DP-drafted
        schema's pre-pass is recorded there too (once). Where the fit was charged: ``ledger_``.
        Without it nothing is recorded, and an :class:`~spark_synth.errors.UnrecordedSpendWarning`
        says so (once per table and process).
        """
        from contextlib import nullcontext

        if dataset_id is not None and (not isinstance(dataset_id, str) or not dataset_id.strip()):
            raise ParameterError("dataset_id", "a non-empty table name or path naming the table's budget ledger", dataset_id)
        schema = schema if isinstance(schema, Schema) else load_schema(schema)
        df = self._bounded(df, schema)
        if tasks is None:
            from .tasks import SparkTaskRunner

            tasks = SparkTaskRunner(df.sparkSession)
        privacy_filter = PrivacyFilter(self._budget, unit=self.unit)
        charge = nullcontext()
        if dataset_id is not None:
            from .track.spending import fit_charge

            charge = fit_charge(dataset_id, fit_id=privacy_filter.fit_id, rho=self._budget.rho,
                                epsilon=self._budget.epsilon, delta=self._budget.delta, prepass=schema.prepass, unit=self.unit)
        clock: dict = {}
        oracle = build_oracle(schema, privacy_filter, lambda queries: answer_queries(df, schema, queries, self._policy), clock,
                              rows=lambda n, seed: sample_codes(df, schema, n, seed, self._policy))
        with charge as reservation:
            started = time.perf_counter()
            _log.info("fit: engine %s, epsilon %g, delta %g, %d columns", self.engine, self.epsilon, self.delta, len(schema))
            try:
                model = self._engine.fit(schema, oracle, tasks)
            finally:
                if reservation is not None and privacy_filter.report().entries:
                    reservation.bind()  # noise was drawn: the charge counts whatever happens next
            total = time.perf_counter() - started
            report = replace(privacy_filter.report(), schema_prepass=schema.prepass)
            if reservation is not None:
                reservation.settle(rho=report.rho_spent, epsilon=report.epsilon_spent)
        self.model_ = model
        self.schema_ = schema
        self.privacy_report_: PrivacyReport = report
        if reservation is not None:
            from .track.spending import charged

            self.ledger_ = charged(reservation)
        else:
            self.ledger_ = None
            from .track.spending import warn_unrecorded

            warn_unrecorded(df, report.epsilon_spent, report.rho_spent, report.delta)
        self.measure_passes_ = int(clock.get("scans", 0))
        self.measure_pass_seconds_ = list(clock.get("scan_seconds", []))  # one entry per scan of the table
        _log.info("fit: done, epsilon spent %.6g (rho %.6g) in %d pass(es) over the table",
                  self.privacy_report_.epsilon_spent, self.privacy_report_.rho_spent, self.measure_passes_)
        measure, noise = clock.get("measure", 0.0), clock.get("noise", 0.0)
        self.timings_ = {"measure": measure, "noise": noise, "fit": max(total - measure - noise, 0.0)}
        return self

    def _bounded(self, df, schema: Schema):
        """``df`` checked against ``schema`` and, under a privacy unit, bounded to K rows per unit with
        the unit column dropped unless the schema models it (metadata checks first: nothing is read)."""
        unit = self.unit
        if unit.is_row:
            check_structure(df, schema)
            return df
        if unit.column not in df.columns:
            raise UserInputError(f"privacy unit column '{unit.column}' (--privacy-unit) is not in the data; its columns are "
                                 f"{list(df.columns)}: name the column that identifies a person")
        drafted = schema.prepass.unit_column if schema.prepass is not None else unit.column
        if drafted != unit.column:
            at = "row level" if drafted is None else f"units of '{drafted}'"
            raise UserInputError(
                f"schema '{schema.name}' was drafted with DP at {at} (schema init --dp-bounds/--dp-types); under "
                f"--privacy-unit {unit.column} that pre-pass's cost per unit is not bounded, so the fit's guarantee would "
                f"not hold: draft it again with `schema init ... --privacy-unit {unit.column} --max-rows-per-unit K`, "
                "declare the bounds and categories from public knowledge (remove dp_prepass from the schema file), or "
                "fit without a privacy unit")
        modelled = unit.column in schema.names
        check_structure(df if modelled else df.drop(unit.column), schema)
        if modelled:
            _log.info("fit: the privacy unit column %s is modelled (the schema declares it)", unit.column)
        bounded = bound_contributions(df, unit, secrets.randbits(63))
        return bounded if modelled else bounded.drop(unit.column)

    # ---- what the model writes ----------------------------------------------------------
    @property
    def column_shares_(self):
        """Each column's share of nulls (nullable) or of the ``clip`` substitute (the others) in what
        this model writes: a :class:`~spark_synth.sample.column_shares.ColumnShares`, DP (read off
        the model; see :mod:`spark_synth.sample.column_shares`)."""
        from .sample.column_shares import column_shares

        self._check_fitted()
        if getattr(self, "_shares", None) is None or self._shares[0] is not self.model_:
            self._shares = (self.model_, column_shares(self.model_, self.schema_))
        return self._shares[1]

    def check_columns(self) -> list[str]:
        """Refuse (:class:`~spark_synth.errors.DataValidationError`) when a nullable column would come
        out (almost) all null — typically a column declared with the wrong type under ``clip`` — and
        return the warnings for mostly-null or constant columns (logged once per model)."""
        from .sample.column_shares import check

        warnings = check(self.column_shares_, self.schema_)
        if getattr(self, "_warned", None) is not self.model_:
            self._warned = self.model_
            for warning in warnings:
                _log.warning("WARNING: %s", warning)
        return warnings

    # ---- sample --------------------------------------------------------------------------
    def sample(self, n_rows: int, seed: int | None = None, spark=None, partitions: int | None = None, *,
               conditions=None, rows_per: str | None = None):
        """A Spark DataFrame of ``n_rows`` synthetic rows (costs no privacy budget). Refused, before
        anything runs, when a column would be (almost) all null (:meth:`check_columns`).

        ``conditions`` — a condition text (``"defaulted = 'Yes' AND age >= 65"``, docs/sampling.md) or
        a mapping ``{"defaulted": "Yes", "region": ["north", "east"]}`` — makes every row satisfy it, drawn
        exactly from the model conditioned on it; ``rows_per`` (a categorical column) gives each of its
        values its model share of the rows, exactly. ``last_condition_`` then says what was asked and
        the condition's model probability."""
        from .sample import generate_rows
        from .sample.conditions import as_condition
        from .sample.plan import sampling_plan

        self._check_fitted()
        check_rows(n_rows)
        check_seed(seed)
        self.check_columns()
        if spark is None:
            from .session import get_spark

            spark = get_spark()
        plan = sampling_plan(self.model_, self.schema_, n_rows, as_condition(conditions, self.schema_), rows_per)
        self.last_condition_ = plan.summary()
        self.last_seed_ = secrets.randbits(63) if seed is None else int(seed)
        self.last_sampling_ = None
        self._sampling_observation = None
        if self.model_.sampling_counters:
            from pyspark.sql import Observation

            self._sampling_observation = Observation("spark_synth_sampling")
        return generate_rows(spark, self.model_, self.schema_, n_rows, self.last_seed_, partitions,
                             observation=self._sampling_observation, plan=plan)

    def note_sampling(self) -> dict | None:
        """Call once the rows of the latest :meth:`sample` are written: for a model with sampling
        counters (dgm: the rows its validator never accepted), sets and returns ``last_sampling_`` —
        the model's :meth:`~spark_synth.engines.FittedModel.sampling_report` of the counters summed
        over the sampling tasks, None each where the session could not observe it (a Spark Connect
        server may not report observed metrics for some writes). Post-processing of the fitted model,
        so it spends no budget; logged as progress."""
        observation = self._sampling_observation
        if observation is None:
            return None
        observed = observation.get  # the write has run: classic sessions do not block here
        counts = {name: None if observed.get(name) is None else int(observed[name]) for name in self.model_.sampling_counters}
        self.last_sampling_, line = self.model_.sampling_report(counts)
        _log.info("%s", line)
        self._sampling_observation = None
        return self.last_sampling_

    def write(self, n_rows: int, output: str, seed: int | None = None, overwrite: bool = False, spark=None, *,
              source_model=None, conditions=None, rows_per: str | None = None) -> str:
        """Sample ``n_rows`` rows and write them to ``output`` (a path or table name; format from its
        name, Delta for folders and tables) as ``spark-synth sample`` does: all or nothing, and a Delta
        output carries this fit's provenance (table properties, comment, commit userMetadata).
        ``source_model`` (a :class:`~spark_synth.io.SourceModel`) names the MLflow model this
        synthesizer was loaded from; :func:`spark_synth.track.write_model_sample` passes it.
        ``conditions`` and ``rows_per``: as :meth:`sample`.
        Returns where the rows went. Spends no privacy budget; works under Spark Connect too."""
        from .io import check_output

        self._check_fitted()
        check_rows(n_rows)
        check_seed(seed)
        if spark is None:
            from .session import get_spark

            spark = get_spark()
        return self.write_to(check_output(spark, output, overwrite), n_rows, seed, overwrite, spark, source_model,
                             conditions=conditions, rows_per=rows_per)

    def write_to(self, location, n_rows: int, seed: int | None, overwrite: bool, spark, source_model=None, *,
                 conditions=None, rows_per: str | None = None) -> str:
        """:meth:`write` to an output ``location`` already checked by :func:`~spark_synth.io.check_output`
        (``spark-synth run`` checks it before fitting): sample, write with provenance, note what the sampling reported."""
        from .io import write_output

        _log.info("sample and write: %d rows to %s", n_rows, location.target)
        rows = self.sample(n_rows, seed=seed, spark=spark, conditions=conditions, rows_per=rows_per)
        written = write_output(spark, rows, location, overwrite,
                               self.provenance(source_model), column_names=list(self.schema_.names))
        self.note_sampling()
        return written

    def provenance(self, source_model=None):
        """The :class:`~spark_synth.io.Provenance` of rows sampled from this fit: its spend, guarantee,
        engine and ids (the MLflow run id only when the fit was tracked), this version; with
        ``source_model`` (a :class:`~spark_synth.io.SourceModel`), the MLflow model they came from —
        whose run, the one the fit was logged in, is the run id when the saved state has none."""
        from .io import Provenance

        self._check_fitted()
        run_id = getattr(self, "mlflow_run_id_", None) or (source_model.run_id if source_model is not None else None)
        report = self.privacy_report_
        # δ includes a DP-drafted schema's δ_approx (the fit is (ε, δ + δ_approx)-DP; see PrivacyReport)
        return Provenance(epsilon=report.epsilon_spent, delta=report.delta + report.delta_approx, rho=report.rho_spent,
                          engine=self.engine, version=__version__, fit_id=report.fit_id,
                          mlflow_run_id=run_id, dp=report.dp_guarantee,
                          neighbouring_relation=report.neighbouring_relation, source_model=source_model)

    # ---- persistence ---------------------------------------------------------------------
    def to_dict(self) -> dict:
        """Everything needed to sample again: DP post-processed state only, no rows."""
        self._check_fitted()
        return {
            "format_version": FORMAT_VERSION,
            "spark_synth_version": __version__,
            "engine": self.engine,
            "engine_options": self.engine_options,
            "epsilon": self.epsilon,
            "delta": self.delta,
            "out_of_domain": self.out_of_domain,
            **({} if self.unit.is_row else {"privacy_unit": self.unit.column, "max_rows_per_unit": self.unit.max_rows}),
            "schema": self.schema_.to_dict(),
            "model": self.model_.to_state(),
            "privacy": self.privacy_report_.to_dict(),
            **({"mlflow_run_id": self.mlflow_run_id_} if getattr(self, "mlflow_run_id_", None) else {}),
        }

    def save(self, path: str | Path) -> Path:
        """Write the fitted synthesizer to directory ``path`` (refuses to overwrite)."""
        path = Path(path)
        if (path / MODEL_FILE).exists():
            raise ParameterError("model path", "a directory without a saved synthesizer", str(path))
        path.mkdir(parents=True, exist_ok=True)
        staging = path / f".{MODEL_FILE}.tmp"
        staging.write_text(json.dumps(self.to_dict()), encoding="utf-8")
        staging.replace(path / MODEL_FILE)
        return path

    @classmethod
    def load(cls, path: str | Path) -> "Synthesizer":
        file = Path(path) / MODEL_FILE
        if not file.is_file():
            raise UserInputError(f"no saved synthesizer at '{path}' (expected {MODEL_FILE}); run `spark-synth fit` first")
        state = json.loads(file.read_text(encoding="utf-8"))
        if state.get("format_version") != FORMAT_VERSION:
            raise UserInputError(f"'{file}' has format version {state.get('format_version')}; expected {FORMAT_VERSION}")
        synth = cls(state["engine"], epsilon=state["epsilon"], delta=state["delta"],
                    out_of_domain=state["out_of_domain"], engine_options=state["engine_options"],
                    privacy_unit=state.get("privacy_unit"), max_rows_per_unit=state.get("max_rows_per_unit"))
        synth.schema_ = schema_from_dict(state["schema"])
        synth.model_ = model_class(state["engine"]).from_state(state["model"], synth.schema_)
        synth.privacy_report_ = PrivacyReport.from_dict(state["privacy"], f"the privacy report in '{file}'")
        synth.measure_passes_, synth.measure_pass_seconds_ = 0, []
        synth.timings_ = {}
        synth.mlflow_run_id_ = state.get("mlflow_run_id")  # the fit's MLflow run, when it was tracked
        return synth

    def _check_fitted(self) -> None:
        if not hasattr(self, "model_"):
            raise NotFittedError("this Synthesizer is not fitted yet: call fit(df, schema) first")
