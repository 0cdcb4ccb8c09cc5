"""The exponential mechanism's output frequencies match its stated distribution, and it is charged."""

import math

import numpy as np
import pytest
from scipy import stats

from spark_synth.privacy import PrivacyBudget, PrivacyFilter, select_index
from spark_synth.privacy.noise import calibrated_noisy_max, noisy_max

pytestmark = pytest.mark.statistical
SCORES = np.array([0.0, 1.0, 1.5, 2.0, 3.0])
SENSITIVITY = 2.0
RHO = 0.5
N = 20_000
ALPHA = 1e-4  # significance level of the goodness-of-fit test


def _stated(temperature_factor: float = 1.0) -> np.ndarray:
    """P(i) ∝ exp(ε·u_i / (2Δ)) with ε = √(8ρ): the exponential mechanism at ρ = ε²/8 zCDP."""
    epsilon = math.sqrt(8 * RHO) * temperature_factor
    weights = np.exp(epsilon * SCORES / (2 * SENSITIVITY))
    return weights / weights.sum()


@pytest.fixture(scope="module")
def frequencies():
    measurement, scale, certified = calibrated_noisy_max(RHO, SENSITIVITY)
    assert scale == pytest.approx(SENSITIVITY / math.sqrt(2 * RHO), rel=1e-12) and certified <= RHO
    draws = np.array([noisy_max(measurement, SCORES) for _ in range(N)])
    return np.bincount(draws, minlength=SCORES.size)


def test_frequencies_match_the_stated_distribution(frequencies):
    assert stats.chisquare(frequencies, N * _stated()).pvalue > ALPHA


@pytest.mark.parametrize("factor", [0.5, 2.0])
def test_a_wrong_temperature_is_rejected(frequencies, factor):
    """Power check: the same draws are far from the distribution at half or twice the temperature."""
    assert stats.chisquare(frequencies, N * _stated(factor)).pvalue < 1e-6


def test_each_selection_is_charged_exactly():
    privacy_filter = PrivacyFilter(PrivacyBudget(40.0, 1e-9))
    picks = [select_index(privacy_filter, SCORES, SENSITIVITY, RHO, name="s", description="toy") for _ in range(5)]
    assert all(0 <= p < SCORES.size for p in picks)
    report = privacy_filter.report()
    assert len(report.selections) == 5 and all(e.rho <= RHO and e.rho == pytest.approx(RHO, rel=1e-12) for e in report.entries)
    assert report.rho_spent == pytest.approx(5 * RHO, rel=1e-12)
