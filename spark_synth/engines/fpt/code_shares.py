"""How FPT's model codes share out into a column's codes: post-processing of its noisy 1-way counts.

A column the model holds at a coarser grouping (compression, swamped ranges) is refined after
sampling: a sampled group becomes one of its codes with weights from the noisy counts
(:func:`within_group_shares`, :func:`shrunk_shares`), given the row's target value where the
(column, target) table was measured (:func:`target_ratios`); a null cell the noise alone would fill
is given no mass (:func:`absent_nulls`, :func:`without`). The floors are the 1-way histograms'
(:class:`~..one_way.OneWayConfig`), so FPT and ``independent`` read a column's counts alike.
"""

from __future__ import annotations

import math

import numpy as np

from ...errors import InternalError
from ...privacy import NoisyMeasurement
from ...schema import Schema
from ..one_way import OneWayConfig, distribution_over_ranges, null_is_noise, range_grouping
from ..postprocess import probabilities_from_counts

#: Codes counted below this many noise deviations get no rows inside a group that has codes above it
#: (and a null cell below it is absent): the 1-way histograms' ``null_floor``.
FLOOR_SIGMAS = OneWayConfig.null_floor
#: The weight of each code of a group none of whose codes has one (sampling normalises inside a group).
EVEN_SHARE = 1e-9
#: ... nor below the count that m codes of pure noise all stay under with probability 1 − this (m: the group's codes).
FLOOR_FALSE_PASS = 0.05
#: Log-potential of a code the model gives no mass (exp underflows to 0; finite, so sum-product stays NaN-free).
ABSENT = -1.0e4
#: A column is swamped by the noise when its codes hold fewer rows than this many σ on average (``independent``'s ranges).
SIGMAS_PER_RANGE = OneWayConfig.one_way_sigmas_per_range
#: Prior weight of a group's target rates in a code's (target pairs' refinement), in noise deviations.
TARGET_PRIOR_SIGMAS = 3.0


def within_group_shares(values: np.ndarray, sigma: float, grouping, ordered: int = 0) -> np.ndarray:
    """Weights of a column's codes inside their model groups from its noisy counts (post-processing).

    A code *passes* when its count is above the largest of m pure-noise counts with probability
    ``1 − FLOOR_FALSE_PASS`` (m: the codes of its group; at least ``FLOOR_SIGMAS``·σ): codes below
    get none where another code of their group passes — a group of sparse codes (compression's
    merged tail) would otherwise spread its rows over noise, or, with a fixed bar, give them all to
    the one code whose noise happened to be largest. In a group where none passes, the first
    ``ordered`` codes (an ordered column's values) get the least-squares fit of their counts that
    decreases away from the column's nearest passing code (a tail thins out away from the bulk of
    the data) instead of their scattered noisy counts; other codes keep their counts (clipped at 0)."""
    from scipy.stats import norm  # here, not at import: sampling tasks load this package, and scipy.stats takes 0.5 s

    values = np.asarray(values, dtype=np.float64)
    groups = np.asarray(grouping, dtype=np.int64)
    members = np.bincount(groups)
    bar = np.maximum(FLOOR_SIGMAS, norm.isf(FLOOR_FALSE_PASS / members)) * sigma
    passed = values >= bar[groups]
    group_passes = np.bincount(groups, weights=passed, minlength=members.size) > 0
    weights = np.where(passed | ~group_passes[groups], np.clip(values, 0.0, None), 0.0)
    anchors = np.flatnonzero(passed[:ordered])
    if anchors.size:
        from sklearn.isotonic import isotonic_regression

        codes = np.arange(ordered)
        distance = np.abs(codes[:, None] - anchors[None, :]).min(axis=1)
        ordered_groups = groups[:ordered]
        for group in np.unique(ordered_groups[~group_passes[ordered_groups]]):  # not the null code's own group
            tail = codes[ordered_groups == group]
            tail = tail[np.lexsort((tail, distance[tail]))]  # nearest the bulk first
            weights[tail] = isotonic_regression(values[tail], y_min=0.0, increasing=False)
    return weights / max(weights.sum(), 1e-12)


def swamped_columns(schema: Schema, counts: list, total: float, target: int | None, groupings: list) -> dict:
    """Columns whose codes hold fewer than ``SIGMAS_PER_RANGE`` noise deviations of rows on average
    (from the DP row estimate and public σ), each mapped to its model groups: an ordered column →
    contiguous ranges holding that many (``one_way.range_grouping``; its public ranges when those are
    coarser, which compression may still merge); an unordered one → None (compression's groups).
    Inside the groups the codes' shares come from :func:`shrunk_shares`. Post-processing of DP
    releases and public sizes."""
    out = {}
    for j, (column, (values, sigma)) in enumerate(zip(schema, counts)):
        if j == target or column.hierarchy or total / column.n_values >= SIGMAS_PER_RANGE * sigma:
            continue
        ranges = range_grouping(column, total, sigma, SIGMAS_PER_RANGE)
        if ranges is not None and groupings[j] is not None and max(groupings[j]) <= max(ranges):
            ranges = groupings[j]  # the public ranges are coarser already (compression may merge them)
        out[j] = ranges
    return out


