"""The DP schema pre-pass: the threshold's δ, exact accounting, noise scales, and what it drafts."""

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from spark_synth.measure.profile import ProfileRequest, profile_frame
from spark_synth.prepass import GRID, LOWER_QUANTILE, UPPER_QUANTILE, plan_prepass, run_prepass
from spark_synth.privacy import PrivacyBudget, PrivacyFilter, PrivacyReport, rho_from_epsilon
from spark_synth.privacy.noise import calibrated_measurement, add_gaussian_noise
from spark_synth.privacy.thresholding import log_tail_bound, release_keys, threshold_for
from spark_synth.schema import load_schema
from spark_synth.schema.cost import PrepassCost
from spark_synth.schema.draft import DeclaredColumn, render_yaml
from spark_synth.track.ledger import SCHEMA, FIT, LedgerEntry, compose, rho_cap


def _exact_tail(sigma: float, m: int) -> float:
    """P[Z >= m] for the discrete Gaussian by brute force in high precision (independent of the code)."""
    mpmath = pytest.importorskip("mpmath")
    mpmath.mp.dps = 50
    reach = int(60 * sigma) + 60
    weight = lambda k: mpmath.exp(-mpmath.mpf(k) ** 2 / (2 * mpmath.mpf(sigma) ** 2))  # noqa: E731
    total = sum(weight(k) for k in range(-reach, reach + 1))
    return float(sum(weight(k) for k in range(m, reach + 1)) / total)


@pytest.mark.parametrize("sigma, m", [(0.7, 2), (2.0, 3), (3.5, 20), (10.0, 64), (50.0, 300)])
def test_tail_bound_is_an_upper_bound_and_tight(sigma, m):
    exact = _exact_tail(sigma, m)
    bound = math.exp(log_tail_bound(sigma, m))
    assert exact <= bound <= exact * (1 + 1e-6)


@pytest.mark.parametrize("sigma, delta", [(1.0, 1e-9), (4.2, 1e-6), (30.0, 5e-10), (0.3, 1e-3)])
def test_threshold_is_the_smallest_meeting_delta(sigma, delta):
    tau = threshold_for(sigma, delta)
    assert _exact_tail(sigma, tau - 1) <= delta  # a lone row's key is kept with probability <= delta
    assert _exact_tail(sigma, tau - 2) > delta * (1 + 1e-6)  # one lower would not do


def test_opendp_discrete_gaussian_matches_the_tail_and_scale_used():
    """The noise the threshold is calibrated against is the one drawn: frequency of Z >= m, and σ."""
    sigma_wanted = 2.0
    measurement, sigma, rho = calibrated_measurement(1 / (2 * sigma_wanted**2), 1, integer=True)
    assert sigma == pytest.approx(sigma_wanted) and rho <= 1 / (2 * sigma_wanted**2)
    z = add_gaussian_noise(np.zeros(40_000, dtype=np.int64), measurement, integer=True)
    tail = math.exp(log_tail_bound(sigma, 3))
    assert stats.binomtest(int((z >= 3).sum()), z.size, tail).pvalue > 1e-4
    for factor, accepted in ((1.0, True), (0.7, False), (1.3, False)):  # accept σ, reject σ(1 ± 0.3)
        p = stats.chi2.sf(np.sum(z**2) / (factor * sigma) ** 2, z.size)
        assert bool(1e-6 < p < 1 - 1e-6) is accepted


def test_release_keys_charges_rho_and_delta_and_keeps_clear_keys():
    privacy_filter = PrivacyFilter(PrivacyBudget(1.0, 1e-9))
    rho = privacy_filter.rho_total / 2
    kept, noisy = release_keys(privacy_filter, np.array([10_000, 1, 5_000]), rho, 1e-10, name="c", description="d")
    (entry,) = privacy_filter.report().entries
    assert entry.kind == "thresholded" and entry.rho <= rho and entry.rho == pytest.approx(rho, rel=1e-12)
    assert entry.delta_approx == 1e-10 and entry.threshold == threshold_for(entry.sigma, 1e-10)
    assert entry.sigma == pytest.approx(1 / math.sqrt(2 * rho))
    assert kept.tolist() == [True, False, True]  # 1 + noise can reach tau only w.p. <= 1e-10
    assert privacy_filter.report().delta_approx == 1e-10
    # no keys at all: the cost is charged all the same
    release_keys(privacy_filter, np.array([], dtype=np.int64), rho / 2, 1e-10, name="e", description="d")
    assert len(privacy_filter.report().entries) == 2 and privacy_filter.report().delta_approx == 2e-10


