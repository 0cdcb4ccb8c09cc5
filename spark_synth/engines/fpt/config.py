"""FPT's options (a frozen, keyword-only dataclass validated at construction)."""

from __future__ import annotations

import math
from dataclasses import dataclass

from ...errors import ParameterError

MODES = ("pmw", "lp")
TARGET_SPLITS = ("full", "model", "even")
#: The junction tree's calibration inside the fit (θ, the loss and the released model stay float64).
FIT_PRECISIONS = ("float32", "float64")
#: ρ share of the 1-way pass when ``one_way_share`` is None (null): at most (and without target pairs) / at least.
ONE_WAY_SHARE, ONE_WAY_SHARE_MIN = 0.2, 0.05


@dataclass(frozen=True, kw_only=True)
class FptConfig:
    """Options of the ``fpt`` engine (defaults chosen by measurement: see docs/fpt.md)."""

    mode: str = "pmw"
    max_way: int = 2
    numeric_groups: int = 16
    max_marginal_cells: int = 10_000
    max_model_cells: int = 250_000
    rounds_per_column: float = 4.0
    max_candidates: int = 1500
    one_way_share: float | None = None
    one_way_error: float = 0.028
    compress_threshold: float = 3.0
    refine_dense: bool = False
    target_share: float = 0.2
    target_pair_level: float = 0.01
    target_split: str = "model"
    target_triples: bool = False
    target_triple_columns: int = 0
    every_triple_at_noise_share: float = 0.0
    select_share: float = 0.1
    iterations: int = 60
    final_iterations: int = 300
    anneal: bool = True
    hierarchy_crosses: list | None = None
    lp_max_iterations: int = 200
    lp_max_cells: int = 1_000_000
    device: str = "auto"
    cpu_threads: int = 0
    fit_precision: str = "float32"

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ParameterError("fpt.mode", f"one of {list(MODES)}", self.mode)
        for name, low in (("max_way", 1), ("numeric_groups", 2), ("max_marginal_cells", 2), ("max_model_cells", 2), ("max_candidates", 1), ("iterations", 1),
                          ("final_iterations", 0), ("lp_max_iterations", 1), ("lp_max_cells", 2), ("cpu_threads", 0)):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                raise ParameterError(f"fpt.{name}", f"a whole number >= {low}", value)
        if self.max_way > 3:
            raise ParameterError("fpt.max_way", "1, 2 or 3 (marginals of at most three columns)", self.max_way)
        if not (isinstance(self.rounds_per_column, (int, float)) and math.isfinite(self.rounds_per_column) and self.rounds_per_column > 0):
            raise ParameterError("fpt.rounds_per_column", "a finite number > 0", self.rounds_per_column)
        if not (isinstance(self.compress_threshold, (int, float)) and not isinstance(self.compress_threshold, bool)
                and math.isfinite(self.compress_threshold) and self.compress_threshold >= 0):
            raise ParameterError("fpt.compress_threshold", "a finite number >= 0 (0: no domain compression)", self.compress_threshold)
        for name in ("one_way_share", "select_share", "one_way_error"):
            value = getattr(self, name)
            if not (value is None and name == "one_way_share") and not (isinstance(value, (int, float)) and 0 < value < 1):
                raise ParameterError(f"fpt.{name}", "a number in (0, 1)", value)
        if not (isinstance(self.target_share, (int, float)) and not isinstance(self.target_share, bool)
                and 0 <= self.target_share and (self.one_way_share or ONE_WAY_SHARE) + self.target_share < 1):
            raise ParameterError("fpt.target_share", "a number >= 0 (0: no target pairs) with one_way_share + target_share < 1",
                                 self.target_share)
        if not (isinstance(self.target_pair_level, (int, float)) and not isinstance(self.target_pair_level, bool)
                and 0 <= self.target_pair_level <= 1):
            raise ParameterError("fpt.target_pair_level", "a number in [0, 1] (0: every target pair enters the model)",
                                 self.target_pair_level)
        if not isinstance(self.target_triples, bool):
            raise ParameterError("fpt.target_triples", "true or false", self.target_triples)
        if isinstance(self.target_triple_columns, bool) or not isinstance(self.target_triple_columns, int) \
                or self.target_triple_columns < 0 or self.target_triple_columns == 1:
            raise ParameterError("fpt.target_triple_columns", "0 (every column) or a whole number >= 2", self.target_triple_columns)
        if self.target_triple_columns and not self.target_share > 0:
            raise ParameterError("fpt.target_triple_columns", "0 when target_share is 0: the columns are ranked by their "
                                 "target pairs, which target_share measures", self.target_triple_columns)
        share = self.every_triple_at_noise_share
        if isinstance(share, bool) or not isinstance(share, (int, float)) or not 0 <= share <= 1:
            raise ParameterError("fpt.every_triple_at_noise_share", "a number in [0, 1] (0: never)", share)
        if share and not self.target_triple_columns:
            raise ParameterError("fpt.every_triple_at_noise_share", "0 unless target_triple_columns >= 2: it decides when "
                                 "those columns' triples give way to every triple", share)
        if self.target_split not in TARGET_SPLITS:
            raise ParameterError("fpt.target_split", f"one of {list(TARGET_SPLITS)}", self.target_split)
        if self.fit_precision not in FIT_PRECISIONS:
            raise ParameterError("fpt.fit_precision", f"one of {list(FIT_PRECISIONS)}", self.fit_precision)
        if self.device not in ("auto", "cpu", "cuda"):
            raise ParameterError("fpt.device", "one of ['auto', 'cpu', 'cuda']", self.device)
        if self.hierarchy_crosses is not None and (not isinstance(self.hierarchy_crosses, list)
                                                   or not all(isinstance(c, str) for c in self.hierarchy_crosses)):
            raise ParameterError("fpt.hierarchy_crosses", "a list of column names", self.hierarchy_crosses)
