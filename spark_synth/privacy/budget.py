"""Privacy budgets as typed values, and the neighbouring relation they refer to."""

from __future__ import annotations

from dataclasses import dataclass

from .conversions import _check_delta, _check_epsilon, epsilon_from_rho, rho_from_epsilon
from .unit import ROW_RELATION

#: The default neighbouring relation: two tables are neighbours when one is the other with ONE ROW
#: ADDED OR REMOVED ("unbounded" DP), so the row count is private too. Queries state their
#: sensitivity for this relation; a fit under a privacy unit (:mod:`spark_synth.privacy.unit`)
#: scales it by the unit's row bound.
NEIGHBOURING_RELATION = ROW_RELATION


@dataclass(frozen=True)
class PrivacyBudget:
    """An (ε, δ)-DP budget; internally accounted as ρ-zCDP with the tight conversion."""

    epsilon: float
    delta: float

    def __post_init__(self) -> None:
        _check_epsilon(self.epsilon)
        _check_delta(self.delta)

    @property
    def rho(self) -> float:
        """The largest ρ whose (ε, δ) conversion stays within this budget."""
        return rho_from_epsilon(self.epsilon, self.delta)

    def epsilon_for(self, rho: float) -> float:
        """ε at this budget's δ for a spent ρ."""
        return epsilon_from_rho(rho, self.delta)
