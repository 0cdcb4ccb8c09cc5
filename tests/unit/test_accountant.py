import math

import numpy as np
import pytest

from spark_synth.errors import BudgetExhausted, InternalError
from spark_synth.privacy import Accountant, PrivacyBudget, ReleaseRecord, release_counts


def _record(name, rho):
    return ReleaseRecord(name=name, query="q", mechanism="m", l2_sensitivity=1.0, sigma=1.0, rho=rho)


def test_allocation_splits_rho_by_weight_and_never_exceeds():
    budget = PrivacyBudget(1.0, 1e-9)
    acc = Accountant(budget)
    for i, w in enumerate([1, 2, 3, 0.5, 7]):
        acc.request(f"r{i}", w)
    shares = acc.allocate()
    assert math.fsum(shares.values()) <= budget.rho
    assert math.fsum(shares.values()) == pytest.approx(budget.rho, rel=1e-12)
    assert shares["r1"] == pytest.approx(2 * shares["r0"], rel=1e-12)


def test_spending_everything_reports_requested_epsilon():
    budget = PrivacyBudget(1.0, 1e-9)
    acc = Accountant(budget)
    for i in range(15):
        acc.request(f"r{i}")
    acc.allocate()
    for i in range(15):
        release_counts(acc, f"r{i}", ("c",), np.zeros(3, dtype=np.int64))
    assert acc.spent_rho <= budget.rho
    assert acc.spent_epsilon <= 1.0
    assert acc.spent_epsilon == pytest.approx(1.0, rel=1e-9)


def test_overspending_and_repeats_are_refused():
    acc = Accountant(PrivacyBudget(1.0, 1e-9))
    acc.request("a")
    acc.request("b")
    shares = acc.allocate()
    with pytest.raises(BudgetExhausted):
        acc.charge(_record("a", shares["a"] * (1 + 1e-9)))
    acc.charge(_record("a", shares["a"]))
    with pytest.raises(BudgetExhausted, match="already"):
        acc.charge(_record("a", shares["a"]))


def test_plan_order_is_enforced():
    acc = Accountant(PrivacyBudget(1.0, 1e-9))
    with pytest.raises(InternalError):
        acc.rho_for("x")
    acc.request("x")
    acc.allocate()
    with pytest.raises(InternalError):
        acc.request("y")
    with pytest.raises(InternalError):
        acc.charge(_record("never-planned", 1e-6))


def test_gaussian_calibration_is_exact():
    """σ = Δ/√(2ρ) for the allocated ρ, and the certified cost is that ρ."""
    budget = PrivacyBudget(1.0, 1e-9)
    acc = Accountant(budget)
    acc.request("only")
    acc.allocate()
    out = release_counts(acc, "only", ("c",), np.array([5, 6, 7]))
    assert out.sigma == pytest.approx(1.0 / math.sqrt(2 * budget.rho), rel=1e-12)
    (record,) = acc.releases
    assert record.rho == pytest.approx(budget.rho, rel=1e-12) and record.rho <= budget.rho
    assert record.l2_sensitivity == 1.0
    report = acc.report()
    assert report["neighbouring_relation"] == "add/remove one row"
    assert report["releases"][0]["sigma"] == out.sigma