def _frame(n=20_000, seed=0):
    rng = np.random.default_rng(seed)
    return pd.DataFrame({
        "age": [str(v) for v in rng.integers(18, 80, n)],                       # CSV text of whole numbers
        "ratio": [f"{v:.3f}" for v in rng.uniform(0, 1, n)],                     # CSV text of fractions
        "colour": rng.choice(["red", "green", "blue"], n).tolist(),              # CSV text, categorical
        "rare": ["common"] * (n - 1) + ["one-off"],                              # a lone row's category
        "count": rng.integers(0, 1000, n).astype("int64"),                        # declared bigint
        "city": rng.choice(["Oslo", "Rome"], n).tolist(),                         # declared string
    })


COLUMNS = [DeclaredColumn("age", "undeclared"), DeclaredColumn("ratio", "undeclared"),
           DeclaredColumn("colour", "undeclared"), DeclaredColumn("rare", "undeclared"),
           DeclaredColumn("count", "bigint", nullable=False), DeclaredColumn("city", "string")]


def test_plan_allocates_the_budget_exactly():
    plan = plan_prepass(COLUMNS, 2.0, 1e-8)
    rho = rho_from_epsilon(2.0, 0.5e-8)
    assert plan.budget.rho == rho and math.fsum(p.rho for p in plan.columns) <= rho
    assert math.fsum(p.rho for p in plan.columns) == pytest.approx(rho, rel=1e-12)
    textual = [p for p in plan.columns if p.column.name != "count"]
    assert [p.delta for p in plan.columns if p.column.name == "count"] == [0.0]
    assert plan.delta_approx + plan.budget.delta <= 1e-8 and plan.delta_approx == pytest.approx(0.5e-8, rel=1e-12)
    assert all(p.delta == textual[0].delta for p in textual)
    numeric_only = plan_prepass([DeclaredColumn("count", "bigint")], 2.0, 1e-8)
    assert numeric_only.delta_approx == 0 and numeric_only.budget.delta == 1e-8


def test_prepass_drafts_types_bounds_and_categories_with_exact_accounting():
    frame = _frame()
    plan = plan_prepass(COLUMNS, 8.0, 1e-8)
    result = run_prepass(lambda requests, grid: profile_frame(frame, requests, grid), plan)
    cols = result.columns
    assert cols["age"]["type"] == "integer" and cols["ratio"]["type"] == "continuous"
    assert cols["count"]["type"] == "integer" and cols["count"]["nullable"] is False
    assert cols["colour"] == {"name": "colour", "type": "categorical", "categories": ["blue", "green", "red"]}
    assert cols["rare"]["categories"] == ["common"] and cols["city"]["categories"] == ["Oslo", "Rome"]
    for name, low, high in (("age", 18, 79), ("ratio", 0.0, 1.0), ("count", 0, 999)):
        # bounds come from the public grid and sit near the 1% / 99% quantiles (generous tolerance)
        assert cols[name]["min"] in GRID and cols[name]["max"] in GRID
        span = high - low
        assert low - 0.2 * span <= cols[name]["min"] <= low + 0.1 * span and high - 0.1 * span <= cols[name]["max"] <= high + 0.3 * span
    report = result.report
    assert report.rho_spent <= plan.budget.rho and report.rho_spent == pytest.approx(plan.budget.rho, rel=1e-9)
    kinds = [(e.name, e.kind) for e in report.entries]
    assert ("age: value classes", "measurement") in kinds and ("age: lower bound", "selection") in kinds
    assert ("colour: categories", "thresholded") in kinds and ("count: upper bound", "selection") in kinds
    assert not any(n.startswith("count: value") for n, _ in kinds)  # a declared type needs no decision
    # delta: every column that could have been categorical is counted, whichever path it took
    assert result.cost.delta_approx == plan.delta_approx and report.delta_approx <= plan.delta_approx
    assert result.cost.rho == report.rho_spent and result.cost.delta <= 1e-8
    assert result.cost.epsilon <= 8.0


def _scores(profile, q):
    at_most = np.cumsum(profile.grid)[: GRID.size]
    below, n = at_most - profile.ties, profile.grid.sum()
    return -np.maximum(np.maximum(below[:-1] - q * n, q * n - at_most[1:]), 0.0)


