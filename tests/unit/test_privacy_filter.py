"""The privacy filter: exact splits, exact spend, refusals that leave the report consistent, children."""

import math

import numpy as np
import pytest

from spark_synth.errors import BudgetExhausted, ParameterError
from spark_synth.privacy import PrivacyBudget, PrivacyFilter, PrivacyReport, release_query, split_rho
from spark_synth.queries import MarginalQuery


def test_split_is_proportional_and_never_exceeds_the_total():
    budget = PrivacyBudget(1.0, 1e-9)
    shares = split_rho(budget.rho, [1, 2, 3, 0.5, 7])
    assert math.fsum(shares) <= budget.rho
    assert math.fsum(shares) == pytest.approx(budget.rho, rel=1e-12)
    assert shares[1] == pytest.approx(2 * shares[0], rel=1e-12)
    for bad in ([], [1, 0], [1, -1], [float("nan")]):
        with pytest.raises(ParameterError, match="budget weights"):
            split_rho(1.0, bad)


def test_spending_everything_reports_the_requested_epsilon():
    budget = PrivacyBudget(1.0, 1e-9)
    privacy_filter = PrivacyFilter(budget)
    for i, rho in enumerate(split_rho(privacy_filter.rho_total, [1.0] * 15)):
        release_query(privacy_filter, MarginalQuery((f"c{i}",)), np.zeros(3, dtype=np.int64), rho)
    report = privacy_filter.report()
    assert report.rho_spent <= budget.rho and report.epsilon_spent <= 1.0
    assert report.epsilon_spent == pytest.approx(1.0, rel=1e-9)
    assert len(report.measurements) == 15 and privacy_filter.rho_remaining == pytest.approx(0.0, abs=1e-15)


def test_a_call_beyond_the_total_is_refused_and_the_report_stays_consistent():
    privacy_filter = PrivacyFilter(PrivacyBudget(1.0, 1e-9))
    half = privacy_filter.rho_total / 2
    release_query(privacy_filter, MarginalQuery(("a",)), np.array([3, 4]), half)
    before = privacy_filter.report()
    with pytest.raises(BudgetExhausted, match="nothing was measured"):
        release_query(privacy_filter, MarginalQuery(("b",)), np.array([3, 4]), half * (1 + 1e-9))
    after = privacy_filter.report()
    assert after.entries == before.entries and after.rho_spent == before.rho_spent
    release_query(privacy_filter, MarginalQuery(("b",)), np.array([3, 4]), privacy_filter.rho_remaining)
    assert privacy_filter.report().rho_spent <= privacy_filter.rho_total
    for bad in (0.0, -1.0, float("inf"), float("nan"), "1"):
        with pytest.raises((ParameterError, BudgetExhausted)):
            privacy_filter.check(bad, "x")


def test_gaussian_calibration_is_exact_and_reported():
    """σ = Δ/√(2ρ) for the stated ρ, and the certified cost is that ρ."""
    budget = PrivacyBudget(1.0, 1e-9)
    privacy_filter = PrivacyFilter(budget)
    out = release_query(privacy_filter, MarginalQuery(("c",), name="only"), np.array([5, 6, 7]), budget.rho)
    assert out.sigma == pytest.approx(1.0 / math.sqrt(2 * budget.rho), rel=1e-12)
    assert out.query.name == "only" and out.name == "only" and out.columns == ("c",)
    (record,) = privacy_filter.report().entries
    assert record.kind == "measurement" and record.rho == out.rho
    assert record.rho == pytest.approx(budget.rho, rel=1e-12) and record.rho <= budget.rho
    assert record.l2_sensitivity == 1.0 and record.sigma == out.sigma
    report = privacy_filter.report()
    assert report.neighbouring_relation == "add/remove one row"
    assert len(report.fit_id) == 32 and PrivacyFilter(budget).fit_id != report.fit_id  # one identity per fit
    assert PrivacyReport.from_dict(report.to_dict()) == report


def test_child_holds_a_fixed_share_and_reports_under_the_parent():
    privacy_filter = PrivacyFilter(PrivacyBudget(1.0, 1e-9))
    total = privacy_filter.rho_total
    child = privacy_filter.child(total / 4, "partition[0]")
    assert child.rho_total == total / 4 and privacy_filter.rho_remaining == pytest.approx(0.75 * total)
    grandchild = child.child(total / 8, "fpt")
    release_query(grandchild, MarginalQuery(("a",)), np.array([1, 2]), total / 8)
    with pytest.raises(BudgetExhausted):
        release_query(grandchild, MarginalQuery(("a",)), np.array([1, 2]), total / 1e6)
    with pytest.raises(BudgetExhausted):
        child.child(total / 8 * 1.001, "too-big")
    with pytest.raises(BudgetExhausted):
        privacy_filter.child(0.76 * total, "too-big")
    report = privacy_filter.report()
    (entry,) = report.entries
    assert entry.scope == "partition[0]/fpt" and report.rho_spent == entry.rho


