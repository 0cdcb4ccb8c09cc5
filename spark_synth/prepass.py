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
"""

from __future__ import annotations

import datetime as dt
import math
import uuid
from dataclasses import dataclass, field

import numpy as np

from .errors import InternalError, ParameterError
from .measure.profile import FRACTIONAL as FRACTIONAL_VALUES
from .measure.profile import ISO_DATE, KINDS, OTHER, OTHER_NUMBER, OTHER_WHOLE, TEXT, TRUE_FALSE, WHOLE, ZERO_ONE, ProfileRequest
from .privacy import PrivacyBudget, PrivacyFilter, epsilon_from_rho, split_rho
from .privacy.mechanisms import release_counts, select_index
from .privacy.noise import calibrated_measurement
from .privacy.thresholding import release_keys, threshold_for
from .privacy.unit import ROW, PrivacyUnit
from .schema.columns import ColumnType, temporal_text
from .schema.cost import PrepassCost
from .schema.draft import (BOOLEAN, DATE, FRACTIONAL, INTEGRAL, STRING, TEMPORAL, UNDECLARED, DeclaredColumn,
                           declared_decimals)
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
#: The type decision allows this many σ of noise above each slack (at most half the values).
DECIDE_Z = 4.0
#: Numeric bounds (see :func:`_numeric_bounds`): the share of a column's ρ the coarse octave
#: histogram gets (the fine stage the rest); the chance that an empty range passes the threshold,
#: over all of a column's ranges (a bound orders of magnitude off is the failure this pre-pass
#: exists to avoid, so it is a one-in-a-million event per column); the share of rows the fine
#: stage may clip at each end, and the number of σ its confidence bound adds; how many unseen
#: ranges between an end range and the rest of the column's seen ranges make a warning.
_COARSE_SHARE = 2.0 / 3.0
SPURIOUS_RANGE = 1e-6
CLIP_SHARE, FINE_Z = 0.01, 2.0
GAP_RANGES = 3
#: An unseen range just outside a bound with a noisy count of NEAR_Z·σ or more is named in a warning.
NEAR_Z = 3.0
#: Declared kinds the pre-pass leaves as drafted (see :func:`plan_prepass`).
_SKIPPED = (BOOLEAN,)
#: Shares of a CSV column's ρ: the type decision, then the rest.
_DECIDE_SHARE = 0.2
#: The note of a column --dp-types leaves with TODOs.
_TYPES_ONLY = "--dp-types decides types only: fill in the TODOs by hand, or draft with --dp-bounds instead"


#: Octaves of the numeric bounds: magnitudes from 2^K_MIN (≈ 6.1e-5) to 2^K_MAX (≈ 9.0e15, the
#: largest power of two below which float64 holds every integer); values beyond are clipped to ±2^K_MAX.
K_MIN, K_MAX = -14, 53
#: Equal parts of an octave that the fine stage resolves (2^k·(1 + j/8), j = 0..7).
SUB_STEPS = 8


def candidate_grid() -> np.ndarray:
    """The public grid the exact pass counts numbers on: 0 and ±2^k·(1 + j/8) (k = K_MIN..K_MAX−1,
    j = 0..SUB_STEPS−1), and ±2^K_MAX — every octave edge and every edge of its eighths."""
    magnitudes = [2.0**k * (SUB_STEPS + j) / SUB_STEPS for k in range(K_MIN, K_MAX) for j in range(SUB_STEPS)]
    magnitudes.append(2.0**K_MAX)
    return np.asarray(sorted({0.0, *magnitudes, *(-m for m in magnitudes)}), dtype=np.float64)


GRID = candidate_grid()

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


@dataclass(frozen=True)
class _Counts:
    """A column's counts on a grid (the shape :func:`_bounds` reads): cells and ties."""

    grid: np.ndarray
    ties: np.ndarray


