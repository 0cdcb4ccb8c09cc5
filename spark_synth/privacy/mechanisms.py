"""Mechanisms that turn exact statistics into noisy, accounted releases — and private selections.

* :func:`release_query`: the exact discrete Gaussian on a query's integer answer, calibrated to
  the query's own (integer) ℓ2 sensitivity and the caller's ρ.
* :func:`select_index`: the exponential mechanism (Gumbel noisy max, OpenDP) on a score vector of
  known ℓ∞ sensitivity Δ; it is ε-bounded-range with ε = 2Δ/scale, hence ε²/8-zCDP (Cesar &
  Rogers 2021), which is the cost OpenDP's own zCDP map certifies.

Callers state one-row sensitivities; each mechanism multiplies them by the filter's privacy unit's
row bound K (:attr:`PrivacyFilter.unit`): one unit adds or removes at most K rows, each moving the
answer by at most the one-row sensitivity. This is the only place that scaling happens.

Each takes its ρ as a number (checked now by the filter) or as a :class:`~.filter.Grant` the filter
made earlier (already checked: the oracle grants a batch before its scan); either way the budget is
checked once, and charged before any noise is drawn.
"""

from __future__ import annotations

from dataclasses import dataclass

import math

import numpy as np

from ..queries import Query
from .filter import Grant, PrivacyFilter
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


def release_query(privacy_filter: PrivacyFilter, query: Query, exact: np.ndarray, rho: float | Grant) -> NoisyMeasurement:
    """Release ``exact`` (the query's integer answer) with the exact discrete Gaussian at cost ≤ ρ.

    The noise is calibrated to the query's ℓ2 sensitivity under the filter's privacy unit, in
    integer units, rounded up (:func:`integer_l2_sensitivity`); values and σ are returned in real units."""
    grant = privacy_filter.grant(rho, f"measurement {query.name!r}")
    sensitivity = integer_l2_sensitivity(query, privacy_filter.unit.max_rows)
    measurement, sigma, certified_rho = calibrated_measurement(grant.rho, sensitivity, integer=True)
    unit = query.unit
    privacy_filter.charge(ReportEntry(kind=MEASUREMENT, name=query.name, query=query.describe(), mechanism="discrete Gaussian (OpenDP)",
                                      rho=certified_rho, l2_sensitivity=sensitivity / unit, sigma=sigma / unit), grant)
    noisy = add_gaussian_noise(np.asarray(exact, dtype=np.int64), measurement, integer=True) / unit
    return NoisyMeasurement(query=query, values=noisy, sigma=sigma / unit, rho=certified_rho)


def integer_l2_sensitivity(query: Query, rows_per_unit: int = 1) -> int:
    """The query's ℓ2 sensitivity when one unit of at most ``rows_per_unit`` rows is added or removed,
    in integer units, rounded UP (what the discrete Gaussian is calibrated to)."""
    return int(math.ceil(rows_per_unit * query.l2_sensitivity * query.unit))


def release_counts(privacy_filter: PrivacyFilter, counts: np.ndarray, rho: float | Grant, *, name: str, description: str) -> np.ndarray:
    """Release exact integer ``counts`` in which one row changes one entry by one (ℓ2 sensitivity
    1 per row, K under a unit of K rows) with the exact discrete Gaussian at cost ≤ ρ (charged first)."""
    grant = privacy_filter.grant(rho, f"measurement {name!r}")
    sensitivity = privacy_filter.unit.max_rows
    measurement, sigma, certified_rho = calibrated_measurement(grant.rho, sensitivity, integer=True)
    privacy_filter.charge(ReportEntry(kind=MEASUREMENT, name=name, query=description, mechanism="discrete Gaussian (OpenDP)",
                                      rho=certified_rho, l2_sensitivity=float(sensitivity), sigma=sigma), grant)
    return add_gaussian_noise(np.asarray(counts, dtype=np.int64), measurement, integer=True)


def select_index(privacy_filter: PrivacyFilter, scores: np.ndarray, sensitivity: float, rho: float | Grant, *, name: str,
                 description: str) -> int:
    """The index of a high score, drawn by the exponential mechanism at cost ≤ ρ (charged first).

    ``sensitivity`` bounds how much any one score can change when one row is added or removed
    (ℓ∞); under a unit of K rows Δ = K × that. The selection is P(i) ∝ exp(scores[i] / scale)
    with scale = Δ / √(2ρ)."""
    grant = privacy_filter.grant(rho, f"selection {name!r}")
    scores = np.asarray(scores, dtype=np.float64).ravel()
    sensitivity = float(sensitivity) * privacy_filter.unit.max_rows
    measurement, scale, certified_rho = calibrated_noisy_max(grant.rho, sensitivity)
    privacy_filter.charge(ReportEntry(kind=SELECTION, name=name, query=description, rho=certified_rho,
                                      mechanism="exponential mechanism (Gumbel noisy max, OpenDP)",
                                      score_sensitivity=float(sensitivity), scale=scale, candidates=int(scores.size)), grant)
    return noisy_max(measurement, scores)
