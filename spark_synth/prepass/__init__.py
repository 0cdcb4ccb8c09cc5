"""The DP schema pre-pass of ``schema init --dp-bounds`` (types, bounds and categories) and
``--dp-types`` (a CSV's types only), privately.

SELECT the budget: (ε, δ) is split into δ_conversion = δ/2 (the ρ-zCDP → (ε, δ) conversion) and
δ_approx = δ/2 (the thresholds; δ_conversion = δ when no column can be categorical); ρ =
``rho_from_epsilon(ε, δ_conversion)`` is split equally over the columns, δ_approx equally over the
text columns. MEASURE, per column, from one exact pass (:mod:`spark_synth.measure.profile`):
* a CSV column (text, type not declared): DP counts of the kinds of its values — 0 or 1, other
  whole numbers, other numbers, ISO dates, true/false, other text (:data:`~spark_synth.measure.profile.KINDS`;
  one kind per value, ℓ2 sensitivity 1) — with ρ_col/5; then — post-processing — numeric columns
  continue as below with the remaining 4ρ_col/5, date columns as dates, text columns as
  categorical ones (a boolean column needs nothing more: the rest is not spent);
* a CSV column's type from those counts (:func:`_decide_kinds`): boolean when at most 5% of its
  values are not true/false, date when at most 5% are not ISO dates, numeric when at most 5% are
  not numbers — integer when at most 1% of its numbers are not whole — and categorical otherwise;
  each share allowing 4σ of its noise on top (at most half), so a whole-number column is not
  drafted continuous by noise alone;
* ``--dp-types`` (:func:`plan_prepass` with ``types_only``): only those kind counts, for the CSV's
  text columns only, with the whole ρ split over them: the types, a 0/1 column as integer [0, 1]
  (at most 1% of its whole numbers other than 0 and 1, with the same noise allowance), nothing else;
* a numeric column (:func:`_numeric_bounds`): a coarse-to-fine noisy histogram ("approximate
  bounds", as in OpenDP / Tumult / Google's DP libraries). Coarse, ⅔ of the column's ρ:
  discrete-Gaussian counts of public ranges by sign and power of two (:data:`OCTAVES`: 0,
  ±(2^k, 2^(k+1)] from 2^-14 to 2^53, and the rest beyond; integer columns only the ranges holding
  a whole number) — one row is in one range, so ℓ2 sensitivity 1; the bounds are the ends of the
  lowest and highest range whose noisy count reaches a threshold that an empty range's noise
  passes with probability ≤ 1e-6 / #ranges (whole values for integer columns: a 0/1 column drafts
  [0, 1]). Fine, the other ⅓, only where the table is large enough for it to help: noisy counts of
  the eighths of the two end octaves, and each bound moves inwards past the outermost eighths
  while an upper confidence bound on the rows they hold stays within 1% of the rows (unspent, and
  not charged, when skipped). No range standing out leaves the bounds TODO; an end range far from
  the column's other ranges (3 or more unseen powers of two between) or beyond ±2^53 is named in
  a warning (YAML comment, the command's JSON and stderr) to check and edit by hand;
* a date / timestamp / timestamp_ntz column: lower and upper bounds by two DP quantiles (1% and
  99%), half the column's ρ each: the exponential mechanism picks an interval [lo, hi] between
  consecutive public candidates, scored minus the distance of q·n from [#{x < lo}, #{x ≤ hi}] (0
  for the intervals holding the q-quantile, even inside an atom; adding or removing a row moves
  both counts by ≤ 1 and q·n by q, so the score's sensitivity is ≤ 1), read as days since 1970-01-01
  / seconds since 1970-01-01 00:00 (UTC for timestamps, the wall clock for timestamp_ntz), on a
  public calendar grid (:data:`DATE_GRID`, :data:`TIME_GRID`), written as ISO text;
* a text column: categories by a DP thresholded count (:mod:`spark_synth.privacy.thresholding`),
  the column's whole ρ and its share of δ_approx.
Every call is charged to one :class:`~spark_synth.privacy.PrivacyFilter`, so the pre-pass is
δ_approx-approximately ρ_spent-zCDP with ρ_spent ≤ ρ (less when a fine stage is skipped; δ_approx
counted for every column that could have been categorical, whatever path it took). Everything
written — bounds, types, notes, warnings, which stages ran — is post-processing of noise.

The mechanisms live in :mod:`.type_decision` (a CSV column's type), :mod:`.number_ranges` and
:mod:`.numeric_bounds` (numbers), :mod:`.temporal_bounds` (dates and timestamps) and
:mod:`.categories` (text); this module plans the budget and runs them column by column.
"""

from __future__ import annotations

import math
import uuid
from dataclasses import dataclass, field

import numpy as np