def _decide_kinds(noisy: np.ndarray, sigma: float) -> tuple[str, bool]:
    """Post-processing of the noisy kind counts (:data:`~spark_synth.measure.profile.KINDS`, noise σ
    each; NaN for a kind not counted): ``(type, zero_one)``.

    boolean when at most TEXT_SLACK of the values are not true/false; date when at most TEXT_SLACK
    are not ISO dates; integer / continuous when at most TEXT_SLACK are not numbers (integer when at
    most INTEGER_SLACK of the numbers are not whole; ``zero_one`` when also at most INTEGER_SLACK of
    the whole numbers are not 0 or 1); categorical otherwise. Each share allows DECIDE_Z times the σ
    of the noisy sum it compares (σ√k for k counts) on top, but never more than half: a table whose
    noise swamps the slack decides by majority."""
    noisy = np.asarray(noisy, dtype=np.float64)
    counted = ~np.isnan(noisy)
    c = np.where(counted, np.maximum(noisy, 0.0), 0.0)

    def within(outside: list[int], share: float, total: float) -> bool:
        k = int(counted[outside].sum())
        return float(c[outside].sum()) <= min(share * total + DECIDE_Z * sigma * math.sqrt(k), 0.5 * total)

    everything = list(range(len(KINDS)))
    total = float(c.sum())
    for kind, index in (("boolean", TRUE_FALSE), ("date", ISO_DATE)):
        if c[index] > 0 and within([i for i in everything if i != index], TEXT_SLACK, total):
            return kind, False
    numbers = float(c[[ZERO_ONE, OTHER_WHOLE, OTHER_NUMBER]].sum())
    if numbers <= 0 or not within([ISO_DATE, TRUE_FALSE, TEXT], TEXT_SLACK, total):
        return "categorical", False
    if not within([OTHER_NUMBER], INTEGER_SLACK, numbers):
        return "continuous", False
    whole = float(c[[ZERO_ONE, OTHER_WHOLE]].sum())
    return "integer", bool(c[ZERO_ONE] > 0 and within([OTHER_WHOLE], INTEGER_SLACK, whole))


def _decide(noisy: np.ndarray, sigma: float) -> str:
    """:func:`_decide_kinds` on three noisy counts — whole numbers, other numbers, non-numbers —
    (the split of ``ColumnProfile.classes``): categorical, integer or continuous."""
    whole, fractional, other = (float(v) for v in np.asarray(noisy, dtype=np.float64)[[WHOLE, FRACTIONAL_VALUES, OTHER]])
    kinds = np.full(len(KINDS), np.nan)
    kinds[[OTHER_WHOLE, OTHER_NUMBER, TEXT]] = whole, fractional, other
    return _decide_kinds(kinds, sigma)[0]


@dataclass(frozen=True)
class Range:
    """A public range of numbers: ``(lo, hi]`` above zero (``side`` +1), ``[lo, hi)`` below it (−1),
    or ``{0}`` (0); ``lo`` / ``hi`` are ∓inf for the ranges beyond ±2^K_MAX."""

    lo: float
    hi: float
    side: int

    @property
    def octave(self) -> bool:
        """Whether it is an octave ±(2^k, 2^(k+1)] with K_MIN ≤ k < K_MAX (the fine stage splits those)."""
        return self.side != 0 and self.lo != 0 and self.hi != 0 and math.isfinite(self.lo) and math.isfinite(self.hi)

    def holds_integer(self) -> bool:
        if self.side == 0:
            return True
        if self.side > 0:
            return math.isinf(self.hi) or math.floor(self.hi) > self.lo
        return math.isinf(self.lo) or math.ceil(self.lo) < self.hi

    def low(self, integer: bool) -> float:
        """The least value of the range (the least whole one for ``integer``); −2^K_MAX beyond the grid."""
        if self.side == 0:
            return 0.0
        if math.isinf(self.lo):
            return -(2.0**K_MAX)
        if integer:
            return float(math.floor(self.lo) + 1 if self.side > 0 else math.ceil(self.lo))
        return self.lo

    def high(self, integer: bool) -> float:
        """The greatest value of the range (the greatest whole one for ``integer``); 2^K_MAX beyond the grid."""
        if self.side == 0:
            return 0.0
        if math.isinf(self.hi):
            return 2.0**K_MAX
        if integer:
            return float(math.floor(self.hi) if self.side > 0 else math.ceil(self.hi) - 1)
        return self.hi

    def parts(self) -> list["Range"]:
        """An octave's SUB_STEPS equal parts, in increasing order (grid points, exactly)."""
        base = min(abs(self.lo), abs(self.hi))
        if self.side > 0:
            edges = [base * (SUB_STEPS + j) / SUB_STEPS for j in range(SUB_STEPS + 1)]
        else:
            edges = [-base * (2 * SUB_STEPS - j) / SUB_STEPS for j in range(SUB_STEPS + 1)]
        return [Range(a, b, self.side) for a, b in zip(edges[:-1], edges[1:])]


