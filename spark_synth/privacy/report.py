"""The computation report of one fit: its budget, and every selection and measurement, in order.

Typed values (no dicts read by string keys): :class:`ReportEntry` is one accounted call,
:class:`PrivacyReport` the whole fit. ``to_dict`` / ``from_dict`` give the JSON stored beside a
saved synthesizer and logged to MLflow (``privacy_report.json``).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, fields

from ..errors import UserInputError
from ..schema.cost import PrepassCost
from .conversions import epsilon_from_rho
from .unit import ROW, PrivacyUnit

CONVERSION = "zCDP -> (epsilon, delta): Canonne, Kamath & Steinke 2020, Corollary 13"
MEASUREMENT, SELECTION = "measurement", "selection"
#: A thresholded count (DP set union): δ-approximately ρ-zCDP, its δ in ``delta_approx``.
THRESHOLDED = "thresholded"
#: An entry kind for a use of private rows the DP guarantee does NOT cover (an opt-in, e.g. DGM's
#: ``validator=real``): it spends no ρ, and a report holding one states ``dp_guarantee: false``.
NOT_COVERED = "not_covered"


@dataclass(frozen=True, kw_only=True)
class ReportEntry:
    """One accounted call: a noisy measurement or a private selection.

    ``sigma`` is a measurement's Gaussian noise scale (real units, at ``l2_sensitivity``); a
    thresholded count also its integer ``threshold`` and the ``delta_approx`` it costs; a
    selection has the Gumbel ``scale`` of its exponential mechanism at ``score_sensitivity`` and
    chose among ``candidates`` queries. ``scope`` names the child oracle (e.g. ``partition[0]``)
    that made the call; empty for the top level.
    """

    kind: str
    name: str
    query: str
    mechanism: str
    rho: float
    l2_sensitivity: float | None = None
    sigma: float | None = None
    score_sensitivity: float | None = None
    scale: float | None = None
    candidates: int | None = None
    threshold: int | None = None
    delta_approx: float | None = None
    scope: str = ""

    def to_dict(self) -> dict:
        return {k: v for k, v in asdict(self).items() if v is not None}


@dataclass(frozen=True, kw_only=True)
class PrivacyReport:
    """A fit's budget, spend and entries; ``fit_id`` identifies the fit (one charge per fit)."""

    fit_id: str
    epsilon_requested: float
    delta: float
    rho_requested: float
    entries: tuple[ReportEntry, ...] = ()
    #: What one neighbouring step adds or removes (one row by default); see :mod:`spark_synth.privacy.unit`.
    privacy_unit: PrivacyUnit = ROW
    conversion: str = CONVERSION
    #: The DP pre-pass that drafted the fit's schema (spent once, in the table's ledger): its δ_approx
    #: is added to this fit's δ; None when the schema is public knowledge.
    schema_prepass: PrepassCost | None = None
    rho_spent: float = field(init=False)
    epsilon_spent: float = field(init=False)

    def __post_init__(self) -> None:
        rho = math.fsum(e.rho for e in self.entries)
        object.__setattr__(self, "rho_spent", rho)
        object.__setattr__(self, "epsilon_spent", epsilon_from_rho(rho, self.delta))

    @property
    def neighbouring_relation(self) -> str:
        """The relation the guarantee is stated for, in words."""
        return self.privacy_unit.relation

    @property
    def measurements(self) -> tuple[ReportEntry, ...]:
        return tuple(e for e in self.entries if e.kind == MEASUREMENT)

    @property
    def selections(self) -> tuple[ReportEntry, ...]:
        return tuple(e for e in self.entries if e.kind == SELECTION)

    @property
    def not_covered(self) -> tuple[ReportEntry, ...]:
        """Uses of private rows outside the DP guarantee (opt-ins)."""
        return tuple(e for e in self.entries if e.kind == NOT_COVERED)

    @property
    def delta_approx(self) -> float:
        """Σ δ of the thresholded calls and of the schema's pre-pass (approximate zCDP): the fit is
        (``epsilon_spent``, ``delta`` + ``delta_approx``)-DP."""
        schema = [self.schema_prepass.delta_approx] if self.schema_prepass is not None else []
        return math.fsum([*(e.delta_approx or 0.0 for e in self.entries), *schema])

    @property
    def dp_guarantee(self) -> bool:
        """Whether the whole output is covered by the stated (ε, δ) guarantee."""
        return not self.not_covered

    def to_dict(self) -> dict:
        return {
            "fit_id": self.fit_id,
            "neighbouring_relation": self.neighbouring_relation,
            "privacy_unit": self.privacy_unit.to_dict(),
            "epsilon_requested": self.epsilon_requested,
            "delta": self.delta,
            "rho_requested": self.rho_requested,
            "rho_spent": self.rho_spent,
            "epsilon_spent": self.epsilon_spent,
            "conversion": self.conversion,
            "dp_guarantee": self.dp_guarantee,
            **({"delta_approx": self.delta_approx, "delta_total": self.delta + self.delta_approx} if self.delta_approx else {}),
            **({"schema_prepass": self.schema_prepass.to_dict()} if self.schema_prepass is not None else {}),
            "releases": [e.to_dict() for e in self.entries],
        }

    @classmethod
    def from_dict(cls, raw: object, where: str = "the privacy report") -> "PrivacyReport":
        """Rebuild a report from :meth:`to_dict` output; a malformed one is a one-line error."""
        try:
            known = {f.name for f in fields(ReportEntry)}
            entries = tuple(ReportEntry(**{"kind": MEASUREMENT, **{k: v for k, v in r.items() if k in known}}) for r in raw["releases"])
            unit = PrivacyUnit.from_dict(raw.get("privacy_unit"))
            if raw["neighbouring_relation"] != unit.relation:
                raise ValueError(f"neighbouring_relation {raw['neighbouring_relation']!r} does not match the privacy unit "
                                 f"({unit.relation!r})")
            report = cls(fit_id=str(raw.get("fit_id", "")), epsilon_requested=raw["epsilon_requested"], delta=raw["delta"],
                         rho_requested=raw["rho_requested"], entries=entries,
                         privacy_unit=unit, conversion=raw.get("conversion", CONVERSION),
                         schema_prepass=(None if raw.get("schema_prepass") is None
                                         else PrepassCost.from_dict(raw["schema_prepass"], where)))
        except (TypeError, KeyError, AttributeError, ValueError) as exc:
            raise UserInputError(f"{where} is malformed ({type(exc).__name__}: {exc}); it must be a spark-synth privacy report") from None
        return report
