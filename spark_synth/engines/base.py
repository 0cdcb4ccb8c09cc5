"""What every engine is, and the three things it gets from the pipeline (it never sees rows or Spark).

* :class:`MeasurementOracle` — the only way to learn about the data: noisy measurements of public
  queries and private selections among candidate queries, each charged to a fixed total budget.
  Exact answers stay inside the oracle. A plan measured once (``independent``, SPLICE) and a
  many-round loop (PMW/AIM-style select → measure → refit) are both just calls to it.
* :class:`TaskRunner` — runs pure functions of public/noisy inputs in parallel (on the executors
  under Spark, in-process in tests), with per-task seeds.
* the :class:`~spark_synth.schema.Schema` — the public domain.

An engine returns a :class:`FittedModel` whose state is post-processed DP output only. Engines
are registered in :mod:`spark_synth.engines` (see ``docs/engines.md``).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import asdict, dataclass
from typing import Any, Callable, ClassVar, Sequence

import numpy as np

from ..errors import InternalError
from ..privacy import NoisyMeasurement
from ..queries import MarginalQuery, MomentQuery, Query
from ..schema import Schema
from .evidence import Evidence
from .options import engine_config

#: Score kinds the oracle computes itself for :meth:`MeasurementOracle.select` (engines pass the
#: model's answers; the oracle derives the score's sensitivity from the candidates' own).
#: ``weighted_l1``: w_i · ‖exact_i − model_i‖₁ − offset_i (AIM's choice; Δ = max_i w_i · L1-sensitivity_i).
#: ``weighted_l2``: w_i · ‖exact_i − model_i‖₂ − offset_i (Δ = max_i w_i · L2-sensitivity_i).
SCORE_KINDS = ("weighted_l1", "weighted_l2")


class MeasurementOracle(ABC):
    """Noisy access to the private table under a fixed total zCDP budget (a privacy filter).

    Every call states its ρ; a call that would exceed what is left raises
    :class:`~spark_synth.errors.BudgetExhausted` before anything is measured, and the report lists
    every call in order. Exact answers never leave the oracle.
    """

    __slots__ = ()

    @property
    @abstractmethod
    def rho_total(self) -> float:
        """This oracle's whole budget (ρ-zCDP)."""

    @property
    @abstractmethod
    def rho_remaining(self) -> float:
        """What is left of it."""

    @abstractmethod
    def measure(self, query: Query, rho: float) -> NoisyMeasurement:
        """The query's answer plus discrete Gaussian noise of cost ρ."""

    @abstractmethod
    def measure_many(self, requests: Sequence[tuple[Query, float]]) -> list[NoisyMeasurement]:
        """Several (query, ρ) measurements; every exact answer not known yet comes from ONE scan."""

    @abstractmethod
    def prepare(self, queries: Sequence[Query]) -> None:
        """Compute (in one scan) and keep the exact answers of a candidate workload; spends nothing."""

    @abstractmethod
    def select(self, candidates: Sequence[Query], score_kind: str, model_answers: Sequence[np.ndarray], rho: float, *,
               weights: Sequence[float] | None = None, offsets: Sequence[float] | None = None) -> Query:
        """One candidate, drawn by the exponential mechanism (cost ρ) on a built-in score (see
        :data:`SCORE_KINDS`) of each candidate's exact answer against ``model_answers[i]`` (in the
        answer's real units). ``weights`` (≥ 0) and ``offsets`` must be public."""

    @abstractmethod
    def child(self, rho: float, label: str, columns: Sequence[str] | None = None) -> "MeasurementOracle":
        """An oracle holding ``rho`` of this one's budget (reserved now); its calls are reported
        under this one, labelled ``label``. With ``columns`` it answers queries over those columns
        only, as if the table had no others (a DGM partition's engine sees its sub-schema)."""

    @property
    def rows_per_unit(self) -> int:
        """The privacy unit's row bound K (public; 1 for row-level privacy): every measurement's
        noise is K times its query's one-row sensitivity over √(2ρ). Engines plan budgets with it
        (expected σ = K / √(2ρ) for a count)."""
        return 1

    def rows_not_covered_by_dp(self, n_rows: int, seed: int, purpose: str) -> np.ndarray:
        """At most ``n_rows`` real rows (uniform, seeded) as an (n, d) code matrix — NOT
        differentially private. Only an explicit user opt-in may call it (e.g. DGM's
        ``validator=real``): the report records ``purpose`` and states ``dp_guarantee: false``.
        Oracles without row access refuse."""
        raise NotImplementedError("this oracle gives no access to rows")