def octave_ranges() -> tuple[Range, ...]:
    """The coarse stage's public ranges, in increasing order: below −2^K_MAX, the octaves
    [−2^(k+1), −2^k), [−2^K_MIN, 0), {0}, (0, 2^K_MIN], the octaves (2^k, 2^(k+1)], above 2^K_MAX."""
    below = [Range(-math.inf, -(2.0**K_MAX), -1)]
    below += [Range(-(2.0 ** (k + 1)), -(2.0**k), -1) for k in range(K_MAX - 1, K_MIN - 1, -1)]
    below.append(Range(-(2.0**K_MIN), 0.0, -1))
    above = [Range(0.0, 2.0**K_MIN, 1)] + [Range(2.0**k, 2.0 ** (k + 1), 1) for k in range(K_MIN, K_MAX)]
    above.append(Range(2.0**K_MAX, math.inf, 1))
    return (*below, Range(0.0, 0.0, 0), *above)


OCTAVES = octave_ranges()


class _RangeCounts:
    """Exact counts of public ranges from a column's profile on :data:`GRID` (cells and ties)."""

    def __init__(self, profile):
        self.at_most = np.cumsum(profile.grid)[: GRID.size]  # #{x <= GRID[i]}
        self.below = self.at_most - profile.ties  # #{x < GRID[i]}
        self.n = int(profile.grid.sum())

    @staticmethod
    def _index(x: float) -> int:
        i = int(np.searchsorted(GRID, x))
        if i >= GRID.size or GRID[i] != x:
            raise InternalError(f"{x!r} is not a point of the pre-pass grid")
        return i

    def __call__(self, r: Range) -> int:
        if r.side == 0:
            i = self._index(0.0)
            return int(self.at_most[i] - self.below[i])
        if r.side > 0:
            top = self.n if math.isinf(r.hi) else self.at_most[self._index(r.hi)]
            return int(top - self.at_most[self._index(r.lo)])
        bottom = 0 if math.isinf(r.lo) else self.below[self._index(r.lo)]
        return int(self.below[self._index(r.hi)] - bottom)


def _noisy_counts(privacy_filter: PrivacyFilter, counts, rho: float, *, name: str, description: str):
    """:func:`release_counts` (ℓ2 sensitivity 1 per row, K per unit; charged), and the σ of its noise (the
    same calibration)."""
    sigma = calibrated_measurement(rho, privacy_filter.unit.max_rows, integer=True)[1]
    return release_counts(privacy_filter, np.asarray(counts, dtype=np.int64), rho, name=name,
                          description=description), sigma