from ..errors import InternalError, ParameterError
from ..measure.profile import KINDS, ProfileRequest
from ..privacy import PrivacyBudget, PrivacyFilter, epsilon_from_rho, split_rho
from ..privacy.unit import ROW, PrivacyUnit
from ..schema.columns import ColumnType, temporal_text
from ..schema.cost import PrepassCost
from ..schema.draft import BOOLEAN, FRACTIONAL, INTEGRAL, STRING, TEMPORAL, UNDECLARED, DeclaredColumn, declared_decimals
from ..schema.readers import TODO
from .categories import MAX_CATEGORIES, _categories  # noqa: F401 (re-exported)
from .number_ranges import (GRID, K_MAX, K_MIN, OCTAVES, SUB_STEPS, Range, _RangeCounts,  # noqa: F401 (re-exported)
                            candidate_grid, octave_ranges)
from .numeric_bounds import (CLIP_SHARE, FINE_Z, GAP_RANGES, NEAR_Z, SPURIOUS_RANGE, _flags,  # noqa: F401 (re-exported)
                             _noisy_counts, _numeric_bounds)
from .temporal_bounds import (_TEMPORAL_GRIDS, DATE_GRID, FIRST_DAY, LAST_DAY, LOWER_QUANTILE, TIME_GRID,  # noqa: F401
                              TIME_STEP, UPPER_QUANTILE, _bounds, _Counts)
from .type_decision import DECIDE_Z, INTEGER_SLACK, TEXT_SLACK, _decide, _decide_kinds  # noqa: F401 (re-exported)

#: δ of the pre-pass when ``--dp-delta`` is not given.
DEFAULT_DELTA = 1e-9
#: Declared kinds the pre-pass leaves as drafted (see :func:`plan_prepass`).
_SKIPPED = (BOOLEAN,)
#: Shares of a CSV column's ρ: the type decision, then the rest.
_DECIDE_SHARE = 0.2
#: The note of a column --dp-types leaves with TODOs.
_TYPES_ONLY = "--dp-types decides types only: fill in the TODOs by hand, or draft with --dp-bounds instead"


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
    types_only: bool = False  # --dp-types: the kind counts of the text columns, nothing else
    unit: PrivacyUnit = ROW  # --privacy-unit: the rows read are bounded to K per unit, the noise is K times a row's

    @property
    def flag(self) -> str:
        return "--dp-types" if self.types_only else "--dp-bounds"

    @property
    def cost(self) -> PrepassCost:
        """The planned (worst-case) cost; the run's certified ρ is at most this."""
        return PrepassCost(id=self.id, rho=self.budget.rho, delta_approx=self.delta_approx,
                           epsilon=self.budget.epsilon, delta_conversion=self.budget.delta,
                           unit_column=self.unit.column, unit_max_rows=self.unit.max_rows)


@dataclass(frozen=True)
class PrepassResult:
    columns: dict[str, dict]  # drafted schema entries, by name
    notes: dict[str, str]
    cost: PrepassCost
    report: object  # the PrivacyReport of every call
    warnings: dict[str, list[str]] = field(default_factory=dict)  # bounds to check by hand, by column


def plan_prepass(columns: list[DeclaredColumn], epsilon: float, delta: float, *, types_only: bool = False,
                 unit: PrivacyUnit = ROW) -> Plan:
    """Allocate (ε, δ) over ``columns`` (see the module docstring): ρ equally over every column but
    the boolean ones, which are skipped (nothing spent: a boolean column needs no DP output).

    ``types_only`` (``--dp-types``): only the columns whose type is not declared (a CSV's text
    columns) are planned — the others are left as drafted, unread — and all of ρ (δ is all
    conversion δ: nothing is thresholded) goes to their kind counts."""
    if types_only:
        text = [c for c in columns if c.kind == UNDECLARED]
        if not text:
            raise ParameterError("--dp-types", "used on columns whose type is not declared (a CSV's text columns); "
                                 "these all have a declared type (Parquet/Delta storage types or --types) — drop "
                                 "--dp-types, or use --dp-bounds for their bounds and categories",
                                 [f"{c.name} ({c.spark_type})" for c in columns][:20])
        budget = PrivacyBudget(epsilon, delta)
        rhos = split_rho(budget.rho, [1.0] * len(text))
        return Plan(budget=budget, columns=tuple(ColumnPlan(c, r, 0.0) for c, r in zip(text, rhos)), delta_approx=0.0,
                    types_only=True, unit=unit)
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
    return Plan(budget=budget, columns=plans, delta_approx=math.fsum(p.delta for p in plans), skipped=skipped, unit=unit)


def profile_requests(plan: Plan) -> list[ProfileRequest]:
    """What the exact pass must count for each planned column (dates and timestamps on their own grid)."""
    requests = []
    for p in plan.columns:
        kind = p.column.kind
        if kind in TEMPORAL:
            requests.append(ProfileRequest(p.column.name, numbers=True, categories=False, temporal=ColumnType(kind),
                                           grid=_TEMPORAL_GRIDS[kind]))
        elif kind == UNDECLARED:
            requests.append(ProfileRequest(p.column.name, numbers=not plan.types_only, categories=not plan.types_only,
                                           kinds=True, date_grid=None if plan.types_only else DATE_GRID))
        else:
            requests.append(ProfileRequest(p.column.name, numbers=kind != STRING, categories=kind == STRING))
    return requests


