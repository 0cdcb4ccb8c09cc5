"""DP 1-way histograms at the resolution the noise allows (shared by ``independent`` and SPLICE's anchors).

MEASURE  Stage 1: every column's histogram over its codes, with ``one_way_fine_share`` of the
         column's ρ. The row count n̂ follows from these releases.
         Stage 2: the rest of the column's ρ. An ordered column (numeric, ordinal, date) whose codes
         would each hold fewer than ``one_way_sigmas_per_range``·σ rows (σ: stage 2's noise, from
         public ρ) is measured over G contiguous ranges of its codes, with n̂/G ≥ that many σ; the null
         code stays alone. Every other column is measured over its codes again. The choice of G uses
         only n̂ and σ: post-processing of stage 1 (adaptive composition). Both stages are sums of one
         exact histogram: one scan.
ESTIMATE Least squares over all releases of a column (consistent between ranges and codes; the
         inverse-variance mean for repeated releases); the null cell set to 0 when its estimate is
         below ``null_floor`` standard deviations (a column with no nulls otherwise gets the noise's
         share of them); projection onto the simplex at the ranges' level, scaled to n̂; inside each
         range, the codes' noisy counts shrunk towards an even split (James–Stein). Post-processing only.

Why (measured in docs/engines.md, "1-way histograms"): on small tables the noise swamps single codes of
wide numeric columns, and a flat histogram puts rows in empty bins; measuring wider ranges with half
of the budget and zeroing a noise-sized null cell lowers 1-way TVD there, while tables with enough
rows per code are measured at full resolution as before (two releases of the same codes pool to one).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar, Sequence

import numpy as np

from ..errors import InternalError, ParameterError
from ..privacy import NoisyMeasurement, gaussian_sigma, split_rho
from ..queries import MarginalQuery
from ..schema import Schema
from ..schema.columns import Column, ColumnType
from .postprocess import estimate_total, project_to_simplex


@dataclass(frozen=True, kw_only=True)
class OneWayConfig:
    """Options of the DP 1-way histograms (fields shared by the engines that measure them)."""

    one_way_fine_share: float = 0.5
    one_way_sigmas_per_range: float = 3.0
    null_floor: float = 2.0

    engine_name: ClassVar[str] = "engine"

    def __post_init__(self) -> None:
        prefix = self.engine_name
        if not isinstance(self.one_way_fine_share, (int, float)) or not 0 < self.one_way_fine_share <= 1:
            raise ParameterError(f"{prefix}.one_way_fine_share", "a number in (0, 1] (1: one flat histogram per column)",
                                 self.one_way_fine_share)
        for name in ("one_way_sigmas_per_range", "null_floor"):
            value = getattr(self, name)
            if not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
                raise ParameterError(f"{prefix}.{name}", "a finite number >= 0 (0 turns it off)", value)


def one_way_queries(schema: Schema) -> list[MarginalQuery]:
    """Every column's 1-way histogram over its codes, named ``1-way[column]``."""
    return [MarginalQuery(name=f"1-way[{c.name}]", columns=(c.name,)) for c in schema]


def range_grouping(column: Column, rows: float, sigma: float, sigmas_per_range: float) -> tuple[int, ...] | None:
    """The column's codes grouped into G contiguous ranges holding ≥ ``sigmas_per_range``·σ rows
    each on average (G = ⌊rows / (sigmas_per_range·σ)⌋ ≥ 1; the null code is its own, last group),
    or None when the column is unordered or its codes already hold that many (G ≥ codes).
    ``rows`` must be a DP estimate (or public): the grouping is released with the data."""
    ordered = column.type is ColumnType.ORDINAL or not column.type.is_discrete
    if not ordered or sigmas_per_range <= 0:
        return None
    n_values = column.n_values
    groups = max(1, math.floor(max(rows, 0.0) / (sigmas_per_range * sigma)))
    if groups >= n_values:
        return None
    ranges = (np.arange(n_values) * groups) // n_values
    return tuple(int(g) for g in ranges) + ((groups,) if column.nullable else ())


