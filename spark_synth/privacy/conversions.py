"""Conversions between zero-concentrated DP (ρ-zCDP) and approximate (ε, δ)-DP.

We use the tight conversion of Canonne, Kamath & Steinke (2020, "The Discrete Gaussian for
Differential Privacy", Corollary 13): a ρ-zCDP mechanism is (ε, δ)-DP for

    ε(ρ, δ) = inf_{α>1}  αρ + ( log(1/δ) + (α−1)·log(1 − 1/α) − log α ) / (α − 1).

It is never looser than the classic ε = ρ + 2√(ρ·log(1/δ)) and holds for every ρ-zCDP mechanism
(continuous or discrete Gaussian, and their compositions).
"""

from __future__ import annotations

import math

from ..errors import ParameterError


def epsilon_from_rho(rho: float, delta: float) -> float:
    """Smallest ε (tight CKS20 bound) such that ρ-zCDP implies (ε, δ)-DP."""
    from scipy.optimize import minimize_scalar  # here, not at import: Python workers load this package too
    _check_rho(rho)
    _check_delta(delta)
    if rho == 0:
        return 0.0
    log_inv_delta = -math.log(delta)

    def eps_at(log_alpha_minus_1: float) -> float:
        a = 1.0 + math.exp(log_alpha_minus_1)
        if not 1.0 < a < math.inf:  # α − 1 below float resolution (huge ρ) or α overflowing: no bound here
            return math.inf
        return a * rho + (log_inv_delta + (a - 1.0) * math.log1p(-1.0 / a) - math.log(a)) / (a - 1.0)

    # The objective is unimodal in log(α−1); the optimum α ≈ 1 + sqrt(log(1/δ)/ρ).
    centre = 0.5 * math.log(max(log_inv_delta, 1e-300) / rho)
    best = minimize_scalar(eps_at, bounds=(centre - 25.0, centre + 25.0), method="bounded", options={"xatol": 1e-12})
    classic = rho + 2.0 * math.sqrt(rho * log_inv_delta)
    return max(0.0, min(float(best.fun), classic))


#: The range of ρ the conversion searches (outside it no budget is useful).
_RHO_FLOOR, _RHO_CEILING = 1e-300, 1e300


def rho_from_epsilon(epsilon: float, delta: float) -> float:
    """Largest ρ whose tight (ε, δ) conversion does not exceed ``epsilon`` at ``delta``.

    Raises :class:`ParameterError` naming ε (never a bare error) when no ρ in [1e-300, 1e300] fits."""
    from scipy.optimize import brentq  # here, not at import: Python workers load this package too
    _check_epsilon(epsilon)
    _check_delta(delta)
    excess = lambda r: epsilon_from_rho(r, delta) - epsilon  # noqa: E731
    if excess(_RHO_FLOOR) > 0:
        raise ParameterError("epsilon", f"large enough that some rho >= {_RHO_FLOOR:g} converts within it at delta={delta!r}", epsilon)
    upper = _bracket_above(excess, max(float(epsilon), _RHO_FLOOR), epsilon, delta)
    try:
        rho = brentq(excess, _RHO_FLOOR, upper, xtol=1e-300, rtol=1e-15, maxiter=500)
    except (RuntimeError, ValueError):  # no convergence: only at extreme (ε, δ)
        raise ParameterError("epsilon", f"a value whose rho can be found at delta={delta!r} (try a larger epsilon or delta)",
                             epsilon) from None
    # Never round up: step down until the conversion is within the request.
    while epsilon_from_rho(rho, delta) > epsilon:
        rho = math.nextafter(rho, 0.0)
    return rho


def _bracket_above(excess, upper: float, epsilon: float, delta: float) -> float:
    """A ρ ≥ ``upper`` whose conversion exceeds ε (ρ = ε is not always one: for δ near 1, or ε tiny,
    the tight ε(ρ) can be below ρ, even 0)."""
    while excess(upper) <= 0:
        if upper >= _RHO_CEILING:
            raise ParameterError("epsilon", f"below what rho = {_RHO_CEILING:g} converts to at delta={delta!r}", epsilon)
        upper = min(upper * 16.0 + 1.0, _RHO_CEILING)
    return upper


def _check_epsilon(epsilon: float) -> None:
    if isinstance(epsilon, bool) or not isinstance(epsilon, (int, float)) or not math.isfinite(epsilon) or epsilon <= 0:
        raise ParameterError("epsilon", "a finite number > 0", epsilon)


def _check_delta(delta: float) -> None:
    if isinstance(delta, bool) or not isinstance(delta, (int, float)) or not (0.0 < delta < 1.0):
        raise ParameterError("delta", "a number in the open interval (0, 1)", delta)


def _check_rho(rho: float) -> None:
    if isinstance(rho, bool) or not isinstance(rho, (int, float)) or not math.isfinite(rho) or rho < 0:
        raise ParameterError("rho", "a finite number >= 0", rho)
