"""``--engine auto``: which engine to fit, from public facts only (the schema, the run's ε and what is installed).

Never the data: the choice reads the schema's columns and target, the run's ε and whether PyTorch is
importable, so it costs no budget and is the same for every table with that schema and ε. The rule follows the measured
guidance (benchmarks/RESULTS.md: "FPT at scale", and issue 50's yardstick of every shared table at
ε = 0.3, 1 and 3, the README's engine table):

* ``fpt`` when PyTorch is installed and the table has at most :data:`MAX_FPT_COLUMNS` columns — on
  issue 50's yardstick (seven shared tables at ε = 0.3, 1 and 3), with the workload below, its
  2-/3-way TVD is at or below the better of AIM and MST in all 21 cells; of our engines it has
  the best TSTR (R² too) in all but one cell (california_housing at ε = 0.3, where SPLICE's R² is
  0.01 higher at a much higher TVD) and the lowest 2-/3-way TVD on every table but german_credit
  (800 rows: ``independent``'s is lower there, its TSTR lower); and it ran on 108- and 300-column
  tables;
* ``dgm`` above that: FPT fitted on partitions of at most :data:`MAX_FPT_COLUMNS` columns, joined by
  the DP validator (not measured at that width: say so; at 300 columns DGM's 2-way TVD was 0.088
  against FPT's 0.070 — FPT's first pass answers every pair, so its memory grows as d²);
* ``independent`` when PyTorch is not installed (the ``torch`` extra).

fpt's workload follows the run's ε and the schema (public; set from the shared tables, RESULTS.md
"Issue 50: fpt's workload by ε and table"):

* on a table of categorical columns only (no numeric or date column, so every 3-way table is a
  product of category counts, not of 16 numeric ranges) at ε ≥ :data:`THREE_WAY_EPSILON`, the 3-way
  workload (``max_way=3``): on mushroom (23 categorical columns; five runs each) TSTR 0.9935 → 0.9968
  at ε = 1 and 0.9976 → 0.9986 at ε = 3, 3-way TVD 0.133 → 0.124 and 0.081 → 0.071; at ε = 0.3 it
  did not help there, nor on credit_default (numeric columns) at any ε;
* below ε = :data:`TARGET_TRIPLES_BELOW_EPSILON`, on a table of at least :data:`TARGET_TRIPLE_COLUMNS`
  columns with a categorical target, (column, column, target) marginals join the 2-way workload
  (``target_triples``): the 2-way workload gives the target's pairs 2/d of its weight, and the rounds
  then rarely measure what a classifier of the target needs. Below ε =
  :data:`ALL_TARGET_TRIPLES_BELOW_EPSILON` every such triple: at ε = 0.3 it raised TSTR on
  credit_default, mushroom, bank_marketing and diabetes_readmission within the peers' TVD. From there
  only the triples of the :data:`STRONGEST_TARGET_COLUMNS` columns whose noisy target pairs depend most
  (``target_triple_columns``, chosen in fpt's first pass): at ε = 1 all of them lowered
  bank_marketing's TSTR and raised its 2-way TVD by a third, those of four columns did neither and
  kept credit_default's gain (RESULTS.md, "Issue 50: the target triples of the strongest columns") —
  unless at least :data:`EVERY_TRIPLE_AT_NOISE_SHARE` of the target pairs fail their χ² test
  (``every_triple_at_noise_share``, also decided in the first pass): then every triple, as below ε = 1.
  credit_default's thirteen amounts and AGE show no dependence on the target of their own (13–14 of
  23 pairs left out), and there every triple raised TSTR 0.765 → 0.768 (ten runs each);
  bank_marketing's pairs mostly carry it (5 of 20 left out) and keep the four columns' (RESULTS.md,
  "Issue 50: every triple where the target pairs are noise").
  Not at ε = 3 (bank_marketing's TSTR fell 0.925 → 0.919), nor on adult (15 columns) and
  california_housing (10, a regression target), whose 2-way TVD they raised above the better peer's
  at ε = 0.3.
"""

from __future__ import annotations

import importlib.util
import math
from dataclasses import dataclass, field

from ..errors import ParameterError

AUTO = "auto"
#: The widest table FPT was measured on (a generated 300-column network, benchmarks/RESULTS.md).
MAX_FPT_COLUMNS = 300
#: The smallest ε at which ``auto`` gives fpt the 3-way workload on a table of categorical columns.
THREE_WAY_EPSILON = 1.0
#: Below this ε ``auto`` adds target triples to fpt's workload (tables of TARGET_TRIPLE_COLUMNS
#: columns or more, with a categorical target): every one below ALL_TARGET_TRIPLES_BELOW_EPSILON,
#: above it those of the STRONGEST_TARGET_COLUMNS columns whose target pairs depend most.
TARGET_TRIPLES_BELOW_EPSILON = 3.0
ALL_TARGET_TRIPLES_BELOW_EPSILON = 1.0
STRONGEST_TARGET_COLUMNS = 4
#: ... unless at least this share of the target pairs is left out as noise: then every triple.
EVERY_TRIPLE_AT_NOISE_SHARE = 0.4
TARGET_TRIPLE_COLUMNS = 20


