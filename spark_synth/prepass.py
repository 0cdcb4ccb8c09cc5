"""The DP schema pre-pass of ``schema init --dp-bounds``: types, bounds and categories, privately.

SELECT the budget: (ε, δ) is split into δ_conversion = δ/2 (the ρ-zCDP → (ε, δ) conversion) and
δ_approx = δ/2 (the thresholds; δ_conversion = δ when no column can be categorical); ρ =
``rho_from_epsilon(ε, δ_conversion)`` is split equally over the columns, δ_approx equally over the
text columns. MEASURE, per column, from one exact pass (:mod:`spark_synth.measure.profile`):
* a CSV column (text, type not declared): DP counts of whole numbers / other numbers / non-numbers
  (ρ_col/5); then — post-processing — numeric columns continue as below with the remaining 4ρ_col/5,
  text columns as categorical ones;
* a numeric column: lower and upper bounds by two DP quantiles, half the column's ρ each: the
  exponential mechanism picks an interval [lo, hi] between consecutive public candidates, scored
  minus the distance of q·n from [#{x < lo}, #{x ≤ hi}] — 0 for the intervals holding the
  q-quantile, even inside an atom (many rows on one value) or between candidates, where a point
  score like −|#{x ≤ c} − q·n| ties every candidate beyond the data with the best one. Adding or
  removing a row moves both counts by ≤ 1 and q·n by q, so the score's sensitivity is ≤ 1. The
  intervals beyond the data score −q·n (or −(1−q)·n), so q = 1% keeps them unlikely when
  q·n·√(2ρ) ≫ log(#candidates); the bounds are the lower interval's lo and the upper one's hi;
* a date / timestamp / timestamp_ntz column: the same two quantiles, read as days since 1970-01-01
  / seconds since 1970-01-01 00:00 (UTC for timestamps, the wall clock for timestamp_ntz), on a
  public calendar grid (:data:`DATE_GRID`, :data:`TIME_GRID`), written as ISO text;
* a text column: categories by a DP thresholded count (:mod:`spark_synth.privacy.thresholding`),
  the column's whole ρ and its share of δ_approx.
Every call is charged to one :class:`~spark_synth.privacy.PrivacyFilter`, so the pre-pass is
δ_approx-approximately ρ_spent-zCDP with ρ_spent ≤ ρ (δ_approx counted for every column that could
have been categorical, whatever path it took). Everything written is post-processing of noise.
"""

from __future__ import annotations

import datetime as dt
import math
import uuid
from dataclasses import dataclass, field

import numpy as np

from .errors import InternalError, ParameterError
from .measure.profile import FRACTIONAL as FRACTIONAL_VALUES
from .measure.profile import OTHER, WHOLE, ProfileRequest
from .privacy import PrivacyBudget, PrivacyFilter, epsilon_from_rho, split_rho
from .privacy.mechanisms import release_counts, select_index
from .privacy.thresholding import release_keys
from .schema.columns import ColumnType, temporal_text
from .schema.cost import PrepassCost
from .schema.draft import BOOLEAN, DATE, FRACTIONAL, INTEGRAL, STRING, TEMPORAL, UNDECLARED, DeclaredColumn
from .schema.readers import TODO

#: δ of the pre-pass when ``--dp-delta`` is not given.
DEFAULT_DELTA = 1e-9
#: Quantiles the bounds estimate: values outside them are clipped by runs using the schema.
LOWER_QUANTILE, UPPER_QUANTILE = 0.01, 0.99
#: A CSV column is numeric when at most this share of its (noisy) values is not a number,
#: and integer when at most INTEGER_SLACK of its numbers are not whole.
TEXT_SLACK, INTEGER_SLACK = 0.05, 0.01
#: Most categories a column keeps (those with the largest noisy counts).
MAX_CATEGORIES = 1000
#: Declared kinds the pre-pass leaves as drafted (see :func:`plan_prepass`).
_SKIPPED = (BOOLEAN,)
#: Shares of a CSV column's ρ: the type decision, then the rest.
_DECIDE_SHARE = 0.2