def task_seeds(seed: int, n_tasks: int) -> list[int]:
    """Independent per-task seeds derived from one seed (the same under every runner)."""
    return [int(s.generate_state(1, np.uint64)[0] >> np.uint64(1)) for s in np.random.SeedSequence(int(seed)).spawn(n_tasks)]


class TaskRunner(ABC):
    """Runs ``fn(task, seed)`` for every task, in parallel where it can; results in task order.

    ``fn`` must be a pure function of public or noisy inputs (it is shipped to executors); each
    call gets its own seed from :func:`task_seeds`.
    """

    @abstractmethod
    def map(self, fn: Callable[[Any, int], Any], tasks: Sequence[Any], seed: int = 0) -> list:
        """``[fn(task, seed_i) for i, task in enumerate(tasks)]``, computed by this runner."""


class LocalTaskRunner(TaskRunner):
    """In-process runner (tests, single-node use): the same seeds as the Spark runner."""

    def map(self, fn: Callable[[Any, int], Any], tasks: Sequence[Any], seed: int = 0) -> list:
        tasks = list(tasks)
        return [fn(task, s) for task, s in zip(tasks, task_seeds(seed, len(tasks)))]


class FittedModel(ABC):
    """A fitted generative model over codes. Its state holds only DP post-processed values.

    A model whose sampling has something to report (DGM: the rows its validator never accepted)
    names integer ``sampling_counters``, returns them from :meth:`sample_counted`, and turns their
    sums over the sampling tasks into :meth:`sampling_report` — which the pipeline puts in the JSON
    line under ``sampling_report_name`` and in MLflow, without knowing which engine made it."""

    engine: ClassVar[str]
    #: Integer counts a sampling task reports (summed over the tasks); () for nothing to report.
    sampling_counters: ClassVar[tuple[str, ...]] = ()
    #: The JSON line's key of :meth:`sampling_report`.
    sampling_report_name: ClassVar[str] = "sampling"
    #: Appended to the "sample: N rows in P Spark tasks" progress line (how a task samples), or "".
    sampling_note: ClassVar[str] = ""

    @abstractmethod
    def sample_codes(self, n_rows: int, rng: np.random.Generator) -> np.ndarray:
        """Draw an ``(n_rows, d)`` int64 code matrix (columns in schema order)."""

    def sample_counted(self, n_rows: int, rng: np.random.Generator) -> tuple[np.ndarray, dict[str, int]]:
        """The same draws as :meth:`sample_codes`, with this task's :attr:`sampling_counters`."""
        return self.sample_codes(n_rows, rng), {}

    def conditioned(self, evidence: Evidence) -> tuple["FittedModel", float]:
        """(a model of this model's rows given ``evidence``, sampled exactly — nothing is rejected —,
        the evidence's probability under this model). Post-processing: costs no budget."""
        raise NotImplementedError(f"the {self.engine} model cannot sample under a condition")

    def sampling_report(self, counts: dict[str, int | None]) -> tuple[dict, str]:
        """What a write of sampled rows reports, from the counters summed over its tasks (None where
        the session could not observe them): the report and one progress line. Post-processing."""
        return dict(counts), "sample: " + ", ".join(f"{k} {v}" for k, v in counts.items())

    @abstractmethod
    def to_state(self) -> dict:
        """JSON-serialisable state, enough for :meth:`from_state` to rebuild the model."""

    @classmethod
    @abstractmethod
    def from_state(cls, state: dict, schema: Schema) -> "FittedModel":
        """Rebuild a model from :meth:`to_state` output."""

    def fit_summary(self) -> dict:
        """Public facts about the fit worth logging (e.g. treewidth, rounds, selected query names):
        post-processed DP output only. Numbers become MLflow metrics, the rest ``fit_summary.json``."""
        return {}

    def loss_curves(self) -> dict[str, list[float]]:
        """The fit's loss curves (name → one value per step), logged as MLflow step metrics
        ``fit.curve.NAME``: losses of fits to noisy measurements, post-processing only. They are
        kept from the fit that made the model, not saved with it."""
        return dict(getattr(self, "_loss_curves", {}))

    def record_loss_curves(self, curves: dict[str, list[float]]) -> "FittedModel":
        """Keep ``curves`` for :meth:`loss_curves`; returns the model."""
        self._loss_curves = {str(k): [float(v) for v in values] for k, values in curves.items()}
        return self


