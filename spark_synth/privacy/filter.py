"""A privacy filter: a total zCDP budget fixed before the first call, charged call by call.

Every call states its ρ (chosen adaptively from earlier noisy outputs if the caller likes: zCDP
admits privacy filters — Feldman & Zrnic 2021, Whitehouse et al. 2023 — so the composition of
all calls is ρ_total-zCDP as long as their ρ add up to at most ρ_total). A call that would exceed
what is left is refused before anything is measured. A child filter holds a fixed share of its
parent's budget (reserved at creation); its calls go into the same report, labelled with its scope.

Each call's ρ is checked once, by :meth:`PrivacyFilter.grant`: validated, checked against what is
left and held as a :class:`Grant` before anything is computed; the release then charges its
certified ρ (≤ the grant's) to the grant without checking again. A batch is granted at once (its
exact sum checked once), so the oracle refuses it before its one scan.
"""

from __future__ import annotations

import math
import uuid
from fractions import Fraction
from typing import Sequence

from ..errors import BudgetExhausted, InternalError, ParameterError
from .budget import PrivacyBudget
from .report import NOT_COVERED, PrivacyReport, ReportEntry
from .unit import ROW, PrivacyUnit


def check_rho(rho: object, what: str) -> float:
    if isinstance(rho, bool) or not isinstance(rho, (int, float)) or not math.isfinite(rho) or rho <= 0:
        raise ParameterError(f"rho of {what}", "a finite number > 0", rho)
    return float(rho)


def split_rho(total: float, weights) -> list[float]:
    """``total`` split in proportion to ``weights`` (all > 0), never adding up to more than ``total``."""
    weights = [float(w) for w in weights]
    if not weights or any(not math.isfinite(w) or w <= 0 for w in weights):
        raise ParameterError("budget weights", "a non-empty list of finite numbers > 0", weights)
    total_weight = math.fsum(weights)
    shares = [total * w / total_weight for w in weights]
    while _exact_sum(shares) > Fraction(total):  # guard against upward rounding (exactly: a float sum can round down)
        shares = [math.nextafter(r, 0.0) for r in shares]
    return shares


def _exact_sum(values) -> Fraction:
    return sum(map(Fraction, values), Fraction(0))


def _float_at_most(value: Fraction) -> float:
    """The float nearest ``value`` from below (float() rounds to nearest, which can be an ulp above)."""
    out = float(value)
    return math.nextafter(out, 0.0) if Fraction(out) > value else out


def rho_difference(total: float, part: float) -> float:
    """``total`` − ``part`` rounded down, so that it and ``part`` together never ask more than ``total``
    (a float subtraction can round an ulp up, and the exact budget check then refuses the last request)."""
    return max(0.0, _float_at_most(Fraction(total) - Fraction(part)))