def test_quantile_scores_have_sensitivity_one_and_peak_at_the_quantile():
    """Adding one row moves every interval's score by at most max(q, 1-q) <= 1; an atom at the
    minimum (more rows than q n on one value) is in the best lower intervals, not every interval below."""
    rng = np.random.default_rng(3)
    values = pd.DataFrame({"x": np.concatenate([np.full(40, 17.0), rng.integers(18, 90, 960).astype(float)])})
    request = [ProfileRequest("x", numbers=True, categories=False)]
    base = profile_frame(values, request, GRID)[0]
    best = np.flatnonzero(_scores(base, LOWER_QUANTILE) == 0)
    assert GRID[best].tolist() == [16.0, 17.0]  # [16, 17] and [17, 18] hold the atom; nothing below scores 0
    for extra in (-1e20, 0.0, 17.0, 50.0, 55.5, 1e20):
        more = profile_frame(pd.concat([values, pd.DataFrame({"x": [extra]})]), request, GRID)[0]
        for q in (LOWER_QUANTILE, UPPER_QUANTILE):
            assert np.max(np.abs(_scores(more, q) - _scores(base, q))) <= max(q, 1 - q) + 1e-12


def test_profile_counts_each_value_once():
    frame = pd.DataFrame({"v": ["1", "2.5", "x", None, "1", "inf"]})
    (profile,) = profile_frame(frame, [ProfileRequest("v", numbers=True, categories=True)], GRID)
    assert profile.classes.tolist() == [2, 1, 2]  # whole, other numbers, non-numbers (inf included); null in none
    assert profile.grid.sum() == 4 and profile.grid[-1] == 1  # inf above the grid
    assert profile.ties.sum() == 3 and profile.ties[np.flatnonzero(GRID == 1.0)[0]] == 2  # 1, 1 and 2.5 are grid points

    assert profile.categories == {"1": 2, "2.5": 1, "x": 1, "inf": 1}


def test_schema_file_carries_the_cost_into_the_fit_report(tmp_path):
    cost = PrepassCost(id="abc", rho=0.1, delta_approx=5e-10, epsilon=1.0, delta_conversion=5e-10)
    path = tmp_path / "s.yaml"
    path.write_text(render_yaml([{"name": "a", "type": "integer", "min": 0, "max": 9}], source="t",
                                prepass={**cost.to_dict(), "input": "t"}))
    schema = load_schema(path)
    assert schema.prepass == cost
    report = PrivacyReport(fit_id="f", epsilon_requested=1.0, delta=1e-9, rho_requested=0.01, schema_prepass=schema.prepass)
    assert report.delta_approx == 5e-10 and report.to_dict()["delta_total"] == 1e-9 + 5e-10
    assert PrivacyReport.from_dict(report.to_dict()).schema_prepass == cost


def _entry(key, rho, delta, kind=FIT, approx=0.0):
    return LedgerEntry("r" + key, "run", rho, 0.0, delta, "", None, "FINISHED", 0, key, kind, approx)


def test_ledger_composes_delta_of_the_prepass_once():
    entries = [_entry("pre", 0.05, 5e-10, SCHEMA, 5e-10), _entry("fit1", 0.1, 1e-9),
               _entry("pre", 0.05, 5e-10, SCHEMA, 5e-10), _entry("fit2", 0.2, 1e-9)]  # the pre-pass charged twice
    total = compose(entries, None)
    assert total["rho"] == pytest.approx(0.35) and total["delta_approx"] == 5e-10 and total["fits"] == 2
    assert total["delta"] == 5e-10 + 5e-10  # the smallest conversion delta, plus the thresholds' delta
    from spark_synth.privacy import epsilon_from_rho

    assert total["epsilon"] == epsilon_from_rho(total["rho"], 5e-10)
    capped = compose(entries, 1e-8)  # a cap's delta is the total: conversion at 1e-8 - 5e-10
    assert capped["delta"] == 1e-8 and capped["epsilon"] == epsilon_from_rho(total["rho"], 1e-8 - 5e-10)
    assert rho_cap((1.0, 1e-8), 5e-10) == rho_from_epsilon(1.0, 1e-8 - 5e-10) and rho_cap((1.0, 1e-9), 1e-9) < 0
    assert compose(entries, 5e-10)["epsilon"] == math.inf
