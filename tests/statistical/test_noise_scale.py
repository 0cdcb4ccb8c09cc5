"""Noise-scale statistics: the released noise has exactly the calibrated σ (accept σ, reject σ·(1±0.3))."""

import math

import numpy as np
import pytest
from scipy import stats

from spark_synth.privacy import PrivacyBudget, PrivacyFilter, release_query
from spark_synth.queries import MarginalQuery

pytestmark = pytest.mark.statistical
N = 20_000
P_ACCEPT = 1e-6


def _variance_p_value(samples: np.ndarray, sigma: float) -> float:
    """Two-sided χ² test of H0: Var = σ² (mean known to be 0)."""
    statistic = float((samples**2).sum() / sigma**2)
    cdf = stats.chi2.cdf(statistic, df=len(samples))
    return 2 * min(cdf, 1 - cdf)


@pytest.fixture(scope="module")
def released():
    budget = PrivacyBudget(1.0, 1e-9)
    privacy_filter = PrivacyFilter(budget)
    truth = np.arange(N, dtype=np.int64) % 50
    out = release_query(privacy_filter, MarginalQuery(("c",)), truth, privacy_filter.rho_total)
    return out.values - truth, out.sigma, budget


def test_sigma_is_the_calibrated_value(released):
    _, sigma, budget = released
    assert sigma == pytest.approx(1 / math.sqrt(2 * budget.rho), rel=1e-12)


def test_accepts_true_sigma_rejects_30_percent_off(released):
    noise, sigma, _ = released
    assert _variance_p_value(noise, sigma) > P_ACCEPT
    assert _variance_p_value(noise, 0.7 * sigma) < P_ACCEPT
    assert _variance_p_value(noise, 1.3 * sigma) < P_ACCEPT


def test_noise_is_centred_integer_and_symmetric(released):
    noise, sigma, _ = released
    assert np.all(noise == np.round(noise))  # discrete Gaussian on integer counts
    assert abs(noise.mean()) < 5 * sigma / math.sqrt(N)
    assert stats.skew(noise) == pytest.approx(0, abs=0.1)