@dataclass(frozen=True, kw_only=True)
class NoOptions:
    """The configuration of an engine that takes no options."""


class Engine(ABC):
    """A synthesis method: SELECT and MEASURE through the oracle → FIT from noisy answers.

    ``config_class`` is a frozen keyword-only dataclass of the engine's options; the constructor
    checks names and types (:func:`~spark_synth.engines.options.engine_config`), the dataclass
    its ranges.
    """

    name: ClassVar[str]
    model_class: ClassVar[type[FittedModel]]
    #: Optional dependencies (``(module, extra)``) the engine needs at fit time; checked when it is built.
    requires: ClassVar[tuple[tuple[str, str], ...]] = ()
    config_class: ClassVar[type] = NoOptions

    def __init__(self, config=None, /, **options):
        """``config``: the engine's typed config, checked when it was made (:func:`~spark_synth.engines.typed_config`),
        kept as it is; or keyword ``options``, checked here (names and types; ranges by the dataclass)."""
        if config is not None and (options or not isinstance(config, self.config_class)):
            raise InternalError(f"{type(self).__name__}(...): give a {self.config_class.__name__} or keyword options, not "
                                f"{type(config).__name__}{' and options' if options else ''}")
        self.options = config if config is not None else engine_config(self.name, self.config_class, options)

    def fit(self, schema: Schema, oracle: MeasurementOracle, tasks: TaskRunner) -> FittedModel:
        """Measure what the method needs through ``oracle`` and fit a model from the noisy answers: by
        default :meth:`fit_measurements` of :meth:`measure` (an engine that does not split its fit
        overrides this)."""
        return self.fit_measurements(schema, self.measure(schema, oracle))

    def config(self) -> dict:
        """The engine's full configuration (for tracking)."""
        return asdict(self.options)

    def planned_queries(self, schema: Schema) -> list[Query]:
        """Queries (from the schema and options alone: public) whose exact answers this engine's
        measurement will ask for; a caller measuring several engines (DGM's partitions) prepares
        them together, so one scan answers all of them. An engine listing none scans on its own."""
        return []

    # An engine may split fit() in two, so a caller can measure on the driver and fit elsewhere
    # (DGM fits its partitions as parallel executor tasks): measure() makes every oracle call and
    # returns a picklable value of noisy answers and public facts; fit_measurements() turns it into
    # the model without the oracle (post-processing). fit() is then their composition.
    def measure(self, schema: Schema, oracle: MeasurementOracle) -> Any:
        """Every measurement the fit needs (engines that split their fit override this)."""
        raise NotImplementedError(f"engine {self.name!r} does not split its fit")

    def fit_measurements(self, schema: Schema, measured: Any) -> FittedModel:
        """The model from :meth:`measure`'s output alone (post-processing)."""
        raise NotImplementedError(f"engine {self.name!r} does not split its fit")

    @classmethod
    def splits_fit(cls) -> bool:
        """Whether :meth:`measure` and :meth:`fit_measurements` are implemented."""
        return cls.measure is not Engine.measure and cls.fit_measurements is not Engine.fit_measurements


__all__ = ["Engine", "FittedModel", "MeasurementOracle", "TaskRunner", "LocalTaskRunner", "NoOptions", "task_seeds",
           "SCORE_KINDS", "Evidence", "NoisyMeasurement", "Query", "MarginalQuery", "MomentQuery"]
