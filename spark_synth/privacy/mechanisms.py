"""Mechanisms that turn exact statistics into noisy, accounted releases — and private selections.

* :func:`release_query`: the exact discrete Gaussian on a query's integer answer, calibrated to
  the query's own (integer) ℓ2 sensitivity and the caller's ρ.
* :func:`select_index`: the exponential mechanism (Gumbel noisy max, OpenDP) on a score vector of
  known ℓ∞ sensitivity Δ; it is ε-bounded-range with ε = 2Δ/scale, hence ε²/8-zCDP (Cesar &
  Rogers 2021), which is the cost OpenDP's own zCDP map certifies.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..queries import Query
from .filter import PrivacyFilter, check_rho
from .noise import add_gaussian_noise, calibrated_measurement, calibrated_noisy_max, noisy_max
from .report import MEASUREMENT, SELECTION, ReportEntry


@dataclass(frozen=True)
class NoisyMeasurement:
    """A released statistic: noisy values (real units), the query they answer, σ and ρ.

    This (and only this) is what engines receive about the data.
    """

    query: Query
    values: np.ndarray
    sigma: float
    rho: float

    @property
    def name(self) -> str:
        return self.query.name

    @property
    def columns(self) -> tuple[str, ...]:
        return tuple(getattr(self.query, "columns", ()))

    @property
    def l2_sensitivity(self) -> float:
        return self.query.l2_sensitivity


def release_query(privacy_filter: PrivacyFilter, query: Query, exact: np.ndarray, rho: float) -> NoisyMeasurement:
    """Release ``exact`` (the query's integer answer) with the exact discrete Gaussian at cost ≤ ρ.

    The noise is calibrated to ``query.integer_l2_sensitivity`` (the sensitivity in integer units,
    rounded up); values and σ are returned in real units."""
    privacy_filter.check(rho, f"measurement {query.name!r}")
    measurement, sigma, certified_rho = calibrated_measurement(check_rho(rho, query.name), query.integer_l2_sensitivity, integer=True)
    unit = query.unit
    privacy_filter.charge(ReportEntry(kind=MEASUREMENT, name=query.name, query=query.describe(), mechanism="discrete Gaussian (OpenDP)",
                                      rho=certified_rho, l2_sensitivity=query.integer_l2_sensitivity / unit, sigma=sigma / unit))
    noisy = add_gaussian_noise(np.asarray(exact, dtype=np.int64), measurement, integer=True) / unit
    return NoisyMeasurement(query=query, values=noisy, sigma=sigma / unit, rho=certified_rho)


def release_counts(privacy_filter: PrivacyFilter, counts: np.ndarray, rho: float, *, name: str, description: str) -> np.ndarray:
    """Release exact integer ``counts`` in which one row changes one entry by one (ℓ2 sensitivity
    1) with the exact discrete Gaussian at cost ≤ ρ (charged first)."""
    privacy_filter.check(rho, f"measurement {name!r}")
    measurement, sigma, certified_rho = calibrated_measurement(check_rho(rho, name), 1, integer=True)
    privacy_filter.charge(ReportEntry(kind=MEASUREMENT, name=name, query=description, mechanism="discrete Gaussian (OpenDP)",
                                      rho=certified_rho, l2_sensitivity=1.0, sigma=sigma))
    return add_gaussian_noise(np.asarray(counts, dtype=np.int64), measurement, integer=True)


def select_index(privacy_filter: PrivacyFilter, scores: np.ndarray, sensitivity: float, rho: float, *, name: str,
                 description: str) -> int:
    """The index of a high score, drawn by the exponential mechanism at cost ≤ ρ (charged first).

    ``sensitivity`` bounds how much any one score can change when one row is added or removed
    (ℓ∞); the selection is P(i) ∝ exp(scores[i] / scale) with scale = Δ / √(2ρ)."""
    privacy_filter.check(rho, f"selection {name!r}")
    scores = np.asarray(scores, dtype=np.float64).ravel()
    measurement, scale, certified_rho = calibrated_noisy_max(check_rho(rho, name), float(sensitivity))
    privacy_filter.charge(ReportEntry(kind=SELECTION, name=name, query=description, rho=certified_rho,
                                      mechanism="exponential mechanism (Gumbel noisy max, OpenDP)",
                                      score_sensitivity=float(sensitivity), scale=scale, candidates=int(scores.size)))
    return noisy_max(measurement, scores)
