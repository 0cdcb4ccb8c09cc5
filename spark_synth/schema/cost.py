"""The recorded cost of a DP schema pre-pass: what a schema file drafted with ``--dp-bounds`` spent.

The pre-pass is δ_approx-approximately ρ-zCDP (its thresholded counts cost δ_approx; see
:mod:`spark_synth.privacy.thresholding`), stated as (ε, δ)-DP with ``epsilon`` the conversion of ρ at
``delta_conversion`` and ``delta = delta_conversion + delta_approx``. It was spent once, on the
table the schema was drafted from; every fit using the schema adds ``delta_approx`` to its δ.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

from ..errors import SchemaError, UserInputError


@dataclass(frozen=True)
class PrepassCost:
    """``id`` (a random UUID, the pre-pass's ledger key), ρ, δ_approx and the (ε, δ) statement."""

    id: str
    rho: float
    delta_approx: float
    epsilon: float
    delta_conversion: float
    #: The relation the pre-pass was run under (``schema init --privacy-unit``): None for one row, else the
    #: unit's column, with ``unit_max_rows`` its row bound K. As :attr:`unit`, a PrivacyUnit.
    unit_column: str | None = None
    unit_max_rows: int = 1

    def __post_init__(self) -> None:
        if not isinstance(self.id, str) or not self.id:
            raise SchemaError(f"dp_prepass: 'id' must be a non-empty string; got {self.id!r}")
        for key in ("rho", "delta_approx", "epsilon", "delta_conversion"):
            value = getattr(self, key)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
                raise SchemaError(f"dp_prepass: '{key}' must be a finite number >= 0; got {value!r}")
        if not (0 < self.delta_conversion < 1) or not self.delta < 1:
            raise SchemaError(f"dp_prepass: delta_conversion + delta_approx must be in (0, 1); got "
                              f"{self.delta_conversion!r} + {self.delta_approx!r}")

    @property
    def delta(self) -> float:
        return self.delta_conversion + self.delta_approx

    @property
    def unit(self):
        """The :class:`~spark_synth.privacy.unit.PrivacyUnit` the pre-pass was run under."""
        from ..privacy.unit import PrivacyUnit

        return PrivacyUnit(self.unit_column, self.unit_max_rows)

    def to_dict(self) -> dict:
        out = {k: v for k, v in asdict(self).items() if k not in ("unit_column", "unit_max_rows")}
        if self.unit_column is not None:
            out["privacy_unit"] = self.unit.to_dict()
        return {**out, "delta": self.delta}

    @classmethod
    def from_dict(cls, raw: object, source: str) -> "PrepassCost":
        keys = ("id", "rho", "delta_approx", "epsilon", "delta_conversion")
        if not isinstance(raw, dict) or any(k not in raw for k in keys):
            raise SchemaError(f"{source}: 'dp_prepass' must be the mapping `schema init --dp-bounds` wrote, with {list(keys)}; "
                              f"restore it (or delete the file and draft it again)")
        from ..privacy.unit import PrivacyUnit

        try:
            unit = PrivacyUnit.from_dict(raw.get("privacy_unit"))
        except (ValueError, UserInputError) as exc:  # malformed, or a ParameterError naming the field
            raise SchemaError(f"{source}: 'dp_prepass.privacy_unit' is malformed ({exc}); restore it (or draft the schema "
                              "again)") from None
        return cls(**{k: raw[k] for k in keys}, unit_column=unit.column, unit_max_rows=unit.max_rows)