def shrunk_shares(values: np.ndarray, sigma: float, ranges, total: float) -> np.ndarray:
    """A swamped column's distribution over its codes, as ``independent``'s 1-way estimate makes it
    from one release (:func:`~..one_way.distribution_over_ranges` of the ranges' noisy sums).
    Post-processing of a DP release."""
    ranges = np.asarray(ranges, dtype=np.int64)
    return distribution_over_ranges(ranges, np.bincount(ranges, weights=values), total, values, sigma**2)


def absent_nulls(schema: Schema, counts: list, groupings) -> dict[int, int]:
    """Per nullable column whose noisy null count (pooled) is below ``FLOOR_SIGMAS``·σ and whose null
    code is a model code of its own: that model code, which the fitted model gives no mass (a
    column without nulls gets none from the noise on its null cell; post-processing, as
    ``independent``'s ``null_floor``)."""
    absent = {}
    for j, (column, (values, sigma), grouping) in enumerate(zip(schema, counts, groupings)):
        null = column.null_code
        if null is None or not null_is_noise(values[null], sigma, FLOOR_SIGMAS):
            continue
        if grouping is None:
            absent[j] = null
        elif list(grouping).count(grouping[null]) == 1:
            absent[j] = int(grouping[null])
    return absent


def without_noise_null(shares: np.ndarray, grouping, null: int | None, values: np.ndarray, sigma: float) -> np.ndarray:
    """``shares`` (a column's codes' weights inside their model groups) with the null code given none
    when its noisy count (pooled) is below ``FLOOR_SIGMAS``·σ and it shares its group with other
    codes: a null merged with weak codes (compression, a swamped column's groups) would otherwise take
    its share of the group's rows from the noise on its cell alone (german_credit at ε = 0.3: 2–23 %
    nulls in 11 columns that have none). Where none of the other codes has a share either, they get
    equal ones (the rows sampling would spread evenly over the group, the null left out).
    :func:`absent_nulls` does the same for a null that is a model code of its own. Post-processing of
    a DP release."""
    if null is None or not null_is_noise(values[null], sigma, FLOOR_SIGMAS):
        return shares
    groups = np.asarray(grouping, dtype=np.int64)
    others = (groups == groups[null]) & (np.arange(groups.size) != null)
    if not others.any():
        return shares
    kept = np.array(shares, dtype=np.float64)
    if not kept[others].sum() > 0:
        kept[others] = EVEN_SHARE
    kept[null] = 0.0
    return kept


def without(potentials: dict, absent: dict) -> dict:
    """``potentials`` with each column's absent model code given log-potential ``ABSENT`` (no mass)."""
    potentials = dict(potentials)
    for j, code in absent.items():
        scope = next((s for s in potentials if j in s), None)
        if scope is None:  # every column has its 1-way observation, so a potential
            raise InternalError(f"fpt: column {j} has no potential to mask")
        table = potentials[scope].clone()
        index = [slice(None)] * table.dim()
        index[scope.index(j)] = code
        table[tuple(index)] = ABSENT
        potentials[scope] = table
    return potentials


def pooled_counts(one_way: NoisyMeasurement, scope: tuple, pair: NoisyMeasurement, target: int) -> tuple[np.ndarray, float]:
    """A column's counts from its noisy 1-way and its noisy table with the target summed over the
    target, inverse-variance weighted (both are releases of the same counts); with their noise σ."""
    summed = np.asarray(pair.values, dtype=np.float64).sum(axis=scope.index(target))
    weight_one, weight_pair = 1.0 / one_way.sigma**2, 1.0 / (pair.values.shape[scope.index(target)] * pair.sigma**2)
    pooled = (weight_one * np.asarray(one_way.values, dtype=np.float64) + weight_pair * summed) / (weight_one + weight_pair)
    return pooled, 1.0 / math.sqrt(weight_one + weight_pair)


def target_ratios(scope: tuple, measurement: NoisyMeasurement, target: int, total: float, grouping,
                   prior_sigmas: float = TARGET_PRIOR_SIGMAS) -> np.ndarray:
    """(column codes × target codes) factors r(code, t) ≈ P(t | code) / P(t | group) from the noisy
    (column, target) table: refining a sampled group by P(code | group)·r(code, t) draws its code
    given the row's target value. Each code's target rates are shrunk towards its group's by a
    prior worth ``prior_sigmas`` noise deviations of rows (codes with few rows keep their
    group's rates; post-processing of the table's release)."""
    values = np.asarray(measurement.values, dtype=np.float64)
    table = total * probabilities_from_counts(values.ravel(), total).reshape(values.shape)
    table = table.T if scope[0] == target else table
    groups = np.asarray(grouping, dtype=np.int64)
    by_group = np.zeros((int(groups.max()) + 1, table.shape[1]))
    np.add.at(by_group, groups, table)
    overall = table.sum(axis=0) / max(table.sum(), 1e-12)
    held = by_group.sum(axis=1, keepdims=True)
    group_rates = np.where(held > 0, by_group / np.maximum(held, 1e-12), overall)[groups]
    prior = prior_sigmas * measurement.sigma
    rates = (table + prior * group_rates) / (table.sum(axis=1, keepdims=True) + prior)
    return rates / np.maximum(group_rates, 1e-12)
