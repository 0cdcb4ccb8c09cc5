"""Which target pairs carry the target's dependence above their noise (post-processing of their release).

At a small budget a (column, target) table with few rows per cell is mostly noise: fitted as it is,
the model learns P(target | code) from the noise (bank_marketing at ε = 0.3: P(subscribed | loan
unknown) 0.85 in the output against 0.11 in the table), and a classifier trained on the output
learns it too. A pair enters the model only when its noisy table departs from independence by more
than its noise explains (a χ² test with the cells' known noise, at significance ``level``). Public σ and released
values only: no budget is spent.
"""

from __future__ import annotations

import numpy as np
from scipy.stats import chi2, ncx2

#: Alternations of the weighted rank-1 fit (it settles in a few on count tables).
ALTERNATIONS = 25
#: A pair that fails the test is left out only when the test had this power against a shift of
#: EFFECT in every code's target shares (german_credit, 800 rows: its strongest predictor's pair
#: fails the test at ε = 1 and 3 while its codes' rates differ by 0.12–0.47; left out, TSTR fell
#: from 0.75 to 0.47–0.66 in half the fits).
MIN_POWER, EFFECT = 0.8, 0.1


def _oriented(values, sigma, target_axis: int) -> tuple[np.ndarray, np.ndarray, int]:
    """(table, per-cell noise variance, (r − 1)(c − 1)), the target on the second axis."""
    table = np.asarray(values, dtype=np.float64)
    variance = np.broadcast_to(np.asarray(sigma, dtype=np.float64), table.shape) ** 2
    if target_axis == 0:
        table, variance = table.T, variance.T
    return table, variance, max((table.shape[0] - 1) * (table.shape[1] - 1), 1)


def association_statistic(values: np.ndarray, sigma, target_axis: int) -> tuple[float, int]:
    """(χ² statistic, degrees of freedom (r − 1)(c − 1)) of the noisy 2-way table ``values`` against
    independence: the table's rank-1 fit R·pᵀ (a count per code times the target's distribution),
    by least squares weighted by the cells' noise, and the statistic is its weighted residual
    Σ (T − R·pᵀ)² / σ² — about χ² under independence with Gaussian noise of known scale, whether
    or not the cells' scales differ (an unweighted fit, or p from the target sums alone, is not:
    the largest codes' rows then carry p's error). ``sigma``: a number or
    a table of per-cell noise scales."""
    table, variance, dof = _oriented(values, sigma, target_axis)
    shares = table.sum(axis=0)
    if not np.any(shares > 0):
        return 0.0, dof
    weights = 1.0 / variance
    for _ in range(ALTERNATIONS):  # the weighted rank-1 fit R·pᵀ, by alternating least squares
        rows = (table * shares * weights).sum(axis=1) / np.maximum((shares**2 * weights).sum(axis=1), 1e-300)
        shares = (table * rows[:, None] * weights).sum(axis=0) / np.maximum((rows[:, None] ** 2 * weights).sum(axis=0), 1e-300)
    return float((((table - np.outer(rows, shares)) ** 2) * weights).sum()), dof


def detectable_shift_power(values: np.ndarray, sigma, target_axis: int, level: float, shift: float = EFFECT) -> float:
    """The test's power against a dependence of size ``shift``: every code's target shares moved by
    ``shift`` (one target code up, one down), from the table's noisy code counts and its cells'
    noise — noncentral χ² with noncentrality Σ_codes 2·(rows·shift)² / σ²."""
    table, variance, dof = _oriented(values, sigma, target_axis)
    rows = np.clip(table.sum(axis=1), 0.0, None)
    noncentrality = float((2.0 * (rows * shift) ** 2 / variance.mean(axis=1)).sum())
    return float(ncx2.sf(chi2.ppf(1.0 - level, dof), dof, noncentrality))


def carries_signal(values: np.ndarray, sigma, target_axis: int, level: float, power_rule: bool = True) -> bool:
    """Whether the pair belongs in the model: its departure from independence is significant at
    ``level``, or (``power_rule``: a categorical target) the test could not have told (power below
    :data:`MIN_POWER` against a shift of :data:`EFFECT` in the target's shares: on a small table
    every pair is that noisy, and an unbiased noisy dependence serves a model better than none).
    A regression target's ranges are judged by the test alone: with the power rule,
    california_housing at ε = 0.3 kept 6 of its 9 pairs and its 2-way TVD rose from 0.1125 to 0.1229
    (three runs each). 0: always kept."""
    if level <= 0 or not np.all(np.asarray(sigma) > 0):
        return True  # no test asked for, or a noise-free release (exact test oracles): nothing to test against
    statistic, dof = association_statistic(values, sigma, target_axis)
    return bool(chi2.sf(statistic, dof) < level) or (power_rule and detectable_shift_power(values, sigma, target_axis, level) < MIN_POWER)


def strongest_columns(pairs: list, target: int, k: int) -> list[int]:
    """The ``k`` columns whose target pairs depart most from independence, strongest first: each
    pair ``(scope, values, sigma)`` is ranked by its χ² statistic standardised by its degrees of
    freedom, (χ² − dof)/√(2·dof) (about N(0, 1) under independence), so columns with many codes
    are not favoured for their size. Post-processing of the pairs' release: no budget is spent."""
    scored = []
    for scope, values, sigma in pairs:
        statistic, dof = association_statistic(values, sigma, scope.index(target))
        scored.append(((statistic - dof) / np.sqrt(2.0 * dof), next(j for j in scope if j != target)))
    return [j for _, j in sorted(scored, key=lambda s: (-s[0], s[1]))[:k]]


def every_triple_wanted(kept: list, share: float) -> bool:
    """Whether every (column, column, target) triple stays in the workload instead of the strongest
    columns' (``target_triple_columns``): at least ``share`` of the target pairs were left out as
    noise (``kept``: :func:`carries_signal` per pair). On such a table (credit_default: the six PAY
    columns carry the target's pairs, its thirteen amounts and AGE do not) the target's dependence on
    the other columns can show only jointly with another column, which only their triples measure;
    where most pairs carry it (bank_marketing: five of twenty left out) the pairs hold it already and
    every triple takes the rounds from them. Post-processing of the pairs' release. 0: never."""
    return bool(share and kept) and sum(not keep for keep in kept) >= share * len(kept)