def measure_one_way(schema: Schema, oracle, rho: float, options: OneWayConfig) -> list[NoisyMeasurement]:
    """Release every column's 1-way histogram in two stages (module docstring), spending exactly
    ``rho`` split evenly over the columns."""
    first, second = stage_budgets(split_rho(rho, [1.0] * len(schema)), options.one_way_fine_share)
    stage_one = measure_stage_one(schema, oracle, first)
    return [*stage_one, *measure_stage_two(schema, oracle, stage_one, second, options)]


def stage_budgets(per_column: Sequence[float], fine_share: float) -> tuple[list[float], list[float]]:
    """Each column's ρ split between stage 1 (``fine_share``) and stage 2 (none when the share is 1)."""
    if fine_share >= 1:
        return list(per_column), []
    pairs = [split_rho(r, [fine_share, 1.0 - fine_share]) for r in per_column]
    return [a for a, _ in pairs], [b for _, b in pairs]


def measure_stage_one(schema: Schema, oracle, rhos: Sequence[float]) -> list[NoisyMeasurement]:
    """Stage 1: every column's histogram over its codes (ρ per column in ``rhos``)."""
    return oracle.measure_many(list(zip(one_way_queries(schema), rhos)))


def measure_stage_two(schema: Schema, oracle, stage_one: Sequence[NoisyMeasurement], rhos: Sequence[float],
                      options: OneWayConfig) -> list[NoisyMeasurement]:
    """Stage 2: ranges of the ordered columns whose codes the noise would swamp, the codes again for
    the others; chosen from stage 1's DP row count and the public σ (post-processing). Nothing
    when ``rhos`` is empty."""
    if not rhos:
        return []
    rows = estimate_total(stage_one)
    second = []
    for column, r in zip(schema, rhos):
        grouping = range_grouping(column, rows, gaussian_sigma(oracle.rows_per_unit, r), options.one_way_sigmas_per_range)
        second.append(MarginalQuery(name=f"1-way[{column.name}]", columns=(column.name,)) if grouping is None else
                      MarginalQuery(columns=(column.name,), groupings=(grouping,), name=f"1-way[{column.name}] ranges"))
    return oracle.measure_many(list(zip(second, rhos)))


def one_way_releases(measurements: Sequence[NoisyMeasurement]) -> list[NoisyMeasurement]:
    """The 1-way histogram releases among ``measurements`` (codes or ranges of one column)."""
    return [m for m in measurements if isinstance(m.query, MarginalQuery) and len(m.columns) == 1]


def one_way_distributions(schema: Schema, measurements: Sequence[NoisyMeasurement], total: float,
                          null_floor: float) -> list[np.ndarray]:
    """Per column, its DP 1-way distribution over codes from all of its 1-way releases (module
    docstring, ESTIMATE); ``total`` is the DP row estimate. Post-processing only."""
    out = []
    for column in schema:
        mine = [m for m in measurements if isinstance(m.query, MarginalQuery) and m.columns == (column.name,)]
        if not mine:
            raise InternalError(f"no 1-way measurement of column {column.name!r}")
        out.append(column_distribution(column, mine, total, null_floor))
    return out


def column_distribution(column: Column, releases: Sequence[NoisyMeasurement], total: float, null_floor: float) -> np.ndarray:
    """One column's distribution over its codes from its releases (over codes and/or one ranges grouping)."""
    codes = [m for m in releases if m.query.groupings is None]
    groupings = {m.query.groupings[0] for m in releases if m.query.groupings is not None}
    if len(groupings) > 1:
        raise InternalError(f"1-way releases of column {column.name!r} use {len(groupings)} different groupings; expected one")
    code_values, code_variance = _pooled(codes, column.size)
    if not groupings:
        group_of, estimate, variance = np.arange(column.size), code_values, code_variance
    else:
        group_of = np.asarray(next(iter(groupings)), dtype=np.int64)
        n_groups = int(group_of.max()) + 1
        ranged = [m for m in releases if m.query.groupings is not None]
        range_values, range_variance = _pooled(ranged, n_groups)
        if codes:  # least squares: the ranges' releases and the sums of the codes' releases inside them
            width = np.bincount(group_of, minlength=n_groups)
            summed, summed_variance = np.bincount(group_of, weights=code_values, minlength=n_groups), width * code_variance
            precision = 1.0 / range_variance + 1.0 / summed_variance
            estimate = (range_values / range_variance + summed / summed_variance) / precision
            variance = 1.0 / precision
        else:
            estimate, variance = range_values, np.full(n_groups, range_variance)
    estimate = np.array(estimate, dtype=np.float64)
    kept = np.ones(estimate.size, dtype=bool)
    if column.nullable and null_floor > 0:
        null_group = group_of[column.null_code]
        kept[null_group] = not null_is_noise(estimate[null_group], math.sqrt(float(np.broadcast_to(variance, estimate.shape)[null_group])),
                                             null_floor)
    return distribution_over_ranges(group_of, estimate, total, code_values if codes else None, code_variance, kept)


