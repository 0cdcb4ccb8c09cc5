import math

import opendp.prelude as dp
import pytest

from spark_synth.errors import ParameterError
from spark_synth.privacy import PrivacyBudget, epsilon_from_rho, rho_from_epsilon

dp.enable_features("contrib")
CASES = [(0.5, 1e-9), (1.0, 1e-9), (3.0, 1e-9), (10.0, 1e-9), (1.0, 1e-5), (0.05, 1e-6)]


@pytest.mark.parametrize("epsilon, delta", CASES)
def test_round_trip_is_exact_and_tight(epsilon, delta):
    rho = rho_from_epsilon(epsilon, delta)
    assert epsilon_from_rho(rho, delta) <= epsilon
    assert epsilon_from_rho(rho, delta) == pytest.approx(epsilon, rel=1e-9)
    # tight the other way: any more rho overshoots epsilon
    assert epsilon_from_rho(rho * (1 + 1e-8), delta) > epsilon


@pytest.mark.parametrize("epsilon, delta", CASES)
def test_matches_opendp_conversion(epsilon, delta):
    """OpenDP's zCDP → approx-DP map (an independent implementation) gives the same ε."""
    rho = rho_from_epsilon(epsilon, delta)
    sigma = 1.0 / math.sqrt(2 * rho)
    meas = dp.m.make_gaussian(dp.vector_domain(dp.atom_domain(T=float, nan=False)), dp.l2_distance(T=float), scale=sigma)
    opendp_eps = dp.c.make_zCDP_to_approxDP(meas).map(1.0).epsilon(delta)
    assert opendp_eps == pytest.approx(epsilon, rel=1e-6)


def test_tighter_than_classic_bound():
    rho = 0.05
    classic = rho + 2 * math.sqrt(rho * math.log(1e9))
    assert epsilon_from_rho(rho, 1e-9) < classic


def test_known_value():
    # rho for (1, 1e-9) under the CKS20 conversion (cross-checked with OpenDP above)
    assert rho_from_epsilon(1.0, 1e-9) == pytest.approx(0.0149730576735885, rel=1e-9)


@pytest.mark.parametrize("epsilon, delta", [(0, 1e-9), (-1, 1e-9), (math.inf, 1e-9), (1, 0), (1, 1), (1, 1.5), (True, 1e-9)])
def test_invalid_budgets_are_refused(epsilon, delta):
    with pytest.raises(ParameterError, match="epsilon|delta"):
        PrivacyBudget(epsilon, delta)


@pytest.mark.parametrize("epsilon, delta", [(1.0, 0.5), (4.0, 0.9), (1e-3, 0.1), (1e-20, 1e-9), (50.0, 0.999999), (1e6, 1e-9)])
def test_unusual_budgets_convert(epsilon, delta):
    """Regression: these raised a bare ValueError from the root finder (ρ = ε does not always bracket)."""
    rho = rho_from_epsilon(epsilon, delta)
    assert rho > 0 and epsilon_from_rho(rho, delta) <= epsilon
    assert epsilon_from_rho(rho * (1 + 1e-8), delta) > epsilon


@pytest.mark.parametrize("epsilon, delta", [(1e-300, 1e-300), (1e-300, 1e-100), (1e-160, 1e-300), (1e300, 1e-9), (1e300, 0.5)])
def test_budgets_without_a_rho_are_a_parameter_error(epsilon, delta):
    with pytest.raises(ParameterError, match="'epsilon'"):
        rho_from_epsilon(epsilon, delta)


def test_conversion_never_raises_anything_else():
    for epsilon in (1e-300, 1e-140, 1e-20, 1e-3, 0.5, 1, 4, 50, 1e3, 1e100, 1e300):
        for delta in (1e-300, 1e-9, 1e-3, 0.5, 0.999999):
            try:
                rho = rho_from_epsilon(epsilon, delta)
            except ParameterError:
                continue
            assert epsilon_from_rho(rho, delta) <= epsilon
    assert epsilon_from_rho(1e100, 1e-9) >= 1e100  # huge ρ: no math domain error
