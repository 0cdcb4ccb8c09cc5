"""Privacy budgets as typed values, and the neighbouring relation they refer to."""

from __future__ import annotations

from dataclasses import dataclass

from .conversions import _check_delta, _check_epsilon, epsilon_from_rho, rho_from_epsilon

#: The neighbouring relation of every guarantee spark-synth states: two tables are neighbours
#: when one is the other with ONE ROW ADDED OR REMOVED ("unbounded" DP). The row count is
#: therefore private too. Sensitivities throughout the code are derived for this relation.
NEIGHBOURING_RELATION = "add/remove one row"


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
