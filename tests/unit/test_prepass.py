"""The DP schema pre-pass: the threshold's δ, exact accounting, noise scales, and what it drafts —
numeric bounds from a coarse-to-fine noisy histogram over sign and powers of two (issue 45)."""

import math

import numpy as np
import pandas as pd
import pytest
import yaml
from scipy import stats

from spark_synth.measure.profile import ProfileRequest, profile_frame
from spark_synth import prepass as prepass_module
from spark_synth.prepass import numeric_bounds
from spark_synth.prepass import (GRID, LOWER_QUANTILE, OCTAVES, SPURIOUS_RANGE, UPPER_QUANTILE, Range, _decide,
                                 _RangeCounts, plan_prepass, run_prepass)
from spark_synth.privacy import PrivacyBudget, PrivacyFilter, PrivacyReport, epsilon_from_rho, rho_from_epsilon
from spark_synth.privacy.noise import calibrated_measurement, add_gaussian_noise
from spark_synth.privacy.thresholding import log_tail_bound, release_keys, threshold_for
from spark_synth.schema import load_schema
from spark_synth.schema.cost import PrepassCost
from spark_synth.schema.draft import DeclaredColumn, render_yaml
from spark_synth.track.composition import FIT, SCHEMA, compose, rho_cap
from spark_synth.track.ledger import LedgerEntry


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
        # bounds are ends of public ranges (their whole ends for integer columns) near the true ends:
        # the fine stage clips at most ~1% of the rows at each end
        if name == "ratio":
            assert cols[name]["min"] in GRID and cols[name]["max"] in GRID
        else:
            assert isinstance(cols[name]["min"], int) and isinstance(cols[name]["max"], int)
        span = high - low
        assert low - 0.2 * span <= cols[name]["min"] <= low + 0.02 * span and high - 0.02 * span <= cols[name]["max"] <= high + 0.3 * span
    report = result.report
    assert report.rho_spent <= plan.budget.rho and report.rho_spent == pytest.approx(plan.budget.rho, rel=1e-9)
    kinds = [(e.name, e.kind) for e in report.entries]
    assert ("age: value classes", "measurement") in kinds and ("age: octave histogram", "measurement") in kinds
    assert ("colour: categories", "thresholded") in kinds and ("count: octave eighths", "measurement") in kinds
    assert not any(n.startswith("count: value") for n, _ in kinds)  # a declared type needs no decision
    # delta: every column that could have been categorical is counted, whichever path it took
    assert result.cost.delta_approx == plan.delta_approx and report.delta_approx <= plan.delta_approx
    assert result.cost.rho == report.rho_spent and result.cost.delta <= 1e-8
    assert result.cost.epsilon <= 8.0


#: A uniform grid like the date grid (whose bounds still come from the quantile mechanism).
UNIFORM = np.arange(-10.0, 121.0)


def _scores(profile, q):
    at_most = np.cumsum(profile.grid)[: UNIFORM.size]
    below, n = at_most - profile.ties, profile.grid.sum()
    return -np.maximum(np.maximum(below[:-1] - q * n, q * n - at_most[1:]), 0.0)


def test_quantile_scores_have_sensitivity_one_and_peak_at_the_quantile():
    """(The quantile mechanism of date and timestamp bounds.) Adding one row moves every interval's
    score by at most max(q, 1-q) <= 1; an atom at the minimum (more rows than q n on one value) is
    in the best lower intervals, not every interval below."""
    rng = np.random.default_rng(3)
    values = pd.DataFrame({"x": np.concatenate([np.full(40, 17.0), rng.integers(18, 90, 960).astype(float)])})
    request = [ProfileRequest("x", numbers=True, categories=False)]
    base = profile_frame(values, request, UNIFORM)[0]
    best = np.flatnonzero(_scores(base, LOWER_QUANTILE) == 0)
    assert UNIFORM[best].tolist() == [16.0, 17.0]  # [16, 17] and [17, 18] hold the atom; nothing below scores 0
    for extra in (-1e20, 0.0, 17.0, 50.0, 55.5, 1e20):
        more = profile_frame(pd.concat([values, pd.DataFrame({"x": [extra]})]), request, UNIFORM)[0]
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
    assert total["epsilon"] == epsilon_from_rho(total["rho"], 5e-10)
    capped = compose(entries, 1e-8)  # a cap's delta is the total: conversion at 1e-8 - 5e-10
    assert capped["delta"] == 1e-8 and capped["epsilon"] == epsilon_from_rho(total["rho"], 1e-8 - 5e-10)
    assert rho_cap((1.0, 1e-8), 5e-10) == rho_from_epsilon(1.0, 1e-8 - 5e-10) and rho_cap((1.0, 1e-9), 1e-9) < 0
    assert compose(entries, 5e-10)["epsilon"] == math.inf


