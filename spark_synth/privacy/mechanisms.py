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


def release_integer_vector(
    accountant: Accountant, name: str, query: str, columns: tuple[str, ...], values: np.ndarray, l2_sensitivity: int,
    unit: float = 1.0,
) -> NoisyMeasurement:
    """Release an integer vector with the exact discrete Gaussian, calibrated to the ρ allocated to
    ``name`` and the caller's ℓ2 sensitivity (an integer, in the vector's own units).

    ``unit`` is how many integer units make one real unit (fixed point): the report, the returned
    values and σ are in real units."""
    rho = accountant.rho_for(name)
    measurement, sigma, certified_rho = calibrated_measurement(rho, l2_sensitivity, integer=True)
    accountant.charge(
        ReleaseRecord(
            name=name,
            query=query,
            mechanism="discrete Gaussian (OpenDP)",
            l2_sensitivity=l2_sensitivity / unit,
            sigma=sigma / unit,
            rho=certified_rho,
        )
    )
    noisy = add_gaussian_noise(np.asarray(values, dtype=np.int64), measurement, integer=True) / unit
    return NoisyMeasurement(name=name, columns=tuple(columns), values=noisy, sigma=sigma / unit, l2_sensitivity=l2_sensitivity / unit)


def release_counts(accountant: Accountant, name: str, columns: tuple[str, ...], counts: np.ndarray) -> NoisyMeasurement:
    """Release a histogram of counts with the discrete Gaussian mechanism.

    Sensitivity: under add/remove-one-row neighbours one row falls in exactly one cell of the
    histogram, so the ℓ2 (and ℓ1) change of the count vector is exactly 1.
    """
    return release_integer_vector(accountant, name, f"counts over ({', '.join(columns)})", columns, counts, 1)


def release_fixed_point_sums(
    accountant: Accountant, name: str, query: str, sums: np.ndarray, fraction_bits: int, l2_sensitivity: float
) -> NoisyMeasurement:
    """Release sums held in fixed point (integers in units of 2^-fraction_bits).

    ``l2_sensitivity`` is in real units; it is converted to integer units and rounded UP, so the
    calibration never under-states it. Returned values (and σ) are back in real units.
    """
    unit = 2.0**fraction_bits
    integer_sensitivity = int(np.ceil(l2_sensitivity * unit))
    return release_integer_vector(accountant, name, query, (), sums, integer_sensitivity, unit=unit)
