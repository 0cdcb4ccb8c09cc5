"""How a table's ledger entries compose: one total per privacy relation, and when a cap admits a charge.

**Composition rule.** Every spark-synth fit is ρᵢ-zCDP with respect to adding or removing one
row of its source table — or one unit, under a privacy unit (see "Privacy units" below) — (the
accountant works in zCDP; the (ε, δ) of a fit is a conversion of its ρ). Fits of the same table compose by adding ρ: ``ρ_total = Σ ρᵢ``, counting each fit once
by its ``fit_id`` (the UUID in its privacy report and model metadata): charging a fit at fit time
and registering it, or registering it twice, publishes the same DP output — no new spend. Entries
without a fit id (older releases) count once per fit run. The total is shown as (ε, δ_L)-DP with
``ε = epsilon_from_rho(ρ_total, δ_L)`` (the tight conversion of Canonne–Kamath–Steinke), where
``δ_L`` is the cap's δ when a cap is set, otherwise the smallest δ any entry declared. Entries
made at different δs therefore compose without loss. A cap (ε_cap, δ_cap) admits a charge exactly
when ``ρ_total`` after it is at most ``rho_from_epsilon(ε_cap, δ_cap)`` (rounded down, so the
reported cumulative ε never exceeds the cap), or when a finished entry already holds its fit.

A schema drafted by ``spark-synth schema init --dp-bounds`` cost ρ and δ_approx (its thresholded
counts are δ_approx-approximately ρ-zCDP). It is a ``schema`` entry keyed by the pre-pass id (stored
in the schema file), charged when the schema is drafted with MLflow on, and recorded by every fit
charge and every release using the schema in a ledger that does not hold it yet (a spend that has
happened: recorded, never refused), so each ledger a fit or release is charged to holds it, once.
Approximate zCDP composes by adding ρ and δ: the total is δ_A-approximately ρ_total-zCDP with
``δ_A = Σ δ_approx`` (each pre-pass once), i.e. (ε(ρ_total, δ_L), δ_L + δ_A)-DP; the stated δ
includes δ_A. A cap (ε_cap, δ_cap) then admits a charge when
``ρ_total ≤ rho_from_epsilon(ε_cap, δ_cap − δ_A)`` (none when δ_A ≥ δ_cap).

**Privacy units.** Each entry records the relation it was charged under: one row (the default), or
one unit of a column with at most K rows (``--privacy-unit C --max-rows-per-unit K``; the tags
``spark_synth.privacy_unit`` and ``spark_synth.max_rows_per_unit``). The ledger keeps one total per
relation its entries use (:func:`relation_totals`):

* **row level** — every entry counts: a row-level entry at its ρ; a unit-level one at ρ when K ≥ 2
  and 4ρ when K = 1 (removing a row changes the bounded table by at most two rows of one unit — a
  kept row out, the next one in — which the noise calibrated for K rows covers when K ≥ 2);
* **unit of C** — entries of unit C at their ρ (whatever their K: each hides one unit of C). A
  row-level entry (a schema pre-pass included) or one of another unit has no bounded cost per unit
  of C — no bound was enforced, and a unit with m rows would multiply it by m² — so the total is
  unbounded (ε = ∞) and says how many such entries there are: the ledger does not compose unknowns.

A cap holds for every relation: a charge is admitted only when, after it, each relation's total is
within the cap — so under a cap a unit-level charge is refused on a table with row-level spends (and
the other way round), and the refusal says why.
"""

from __future__ import annotations

import math
from dataclasses import replace

from ..errors import ParameterError
from ..privacy import epsilon_from_rho, rho_from_epsilon

# Entries are spark_synth.track.ledger.LedgerEntry values, read by attribute (rho, fit_key, kind, delta,
# delta_approx, unit, rows_per_unit): this module does not import the ledger that uses it.

#: Entry kinds: a fit charged by ``run``/``fit`` as it is made, a registry release, and a schema DP
#: pre-pass (``schema init --dp-bounds``; keyed by its id, charged again — counted once — by fits using it).
FIT, RELEASE, SCHEMA = "fit", "release", "schema"