def candidate_grid() -> np.ndarray:
    """The public candidate bounds: 0, ±1..±100, and ±m·10^k (m in a 1-1.2-1.5-…-9 series, k = −4..15)."""
    mantissas = (1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 7, 8, 9)
    positive = {float(v) for v in range(1, 101)} | {float(f"{m}e{k}") for m in mantissas for k in range(-4, 16)}
    values = sorted({0.0, *positive, *(-v for v in positive)})
    return np.asarray(values, dtype=np.float64)


GRID = candidate_grid()
_WHOLE_CANDIDATES = np.flatnonzero(GRID == np.round(GRID))

#: The public calendar range of date and timestamp candidates.
FIRST_DAY, LAST_DAY = dt.date(1900, 1, 1), dt.date(2100, 12, 31)
_EPOCH_DAY = dt.date(1970, 1, 1)
#: Public candidate dates: every day from FIRST_DAY to LAST_DAY, as days since 1970-01-01 (73,414).
DATE_GRID = np.arange((FIRST_DAY - _EPOCH_DAY).days, (LAST_DAY - _EPOCH_DAY).days + 1, dtype=np.float64)
#: Seconds between timestamp candidates: one hour.
TIME_STEP = 3600
#: Public candidate timestamps: every whole hour from FIRST_DAY 00:00 to the day after LAST_DAY
#: 00:00, as seconds since 1970-01-01 00:00 (UTC for a timestamp, the wall clock for a
#: timestamp_ntz; 1,761,937 candidates). Uniform, not log-spaced like :data:`GRID`: a timestamp
#: sits at an arbitrary offset from the 1970 epoch, so relative resolution means nothing (near 2020
#: the numeric grid steps by years, near 1970 by seconds); a uniform grid resolves every year of the
#: range alike. Hourly, because the exponential mechanism's error grows with log(#candidates) and
#: its run time with #candidates (seconds here), while an hour is fine next to the span of a table
#: whose timestamps are worth 64 bins. Values beyond the range are clipped to its ends by later runs.
TIME_GRID = np.arange((FIRST_DAY - _EPOCH_DAY).days * 86400, (LAST_DAY - _EPOCH_DAY).days * 86400 + 86400 + 1,
                      TIME_STEP, dtype=np.float64)
_TEMPORAL_GRIDS = {DATE: DATE_GRID, **{kind: TIME_GRID for kind in TEMPORAL if kind != DATE}}


@dataclass(frozen=True)
class ColumnPlan:
    column: DeclaredColumn
    rho: float
    delta: float  # its share of δ_approx (0 for numeric columns)


@dataclass(frozen=True)
class Plan:
    """The pre-pass's budget, allocated before any row is read."""

    budget: PrivacyBudget  # (ε, δ_conversion): its ρ is the filter's total
    columns: tuple[ColumnPlan, ...]
    delta_approx: float
    id: str = field(default_factory=lambda: uuid.uuid4().hex)
    skipped: tuple[str, ...] = ()  # boolean columns: nothing to estimate

    @property
    def cost(self) -> PrepassCost:
        """The planned (worst-case) cost; the run's certified ρ is at most this."""
        return PrepassCost(id=self.id, rho=self.budget.rho, delta_approx=self.delta_approx,
                           epsilon=self.budget.epsilon, delta_conversion=self.budget.delta)


@dataclass(frozen=True)
class PrepassResult:
    columns: dict[str, dict]  # drafted schema entries, by name
    notes: dict[str, str]
    cost: PrepassCost
    report: object  # the PrivacyReport of every call


