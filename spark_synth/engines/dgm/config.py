"""DGM's options (a frozen, keyword-only dataclass validated at construction)."""

from __future__ import annotations

import math
from dataclasses import dataclass

from ...errors import ParameterError

VALIDATORS = ("dp", "real", "none")
ACCEPTANCE = ("resample", "swap", "ratio", "threshold")


@dataclass(frozen=True, kw_only=True)
class DgmConfig:
    """Options of the ``dgm`` engine (see docs/dgm.md). Without ``partitions``, columns are grouped
    into ``n_partitions`` (2 when not given) by DP associations."""

    partitions: list | None = None
    n_partitions: int | None = None
    engines: str | list | None = None
    engine_options: dict | list | None = None
    validator: str = "dp"
    allow_non_dp_validator: bool = False
    association_share: float = 0.1
    validator_share: float = 0.15
    validator_pairs: int | None = None
    join_multiplier: int = 3
    max_rounds: int = 100
    patience: int = 3
    keep_fraction: float = 0.1
    acceptance: str = "swap"
    candidates_per_row: int = 50
    swap_sweeps: int = 100

    def __post_init__(self) -> None:
        if self.partitions is not None and self.n_partitions is not None:
            raise ParameterError("dgm.partitions", "left out when n_partitions is given (give one of the two)",
                                 {"partitions": self.partitions, "n_partitions": self.n_partitions})
        if self.partitions is not None and (not isinstance(self.partitions, list) or len(self.partitions) < 2 or not all(
                isinstance(p, list) and p and all(isinstance(c, str) for c in p) for p in self.partitions)):
            raise ParameterError("dgm.partitions", "a list of at least two non-empty lists of column names", self.partitions)
        if self.n_partitions is not None and (isinstance(self.n_partitions, bool) or not isinstance(self.n_partitions, int)
                                              or self.n_partitions < 2):
            raise ParameterError("dgm.n_partitions", "a whole number >= 2", self.n_partitions)
        if self.validator not in VALIDATORS:
            raise ParameterError("dgm.validator", f"one of {list(VALIDATORS)}", self.validator)
        if self.validator == "real" and self.allow_non_dp_validator is not True:
            raise ParameterError("dgm.allow_non_dp_validator", "true to use validator=real: its random forest trains on "
                                 "real rows, so the output is NOT covered by the DP guarantee (the privacy report, the run's "
                                 "JSON line and MLflow say so); or use validator=dp", self.allow_non_dp_validator)
        if self.acceptance not in ACCEPTANCE:
            raise ParameterError("dgm.acceptance", f"one of {list(ACCEPTANCE)}", self.acceptance)
        for name in ("association_share", "validator_share", "keep_fraction"):
            value = getattr(self, name)
            if not (isinstance(value, (int, float)) and not isinstance(value, bool) and 0 < value < 1):
                raise ParameterError(f"dgm.{name}", "a number in (0, 1)", value)
        for name, low in (("join_multiplier", 1), ("max_rounds", 1), ("patience", 1), ("candidates_per_row", 1), ("swap_sweeps", 1)):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                raise ParameterError(f"dgm.{name}", f"a whole number >= {low}", value)
        if self.validator_pairs is not None and (isinstance(self.validator_pairs, bool) or not isinstance(self.validator_pairs, int)
                                                 or self.validator_pairs < 1):
            raise ParameterError("dgm.validator_pairs", "a whole number >= 1 (or null: chosen from the column count)",
                                 self.validator_pairs)
        if self.validator != "dp" and self.validator_pairs is not None:
            raise ParameterError("dgm.validator_pairs", "null unless validator=dp (only the DP validator measures pairs)", self.validator_pairs)
        spent = (self.association_share if self.partitions is None else 0.0) + (self.validator_share if self.validator == "dp" else 0.0)
        if not spent < 0.9 or not math.isfinite(spent):
            raise ParameterError("dgm.validator_share", "small enough that association + validator shares stay below 0.9",
                                 self.validator_share)

    @property
    def partition_count(self) -> int:
        return len(self.partitions) if self.partitions is not None else (self.n_partitions or 2)
