"""``--engine auto``: which engine to fit, from public facts only (the schema and what is installed).

Never the data: the choice reads the schema's column count and whether PyTorch is importable, so it
costs no budget and is the same for every table with that schema. The rule follows the measured
guidance (benchmarks/RESULTS.md: "FPT at scale", and issue 50's yardstick of every shared table at
ε = 0.3, 1 and 3, the README's engine table):

* ``fpt`` when PyTorch is installed and the table has at most :data:`MAX_FPT_COLUMNS` columns — on
  issue 50's yardstick (seven shared tables at ε = 0.3, 1 and 3) its 2-/3-way TVD is at or below the
  better of AIM and MST in 20 of the 21 cells (not mushroom's 3-way at ε = 1); of our engines it has
  the best TSTR (R² too) in all but one cell (california_housing at ε = 0.3, where SPLICE's R² is
  0.01 higher at a much higher TVD) and the lowest 2-/3-way TVD on every table but german_credit
  (800 rows: ``independent``'s is lower there, its TSTR lower); and it ran on 108- and 300-column
  tables;
* ``dgm`` above that: FPT fitted on partitions of at most :data:`MAX_FPT_COLUMNS` columns, joined by
  the DP validator (not measured at that width: say so; at 300 columns DGM's 2-way TVD was 0.088
  against FPT's 0.070 — FPT's first pass answers every pair, so its memory grows as d²);
* ``independent`` when PyTorch is not installed (the ``torch`` extra).

On a table of categorical columns only (no numeric or date column, so every 3-way table is a product
of category counts, not of 16 numeric ranges) at ε ≥ :data:`THREE_WAY_EPSILON`, ``fpt`` gets the
3-way workload (``max_way=3``): on mushroom (23 categorical columns; five runs each) it took TSTR from
0.9935 to 0.9968 at ε = 1 and from 0.9976 to 0.9986 at ε = 3, and 3-way TVD from 0.133 to 0.124 and
from 0.081 to 0.071 (benchmarks/RESULTS.md, "Issue 50: the 3-way workload for categorical tables");
at ε = 0.3 it did not help there, nor on credit_default (numeric columns) at any ε.
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


@dataclass(frozen=True)
class EngineChoice:
    """The engine ``auto`` chose, its options, and why (one line a user can read)."""

    engine: str
    reason: str
    options: dict = field(default_factory=dict)

    def as_dict(self) -> dict:
        return {"engine": self.engine, "reason": self.reason, **({"engine_options": self.options} if self.options else {})}


def choose_engine(columns: int, torch_installed: bool | None = None, *, epsilon: float | None = None,
                  categorical_only: bool = False) -> EngineChoice:
    """The engine for a table of ``columns`` columns (public: the schema's width), see the module doc;
    ``epsilon`` (the run's, public) and ``categorical_only`` (the schema has no numeric or date column)
    decide fpt's workload."""
    if torch_installed is None:
        torch_installed = importlib.util.find_spec("torch") is not None
    if not torch_installed:
        return EngineChoice("independent", "PyTorch is not installed, and fpt, splice and dgm need it "
                                           "(pip install 'spark-synth[torch]')")
    if columns <= MAX_FPT_COLUMNS:
        reason = (f"{columns} columns: fpt has the lowest 2-/3-way TVD of the engines on the shared "
                  f"tables and up to {MAX_FPT_COLUMNS} columns (benchmarks/RESULTS.md)")
        if categorical_only and epsilon is not None and epsilon >= THREE_WAY_EPSILON:
            return EngineChoice("fpt", reason + f"; categorical columns only at epsilon >= {THREE_WAY_EPSILON:g}: "
                                                "the 3-way workload (max_way=3)", {"max_way": 3})
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
    choice = choose_engine(len(schema), epsilon=epsilon, categorical_only=categorical_only(schema))
    return choice.engine, dict(choice.options) or None, choice


def categorical_only(schema) -> bool:
    """Whether every column of ``schema`` has categories (no numeric or date column)."""
    return all(column.type.is_discrete for column in schema)