def plan_prepass(columns: list[DeclaredColumn], epsilon: float, delta: float) -> Plan:
    """Allocate (ε, δ) over ``columns`` (see the module docstring): ρ equally over every column but
    the boolean ones, which are skipped (nothing spent: a boolean column needs no DP output)."""
    skipped = tuple(c.name for c in columns if c.kind in _SKIPPED)
    columns = [c for c in columns if c.kind not in _SKIPPED]
    if not columns:
        raise ParameterError("--dp-bounds", "a table with a string, numeric, date or timestamp column to estimate "
                             "(boolean columns get no DP pre-pass)", f"only {list(skipped)}")
    textual = [c for c in columns if c.kind in (STRING, UNDECLARED)]
    delta_conversion = delta / 2.0 if textual else delta
    budget = PrivacyBudget(epsilon, delta_conversion)
    rhos = split_rho(budget.rho, [1.0] * len(columns))
    delta_each = delta / 2.0 / len(textual) if textual else 0.0
    while textual and math.fsum([delta_each] * len(textual)) + delta_conversion > delta:  # never round up
        delta_each = math.nextafter(delta_each, 0.0)
    plans = tuple(ColumnPlan(c, r, delta_each if c in textual else 0.0) for c, r in zip(columns, rhos))
    return Plan(budget=budget, columns=plans, delta_approx=math.fsum(p.delta for p in plans), skipped=skipped)


def profile_requests(plan: Plan) -> list[ProfileRequest]:
    """What the exact pass must count for each planned column (dates and timestamps on their own grid)."""
    requests = []
    for p in plan.columns:
        kind = p.column.kind
        if kind in TEMPORAL:
            requests.append(ProfileRequest(p.column.name, numbers=True, categories=False, temporal=ColumnType(kind),
                                           grid=_TEMPORAL_GRIDS[kind]))
        else:
            requests.append(ProfileRequest(p.column.name, numbers=kind != STRING, categories=kind in (STRING, UNDECLARED)))
    return requests


def run_prepass(exact_profiles, plan: Plan) -> PrepassResult:
    """Run the planned mechanisms; ``exact_profiles(requests, grid)`` answers the exact pass
    (:func:`~spark_synth.measure.profile.profile_columns` over the table, or a frame in tests)."""
    privacy_filter = PrivacyFilter(plan.budget, fit_id=plan.id)
    profiles = exact_profiles(profile_requests(plan), GRID)
    drafted, notes = {}, {}
    for column_plan, profile in zip(plan.columns, profiles):
        entry, note = _column(privacy_filter, column_plan, profile)
        drafted[column_plan.column.name] = entry
        notes[column_plan.column.name] = note
    for name in plan.skipped:
        notes[name] = "not estimated by the DP pre-pass (boolean: nothing to estimate)"
    report = privacy_filter.report()
    if report.rho_spent > plan.budget.rho or report.delta_approx > plan.delta_approx:
        raise InternalError("the schema pre-pass spent more than it planned")
    cost = PrepassCost(id=plan.id, rho=report.rho_spent, delta_approx=plan.delta_approx,
                       epsilon=epsilon_from_rho(report.rho_spent, plan.budget.delta), delta_conversion=plan.budget.delta)
    return PrepassResult(columns=drafted, notes=notes, cost=cost, report=report)


