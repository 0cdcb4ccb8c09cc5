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
"""

from __future__ import annotations

import importlib.util
import math
from dataclasses import dataclass, field

from ..errors import ParameterError

AUTO = "auto"
#: The widest table FPT was measured on (a generated 300-column network, benchmarks/RESULTS.md).
MAX_FPT_COLUMNS = 300


@dataclass(frozen=True)
class EngineChoice:
    """The engine ``auto`` chose, its options, and why (one line a user can read)."""

    engine: str
    reason: str
    options: dict = field(default_factory=dict)

    def as_dict(self) -> dict:
        return {"engine": self.engine, "reason": self.reason, **({"engine_options": self.options} if self.options else {})}


def choose_engine(columns: int, torch_installed: bool | None = None) -> EngineChoice:
    """The engine for a table of ``columns`` columns (public: the schema's width), see the module doc."""
    if torch_installed is None:
        torch_installed = importlib.util.find_spec("torch") is not None
    if not torch_installed:
        return EngineChoice("independent", "PyTorch is not installed, and fpt, splice and dgm need it "
                                           "(pip install 'spark-synth[torch]')")
    if columns <= MAX_FPT_COLUMNS:
        return EngineChoice("fpt", f"{columns} columns: fpt has the lowest 2-/3-way TVD of the engines on the shared "
                                   f"tables and up to {MAX_FPT_COLUMNS} columns (benchmarks/RESULTS.md)")
    parts = math.ceil(columns / MAX_FPT_COLUMNS)
    return EngineChoice("dgm", f"{columns} columns, more than fpt was measured on ({MAX_FPT_COLUMNS}): dgm fits fpt on "
                               f"{parts} partitions of the columns (not measured at this width)", {"n_partitions": parts})


def resolve_engine(engine: str, columns: int, engine_options) -> tuple[str, object, EngineChoice | None]:
    """(engine, engine options, the choice when ``engine`` is ``auto``, else None). The options (a
    mapping or the engine's typed config) pass through; ``auto`` takes none, and its choice's are a mapping."""
    if engine != AUTO:
        return engine, engine_options, None
    if engine_options:
        raise ParameterError("engine_options", "none with --engine auto: name the engine they belong to (e.g. --engine fpt)",
                             sorted(engine_options) if isinstance(engine_options, dict) else engine_options)
    choice = choose_engine(columns)
    return choice.engine, dict(choice.options) or None, choice
