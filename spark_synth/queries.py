"""Descriptions of the statistics an engine may ask for (public, data-independent, no Spark).

Engines build these in their plan; the measure layer computes them exactly on Spark; the privacy
layer releases them with noise. Queries hold only public information (column names, directions).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np


@dataclass(frozen=True)
class MarginalQuery:
    """A request for the (noisy) histogram of ``columns`` over their public codes."""

    name: str
    columns: tuple[str, ...]
    weight: float = 1.0


@dataclass(frozen=True, eq=False)
class MomentQuery:
    """Sliced Chebyshev moment sums: S[l, j] = Σ_rows T_j(w_lᵀ x) / √j for j = 1..degree.

    ``directions`` is an (L, D) matrix over the public embedding of
    :class:`~spark_synth.schema.embedding.Embedding`, already scaled so that |w_lᵀ x| ≤ 1 for
    every possible row. Sums are accumulated in fixed point (each row's entry rounded to the nearest
    multiple of 2^-fraction_bits), so each row contributes at most 1/√j + 2^-(bits+1) per entry.
    With 36 bits the sums stay exact for tables of up to 2^26 ≈ 67 million rows; larger tables
    need fewer bits (an error says so).

    ``value_knots`` (column name → images of its public bin edges in [-1, 1]) replaces the affine
    encoding of those numeric columns (see :class:`~spark_synth.schema.embedding.Embedding`); it
    must be public, e.g. post-processed from earlier DP releases. An ``adaptive`` query is such a
    query before its knots are known: the pipeline measures and releases the non-adaptive queries
    first and has the engine complete the adaptive ones from those releases
    (:meth:`~spark_synth.engines.base.Engine.adapt`). The sensitivity does not depend on the knots.
    """

    name: str
    directions: np.ndarray = field(repr=False)
    degree: int
    weight: float = 1.0
    fraction_bits: int = 36
    value_knots: dict | None = field(default=None, repr=False)
    adaptive: bool = False

    #: Released sums must fit a signed 64-bit integer (OpenDP's exact discrete Gaussian input).
    MAX_ABS_SUM = 2**62

    @property
    def n_directions(self) -> int:
        return int(self.directions.shape[0])

    @property
    def l2_sensitivity(self) -> float:
        """ℓ2 change of the sum vector when one row is added or removed: ≈ √(L · H_k).

        Each entry |T_j(z)/√j| ≤ 1/√j because |z| ≤ 1, so the squared ℓ2 norm of one row's
        contribution is at most Σ_l Σ_j 1/j = L · H_k (H_k the k-th harmonic number ≤ 1 + ln k).
        Fixed-point rounding adds at most half a unit per entry; a relative margin of 1e-12 covers
        floating-point rounding of the bound itself.
        """
        half_unit = 0.5 * 2.0**-self.fraction_bits
        per_direction = math.fsum((1.0 / math.sqrt(j) + half_unit) ** 2 for j in range(1, self.degree + 1))
        return math.sqrt(self.n_directions * per_direction) * (1.0 + 1e-12)


def measurement_rounds(queries) -> tuple[list, list]:
    """The plan in measuring order: (queries measured and released first, ``adaptive`` queries that
    the engine completes from those releases before they are measured)."""
    adaptive = [q for q in queries if getattr(q, "adaptive", False)]
    return [q for q in queries if not getattr(q, "adaptive", False)], adaptive