# --- numeric bounds: a coarse-to-fine noisy histogram over sign and powers of two (issue 45) ---


def test_octave_ranges_partition_the_numbers_so_one_row_moves_one_count():
    """Every number — 0, grid points, ±2^53, beyond it, ±inf, tiny — lies in exactly one coarse
    range (so the histogram's ℓ2 sensitivity is 1), and the counts read off the profile are the
    brute-force ones; an octave's eighths partition it the same way."""
    rng = np.random.default_rng(5)
    values = np.concatenate([rng.normal(0, 1e3, 2000), rng.lognormal(0, 12, 2000), -rng.lognormal(0, 12, 500),
                             [0.0, -0.0, 1.0, -1.0, 2.0, -2.0, 2.0**53, -(2.0**53), 2.0**60, -(2.0**60), 1e-30, -1e-30,
                              np.inf, -np.inf, 0.5, 0.25, 3.0, 1.125, -1.125]])
    (profile,) = profile_frame(pd.DataFrame({"x": values}), [ProfileRequest("x", numbers=True, categories=False)], GRID)
    counts = _RangeCounts(profile)

    def inside(r: Range, x: float) -> bool:
        return x == 0 if r.side == 0 else (r.lo < x <= r.hi if r.side > 0 else r.lo <= x < r.hi)

    assert [sum(inside(r, x) for r in OCTAVES) for x in values] == [1] * values.size
    assert [counts(r) for r in OCTAVES] == [sum(inside(r, x) for x in values) for r in OCTAVES]
    assert sum(counts(r) for r in OCTAVES) == values.size
    for r in OCTAVES:
        if r.octave:
            parts = r.parts()
            assert len(parts) == 8 and all(p.lo in GRID and p.hi in GRID for p in parts)
            assert sum(counts(p) for p in parts) == counts(r)
            assert [p.side for p in parts] == [r.side] * 8 and parts[0].lo == r.lo and parts[-1].hi == r.hi


def test_range_ends_are_whole_for_integer_columns():
    one, three_four, minus = Range(0.5, 1.0, 1), Range(2.0, 4.0, 1), Range(-4.0, -2.0, -1)
    assert (one.low(True), one.high(True), one.low(False), one.high(False)) == (1, 1, 0.5, 1.0)
    assert (three_four.low(True), three_four.high(True)) == (3, 4)
    assert (minus.low(True), minus.high(True), minus.high(False)) == (-4, -3, -2.0)  # [-4, -2) holds -4, -3
    assert not Range(0.25, 0.5, 1).holds_integer() and not Range(-0.5, -0.25, -1).holds_integer()
    assert Range(0.0, 0.0, 0).low(True) == Range(0.0, 0.0, 0).high(False) == 0
    assert Range(2.0**53, np.inf, 1).high(True) == 2.0**53 and Range(-np.inf, -(2.0**53), -1).low(False) == -(2.0**53)


def test_type_decision_allows_for_the_noise():
    """At σ ≈ 126 (ε = 0.5 over 24 columns of 7 k rows) noise alone puts ~300 'fractional' values in a
    whole-number column; that is not evidence of a continuous column (it was, past 1% of the numbers)."""
    sigma = 126.0
    assert _decide(np.array([7000.0, 300.0, -50.0]), sigma) == "integer"
    assert _decide(np.array([3500.0, 3500.0, 20.0]), sigma) == "continuous"
    assert _decide(np.array([40.0, -10.0, 7000.0]), sigma) == "categorical"
    assert _decide(np.array([6500.0, 0.0, 500.0]), sigma) == "integer"  # 7% text: under 5% + 4σ
    assert _decide(np.array([300.0, 10.0, 400.0]), sigma) == "categorical"  # noise swamps the slack: majority
    assert _decide(np.array([300.0, 10.0, 200.0]), sigma) == "integer"


def _issue_table(n=7000, seed=45):
    """The issue's setting: a 7 k-row CSV with a 0/1 column and a money-like one, 24 columns in all."""
    rng = np.random.default_rng(seed)
    charge = np.round(np.exp(rng.normal(9.1, 0.9, n)), 2)  # insurance-like charges: ~1 k .. ~300 k
    frame = {"flag": rng.choice(["0", "1"], n, p=[0.78, 0.22]).tolist(), "charge": [f"{v:.2f}" for v in charge]}
    for j in range(22):  # filler text columns: they only set each column's share of ε
        frame[f"t{j}"] = rng.choice(["a", "b", "c"], n).tolist()
    return pd.DataFrame(frame), charge


