"""DP thresholded counting ("set union"): which keys (e.g. a column's categories) to keep.

Each row holds one key, so adding or removing a row changes one key's count by one. The exact
count of every key present in the data gets exact discrete Gaussian noise (σ calibrated to ρ at
ℓ2 sensitivity 1, OpenDP); a key is kept when its noisy count reaches an integer threshold τ.
Keys absent from the data are never considered, so a key held by one row alone appears in the
output only if its noise reaches τ − 1. The release is therefore δ-approximately ρ-zCDP
(Bun & Steinke 2016, Def. 8) with

    δ = P[Z ≥ τ − 1],   Z ~ discrete Gaussian N_Z(0, σ²)  (P[Z = k] ∝ exp(−k²/2σ²)),

because conditioned on that key not being kept the output on D equals the output on D minus the
row, and otherwise the noisy counts differ in one coordinate by one. :func:`threshold_for` picks
the smallest τ meeting the caller's δ, using a certified upper bound on the tail
(:func:`log_tail_bound`). Approximate zCDP composes by adding ρ and adding δ; a δ-approximately
ρ-zCDP mechanism is (ε(ρ, δ'), δ + δ')-DP with ε(ρ, δ') the usual conversion.
"""

from __future__ import annotations

import math

import numpy as np

from ..errors import InternalError
from .filter import Grant, PrivacyFilter
from .noise import add_gaussian_noise, calibrated_measurement
from .report import THRESHOLDED, ReportEntry

#: Relative slack added to every computed tail, covering floating-point error in the sums.
_SLACK = 1e-9


def log_tail_bound(sigma: float, m: int) -> float:
    """An upper bound on log P[Z ≥ m] for Z ~ N_Z(0, σ²) (integer m ≥ 0).

    P[Z ≥ m] = Σ_{k≥m} e^{−k²/2σ²} / Σ_{k∈ℤ} e^{−k²/2σ²}. The numerator is summed as
    e^{−m²/2σ²} Σ_{j≥0} e^{−(2mj + j²)/2σ²} up to j = J plus the integral bound of the rest; the
    denominator is cut to |k| ≤ K (a lower bound). Both are computed in log space, so tails far
    below float's range stay exact in relative terms."""
    if not (sigma > 0 and math.isfinite(sigma)) or m < 0 or int(m) != m:
        raise InternalError(f"tail of the discrete Gaussian needs sigma > 0 and an integer m >= 0; got {sigma!r}, {m!r}")
    m, s2 = int(m), 2.0 * sigma * sigma
    reach = int(math.ceil(40.0 * sigma)) + 2
    j = np.arange(reach + 1, dtype=np.float64)
    head = math.fsum(np.exp(-(2.0 * m * j + j * j) / s2))
    rest = sigma * math.sqrt(math.pi / 2.0) * math.erfc(reach / (sigma * math.sqrt(2.0)))  # ≥ Σ_{j>J} e^{−j²/2σ²}
    k = np.arange(1, reach + 1, dtype=np.float64)
    normaliser = 1.0 + 2.0 * math.fsum(np.exp(-(k * k) / s2))  # ≤ the full sum
    return -m * m / s2 + math.log(head + rest) - math.log(normaliser) + _SLACK


def threshold_for(sigma: float, delta: float) -> int:
    """The smallest integer τ ≥ 1 with P[Z ≥ τ − 1] ≤ δ (so a lone row's key is kept w.p. ≤ δ)."""
    if not (0.0 < delta < 1.0):
        raise InternalError(f"threshold delta must be in (0, 1); got {delta!r}")
    target = math.log(delta)
    low, high = 0, int(math.ceil(sigma * (math.sqrt(2.0 * -target) + 2.0))) + 2
    while log_tail_bound(sigma, high) > target:  # widen (never needed for the usual σ, δ)
        low, high = high, 2 * high
    while low < high:  # the tail decreases in m: smallest m = τ − 1 that meets δ
        mid = (low + high) // 2
        if log_tail_bound(sigma, mid) <= target:
            high = mid
        else:
            low = mid + 1
    return low + 1


def unit_threshold_for(sigma: float, delta: float, rows_per_unit: int = 1) -> int:
    """The smallest τ with K·P[Z ≥ τ − K] ≤ δ (K = ``rows_per_unit``; for K = 1, :func:`threshold_for`)."""
    k = int(rows_per_unit)
    return threshold_for(sigma, delta / k) - 1 + k


def release_keys(privacy_filter: PrivacyFilter, counts: np.ndarray, rho: float | Grant, delta: float, *, name: str,
                 description: str) -> tuple[np.ndarray, np.ndarray]:
    """Keep the keys whose discrete-Gaussian noisy count reaches the threshold for ``delta``.

    ``counts`` are the exact counts (≥ 1) of the keys present, one key per row. Charged as
    δ-approximately ρ-zCDP before any noise is drawn (even with no keys: the cost is fixed).
    Returns ``(kept mask, noisy counts)``; only the kept keys and their noisy counts may be used.

    Under a privacy unit of K rows (the filter's), one unit adds at most K rows: the counts move by
    a vector of ℓ2 norm ≤ K (σ is calibrated to K), and the unit's keys absent from the rest — at
    most K of them, each counting c_i ≤ K — are all dropped except with probability
    ≤ Σ P[Z ≥ τ − c_i] ≤ K·P[Z ≥ τ − K] ≤ δ (:func:`unit_threshold_for`)."""
    grant = privacy_filter.grant(rho, f"thresholded count {name!r}")
    k = privacy_filter.unit.max_rows
    measurement, sigma, certified = calibrated_measurement(grant.rho, k, integer=True)
    tau = unit_threshold_for(sigma, delta, k)
    privacy_filter.charge(ReportEntry(kind=THRESHOLDED, name=name, query=description, rho=certified,
                                      mechanism="discrete Gaussian (OpenDP) + threshold", l2_sensitivity=float(k),
                                      sigma=sigma, threshold=tau, delta_approx=float(delta)), grant)
    counts = np.asarray(counts, dtype=np.int64)
    if counts.size == 0:
        return np.zeros(0, dtype=bool), np.zeros(0)
    noisy = add_gaussian_noise(counts, measurement, integer=True)
    return noisy >= tau, noisy
