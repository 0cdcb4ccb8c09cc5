"""One accountant per fit: budget requested while the plan is built, allocated once, never exceeded.

Requests carry a weight; :meth:`Accountant.allocate` splits the budget's ρ in proportion (zCDP
composes by adding ρ). Each planned release may be charged once, with the ρ certified by the
mechanism; the total charged can never exceed the budget's ρ.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..errors import BudgetExhausted, InternalError, ParameterError
from .budget import NEIGHBOURING_RELATION, PrivacyBudget


@dataclass(frozen=True)
class ReleaseRecord:
    """What one release measured, at which sensitivity and noise scale, and its ρ."""

    name: str
    query: str
    mechanism: str
    l2_sensitivity: float
    sigma: float
    rho: float

    def to_dict(self) -> dict:
        return dict(self.__dict__)


class Accountant:
    """Plans, allocates and records the zCDP cost of every release of one fit."""

    def __init__(self, budget: PrivacyBudget):
        self.budget = budget
        self._weights: dict[str, float] = {}
        self._allocation: dict[str, float] | None = None
        self._releases: dict[str, ReleaseRecord] = {}

    # ---- planning ----------------------------------------------------------------------
    def request(self, name: str, weight: float = 1.0) -> None:
        """Plan a release called ``name`` receiving a ``weight`` share of the budget."""
        if self._allocation is not None:
            raise InternalError(f"release '{name}' was requested after the budget was allocated")
        if name in self._weights:
            raise InternalError(f"release '{name}' was requested twice")
        if isinstance(weight, bool) or not isinstance(weight, (int, float)) or not math.isfinite(weight) or weight <= 0:
            raise ParameterError(f"weight of '{name}'", "a finite number > 0", weight)
        self._weights[name] = float(weight)

    def allocate(self) -> dict[str, float]:
        """Split the budget's ρ over the requests (once). Returns name → ρ."""
        if self._allocation is not None:
            raise InternalError("the budget was allocated twice")
        if not self._weights:
            raise InternalError("nothing was requested before allocation")
        total_rho = self.budget.rho
        total_weight = math.fsum(self._weights.values())
        shares = {n: total_rho * w / total_weight for n, w in self._weights.items()}
        while math.fsum(shares.values()) > total_rho:  # guard against upward rounding
            shares = {n: math.nextafter(r, 0.0) for n, r in shares.items()}
        self._allocation = shares
        return dict(shares)

    def rho_for(self, name: str) -> float:
        if self._allocation is None:
            raise InternalError(f"rho for '{name}' was asked before the budget was allocated")
        if name not in self._allocation:
            raise InternalError(f"release '{name}' was never planned")
        return self._allocation[name]

    # ---- charging ----------------------------------------------------------------------
    def charge(self, record: ReleaseRecord) -> None:
        """Record a release; refuses one that was not planned, repeats, or overspends."""
        allocated = self.rho_for(record.name)
        if record.name in self._releases:
            raise BudgetExhausted(f"release '{record.name}' was already made; its budget is spent")
        if record.rho > allocated:
            raise BudgetExhausted(
                f"release '{record.name}' costs rho={record.rho!r} but only {allocated!r} was allocated to it"
            )
        if math.fsum([*(r.rho for r in self._releases.values()), record.rho]) > self.budget.rho:
            raise BudgetExhausted(f"release '{record.name}' would exceed the total budget rho={self.budget.rho!r}")
        self._releases[record.name] = record

    @property
    def releases(self) -> tuple[ReleaseRecord, ...]:
        return tuple(self._releases.values())

    @property
    def spent_rho(self) -> float:
        return math.fsum(r.rho for r in self._releases.values())

    @property
    def spent_epsilon(self) -> float:
        return self.budget.epsilon_for(self.spent_rho)

    def report(self) -> dict:
        """The computation report: budget, spend, and one entry per release."""
        return {
            "neighbouring_relation": NEIGHBOURING_RELATION,
            "epsilon_requested": self.budget.epsilon,
            "delta": self.budget.delta,
            "rho_requested": self.budget.rho,
            "rho_spent": self.spent_rho,
            "epsilon_spent": self.spent_epsilon,
            "conversion": "zCDP -> (epsilon, delta): Canonne, Kamath & Steinke 2020, Corollary 13",
            "releases": [r.to_dict() for r in self._releases.values()],
        }