def null_is_noise(count: float, sigma: float, null_floor: float) -> bool:
    """Whether a noisy null count is below ``null_floor`` noise deviations: the column is then taken to
    hold no nulls (else every column would get the noise's nulls). Post-processing of the release."""
    return bool(count < null_floor * sigma)


def distribution_over_ranges(group_of: np.ndarray, range_counts: np.ndarray, total: float, code_values: np.ndarray | None,
                             code_variance: float, kept: np.ndarray | None = None) -> np.ndarray:
    """The codes' distribution from noisy counts of their ranges (``group_of``: each code's range):
    the ranges' counts projected onto the simplex scaled to the DP row estimate ``total`` (ranges not
    ``kept`` — a floored null cell — stay empty), each range's mass split over its codes by their
    noisy counts ``code_values`` shrunk towards an even split (:func:`within_range_shares`), or
    evenly without them. Post-processing only (``independent``'s estimate, FPT's swamped columns)."""
    range_counts = np.asarray(range_counts, dtype=np.float64)
    kept = np.ones(range_counts.size, dtype=bool) if kept is None else kept
    groups = np.zeros(range_counts.size)
    groups[kept] = project_to_simplex(range_counts[kept], max(float(total), 1.0))
    if code_values is None:
        width = np.bincount(group_of, minlength=groups.size).astype(np.float64)
        shares = 1.0 / width[group_of]
    else:
        shares = within_range_shares(group_of, code_values, code_variance)
    probabilities = groups[group_of] * shares
    return probabilities / probabilities.sum()


def within_range_shares(group_of: np.ndarray, values: np.ndarray, variance: float) -> np.ndarray:
    """Each code's share of its range: the noisy code counts shrunk towards the range's even split by
    the James–Stein factor max(0, 1 − (m−1)·σ²/Σ(x − x̄)²) of its m codes, so a shape far above the
    noise (a spike at 12, 24, 36 months) is kept and a shape of noise alone becomes even. Negative
    shares are cut to 0; a range left with nothing is split evenly."""
    n_groups = int(group_of.max()) + 1
    width = np.bincount(group_of, minlength=n_groups).astype(np.float64)
    mean = np.bincount(group_of, weights=values, minlength=n_groups) / width
    deviation = values - mean[group_of]
    spread = np.bincount(group_of, weights=deviation**2, minlength=n_groups)
    factor = np.zeros(n_groups)
    np.divide((width - 1.0) * variance, spread, out=factor, where=spread > 0)
    factor = np.where(spread > 0, np.maximum(0.0, 1.0 - factor), 0.0)
    shrunk = np.maximum(mean[group_of] + factor[group_of] * deviation, 0.0)
    held = np.bincount(group_of, weights=shrunk, minlength=n_groups)
    return np.where(held[group_of] > 0, shrunk / np.where(held > 0, held, 1.0)[group_of], 1.0 / width[group_of])


def _pooled(releases: Sequence[NoisyMeasurement], size: int) -> tuple[np.ndarray, float]:
    """Inverse-variance mean of repeated releases of the same histogram, and its per-cell variance."""
    if not releases:
        return np.zeros(size), math.inf
    weights = np.array([1.0 / m.sigma**2 for m in releases])
    values = sum(w * np.asarray(m.values, dtype=np.float64).ravel() for w, m in zip(weights, releases)) / weights.sum()
    return values, float(1.0 / weights.sum())
