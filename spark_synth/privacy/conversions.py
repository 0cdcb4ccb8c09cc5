"""Conversions between zero-concentrated DP (ρ-zCDP) and approximate (ε, δ)-DP.

We use the tight conversion of Canonne, Kamath & Steinke (2020, "The Discrete Gaussian for
Differential Privacy", Corollary 13): a ρ-zCDP mechanism is (ε, δ)-DP for

    ε(ρ, δ) = inf_{α>1}  αρ + ( log(1/δ) + (α−1)·log(1 − 1/α) − log α ) / (α − 1).

It is never looser than the classic ε = ρ + 2√(ρ·log(1/δ)) and holds for every ρ-zCDP mechanism
(continuous or discrete Gaussian, and their compositions).
"""

from __future__ import annotations

import math

from scipy.optimize import brentq, minimize_scalar

from ..errors import ParameterError


def epsilon_from_rho(rho: float, delta: float) -> float:
    """Smallest ε (tight CKS20 bound) such that ρ-zCDP implies (ε, δ)-DP."""
    _check_rho(rho)
    _check_delta(delta)
    if rho == 0:
        return 0.0
    log_inv_delta = -math.log(delta)

    def eps_at(log_alpha_minus_1: float) -> float:
        a = 1.0 + math.exp(log_alpha_minus_1)
        return a * rho + (log_inv_delta + (a - 1.0) * math.log1p(-1.0 / a) - math.log(a)) / (a - 1.0)

    # The objective is unimodal in log(α−1); the optimum α ≈ 1 + sqrt(log(1/δ)/ρ).
    centre = 0.5 * math.log(max(log_inv_delta, 1e-300) / rho)
    best = minimize_scalar(eps_at, bounds=(centre - 25.0, centre + 25.0), method="bounded", options={"xatol": 1e-12})
    classic = rho + 2.0 * math.sqrt(rho * log_inv_delta)
    return max(0.0, min(float(best.fun), classic))


def rho_from_epsilon(epsilon: float, delta: float) -> float:
    """Largest ρ whose tight (ε, δ) conversion does not exceed ``epsilon`` at ``delta``."""
    _check_epsilon(epsilon)
    _check_delta(delta)
    upper = epsilon  # ε(ρ) > ρ for δ < 1, so ρ = ε is always too large
    rho = brentq(lambda r: epsilon_from_rho(r, delta) - epsilon, 1e-300, upper, xtol=1e-300, rtol=1e-15, maxiter=500)
    # Never round up: step down until the conversion is within the request.
    while epsilon_from_rho(rho, delta) > epsilon:
        rho = math.nextafter(rho, 0.0)
    return rho


def _check_epsilon(epsilon: float) -> None:
    if isinstance(epsilon, bool) or not isinstance(epsilon, (int, float)) or not math.isfinite(epsilon) or epsilon <= 0:
        raise ParameterError("epsilon", "a finite number > 0", epsilon)


def _check_delta(delta: float) -> None:
    if isinstance(delta, bool) or not isinstance(delta, (int, float)) or not (0.0 < delta < 1.0):
        raise ParameterError("delta", "a number in the open interval (0, 1)", delta)


def _check_rho(rho: float) -> None:
    if isinstance(rho, bool) or not isinstance(rho, (int, float)) or not math.isfinite(rho) or rho < 0:
        raise ParameterError("rho", "a finite number >= 0", rho)
