"""Mechanisms that turn exact statistics into noisy, accounted releases."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .accountant import Accountant, ReleaseRecord
from .noise import add_gaussian_noise, calibrated_measurement


@dataclass(frozen=True)
class NoisyMeasurement:
    """A released statistic: noisy values plus what was measured and its noise scale.

    This (and only this) is what engines receive.
    """

    name: str
    columns: tuple[str, ...]
    values: np.ndarray
    sigma: float
    l2_sensitivity: float


def release_counts(accountant: Accountant, name: str, columns: tuple[str, ...], counts: np.ndarray) -> NoisyMeasurement:
    """Release a histogram of counts with the discrete Gaussian mechanism.

    Sensitivity: under add/remove-one-row neighbours one row falls in exactly one cell of the
    histogram, so the ℓ2 (and ℓ1) change of the count vector is exactly 1.
    """
    l2_sensitivity = 1
    rho = accountant.rho_for(name)
    measurement, sigma, certified_rho = calibrated_measurement(rho, l2_sensitivity, integer=True)
    accountant.charge(
        ReleaseRecord(
            name=name,
            query=f"counts over ({', '.join(columns)})",
            mechanism="discrete Gaussian (OpenDP)",
            l2_sensitivity=float(l2_sensitivity),
            sigma=sigma,
            rho=certified_rho,
        )
    )
    noisy = add_gaussian_noise(np.asarray(counts, dtype=np.int64), measurement, integer=True)
    return NoisyMeasurement(name=name, columns=tuple(columns), values=noisy, sigma=sigma, l2_sensitivity=float(l2_sensitivity))
