"""Distinguishing test: an empirical lower bound on ε from many releases on neighbours D and D′.

A tiny histogram and a moment vector are released 10⁵ times on D and on D′ = D + one worst-case row
(the row at the corner of the moment direction, z = 1, so its moment contribution reaches the
declared sensitivity). The Neyman–Pearson optimal statistic for two Gaussians with known means is
the likelihood ratio's exponent, Σ_q ⟨y_q − a_q(D), d_q⟩ / σ_q² (d_q = a_q(D′) − a_q(D)); the
event S_t = {statistic ≥ t} then gives (ε, δ)-DP's constraint P_D′(S_t) ≤ e^ε P_D(S_t) + δ, so
ln((P̂_D′(S_t)_low − δ) / P̂_D(S_t)_high) with Clopper–Pearson bounds is a lower bound on ε
(Bonferroni over the fixed thresholds). It must not exceed the claimed ε; with σ deliberately
halved (a calibration bug) it must.

The 10⁵ releases of one dataset are one call of the real release path on the answer tiled 10⁵
times: OpenDP adds independent noise to every entry, so this has the distribution of 10⁵ separate
releases (and takes seconds, not minutes). OpenDP's noise is not seedable: the bounds hold with
probability ≥ 1 − 10⁻⁵, and the power check has a wide margin (≈ 5.2 against 4).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy.stats import beta

from spark_synth.measure import answer_frame
from spark_synth.privacy import PrivacyBudget, PrivacyFilter, epsilon_from_rho, mechanisms, release_query, rho_from_epsilon, split_rho
from spark_synth.privacy.noise import gaussian_measurement
from spark_synth.queries import MarginalQuery, MomentQuery
from spark_synth.schema import Column, ColumnType, Schema

pytestmark = pytest.mark.statistical
RELEASES = 100_000
EPSILON, DELTA = 4.0, 1e-3  # large enough that 10⁵ releases have power (a loose claim has none)
THRESHOLDS = np.arange(0.5, 6.01, 0.25)  # in units of the statistic's standard deviation, fixed in advance
ALPHA = 1e-6 / len(THRESHOLDS)  # each one-sided Clopper–Pearson bound; 2 per threshold

SCHEMA = Schema(columns=(Column("c", ColumnType.CATEGORICAL, categories=("x", "y", "z"), nullable=False),
                         Column("v", ColumnType.CONTINUOUS, min=0.0, max=1.0, nullable=False)))
HISTOGRAM = MarginalQuery(("c",))
MOMENTS = MomentQuery(name="moments", directions=np.array([[0.0, 0.0, 0.0, 1.0]]), degree=2)  # z = value of v
D = pd.DataFrame({"c": ["x", "y", "y", "z", None], "v": [0.1, 0.5, 0.9, "n/a", 0.3]}, dtype=object)
WORST = pd.DataFrame({"c": ["z"], "v": [1.0]}, dtype=object)  # z = 1: every |T_j(1)| = 1


def _lower_bound_epsilon(stat_d: np.ndarray, stat_d_prime: np.ndarray) -> float:
    """max over the fixed thresholds of ln((P_D′(S)_low − δ) / P_D(S)_high)."""
    best = -math.inf
    n = len(stat_d)
    for t in THRESHOLDS:
        hits_d, hits_d_prime = int((stat_d >= t).sum()), int((stat_d_prime >= t).sum())
        low = beta.ppf(ALPHA, hits_d_prime, n - hits_d_prime + 1) if hits_d_prime else 0.0
        high = beta.ppf(1 - ALPHA, hits_d + 1, n - hits_d) if hits_d < n else 1.0
        if low - DELTA > 0:
            best = max(best, math.log((low - DELTA) / high))
    return best


def _statistics():
    """(statistic on D's releases, on D′'s releases, ε claimed for one release of both queries)."""
    exact_d = answer_frame(D, SCHEMA, [HISTOGRAM, MOMENTS])
    exact_d_prime = answer_frame(pd.concat([D, WORST], ignore_index=True), SCHEMA, [HISTOGRAM, MOMENTS])
    privacy_filter = PrivacyFilter(PrivacyBudget(1000.0, DELTA))  # room for every release below
    rhos = split_rho(rho_from_epsilon(EPSILON, DELTA), [1.0, 1.0])
    released = {}
    for label, exact in (("D", exact_d), ("D'", exact_d_prime)):
        released[label] = [release_query(privacy_filter, q, np.tile(a.ravel(), (RELEASES, 1)), rho)
                           for q, a, rho in zip((HISTOGRAM, MOMENTS), exact, rhos)]
    claimed = epsilon_from_rho(math.fsum(m.rho for m in released["D"]), DELTA)
    shifts = [(b - a).ravel() / q.unit for q, a, b in zip((HISTOGRAM, MOMENTS), exact_d, exact_d_prime)]
    base = [a.ravel() / q.unit for q, a in zip((HISTOGRAM, MOMENTS), exact_d)]
    sigmas = [m.sigma for m in released["D"]]
    scale = math.sqrt(sum(float(d @ d) / s**2 for d, s in zip(shifts, sigmas)))  # sd of the statistic

    def statistic(measurements):
        return sum((m.values - b) @ d / s**2 for m, b, d, s in zip(measurements, base, shifts, sigmas)) / scale

    return statistic(released["D"]), statistic(released["D'"]), claimed, scale


def test_worst_case_row_reaches_the_declared_sensitivity():
    exact_d = answer_frame(D, SCHEMA, [HISTOGRAM, MOMENTS])
    exact_d_prime = answer_frame(pd.concat([D, WORST], ignore_index=True), SCHEMA, [HISTOGRAM, MOMENTS])
    for q, a, b in zip((HISTOGRAM, MOMENTS), exact_d, exact_d_prime):
        change = math.sqrt(float((((b - a) / q.unit) ** 2).sum()))
        assert 0.9999 * q.l2_sensitivity <= change <= q.l2_sensitivity


def test_empirical_epsilon_stays_below_the_claim():
    stat_d, stat_d_prime, claimed, scale = _statistics()
    assert claimed <= EPSILON and scale == pytest.approx(math.sqrt(2 * rho_from_epsilon(EPSILON, DELTA)), rel=1e-3)
    assert abs(stat_d.mean()) < 0.05 and abs(stat_d_prime.mean() - scale) < 0.05  # the statistic is what it should be
    assert _lower_bound_epsilon(stat_d, stat_d_prime) <= claimed


def test_halved_sigma_is_caught(monkeypatch):
    """Power: the same test on releases whose noise is half the calibrated σ finds ε above the claim."""
    calibrated = mechanisms.calibrated_measurement

    def halved(rho, l2_sensitivity, integer):
        _, sigma, certified = calibrated(rho, l2_sensitivity, integer)
        return gaussian_measurement(sigma / 2, integer), sigma, certified  # reports σ, adds σ/2

    monkeypatch.setattr(mechanisms, "calibrated_measurement", halved)
    stat_d, stat_d_prime, claimed, _ = _statistics()
    assert _lower_bound_epsilon(stat_d, stat_d_prime) > claimed
