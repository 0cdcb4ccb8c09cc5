"""Privacy layer: budgets, the privacy filter, mechanisms, the report and the noise source.
Never imports pyspark."""

from .budget import NEIGHBOURING_RELATION, PrivacyBudget
from .conversions import epsilon_from_rho, rho_from_epsilon
from .filter import PrivacyFilter, rho_difference, split_rho
from .mechanisms import NoisyMeasurement, release_query, select_index
from .noise import gaussian_sigma
from .report import MEASUREMENT, NOT_COVERED, SELECTION, PrivacyReport, ReportEntry

__all__ = [
    "PrivacyBudget",
    "NEIGHBOURING_RELATION",
    "epsilon_from_rho",
    "rho_from_epsilon",
    "PrivacyFilter",
    "rho_difference",
    "split_rho",
    "gaussian_sigma",
    "NoisyMeasurement",
    "release_query",
    "select_index",
    "PrivacyReport",
    "ReportEntry",
    "MEASUREMENT",
    "NOT_COVERED",
    "SELECTION",
]