def compose(entries: list, delta: float | None) -> dict:
    """Total ρ and δ_approx (each fit or pre-pass counted once) as (ε, δ)-DP at total δ ``delta``
    (default: the smallest conversion δ used, plus δ_approx).

    The entries compose to δ_approx-approximate ρ-zCDP, which is (ε(ρ, δ − δ_approx), δ)-DP; when
    ``delta`` (a cap's δ) is not above δ_approx, no ε holds and ``epsilon`` is infinite."""
    by_fit: dict[str, tuple[float, float]] = {}
    for entry in entries:
        rho, approx = by_fit.get(entry.fit_key, (0.0, 0.0))
        by_fit[entry.fit_key] = (max(rho, entry.rho), max(approx, entry.delta_approx))
    rho = math.fsum(r for r, _ in by_fit.values())
    delta_approx = math.fsum(a for _, a in by_fit.values())
    if delta is None:
        conversion = min((e.delta for e in entries), default=None)
        delta = None if conversion is None else conversion + delta_approx
    else:
        conversion = delta - delta_approx
    if delta is None:
        epsilon = 0.0
    elif conversion <= 0:
        epsilon = math.inf
    else:
        epsilon = epsilon_from_rho(rho, conversion)
    releases = sum(1 for e in entries if e.kind == RELEASE)
    return {"rho": rho, "epsilon": epsilon, "delta": delta, "delta_approx": delta_approx, "releases": releases,
            "fits": sum(1 for e in {e.fit_key: e for e in entries}.values() if e.kind != SCHEMA)}


def costs_under(entries: list, unit: str) -> tuple[list, int]:
    """The entries at their cost under relation ``unit`` ('' for rows; see "Privacy units" above),
    and how many have no bounded cost under it (left out of the list)."""
    if not unit:
        return [e if not e.unit or e.rows_per_unit >= 2 else replace(e, rho=4.0 * e.rho) for e in entries], 0
    known = [e for e in entries if e.unit == unit]
    return known, len({e.fit_key for e in entries if e.unit != unit})


def relation_totals(entries: list, delta: float | None, also: str = "") -> dict[str, dict]:
    """:func:`compose` per relation the entries use (rows always; ``also`` too), keyed by the unit's
    column ('' for rows); a total with entries of unbounded cost has ``epsilon`` ∞ and says how many."""
    out = {}
    for unit in dict.fromkeys(["", also, *(e.unit for e in entries)]):
        known, unbounded = costs_under(entries, unit)
        total = compose(known, delta)
        total["privacy_unit"] = unit or None
        if unbounded:
            total.update(epsilon=math.inf, unbounded_entries=unbounded)
        out[unit] = total
    return out


def over_cap(totals: dict[str, dict], cap: tuple[float, float]) -> str | None:
    """Why ``totals`` break ``cap`` (the first relation that does), or None."""
    for unit, total in totals.items():
        what = f"per unit of `{unit}`" if unit else "per row"
        if total.get("unbounded_entries"):
            return (f"{what}, {total['unbounded_entries']} entr(ies) charged under another privacy unit have no bounded cost "
                    f"(a unit with m rows multiplies a row-level rho by m^2), so the spend {what} is unbounded")
        if total["rho"] > rho_cap(cap, total["delta_approx"]):
            return f"{what}, the cumulative spend would be epsilon={total['epsilon']:.6g} (rho={total['rho']:.6g})"
    return None


def rho_cap(cap: tuple[float, float], delta_approx: float) -> float:
    """The most ρ a cap (ε, δ) admits next to ``delta_approx`` of approximate-zCDP entries (−1: none)."""
    if cap[1] - delta_approx <= 0:
        return -1.0
    return rho_from_epsilon(cap[0], cap[1] - delta_approx)


def check_cap(epsilon: object, delta: object) -> tuple[float, float]:
    """Validate a budget cap; returns it as floats."""
    if isinstance(epsilon, bool) or not isinstance(epsilon, (int, float)) or not math.isfinite(epsilon) or epsilon <= 0:
        raise ParameterError("budget cap epsilon (--budget-cap)", "a finite number > 0", epsilon)
    if isinstance(delta, bool) or not isinstance(delta, (int, float)) or not (0.0 < delta < 1.0):
        raise ParameterError("budget cap delta (--cap-delta)", "a number in the open interval (0, 1)", delta)
    return float(epsilon), float(delta)