def run_prepass(exact_profiles, plan: Plan) -> PrepassResult:
    """Run the planned mechanisms; ``exact_profiles(requests, grid)`` answers the exact pass
    (:func:`~spark_synth.measure.profile.profile_columns` over the table, or a frame in tests)."""
    privacy_filter = PrivacyFilter(plan.budget, fit_id=plan.id, unit=plan.unit)
    profiles = exact_profiles(profile_requests(plan), GRID)
    drafted, notes, warnings = {}, {}, {}
    for column_plan, profile in zip(plan.columns, profiles):
        entry, note, flags = _column(privacy_filter, column_plan, profile, plan.types_only)
        drafted[column_plan.column.name] = entry
        notes[column_plan.column.name] = note
        if flags:
            warnings[column_plan.column.name] = flags
    for name in plan.skipped:
        notes[name] = "not estimated by the DP pre-pass (boolean: nothing to estimate)"
    report = privacy_filter.report()
    if report.rho_spent > plan.budget.rho or report.delta_approx > plan.delta_approx:
        raise InternalError("the schema pre-pass spent more than it planned")
    cost = PrepassCost(id=plan.id, rho=report.rho_spent, delta_approx=plan.delta_approx,
                       epsilon=epsilon_from_rho(report.rho_spent, plan.budget.delta), delta_conversion=plan.budget.delta,
                       unit_column=plan.unit.column, unit_max_rows=plan.unit.max_rows)
    return PrepassResult(columns=drafted, notes=notes, cost=cost, report=report, warnings=warnings)


def _column(privacy_filter: PrivacyFilter, plan: ColumnPlan, profile, types_only: bool = False) -> tuple[dict, str, list[str]]:
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
                       f"{FIRST_DAY.year}-{LAST_DAY.year})"), []
    if column.kind == UNDECLARED:
        decide, rest = (rho, 0.0) if types_only else split_rho(rho, [_DECIDE_SHARE, 1.0 - _DECIDE_SHARE])
        noisy, sigma = _noisy_counts(privacy_filter, profile.kinds, decide, name=f"{name}: value classes",
                                     description=f"counts of {name}'s values by kind ({', '.join(KINDS)}; one kind "
                                                 f"per value, sensitivity 1)")
        kind, zero_one = _decide_kinds(noisy, sigma)
        how = f"DP type decision: {kind}"
        if kind == "boolean":  # nothing more to estimate: the rest of the column's ρ is not spent
            entry.update(type="boolean")
            return entry, how + " (true/false text)", []
        if kind == "date":
            if types_only:
                entry.update(type="date", min=TODO, max=TODO)
                return entry, how + f" (ISO dates YYYY-MM-DD); {_TYPES_ONLY}", []
            dates = _Counts(profile.date_cells, profile.date_ties)
            low, high = _bounds(privacy_filter, name, dates, rest, DATE_GRID, np.arange(DATE_GRID.size))
            entry.update(type="date", min=temporal_text(ColumnType.DATE, low), max=temporal_text(ColumnType.DATE, high))
            return entry, (how + f" (ISO dates YYYY-MM-DD); DP bounds (quantiles, on a public grid of every day "
                                 f"{FIRST_DAY.year}-{LAST_DAY.year})"), []
        if types_only:
            if kind == "categorical":
                entry.update(type="categorical", categories=TODO)
            elif zero_one:
                entry.update(type="integer", min=0, max=1)
                how += "; a 0/1 column (at most 1% of its whole numbers other than 0 and 1, DP)"
            else:
                entry.update(type=kind, min=TODO, max=TODO)
            return entry, how + (f"; {_TYPES_ONLY}" if not zero_one else ""), []
    else:
        rest, kind = rho, {INTEGRAL: "integer", FRACTIONAL: "continuous", STRING: "categorical"}[column.kind]
        how = f"declared {column.spark_type}"
    if kind == "categorical":
        entry.update(type="categorical", categories=_categories(privacy_filter, name, profile, rest, plan.delta))
        if entry["categories"] == TODO:
            how += "; no category passed the DP threshold (an identifier-like column? --exclude it)"
        else:
            how += "; DP categories (thresholded counts)"
        warnings: list[str] = []
    else:
        integer = kind == "integer"
        low, high, detail, warnings = _numeric_bounds(privacy_filter, name, profile, rest, integer)
        if low is None:
            entry.update(type=kind, min=TODO, max=TODO)
        else:
            entry.update(type=kind, min=int(low) if integer else low, max=int(high) if integer else high)
        if kind == "continuous":
            entry.update(declared_decimals(column))
        how += f"; {detail}"
    if not column.nullable:
        entry["nullable"] = False
    return entry, how, warnings