def test_zero_one_and_money_columns_at_moderate_epsilon_get_usable_bounds():
    """ε = 0.5 over 24 columns of 7 k rows (issue 45: the quantile mechanism drafted a 0/1 column as
    [-16, 10000000] and a charge column's min as -2.5e15). The 0/1 column drafts [0, 1] unless an
    empty range's noise reaches the threshold (≤ SPURIOUS_RANGE = 1e-6 over all its ranges) or the
    type decision is wrong (4.5σ, ~3e-6); the charge column unless the same happens (≤ 1e-6) or
    the range above 65 536 (~90 rows, τ ≈ 410) passes (4σ, ~3e-5 — its bound 131 072 would pass too)."""
    frame, charge = _issue_table()
    plan = plan_prepass([DeclaredColumn(c, "undeclared") for c in frame.columns], 0.5, 1e-9)
    result = run_prepass(lambda requests, grid: profile_frame(frame, requests, grid), plan)
    assert result.columns["flag"] == {"name": "flag", "type": "integer", "min": 0, "max": 1}
    assert "a 0/1 column" in result.notes["flag"] and "flag" not in result.warnings
    money = result.columns["charge"]
    assert money["type"] == "continuous"
    assert 0 <= money["min"] <= np.median(charge)  # nothing negative stood out: the lower bound is >= 0
    assert np.quantile(charge, 0.99) / 4 <= money["max"] <= 2 * charge.max()  # the right power of two
    assert money["min"] in GRID and money["max"] in GRID


def _noise_ledger(monkeypatch):
    """Record the OpenDP-certified ρ of every noise draw (Gaussian vectors and noisy max)."""
    from spark_synth.privacy import mechanisms, thresholding

    drawn = []

    def gaussian(module):
        real = module.add_gaussian_noise

        def wrapped(values, measurement, integer):
            drawn.append(("gaussian", float(measurement.map(1 if integer else 1.0)), np.size(values)))
            return real(values, measurement, integer)

        monkeypatch.setattr(module, "add_gaussian_noise", wrapped)

    gaussian(mechanisms)
    gaussian(thresholding)
    real_max = mechanisms.noisy_max
    monkeypatch.setattr(mechanisms, "noisy_max", lambda m, scores: (drawn.append(("max", float(m.map(1.0)), len(scores))),
                                                                    real_max(m, scores))[1])
    sigmas = []
    real_counts = prepass_module._noisy_counts

    def counted(*args, **kwargs):
        noisy, sigma = real_counts(*args, **kwargs)
        sigmas.append(sigma)
        return noisy, sigma

    for module in (prepass_module, numeric_bounds):  # the value classes are counted in one, the ranges in the other
        monkeypatch.setattr(module, "_noisy_counts", counted)
    return drawn, sigmas


@pytest.mark.parametrize("n, epsilon, fine", [(7000, 0.5, False), (20_000, 8.0, True)])
def test_prepass_records_exactly_the_rho_its_noise_spent(monkeypatch, n, epsilon, fine):
    """The recorded ρ (what the ledger charges) is the sum of the certified ρ of every noise draw —
    with the fine stage (a large table) and without it (its ρ is then not spent, nor recorded); the
    thresholds use the σ of the noise actually drawn."""
    drawn, sigmas = _noise_ledger(monkeypatch)
    frame = _issue_table(n)[0] if not fine else _frame(n)
    plan = plan_prepass([DeclaredColumn(c, "undeclared") for c in frame.columns], epsilon, 1e-9)
    result = run_prepass(lambda requests, grid: profile_frame(frame, requests, grid), plan)
    entries = result.report.entries
    assert [e.rho for e in entries] == [rho for _, rho, _ in drawn]  # one draw per charge, same ρ, same order
    assert result.cost.rho == result.report.rho_spent == math.fsum(rho for _, rho, _ in drawn)
    assert result.cost.epsilon == epsilon_from_rho(result.cost.rho, plan.budget.delta)
    counted = [e for e in entries if e.name.endswith(("octave histogram", "octave eighths", "value classes"))]
    assert [e.sigma for e in counted] == sigmas
    histograms = [e for e in entries if e.name.endswith("octave histogram")]
    assert histograms and all(e.l2_sensitivity == 1.0 for e in histograms)
    eighths = [e for e in entries if e.name.endswith("octave eighths")]
    if fine:
        assert eighths and result.cost.rho == pytest.approx(plan.budget.rho, rel=1e-9)
    else:  # 7 k rows at ε = 0.5: the fine stage cannot clip 1% — skipped, and its ρ not charged
        assert not eighths and result.cost.rho < plan.budget.rho
    assert result.cost.rho <= plan.budget.rho and result.cost.delta_approx == plan.delta_approx