def _column(privacy_filter: PrivacyFilter, plan: ColumnPlan, profile) -> tuple[dict, str]:
    column, rho = plan.column, plan.rho
    name = column.name
    entry: dict = {"name": name}
    if column.kind in TEMPORAL:
        grid, kind = _TEMPORAL_GRIDS[column.kind], ColumnType(column.kind)
        low, high = _bounds(privacy_filter, name, profile, rho, grid, np.arange(grid.size))
        entry.update(type=kind.value, min=temporal_text(kind, low), max=temporal_text(kind, high))
        if not column.nullable:
            entry["nullable"] = False
        step = "day" if kind is ColumnType.DATE else "hour"
        return entry, (f"declared {column.spark_type}; DP bounds (quantiles, on a public grid of every {step} "
                       f"{FIRST_DAY.year}-{LAST_DAY.year})")
    if column.kind == UNDECLARED:
        decide, rest = split_rho(rho, [_DECIDE_SHARE, 1.0 - _DECIDE_SHARE])
        noisy = release_counts(privacy_filter, profile.classes, decide, name=f"{name}: value classes",
                               description=f"counts of {name}'s whole numbers, other numbers and non-numbers")
        kind = _decide(noisy)
        how = f"DP type decision: {kind}"
    else:
        rest, kind = rho, {INTEGRAL: "integer", FRACTIONAL: "continuous", STRING: "categorical"}[column.kind]
        how = f"declared {column.spark_type}"
    if kind == "categorical":
        entry.update(type="categorical", categories=_categories(privacy_filter, name, profile, rest, plan.delta))
        if entry["categories"] == TODO:
            how += "; no category passed the DP threshold (an identifier-like column? --exclude it)"
        else:
            how += "; DP categories (thresholded counts)"
    else:
        integer = kind == "integer"
        low, high = _bounds(privacy_filter, name, profile, rest, GRID, _WHOLE_CANDIDATES if integer else np.arange(GRID.size))
        entry.update(type=kind, min=int(low) if integer else low, max=int(high) if integer else high)
        how += "; DP bounds (quantiles)"
    if not column.nullable:
        entry["nullable"] = False
    return entry, how


def _decide(noisy: np.ndarray) -> str:
    """Post-processing of the noisy class counts: categorical, integer or continuous."""
    whole, fractional, other = (max(float(v), 0.0) for v in noisy[[WHOLE, FRACTIONAL_VALUES, OTHER]])
    numbers = whole + fractional
    if numbers <= 0 or other > TEXT_SLACK * (numbers + other):
        return "categorical"
    return "integer" if fractional <= INTEGER_SLACK * numbers else "continuous"


def _bounds(privacy_filter: PrivacyFilter, name: str, profile, rho: float, grid: np.ndarray,
            candidates: np.ndarray) -> tuple[float, float]:
    """[min, max]: the edges of two intervals between consecutive public candidates (``grid`` at the
    indexes ``candidates``: whole ones for integer columns) holding the lower / upper quantile, each
    chosen by the exponential mechanism at half of ``rho``; ``profile`` counted on ``grid``."""
    at_most = np.cumsum(profile.grid)[candidates]  # #{x <= c} for each candidate c
    below = at_most - profile.ties[candidates]  # #{x < c}
    n = float(profile.grid.sum())
    low_end, high_end = below[:-1], at_most[1:]  # interval i: [candidates[i], candidates[i + 1]]
    picks = []
    for q, label in ((LOWER_QUANTILE, "lower"), (UPPER_QUANTILE, "upper")):
        scores = -np.maximum(np.maximum(low_end - q * n, q * n - high_end), 0.0)
        picks.append(select_index(privacy_filter, scores, 1.0, rho / 2.0, name=f"{name}: {label} bound",
                                  description=f"{q:g}-quantile of {name}: one of {scores.size} intervals between public "
                                              f"candidates (score -dist(q n, [#{{x < lo}}, #{{x <= hi}}]), sensitivity 1)"))
    low, high = min(picks), max(picks) + 1  # lower edge of the lower interval, upper edge of the upper one
    values = grid[candidates[[low, high]]]
    return float(values[0]), float(values[1])


def _categories(privacy_filter: PrivacyFilter, name: str, profile, rho: float, delta: float):
    """The categories kept by the DP thresholded count, sorted; ``TODO`` when none is kept."""
    keys = sorted(profile.categories)
    counts = np.asarray([profile.categories[k] for k in keys], dtype=np.int64)
    kept, noisy = release_keys(privacy_filter, counts, rho, delta, name=f"{name}: categories",
                               description=f"thresholded counts of {name}'s values (one value per row)")
    chosen = [(-noisy[i], keys[i]) for i in np.flatnonzero(kept)]
    chosen = sorted(chosen)[:MAX_CATEGORIES]  # the largest noisy counts: post-processing
    return sorted(k for _, k in chosen) if chosen else TODO
