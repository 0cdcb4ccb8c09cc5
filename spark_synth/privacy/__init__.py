"""Privacy layer: budgets, the accountant, mechanisms and the noise source. Never imports pyspark."""

from .accountant import Accountant, ReleaseRecord
from .budget import NEIGHBOURING_RELATION, PrivacyBudget
from .conversions import epsilon_from_rho, rho_from_epsilon
from .mechanisms import NoisyMeasurement, release_counts, release_fixed_point_sums, release_integer_vector

__all__ = [
    "Accountant",
    "ReleaseRecord",
    "PrivacyBudget",
    "NEIGHBOURING_RELATION",
    "epsilon_from_rho",
    "rho_from_epsilon",
    "NoisyMeasurement",
    "release_counts",
    "release_fixed_point_sums",
    "release_integer_vector",
]