def _numeric_bounds(privacy_filter: PrivacyFilter, name: str, profile, rho: float,
                    integer: bool) -> tuple[float | None, float | None, str, list[str]]:
    """[min, max] of a numeric column from a noisy histogram over sign and octave, then its eighths.

    COARSE (``_COARSE_SHARE`` of ``rho``): discrete-Gaussian counts of :data:`OCTAVES` (only the
    ranges holding a whole number for ``integer``); one row is in one range, so ℓ2 sensitivity 1.
    A range is *seen* when its noisy count reaches τ, the smallest threshold that an empty range's
    noise reaches with probability ≤ SPURIOUS_RANGE / #ranges; the bounds are the least value of
    the lowest seen range and the greatest of the highest (whole values for ``integer``). None seen:
    (None, None) — the bounds stay TODO.
    FINE (the rest of ``rho``), only where it can help: the eighths of the two end octaves
    (counted once if they are one; sensitivity 1 again) get noisy counts, and each end moves
    inwards past the outermost eighths as long as an upper confidence bound on the rows they hold
    (noisy sum + FINE_Z·σ·√m) stays within CLIP_SHARE of the noisy row count. Skipped — nothing
    spent — when even one empty eighth could not pass that test (small tables, large σ).
    Everything after the noisy counts is post-processing. Returns ``(min, max, note, warnings)``."""
    counts = _RangeCounts(profile)
    ranges = [r for r in OCTAVES if not integer or r.holds_integer()]
    coarse_rho, fine_rho = split_rho(rho, [_COARSE_SHARE, 1.0 - _COARSE_SHARE])
    noisy, sigma = _noisy_counts(privacy_filter, [counts(r) for r in ranges], coarse_rho,
                                 name=f"{name}: octave histogram",
                                 description=f"counts of {name}'s numbers in {len(ranges)} public ranges by sign and "
                                             f"power of two (one range per row, sensitivity 1)")
    tau = threshold_for(sigma, SPURIOUS_RANGE / len(ranges))
    seen = np.flatnonzero(noisy >= tau)
    if seen.size == 0:
        return None, None, "no DP bounds: no range of values passed the noise threshold", [
            f"column '{name}': no range of its values stood out from the DP noise (too few rows for this epsilon, "
            f"each range needs about {tau} rows); 'min' and 'max' are left TODO — fill them in by hand from public "
            f"knowledge, or draft again with a larger --dp-bounds"]
    first, last = int(seen[0]), int(seen[-1])
    low, high = ranges[first].low(integer), ranges[last].high(integer)
    how = f"DP bounds (noisy octave histogram, threshold {tau}"
    clip = CLIP_SHARE * max(float(noisy.sum()), 0.0)  # rows each end may clip: 1% of the noisy row count
    fine_sigma = calibrated_measurement(fine_rho, 1, integer=True)[1]
    parts = {}  # the end octaves worth refining (by index into ranges), and their parts
    for index in dict.fromkeys((first, last)):
        kept = [p for p in ranges[index].parts() if not integer or p.holds_integer()] if ranges[index].octave else []
        if len(kept) >= 2 and FINE_Z * fine_sigma <= clip:  # else even one empty part could never be clipped
            parts[index] = kept
    if parts:
        measured = [p for kept in parts.values() for p in kept]
        fine, _ = _noisy_counts(privacy_filter, [counts(p) for p in measured], fine_rho, name=f"{name}: octave eighths",
                                description=f"counts of {name}'s numbers in the eighths of its end octave(s) "
                                            f"(one range per row, sensitivity 1)")
        split = np.cumsum([len(kept) for kept in parts.values()])[:-1]
        noisy_parts = dict(zip(parts, np.split(fine, split)))
        top = _clipped(noisy_parts[last][::-1], fine_sigma, clip) if last in parts else 0  # from the top down
        if last in parts:
            high = parts[last][::-1][top].high(integer)
        if first in parts:  # from the bottom up; within one octave, at least one part is kept
            bottom = _clipped(noisy_parts[first], fine_sigma, clip)
            low = parts[first][min(bottom, len(parts[first]) - 1 - top) if first == last else bottom].low(integer)
        how += ", then eighths of the end octave" + ("s" if len(parts) > 1 else "")
    how += ")"
    widened = low == high  # one value seen (a constant column): a schema needs min < max
    if widened:
        high = low + 1 if low + 1 != low else math.nextafter(low, math.inf)  # (a whole number past 2^53 too)
    warnings = _flags(name, ranges, noisy, sigma, tau, low, high, integer, widened)
    if widened:
        warnings.append(f"column '{name}': only the value {_number(low)} stood out from the DP noise; 'max' was set "
                        f"to {_number(high)} — edit the bounds by hand if the column holds other values")
    if integer and (low, high) == (0, 1):
        how += "; a 0/1 column"
    return low, high, how, warnings