def test_what_is_left_can_always_be_spent_exactly():
    # total − fsum(spent) can round up by an ulp; a last round asking for rho_remaining was then
    # refused (seen in a DGM partition's final FPT round). Here 0.2130… − (0.0255… + 0.0358… + 0.0156…)
    # rounds up: the old rho_remaining did not pass check().
    from spark_synth.privacy.report import ReportEntry

    total, charges = 0.21304689817192501, [0.025574525903015125, 0.0358401210495346, 0.015684853493129272]
    assert math.fsum([*charges, max(0.0, total - math.fsum(charges))]) > total  # the rounding this guards
    child = PrivacyFilter(PrivacyBudget(50.0, 1e-9)).child(total, "part")
    for i, rho in enumerate(charges):
        child.charge(ReportEntry(kind="measurement", name=f"m{i}", query="q", mechanism="test", rho=rho))
    left = child.rho_remaining
    assert 0 < total - math.fsum(charges) - left < 1e-15
    child.check(left, "the rest")  # passes
    with pytest.raises(BudgetExhausted):
        child.check(math.nextafter(total - math.fsum(charges), 1.0), "one ulp more")
    rng = np.random.default_rng(0)
    for _ in range(2000):  # and in general: spending exactly what is left always fits
        f = PrivacyFilter(PrivacyBudget(50.0, 1e-9)).child(float(rng.uniform(1e-4, 1.0)), "p")
        for rho in rng.uniform(0, f.rho_total / 7, size=int(rng.integers(1, 7))):
            f.charge(ReportEntry(kind="measurement", name="m", query="q", mechanism="test", rho=float(rho)))
        f.check(f.rho_remaining, "the rest")


def test_a_split_of_what_is_left_can_be_spent_part_by_part():
    # FPT's last round splits rho_remaining into a selection and a measurement share. split_rho kept
    # fsum(shares) <= what is left, but a float sum can round down: the measurement was then refused
    # by one ulp after the selection (a DGM partition on bank_marketing: 59 of these 2,000 cases
    # failed before accounting became exact).
    from spark_synth.privacy.report import ReportEntry

    rng = np.random.default_rng(0)
    for _ in range(2000):
        f = PrivacyFilter(PrivacyBudget(1.0, 1e-9))
        child = f.child(f.rho_total * rng.uniform(0.1, 0.5), "p")
        for _ in range(rng.integers(1, 8)):
            rho = child.rho_remaining * rng.uniform(0.05, 0.4)
            child.charge(ReportEntry(kind="measurement", name="m", query="q", mechanism="test", rho=rho))
        select, measure = split_rho(child.rho_remaining, [0.1, 0.9])
        child.charge(ReportEntry(kind="selection", name="s", query="q", mechanism="test", rho=select))
        child.check(measure, "the last measurement")  # fits
        with pytest.raises(BudgetExhausted):
            child.check(math.nextafter(child.rho_remaining, 1.0) * (1 + 1e-12), "more than is left")


def test_a_grant_is_checked_once_held_and_charged_once():
    from spark_synth.errors import InternalError
    from spark_synth.privacy.report import ReportEntry

    privacy_filter = PrivacyFilter(PrivacyBudget(1.0, 1e-9))
    total = privacy_filter.rho_total
    first, second = privacy_filter.grant_all([(total / 4, "a"), (total / 4, "b")], "2 measurements")
    assert privacy_filter.rho_remaining == pytest.approx(total / 2)  # held
    with pytest.raises(BudgetExhausted, match="2 measurements asks"):
        privacy_filter.grant_all([(total / 4, "c"), (total / 3, "d")], "2 measurements")  # together they do not fit
    entry = ReportEntry(kind="measurement", name="a", query="q", mechanism="test", rho=total / 8)
    with pytest.raises(InternalError, match="within its grant"):
        privacy_filter.charge(ReportEntry(kind="measurement", name="a", query="q", mechanism="test", rho=total / 2), first)
    privacy_filter.charge(entry, first)  # certified below the grant: the rest of it is freed
    assert privacy_filter.rho_remaining == pytest.approx(total * 5 / 8)
    with pytest.raises(InternalError, match="charged once"):
        privacy_filter.charge(entry, first)
    with pytest.raises(InternalError, match="charged once"):
        PrivacyFilter(PrivacyBudget(1.0, 1e-9)).charge(entry, second)
    privacy_filter.return_unused([first, second])  # only `second` was unused
    assert privacy_filter.rho_remaining == pytest.approx(total * 7 / 8)
    assert [e.name for e in privacy_filter.report().entries] == ["a"]
    assert privacy_filter.grant_all([], "nothing") == [] and privacy_filter.rho_remaining == pytest.approx(total * 7 / 8)
    with pytest.raises(BudgetExhausted, match="nothing was measured"):  # charged without a grant: granted (checked) now
        privacy_filter.charge(ReportEntry(kind="measurement", name="z", query="q", mechanism="test", rho=total))
    assert [e.name for e in privacy_filter.report().entries] == ["a"]


def test_a_release_given_a_grant_does_not_check_again(monkeypatch):
    import spark_synth.privacy.filter as filter_module

    privacy_filter = PrivacyFilter(PrivacyBudget(10.0, 1e-9))
    checks, validations = [], []
    real_fits, real_check_rho = PrivacyFilter._refuse_unless_fits, filter_module.check_rho
    monkeypatch.setattr(PrivacyFilter, "_refuse_unless_fits", lambda self, *a: checks.append(a) or real_fits(self, *a))
    monkeypatch.setattr(filter_module, "check_rho", lambda rho, what: validations.append(what) or real_check_rho(rho, what))
    (grant,) = privacy_filter.grant_all([(0.01, "measurement 'a'")], "measurement 'a'")
    release_query(privacy_filter, MarginalQuery(("a",)), np.array([1, 2]), grant)
    assert len(checks) == 1 and validations == ["measurement 'a'"]
    release_query(privacy_filter, MarginalQuery(("b",)), np.array([1, 2]), 0.01)  # a number: checked by the release
    assert len(checks) == 2 and len(validations) == 2
    privacy_filter.child(0.01, "part")
    assert len(checks) == 3 and len(validations) == 3