@dataclass(frozen=True)
class EngineChoice:
    """The engine ``auto`` chose, its options, and why (one line a user can read)."""

    engine: str
    reason: str
    options: dict = field(default_factory=dict)

    def as_dict(self) -> dict:
        return {"engine": self.engine, "reason": self.reason, **({"engine_options": self.options} if self.options else {})}


def choose_engine(columns: int, torch_installed: bool | None = None, *, epsilon: float | None = None,
                  categorical_only: bool = False, categorical_target: bool = False) -> EngineChoice:
    """The engine for a table of ``columns`` columns (public: the schema's width), see the module doc;
    ``epsilon`` (the run's, public), ``categorical_only`` (the schema has no numeric or date column)
    and ``categorical_target`` (its target has categories) decide fpt's workload."""
    if torch_installed is None:
        torch_installed = importlib.util.find_spec("torch") is not None
    if not torch_installed:
        return EngineChoice("independent", "PyTorch is not installed, and fpt, splice and dgm need it "
                                           "(pip install 'spark-synth[torch]')")
    if columns <= MAX_FPT_COLUMNS:
        reason = (f"{columns} columns: fpt has the lowest 2-/3-way TVD of the engines on the shared "
                  f"tables and up to {MAX_FPT_COLUMNS} columns (benchmarks/RESULTS.md)")
        if epsilon is not None and categorical_only and epsilon >= THREE_WAY_EPSILON:
            return EngineChoice("fpt", reason + f"; categorical columns only at epsilon >= {THREE_WAY_EPSILON:g}: "
                                                "the 3-way workload (max_way=3)", {"max_way": 3})
        if (epsilon is not None and categorical_target and epsilon < TARGET_TRIPLES_BELOW_EPSILON
                and columns >= TARGET_TRIPLE_COLUMNS):
            wide = f"; a categorical target, {TARGET_TRIPLE_COLUMNS} columns or more at epsilon < "
            if epsilon < ALL_TARGET_TRIPLES_BELOW_EPSILON:
                return EngineChoice("fpt", reason + wide + f"{ALL_TARGET_TRIPLES_BELOW_EPSILON:g}: the target triples join "
                                                           "the 2-way workload (target_triples)", {"target_triples": True})
            return EngineChoice("fpt", reason + wide + f"{TARGET_TRIPLES_BELOW_EPSILON:g}: the target triples of the "
                                f"{STRONGEST_TARGET_COLUMNS} columns whose target pairs depend most join the 2-way workload, "
                                f"every one where at least {EVERY_TRIPLE_AT_NOISE_SHARE:.0%} of the target pairs are noise "
                                f"(target_triples, target_triple_columns={STRONGEST_TARGET_COLUMNS}, "
                                f"every_triple_at_noise_share={EVERY_TRIPLE_AT_NOISE_SHARE:g})",
                                {"target_triples": True, "target_triple_columns": STRONGEST_TARGET_COLUMNS,
                                 "every_triple_at_noise_share": EVERY_TRIPLE_AT_NOISE_SHARE})
        return EngineChoice("fpt", reason)
    parts = math.ceil(columns / MAX_FPT_COLUMNS)
    return EngineChoice("dgm", f"{columns} columns, more than fpt was measured on ({MAX_FPT_COLUMNS}): dgm fits fpt on "
                               f"{parts} partitions of the columns (not measured at this width)", {"n_partitions": parts})


def resolve_engine(engine: str, schema, engine_options, epsilon: float | None = None) -> tuple[str, object, EngineChoice | None]:
    """(engine, engine options, the choice when ``engine`` is ``auto``, else None) for a table of
    ``schema`` at ``epsilon``. The options (a mapping or the engine's typed config) pass through;
    ``auto`` takes none, and its choice's are a mapping."""
    if engine != AUTO:
        return engine, engine_options, None
    if engine_options:
        raise ParameterError("engine_options", "none with --engine auto: name the engine they belong to (e.g. --engine fpt)",
                             sorted(engine_options) if isinstance(engine_options, dict) else engine_options)
    choice = choose_engine(len(schema), epsilon=epsilon, categorical_only=categorical_only(schema),
                           categorical_target=categorical_target(schema))
    return choice.engine, dict(choice.options) or None, choice


def categorical_only(schema) -> bool:
    """Whether every column of ``schema`` has categories (no numeric or date column)."""
    return all(column.type.is_discrete for column in schema)


def categorical_target(schema) -> bool:
    """Whether ``schema`` names a target and it has categories (a classification target)."""
    return schema.target is not None and schema[schema.target].type.is_discrete