def _clipped(outer_first: np.ndarray, sigma: float, clip: float) -> int:
    """How many of an end octave's parts (noisy counts, the outermost first) to clip: the most m
    such that, for every j ≤ m, the first j parts' noisy sum plus FINE_Z·σ·√j is at most ``clip``
    — never all of them (the octave stood out)."""
    j = np.arange(1, outer_first.size + 1)
    fits = np.cumsum(outer_first) + FINE_Z * sigma * np.sqrt(j) <= clip
    m = outer_first.size if fits.all() else int(np.argmin(fits))
    return min(m, outer_first.size - 1)


def _flags(name: str, ranges: list[Range], noisy: np.ndarray, sigma: float, tau: int, low: float, high: float,
           integer: bool, widened: bool = False) -> list[str]:
    """Warnings about the drafted bounds, from the coarse noisy counts (post-processing): an end range
    beyond ±2^K_MAX; an end range GAP_RANGES or more unseen ranges away from the column's other
    seen ranges (a bound reaching orders of magnitude past the other values: a few extreme values,
    or a one-in-a-million noise spike); and an unseen range just outside a bound whose noisy count
    is still NEAR_Z·σ or more (values the bound clips that are likely real; not above a ``widened``
    max, which its own warning names)."""
    out = []
    seen = np.flatnonzero(noisy >= tau)
    zero = next(i for i, r in enumerate(ranges) if r.side == 0)
    nonzero = [int(i) for i in seen if i != zero]
    for end, edge, inner, outer, bound in (("min", int(seen[0]), seen[1:2], int(seen[0]) - 1, low),
                                            ("max", int(seen[-1]), seen[-2:-1], int(seen[-1]) + 1, high)):
        if math.isinf(ranges[edge].lo) or math.isinf(ranges[edge].hi):
            out.append(f"column '{name}': values beyond ±{_number(2.0**K_MAX)} stood out from the DP noise; '{end}' was "
                       f"clipped to {_number(bound)} — edit it by hand (or --exclude the column)")
            continue
        if edge != zero and any(i != edge for i in nonzero) and inner.size:
            gap = abs(edge - int(inner[0])) - 1
            if gap >= GAP_RANGES:
                rest = ranges[int(inner[0])]
                reach = rest.high(integer) if end == "max" else rest.low(integer)
                out.append(f"column '{name}': '{end}: {_number(bound)}' comes from values {gap} powers of two away "
                           f"from the column's other values (which reach {_number(reach)}): a few extreme values, or "
                           f"noise — check it and edit '{end}' by hand (e.g. to a public limit)")
        if 0 <= outer < len(ranges) and noisy[outer] >= NEAR_Z * sigma and not (widened and end == "max"):
            beyond = ranges[outer].low(integer) if end == "min" else ranges[outer].high(integer)
            side, way = ("below", "down") if end == "min" else ("above", "up")
            out.append(f"column '{name}': values {side} '{end}: {_number(bound)}' ({way} to {_number(beyond)}) have a "
                       f"noisy count of {float(noisy[outer]):.0f}, under the threshold {tau} yet above the noise: runs "
                       f"will clip them — widen '{end}' by hand if a public limit allows")
    return out


def _number(x: float) -> str:
    """A bound as a user types it: whole numbers without a decimal point or exponent."""
    return str(int(x)) if float(x).is_integer() else f"{x:.15g}"


def _bounds(privacy_filter: PrivacyFilter, name: str, profile, rho: float, grid: np.ndarray,
            candidates: np.ndarray) -> tuple[float, float]:
    """[min, max] of a date / timestamp column: the edges of two intervals between consecutive public
    candidates (``grid`` at the indexes ``candidates``) holding the lower / upper quantile, each
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