def test_a_bound_far_from_the_other_values_is_flagged_in_the_result_and_the_yaml():
    rng = np.random.default_rng(8)
    n = 20_000
    frame = pd.DataFrame({"far": np.concatenate([rng.integers(1, 100, n - 2000), np.full(2000, 10**9)]),  # 2^23 higher
                          "tiny": np.arange(n) % 7})
    declared = [DeclaredColumn("far", "bigint"), DeclaredColumn("tiny", "bigint")]
    result = run_prepass(lambda requests, grid: profile_frame(frame, requests, grid), plan_prepass(declared, 2.0, 1e-9))
    assert result.columns["far"]["max"] >= 10**9 and result.columns["far"]["min"] <= 1
    (far,) = [w for w in result.warnings["far"] if "powers of two away" in w]
    assert far.startswith("column 'far': 'max: ") and "(which reach 128)" in far and "edit 'max' by hand" in far
    assert (result.columns["tiny"]["min"], result.columns["tiny"]["max"]) == (0, 6)
    assert not any("powers of two away" in w for w in result.warnings.get("tiny", []))
    text = render_yaml(list(result.columns.values()), source="t", notes=result.notes, warnings=result.warnings)
    assert f"  # CHECK: {far}\n" in text and yaml.safe_load(text)["columns"] == list(result.columns.values())


def _seen(values: dict[float, float], integer=True):
    """Noisy coarse counts (the ranges of an integer column) with the given value at the range holding each key."""
    ranges = [r for r in OCTAVES if not integer or r.holds_integer()]
    noisy = np.zeros(len(ranges))
    for x, count in values.items():
        (i,) = [j for j, r in enumerate(ranges) if (x == 0 if r.side == 0 else
                                                      (r.lo < x <= r.hi if r.side > 0 else r.lo <= x < r.hi))]
        noisy[i] = count
    return ranges, noisy


def test_flags_post_process_the_noisy_histogram():
    sigma, tau = 70.0, 400
    # a 0/1 column: no flag (two seen ranges side by side)
    ranges, noisy = _seen({0: 5000, 1: 1500})
    assert prepass_module._flags("f", ranges, noisy, sigma, tau, 0, 1, True) == []
    # the issue's draft: a 0/1 column whose noise put -16 and 10^7 in (if it ever passed): both named
    ranges, noisy = _seen({-16: 450, 0: 5000, 1: 1500, 10**7: 500})
    flags = prepass_module._flags("f", ranges, noisy, sigma, tau, -16, 2**24, True)
    assert len(flags) == 2 and "'min: -16'" in flags[0] and "'max: 16777216'" in flags[1]
    assert all("powers of two away" in f and "by hand" in f for f in flags)
    # zero-inflated money (0 and 1 k .. 60 k): no flag — an atom at 0 is no outlier
    ranges, noisy = _seen({0: 40_000, 1500: 900, 3000: 2000, 6000: 3000, 12_000: 1500, 40_000: 500})
    assert prepass_module._flags("m", ranges, noisy, sigma, tau, 0, 65536, True) == []
    # values just past a bound, under τ but over 3σ: named with the bound they are clipped to
    ranges, noisy = _seen({0: 5000, 1: 1500, 2: 260})
    (cut,) = prepass_module._flags("c", ranges, noisy, sigma, tau, 0, 1, True)
    assert "values above 'max: 1' (up to 2)" in cut and "noisy count of 260" in cut and "widen 'max'" in cut
    ranges, noisy = _seen({12: 230, 20: 5000})
    (cut,) = prepass_module._flags("c", ranges, noisy, sigma, tau, 17, 32, True)
    assert "values below 'min: 17' (down to 9)" in cut
    # beyond ±2^53
    ranges, noisy = _seen({5: 5000, 1e17: 700})
    assert any("beyond" in f and "'max'" in f for f in prepass_module._flags("b", ranges, noisy, sigma, tau, 5, 2.0**53, True))


def test_too_few_rows_leave_bounds_todo_with_a_warning():
    frame = pd.DataFrame({"x": np.arange(60) % 9})
    result = run_prepass(lambda requests, grid: profile_frame(frame, requests, grid),
                         plan_prepass([DeclaredColumn("x", "bigint")], 0.5, 1e-9))
    assert result.columns["x"] == {"name": "x", "type": "integer", "min": "TODO", "max": "TODO"}
    (warning,) = result.warnings["x"]
    assert "column 'x'" in warning and "TODO" in warning and "by hand" in warning
    assert SPURIOUS_RANGE <= 1e-6