class PrivacyFilter:
    """Charges calls against a fixed ρ; children hold reserved shares of it. ``unit`` is the
    neighbouring relation the ρ is stated for (default: one row); the mechanisms scale every
    sensitivity by its row bound."""

    def __init__(self, budget: PrivacyBudget, *, fit_id: str | None = None, unit: PrivacyUnit = ROW):
        if not isinstance(unit, PrivacyUnit):
            raise InternalError(f"a privacy filter needs a PrivacyUnit; got {type(unit).__name__}")
        self.budget = budget
        self.unit = unit
        self.fit_id = fit_id or uuid.uuid4().hex
        self.rho_total = budget.rho
        self.scope = ""
        self._log: list[ReportEntry] = []
        self._spent = Fraction(0)  # charged + reserved, summed exactly (floats are dyadic rationals)

    @property
    def rho_remaining(self) -> float:
        """What is left, rounded down so that a call asking for exactly this much — or for parts of
        it that ``split_rho`` splits off — passes :meth:`check` (a rounded total − spent can be an
        ulp too large, and a last round spending "what is left" then failed)."""
        return max(0.0, _float_at_most(Fraction(self.rho_total) - self._spent))

    def check(self, rho: float, what: str) -> float:
        """Refuse (charging nothing) a ρ that is invalid or does not fit what is left; returns it as a float."""
        rho = check_rho(rho, what)
        self._refuse_unless_fits(Fraction(rho), rho, what)
        return rho

    def _refuse_unless_fits(self, cost: Fraction, rho: float, what: str) -> None:
        """The budget check: the exact sum of every ρ charged, reserved or held, plus ``cost``, must not exceed the total."""
        if self._spent + cost > Fraction(self.rho_total):
            where = f" of {self.scope}" if self.scope else ""
            raise BudgetExhausted(f"{what} asks rho={rho!r} but only {self.rho_remaining!r} of the budget{where} "
                                  f"(rho={self.rho_total!r}) is left; nothing was measured")

    def grant(self, rho: "float | Grant", what: str) -> "Grant":
        """ρ for one release, checked and held (see :meth:`grant_all`); a :class:`Grant` of this filter
        not yet charged is returned as it is (it was checked when granted)."""
        if isinstance(rho, Grant):
            if rho.holder is not self or rho.used:
                raise InternalError(f"{what}: a grant is charged once, to the filter that granted it")
            return rho
        (out,) = self.grant_all([(rho, what)], what)
        return out

    def grant_all(self, requests: Sequence[tuple[float, str]], what: str) -> "list[Grant]":
        """The one budget check of a batch of releases, before anything is computed: each ``(ρ, what)``
        validated, their exact sum refused unless it fits what is left, and each ρ held until charged
        (:meth:`charge`) or handed back (:meth:`return_unused`). All or nothing."""
        rhos = [check_rho(rho, label) for rho, label in requests]
        if not rhos:
            return []
        total = _exact_sum(rhos)
        self._refuse_unless_fits(total, float(total), what)
        self._spent += total
        return [Grant(self, rho, label) for rho, (_, label) in zip(rhos, requests)]

    def return_unused(self, grants: Sequence["Grant"]) -> None:
        """Hand back the held ρ of grants never charged (nothing was released with them)."""
        for grant in grants:
            if grant.holder is self and not grant.used:
                grant.used = True
                self._spent -= Fraction(grant.rho)

    def charge(self, entry: ReportEntry, grant: "Grant | None" = None) -> None:
        """Record an accounted call (its certified ρ) against ``grant``, or, without one, against a
        grant made now (checked: a call that overspends is refused)."""
        grant = self.grant(entry.rho if grant is None else grant, f"{entry.kind} {entry.name!r}")
        if not 0 < entry.rho <= grant.rho:
            raise InternalError(f"{entry.kind} {entry.name!r} certifies rho={entry.rho!r}, not within its grant {grant.rho!r}")
        grant.used = True
        self._spent += Fraction(entry.rho) - Fraction(grant.rho)
        self._log.append(entry if not self.scope else _scoped(entry, self.scope))

    def record_not_covered(self, name: str, description: str) -> None:
        """Record (spending nothing) a use of private rows that the DP guarantee does not cover: the
        report then says ``dp_guarantee: false`` and lists it. Only explicit opt-ins call this."""
        entry = ReportEntry(kind=NOT_COVERED, name=name, query=description, mechanism="none (not differentially private)", rho=0.0)
        self._log.append(entry if not self.scope else _scoped(entry, self.scope))

    def child(self, rho: float, label: str) -> "PrivacyFilter":
        """A filter holding ``rho`` of this one's budget (reserved now) for calls labelled ``label``."""
        if not isinstance(label, str) or not label or "/" in label:
            raise ParameterError("child oracle label", "a non-empty name without '/'", label)
        grant = self.grant(rho, f"child budget {label!r}")
        grant.used = True  # held for good: the child's total
        child = object.__new__(PrivacyFilter)
        child.budget, child.fit_id, child.rho_total, child.unit = self.budget, self.fit_id, grant.rho, self.unit
        child.scope = f"{self.scope}/{label}" if self.scope else label
        child._log, child._spent = self._log, Fraction(0)
        return child

    def report(self) -> PrivacyReport:
        if self.scope:
            raise InternalError("the report is made by the root filter")
        return PrivacyReport(fit_id=self.fit_id, epsilon_requested=self.budget.epsilon, delta=self.budget.delta,
                             rho_requested=self.rho_total, entries=tuple(self._log), privacy_unit=self.unit)


class Grant:
    """ρ a filter checked and holds for one release, until charged or handed back."""

    __slots__ = ("holder", "rho", "what", "used")

    def __init__(self, holder: PrivacyFilter, rho: float, what: str):
        self.holder, self.rho, self.what, self.used = holder, rho, what, False

    def __repr__(self) -> str:
        return f"Grant(rho={self.rho!r}, what={self.what!r}, used={self.used})"


def _scoped(entry: ReportEntry, scope: str) -> ReportEntry:
    from dataclasses import replace

    return replace(entry, scope=scope)
