"""The one source of privacy noise: OpenDP's Gaussian samplers.

Integer inputs get the exact discrete Gaussian; float inputs OpenDP's floating-point-safe
continuous Gaussian. Both draw from OpenDP's CSPRNG — never ``numpy.random`` or ``torch``.
The returned ρ is OpenDP's own privacy map of the measurement, so the zCDP cost is certified by
the library that sampled the noise.
"""

from __future__ import annotations

import math

import numpy as np
from opendp import measurements
from opendp.domains import atom_domain, vector_domain
from opendp.measures import zero_concentrated_divergence
from opendp.metrics import l2_distance, linf_distance
from opendp.mod import Measurement, enable_features
from opendp.typing import i64

from ..errors import InternalError

enable_features("contrib")



def gaussian_sigma(l2_sensitivity: float, rho: float) -> float:
    """σ = Δ₂/√(2ρ): the Gaussian noise that makes a query of ℓ2 sensitivity Δ₂ ρ-zCDP (public)."""
    return float(l2_sensitivity) / math.sqrt(2.0 * rho)

def gaussian_measurement(scale: float, integer: bool) -> Measurement:
    """OpenDP Gaussian measurement on vectors (ℓ2 metric, zCDP output measure)."""
    atom = atom_domain(T=i64) if integer else atom_domain(T=float, nan=False)
    metric = l2_distance(T=i64 if integer else float)
    return measurements.make_gaussian(vector_domain(atom), metric, scale=float(scale))


def calibrated_measurement(rho: float, l2_sensitivity: float, integer: bool) -> tuple[Measurement, float, float]:
    """The smallest-σ OpenDP Gaussian whose certified cost at ``l2_sensitivity`` is ≤ ρ (σ starts at
    Δ / √(2ρ)). Returns ``(measurement, sigma, certified_rho)``."""
    if not (rho > 0 and math.isfinite(rho)):
        raise InternalError(f"calibration needs a positive finite rho; got {rho!r}")
    d_in = int(l2_sensitivity) if integer else float(l2_sensitivity)
    if integer and d_in != l2_sensitivity:
        raise InternalError(f"integer sensitivity expected; got {l2_sensitivity!r}")
    return _smallest_scale(lambda scale: gaussian_measurement(scale, integer), d_in, gaussian_sigma(l2_sensitivity, rho), rho,
                           "the Gaussian mechanism")


def _smallest_scale(make, d_in, scale: float, rho: float, what: str) -> tuple[Measurement, float, float]:
    """``make(scale)`` from ``scale`` up, nudged up one step at a time only while OpenDP's privacy map
    certifies a cost above ρ at ``d_in`` (its rounding); returns ``(measurement, scale, certified_rho)``."""
    for _ in range(64):
        measurement = make(scale)
        certified = float(measurement.map(d_in))
        if certified <= rho:
            return measurement, scale, certified
        scale = math.nextafter(scale, math.inf) * (1.0 + 1e-15)
    raise InternalError(f"could not calibrate {what} within the allocated rho")


def add_gaussian_noise(values: np.ndarray, measurement: Measurement, integer: bool) -> np.ndarray:
    """Release ``values`` (a 1-D array) through ``measurement``; returns a float64 array."""
    flat = np.asarray(values).ravel()
    data = [int(v) for v in flat] if integer else [float(v) for v in flat]
    return np.asarray(measurement(data), dtype=np.float64).reshape(np.shape(values))


def noisy_max_measurement(scale: float) -> Measurement:
    """OpenDP's exponential mechanism (Gumbel noise) on float score vectors, zCDP output measure.

    Scores are not monotone in the data (a row can raise one and lower another), so the ℓ∞ input
    metric is the non-monotonic one."""
    space = vector_domain(atom_domain(T=float, nan=False)), linf_distance(T=float, monotonic=False)
    return measurements.make_noisy_max(*space, zero_concentrated_divergence(), scale=float(scale))


def calibrated_noisy_max(rho: float, sensitivity: float) -> tuple[Measurement, float, float]:
    """The smallest-scale exponential mechanism whose certified zCDP cost at ``sensitivity`` is ≤ ρ
    (scale starts at Δ / √(2ρ): ε = 2Δ/scale, ρ = ε²/8). Returns ``(measurement, scale, certified_rho)``."""
    if not (rho > 0 and math.isfinite(rho)) or not (sensitivity > 0 and math.isfinite(sensitivity)):
        raise InternalError(f"selection needs positive finite rho and sensitivity; got {rho!r}, {sensitivity!r}")
    return _smallest_scale(noisy_max_measurement, float(sensitivity), sensitivity / math.sqrt(2.0 * rho), rho,
                           "the exponential mechanism")


def noisy_max(measurement: Measurement, scores: np.ndarray) -> int:
    """Run an exponential-mechanism ``measurement`` on finite ``scores``; returns the chosen index."""
    values = [float(s) for s in np.asarray(scores, dtype=np.float64).ravel()]
    if not values or not all(math.isfinite(v) for v in values):
        raise InternalError("selection scores must be a non-empty vector of finite numbers")
    return int(measurement(values))
