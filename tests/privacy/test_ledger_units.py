"""The ledger keys budgets by (table, privacy unit): row-level and unit-level charges of one table
compose by the rules of the ledger's "Privacy units" section, and a cap holds for every relation —
on a real local SQLite MLflow store."""

from __future__ import annotations

import math
import uuid

import pytest

from spark_synth import BudgetExhausted
from spark_synth.privacy import epsilon_from_rho, rho_from_epsilon
from spark_synth.track import BudgetLedger
from spark_synth.track.composition import FIT, costs_under, relation_totals
from tests.privacy.test_ledger import prefix, store  # noqa: F401 (fixtures)

DELTA = 1e-9


def charge(ledger: BudgetLedger, rho: float, unit: str = "", k: int = 1) -> str:
    fit_id = uuid.uuid4().hex
    with ledger.reserve(kind=FIT, fit_id=fit_id, fit_run_id="", rho=rho, epsilon=epsilon_from_rho(rho, DELTA), delta=DELTA,
                        unit=unit, rows_per_unit=k) as reserved:
        reserved.bind()
    return fit_id


def test_each_relation_has_its_own_total(store, prefix):
    ledger = BudgetLedger(f"t_{uuid.uuid4().hex[:6]}")
    charge(ledger, 0.01, "customer_id", 20)
    charge(ledger, 0.02, "customer_id", 5)
    charge(ledger, 0.005, "customer_id", 1)
    entries = ledger.entries()
    assert [(e.unit, e.rows_per_unit) for e in entries] == [("customer_id", 20), ("customer_id", 5), ("customer_id", 1)]
    totals = relation_totals(entries, None)
    # per unit of customer_id: every entry at its rho, whatever its K
    assert totals["customer_id"]["rho"] == pytest.approx(0.035) and "unbounded_entries" not in totals["customer_id"]
    # per row: K >= 2 entries at rho, the K = 1 entry at 4 rho (a row change swaps a unit's kept row)
    assert totals[""]["rho"] == pytest.approx(0.01 + 0.02 + 4 * 0.005)
    summary = ledger.summary()
    assert summary["cumulative"]["rho"] == pytest.approx(0.05)
    assert summary["cumulative_per_unit"]["customer_id"]["rho"] == pytest.approx(0.035)


def test_a_row_level_spend_makes_the_unit_level_total_unbounded(store, prefix):
    ledger = BudgetLedger(f"t_{uuid.uuid4().hex[:6]}")
    charge(ledger, 0.01)  # row level: no bound on a unit's rows was enforced
    charge(ledger, 0.01, "customer_id", 10)
    totals = ledger.summary()
    per_unit = totals["cumulative_per_unit"]["customer_id"]
    assert per_unit["epsilon"] == math.inf and per_unit["unbounded_entries"] == 1
    assert totals["cumulative"]["rho"] == pytest.approx(0.02)
    known, unknown = costs_under(ledger.entries(), "customer_id")
    assert len(known) == 1 and unknown == 1
    known, unknown = costs_under(ledger.entries(), "account_id")  # another unit: neither entry is bounded for it
    assert known == [] and unknown == 2


def test_a_cap_holds_for_every_relation(store, prefix):
    ledger = BudgetLedger(f"t_{uuid.uuid4().hex[:6]}")
    ledger.set_cap(2.0, DELTA)
    charge(ledger, 0.01)
    with pytest.raises(BudgetExhausted, match="per unit of `customer_id`.*unbounded.*one privacy unit"):
        ledger.check_room(0.001, "a fit", unit="customer_id", rows_per_unit=5)
    with pytest.raises(BudgetExhausted, match="unbounded"):
        charge(ledger, 0.001, "customer_id", 5)
    assert [e.unit for e in ledger.entries()] == [""]  # the refused entry does not count

    units = BudgetLedger(f"t_{uuid.uuid4().hex[:6]}")
    units.set_cap(2.0, DELTA)
    cap_rho = rho_from_epsilon(2.0, DELTA)
    charge(units, 0.2 * cap_rho, "customer_id", 1)  # per unit 0.2 of the cap; per row 4 × 0.2
    with pytest.raises(BudgetExhausted, match="per row, the cumulative spend"):
        charge(units, 0.06 * cap_rho, "customer_id", 1)  # per unit 0.26 would fit; per row 1.04 does not
    charge(units, 0.15 * cap_rho, "customer_id", 50)  # K >= 2: per row at rho (0.95), per unit 0.35
    with pytest.raises(BudgetExhausted, match="per row"):
        units.check_room(0.1 * cap_rho, "a fit", unit="customer_id", rows_per_unit=50)
    units.check_room(0.04 * cap_rho, "a fit", unit="customer_id", rows_per_unit=50)


def _fitted_per_person(k: int):
    """A synthesizer fitted the pipeline's way under a unit of ``k`` rows (from DP counts of a made-up histogram)."""
    import numpy as np

    from spark_synth import Synthesizer
    from spark_synth.engines.independent import IndependentEngine
    from spark_synth.engines.one_way import one_way_queries
    from spark_synth.privacy import PrivacyBudget, PrivacyFilter, release_query, split_rho
    from spark_synth.privacy.unit import PrivacyUnit
    from tests.unit.test_release_ledger import tiny_schema

    schema = tiny_schema()
    privacy_filter = PrivacyFilter(PrivacyBudget(1.0, DELTA), unit=PrivacyUnit("customer_id", k))
    queries = one_way_queries(schema)
    rng = np.random.default_rng(0)
    measured = [release_query(privacy_filter, q, rng.integers(50, 500, schema[q.columns[0]].size), rho)
                for q, rho in zip(queries, split_rho(privacy_filter.rho_total, [1.0] * len(queries)))]
    synth = Synthesizer("independent", epsilon=1.0, delta=DELTA, privacy_unit="customer_id", max_rows_per_unit=k)
    synth.model_, synth.schema_, synth.timings_ = IndependentEngine().fit_measurements(schema, measured), schema, {}
    synth.privacy_report_, synth.measure_passes_ = privacy_filter.report(), 1
    return synth


def test_a_release_is_charged_under_the_fits_unit_and_its_model_says_so(store, prefix):
    from spark_synth.track import release
    from tests.privacy.test_ledger import logged_run, model_name

    synth = _fitted_per_person(12)
    source = f"t_{uuid.uuid4().hex[:6]}"
    run_id = logged_run(synth, source)
    released = release(run_id, model_name(), source=source)
    (entry,) = BudgetLedger(source).entries()
    assert (entry.kind, entry.unit, entry.rows_per_unit) == ("release", "customer_id", 12)
    version = store.get_model_version(released["model"], released["version"])
    assert version.tags["spark_synth.neighbouring_relation"] == "add/remove one unit of `customer_id`, at most 12 rows each"
    assert version.tags["spark_synth.privacy_unit"] == "customer_id"
