"""FPT engine (PMW mode): recovery without noise, exact budget accounting, model-size cap,
hierarchical workloads (consistency across levels helps), state round trip, bad options."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from spark_synth.engines import LocalTaskRunner, get_engine
from spark_synth.engines.fpt import FptModel
from spark_synth.engines.fpt.config import FptConfig
from spark_synth.engines.fpt.code_shares import within_group_shares, without_noise_null
from spark_synth.engines.fpt.engine import _one_way_share
from spark_synth.engines.fpt.compression import compress, refine
from spark_synth.engines.fpt.workload import candidates_and_weights, first_shares
from spark_synth.engines.groupings import coarse_groupings
from spark_synth.errors import ParameterError, SchemaError
from spark_synth.measure import answer_frame
from spark_synth.oracle import oracle_over_frame
from spark_synth.privacy import PrivacyBudget, PrivacyFilter
from spark_synth.queries import MarginalQuery
from spark_synth.schema import schema_from_dict
from spark_synth.schema.icd9 import block, category, chapter, icd9_levels, with_icd9_hierarchy

from ..helpers import ExactOracle, exact_fit


def _correlated(n=4000, seed=0, target=None):
    """Three discrete columns with strong pairwise structure a independent model would miss."""
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 4, n)
    b = (a + rng.integers(0, 2, n)) % 4
    c = np.where(rng.random(n) < 0.8, b % 3, rng.integers(0, 3, n))
    schema = schema_from_dict({**({"target": target, "task": "classification"} if target else {}), "columns": [
        {"name": "a", "type": "categorical", "categories": ["a0", "a1", "a2", "a3"], "nullable": False},
        {"name": "b", "type": "ordinal", "categories": [0, 1, 2, 3], "nullable": False},
        {"name": "c", "type": "categorical", "categories": ["x", "y", "z"], "nullable": False}]})
    frame = pd.DataFrame({"a": [f"a{v}" for v in a], "b": b, "c": np.array(["x", "y", "z"])[c]})
    return schema, frame


def _pair_tvd(schema, frame, synthetic, pair):
    query = MarginalQuery(pair)
    real, synth = (answer_frame(f, schema, [query])[0].astype(float) for f in (frame, synthetic))
    return 0.5 * np.abs(real / real.sum() - synth / synth.sum()).sum()


def _sample(model, schema, n, seed=1):
    from spark_synth.schema import decode_codes

    rng = np.random.default_rng(seed)
    return decode_codes(model.sample_codes(n, rng), schema, rng)


def test_without_noise_the_model_reproduces_every_pairwise_marginal():
    schema, frame = _correlated()
    engine = get_engine("fpt", rounds_per_column=2.0, iterations=100, final_iterations=400)
    model = exact_fit(engine, schema, frame)
    assert isinstance(model, FptModel)
    gibbs = model.gibbs()
    for pair in [(0, 1), (1, 2), (0, 2)]:
        names = tuple(schema.names[j] for j in pair)
        exact = answer_frame(frame, schema, [MarginalQuery(names)])[0].astype(float)
        fitted = gibbs.marginal(pair).numpy()
        if pair in gibbs.tree.scopes:  # measured: reproduced to high accuracy
            assert 0.5 * np.abs(exact / exact.sum() - fitted).sum() < 0.01, pair
    # the selected pairs carry the structure: sampled data beat independence on them
    synthetic = _sample(model, schema, 20_000)
    assert _pair_tvd(schema, frame, synthetic, ("a", "b")) < 0.03
    assert model.fit_summary()["rounds"] == len(engine.rounds_) >= 1


def test_budget_is_spent_exactly_and_every_call_is_reported():
    schema, frame = _correlated(n=2000)
    budget = PrivacyBudget(1.0, 1e-9)
    privacy_filter = PrivacyFilter(budget)
    engine = get_engine("fpt", rounds_per_column=2.0, iterations=20, final_iterations=20)
    model = engine.fit(schema, oracle_over_frame(frame, schema, privacy_filter), LocalTaskRunner())
    report = privacy_filter.report()
    assert math.isclose(report.rho_spent, budget.rho, rel_tol=1e-9)
    assert len(report.selections) == len(engine.rounds_) == model.fit_summary()["rounds"]
    # 1-way histograms first, then one selection and one measurement per round
    assert len(report.measurements) == len(schema) + len(engine.rounds_)
    assert [e.name for e in report.measurements[len(schema):]] == [r.selected for r in engine.rounds_]
    assert math.isclose(sum(r.rho for r in engine.rounds_) + sum(e.rho for e in report.measurements[: len(schema)]),
                        budget.rho, rel_tol=1e-9)


def test_model_cell_cap_bounds_the_largest_bag():
    rng = np.random.default_rng(3)
    columns = [{"name": f"c{j}", "type": "categorical", "categories": list(range(6)), "nullable": False} for j in range(7)]
    schema = schema_from_dict({"columns": columns})
    base = rng.integers(0, 6, 3000)
    frame = pd.DataFrame({f"c{j}": (base + rng.integers(0, 2, 3000) * j) % 6 for j in range(7)})
    engine = get_engine("fpt", rounds_per_column=3.0, iterations=10, final_iterations=10, max_model_cells=300)
    exact_fit(engine, schema, frame)
    assert engine.largest_bag_ <= 300


def test_aim_weights_count_shared_columns_with_the_workload():
    weights = candidates_and_weights([(0, 1), (0, 2), (1, 2)])
    assert weights == {(0, 1): 4.0, (0, 2): 4.0, (1, 2): 4.0}
    weights = candidates_and_weights([(0, 1, 2)])
    assert weights[(0, 1, 2)] == 3.0 and weights[(0, 1)] == 2.0


def test_numeric_columns_are_grouped_into_public_ranges_for_the_model():
    schema = schema_from_dict({"columns": [
        {"name": "x", "type": "integer", "min": 0, "max": 99},
        {"name": "k", "type": "categorical", "categories": list(range(40))}]})
    x, k = coarse_groupings(schema, 16)
    assert k is None  # categorical: kept (no order to merge along)
    assert len(x) == schema["x"].size and max(x) == 16 and x[-1] == 16  # null keeps its own group
    assert list(x[:-1]) == sorted(x[:-1]) and len(set(x[:-1])) == 16
    # ranges are equal-width over [min, max], in values: age 17..100 (one code per year) joins
    # floor((age − 17) / 83 · 16), and a 64-bin column's bins join the range of their centre
    schema = schema_from_dict({"columns": [{"name": "age", "type": "integer", "min": 17, "max": 100, "nullable": False},
                                           {"name": "v", "type": "continuous", "min": -1.0, "max": 3.0, "nullable": False}]})
    age, v = coarse_groupings(schema, 16)
    assert list(age) == [min((a - 17) * 16 // 83, 15) for a in range(17, 101)]
    assert list(v) == [b // 4 for b in range(64)]


def test_compression_merges_the_groups_whose_noisy_count_is_below_the_threshold():
    counts = np.array([500.0, 3.0, -4.0, 40.0, 1.0, 900.0])
    assert compress(None, counts, sigma=10.0, threshold=3.0) == (0, 3, 3, 1, 3, 2)
    # over numeric ranges: a range's noise is σ·√(codes in it), its count the sum of its codes
    eight = np.array([500.0, 3.0, -4.0, 10.0, 1.0, 2.0, 400.0, 300.0])  # range sums 503, 6, 3, 700; bar 3·10·√2
    assert compress((0, 0, 1, 1, 2, 2, 3, 3), eight, sigma=10.0, threshold=3.0) == (0, 0, 2, 2, 2, 2, 1, 1)
    assert compress((0, 0, 1, 1, 2, 2, 3, 3), eight, sigma=1.0, threshold=3.0) == (0, 0, 1, 1, 2, 2, 3, 3)
    assert compress(None, np.array([500.0, 3.0, 900.0]), sigma=10.0, threshold=3.0) is None  # one weak code: nothing to merge


def test_within_a_group_codes_below_the_noise_floor_get_no_rows_only_when_another_code_clears_it():
    sigma = 10.0
    # a group of two categories: 300 clears any floor, 15 (1.5 σ) does not
    assert within_group_shares(np.array([300.0, 15.0, 500.0]), sigma, (0, 0, 1)).tolist() == pytest.approx([0.375, 0.0, 0.625])
    # 40 codes of pure noise, one of them at 2.5 σ: the largest of 40 noise draws passes 2.5 σ with
    # probability 1 − Φ(2.5)^40 ≈ 0.22, so it is no evidence — the group keeps every code's count
    # (a fixed 2 σ bar gave that one code all of the group's rows)
    noise = np.r_[25.0, np.tile([8.0, -6.0, 3.0, -1.0], 10)[:39]]
    weights = within_group_shares(np.r_[1000.0, noise], sigma, (0,) + (1,) * 40)
    tail = weights[1:] / weights[1:].sum()
    assert 0.1 < tail[0] < 0.5 and np.count_nonzero(tail) > 10


def test_an_ordered_tail_without_a_clear_code_thins_out_away_from_the_bulk():
    sigma = 10.0
    bulk = [900.0, 1500.0, 1200.0, 400.0]  # codes 0-3 clear the bar; codes 4-23 are a merged tail
    tail = [14.0, 9.0, -3.0, 12.0, 4.0, -8.0, 6.0, 1.0, -2.0, 11.0, -5.0, 3.0, 0.0, 17.0, -9.0, 2.0, 5.0, -1.0, 16.0, -4.0]
    values, grouping = np.array(bulk + tail), (0, 1, 2, 3) + (4,) * len(tail)
    weights = within_group_shares(values, sigma, grouping, ordered=len(values))[4:]
    assert np.all(np.diff(weights) <= 1e-15) and weights[0] > 0  # non-increasing away from code 3
    fitted_mean = (weights * np.arange(len(tail))).sum() / weights.sum()
    clipped = np.clip(tail, 0, None)
    assert fitted_mean < 0.8 * (clipped * np.arange(len(tail))).sum() / clipped.sum()
    # the same counts in a categorical column (no order) keep their clipped counts
    unordered = within_group_shares(values, sigma, grouping)[4:]
    assert unordered / unordered.sum() == pytest.approx(clipped / clipped.sum())
    # a low tail (codes before the bulk) thins out downwards
    low = within_group_shares(values[::-1].copy(), sigma, tuple(reversed(grouping)), ordered=len(values))[:len(tail)]
    assert np.all(np.diff(low) >= -1e-15)


def test_an_ordered_column_whose_null_code_is_a_group_of_its_own_without_a_clear_count():
    # every value clears the bar, the null code (after the ordered values) is alone and empty: a
    # large table or a large ε, where compression merges nothing (this raised inside scikit-learn)
    weights = within_group_shares(np.array([100.0, 50.0, 0.1]), 1.0, (0, 1, 2), ordered=2)
    assert weights.tolist() == pytest.approx([100 / 150.1, 50 / 150.1, 0.1 / 150.1])


def test_refinement_splits_the_ranges_that_hold_much_of_the_data():
    counts = np.array([300.0, 310.0, 290.0, 305.0, 5.0, -3.0, 2.0, 1.0, 40.0])  # two ranges of four, then null
    grouping = (0, 0, 0, 0, 1, 1, 1, 1, 2)
    assert refine(grouping, counts, target=600.0) == (0, 0, 1, 1, 2, 2, 2, 2, 3)  # 1205 rows: two runs of ~600
    assert refine(grouping, counts, target=250.0) == (0, 1, 2, 3, 4, 4, 4, 4, 5)
    assert refine(grouping, counts, target=2000.0) == (0, 0, 0, 0, 1, 1, 1, 1, 2)  # nothing dense enough
    assert refine((0, 0, 0, 1), np.array([700.0, 100.0, 100.0, 5.0]), target=600.0) == (0, 0, 0, 1)  # thin remainder joins
    assert refine(None, counts, 10.0) is None


def test_refined_model_resolves_a_dense_range_in_one_scan():
    rng = np.random.default_rng(6)
    n = 6000
    x = np.where(rng.random(n) < 0.8, rng.integers(0, 20, n), rng.integers(20, 320, n))  # 80 % in the first range
    y = (x % 20 >= 10).astype(int)  # depends on x INSIDE the first range of 20
    schema = schema_from_dict({"columns": [
        {"name": "x", "type": "integer", "min": 0, "max": 319, "nullable": False},
        {"name": "y", "type": "categorical", "categories": [0, 1], "nullable": False}]})
    frame = pd.DataFrame({"x": x, "y": y})
    clock = {}
    for refine_dense in (False, True):
        privacy_filter = PrivacyFilter(PrivacyBudget(1.0, 1e-9))
        engine = get_engine("fpt", rounds_per_column=2.0, iterations=30, final_iterations=100, refine_dense=refine_dense)
        model = engine.fit(schema, oracle_over_frame(frame, schema, privacy_filter, timings=clock), LocalTaskRunner())
        synthetic = _sample(model, schema, 20_000)
        first = synthetic["x"].astype(int) < 20
        agree = ((synthetic["x"].astype(int) % 20 >= 10) == (synthetic["y"].astype(int) == 1))[first].mean()
        if refine_dense:
            assert agree > 0.8  # x's first range was split: y follows x inside it
        else:
            assert agree < 0.6  # one range: inside it x and y are independent
    assert clock["scans"] == 2  # one per fit: the refined marginals were summed from the scan's answers


def test_a_column_without_nulls_gets_no_mass_on_its_null_code_from_the_noise():
    rng = np.random.default_rng(0)
    n = 12_000
    frame = pd.DataFrame({"a": rng.choice(["x", "y", "z"], n), "d": rng.choice(["u", "v"], n), "b": rng.integers(0, 50, n).astype(float),
                          "c": np.where(rng.random(n) < 0.3, None, rng.choice(["p", "q"], n))})
    schema = schema_from_dict({"columns": [{"name": "a", "type": "categorical", "categories": ["x", "y", "z"]},
                                           {"name": "d", "type": "categorical", "categories": ["u", "v"]},
                                           {"name": "b", "type": "integer", "min": 0, "max": 49},
                                           {"name": "c", "type": "categorical", "categories": ["p", "q"]}]})
    oracle = oracle_over_frame(frame, schema, PrivacyFilter(PrivacyBudget(0.3, 1e-6)))  # real noise on every null cell
    model = get_engine("fpt", rounds_per_column=1.0, iterations=20, final_iterations=50).fit(schema, oracle, LocalTaskRunner())
    # a's and d's null cells are pure noise (σ ≈ 80 rows); each falls below the 2σ floor with
    # probability 0.977 (so at least one of them with 0.9995): a floored column gets nothing at all
    # (a Gibbs model alone is > 0 everywhere), c keeps its 30 %
    floored = model.fit_summary()["columns_without_nulls"]
    assert {"a", "d"} & set(floored) and "c" not in floored
    codes = model.sample_codes(20_000, np.random.default_rng(1))
    for name in {"a", "d"} & set(floored):  # three and two model codes, their null code its own
        j = schema.names.index(name)
        assert float(model.gibbs().marginal((j,))[schema.columns[j].null_code]) == 0.0
        assert not (codes[:, j] == schema.columns[j].null_code).any()
    assert abs((codes[:, 3] == schema.columns[3].null_code).mean() - 0.3) < 0.03


def test_a_null_merged_with_weak_codes_gets_no_share_from_the_noise():
    shares, grouping = np.array([0.7, 0.2, 0.06, 0.04]), (0, 1, 2, 2)  # codes a, b, c; null (code 3) merged with c
    counts = np.array([700.0, 200.0, 12.0, 9.0])
    assert without_noise_null(shares, grouping, 3, counts, sigma=10.0).tolist() == [0.7, 0.2, 0.06, 0.0]  # 9 < 2σ
    assert without_noise_null(shares, grouping, 3, counts, sigma=4.0) is shares  # 9 > 2σ: the null is real
    assert without_noise_null(shares, grouping, None, counts, sigma=10.0) is shares  # not nullable
    empty = np.array([0.7, 0.3, 0.0, 0.04])  # nothing else in the group has a share: its other codes get even ones
    spread = without_noise_null(empty, grouping, 3, counts, sigma=10.0)
    assert spread[3] == 0.0 and spread[2] > 0 and spread[:2].tolist() == [0.7, 0.3]
    assert without_noise_null(shares, (0, 1, 2, 3), 3, counts, sigma=10.0) is shares  # a group of its own: absent_nulls' case


def test_columns_without_nulls_get_none_where_compression_merges_the_null_with_rare_codes():
    # german_credit-like: 800 rows, ε = 0.3, a rare code per column that compression merges with the
    # null code; before the fix the merged group's rows went to the null code in proportion to the noise
    rng = np.random.default_rng(3)
    n, names = 800, [f"x{k}" for k in range(12)]
    frame = pd.DataFrame({name: rng.choice(["a", "b", "c"], n, p=[0.85, 0.14, 0.01]) for name in names})
    schema = schema_from_dict({"columns": [{"name": name, "type": "categorical", "categories": ["a", "b", "c"]} for name in names]})
    model = get_engine("fpt", rounds_per_column=1.0, iterations=20, final_iterations=50).fit(
        schema, oracle_over_frame(frame, schema, PrivacyFilter(PrivacyBudget(0.3, 1e-9))), LocalTaskRunner())
    codes = model.sample_codes(20_000, np.random.default_rng(0))
    with_nulls = [name for j, name in enumerate(names) if (codes[:, j] == schema.columns[j].null_code).mean() > 0]
    # a null count passes the 2σ floor by noise with probability 0.023 per column (150 fits of four
    # columns: 0.023), so four of twelve or more about once in 7,000 runs (two of four, the earlier
    # bar, failed a CI run: 0.003); without the rule (null floors off) 8 to 12 of 12 had nulls (ten fits)
    assert len(with_nulls) <= 3, with_nulls


def test_compressed_model_has_small_domains_refines_back_and_scans_once():
    rng = np.random.default_rng(5)
    n = 4000
    used = rng.integers(0, 5, n)
    schema = schema_from_dict({"columns": [
        {"name": "k", "type": "categorical", "categories": list(range(40)), "nullable": False},
        {"name": "x", "type": "integer", "min": 0, "max": 319, "nullable": False}]})  # 16 ranges of 20
    frame = pd.DataFrame({"k": used, "x": used * 20 + rng.integers(0, 20, n)})  # x in range k
    privacy_filter, clock = PrivacyFilter(PrivacyBudget(1.0, 1e-9)), {}
    engine = get_engine("fpt", rounds_per_column=2.0, iterations=20, final_iterations=50)
    model = engine.fit(schema, oracle_over_frame(frame, schema, privacy_filter, timings=clock), LocalTaskRunner())
    assert clock["scans"] == 1  # the compressed marginals were summed from the scan's finer answers
    assert set(model.refinements) == {0, 1}
    k_groups = np.asarray(model.refinements[0][0])
    assert len(set(k_groups[:5])) == 5  # the 5 used categories keep their own groups ...
    assert np.bincount(k_groups[5:]).max() >= 30  # ... the 35 empty ones merge (a few may pass 3σ by noise)
    assert model.sizes[0] <= 10 and model.sizes[1] < 16  # and x's empty ranges merge too
    synthetic = _sample(model, schema, 20_000)
    assert _pair_tvd(schema, frame, synthetic, ("k",)) < 0.05
    assert (synthetic["x"].astype(int) // 20 == synthetic["k"].astype(int)).mean() > 0.8  # the pair's structure kept
    assert privacy_filter.report().rho_spent == pytest.approx(privacy_filter.rho_total, rel=1e-9)
    without = get_engine("fpt", rounds_per_column=2.0, iterations=20, final_iterations=50, compress_threshold=0)
    assert exact_fit(without, schema, frame).sizes == (40, 16)


@pytest.mark.parametrize("target_pairs", [True, False])
def test_target_pairs_let_the_target_follow_fine_codes_inside_a_range(target_pairs):
    rng = np.random.default_rng(6)
    n = 8000
    x = rng.integers(0, 320, n)  # 16 public ranges of 20 values
    schema = schema_from_dict({"target": "y", "task": "classification", "columns": [
        {"name": "x", "type": "integer", "min": 0, "max": 319, "nullable": False},
        {"name": "y", "type": "categorical", "categories": ["no", "yes"], "nullable": False}]})
    frame = pd.DataFrame({"x": x, "y": np.where(x % 20 < 10, "yes", "no")})  # y flips inside every range
    privacy_filter = PrivacyFilter(PrivacyBudget(2.0, 1e-9))
    engine = get_engine("fpt", rounds_per_column=1.0, iterations=20, final_iterations=50, target_share=0.1 if target_pairs else 0.0)
    model = engine.fit(schema, oracle_over_frame(frame, schema, privacy_filter), LocalTaskRunner())
    measured = [entry.name for entry in privacy_filter.report().entries]
    assert ("marginal[x, y]" in measured) == target_pairs  # measured in the first pass at full resolution
    synthetic = _sample(model, schema, 20_000)
    agree = ((synthetic["x"].astype(int) % 20 < 10) == (synthetic["y"] == "yes")).mean()
    if target_pairs:
        assert agree > 0.8  # without the target pairs: 0.5
        assert model.refinements[0][2].shape == (64, 2)  # x's codes × y's codes
        restored = FptModel.from_state(model.to_state(), schema)
        assert restored.target == 1
        assert np.array_equal(restored.sample_codes(500, np.random.default_rng(3)),
                              model.sample_codes(500, np.random.default_rng(3)))
    else:
        assert agree < 0.6  # one range: inside it x and y are independent
    assert privacy_filter.report().rho_spent == pytest.approx(privacy_filter.rho_total, rel=1e-9)


def test_a_regression_target_is_paired_in_its_public_ranges_and_columns_follow_its_range():
    rng = np.random.default_rng(7)
    n = 8000
    x = rng.integers(0, 320, n)  # 16 public ranges of 20 values
    low = x % 20 < 10  # inside every range of x, the target's range flips
    y = np.where(low, 20.0, 120.0) + rng.uniform(0, 10, n)  # two of the target's 16 ranges of 10
    schema = schema_from_dict({"target": "y", "task": "regression", "columns": [
        {"name": "x", "type": "integer", "min": 0, "max": 319, "nullable": False},
        {"name": "y", "type": "continuous", "min": 0, "max": 160, "nullable": False}]})
    frame = pd.DataFrame({"x": x, "y": y})
    for target_share, agrees in ((0.1, lambda a: a > 0.8), (0.0, lambda a: a < 0.6)):
        privacy_filter = PrivacyFilter(PrivacyBudget(2.0, 1e-9))
        engine = get_engine("fpt", rounds_per_column=1.0, iterations=20, final_iterations=50, target_share=target_share)
        model = engine.fit(schema, oracle_over_frame(frame, schema, privacy_filter), LocalTaskRunner())
        assert ("marginal[x, y/16]" in [e.name for e in privacy_filter.report().entries]) == (target_share > 0)  # y in its ranges
        synthetic = _sample(model, schema, 20_000)
        agree = ((synthetic["x"].astype(int) % 20 < 10) == (synthetic["y"].astype(float) < 80)).mean()
        assert agrees(agree), (target_share, agree)  # without the pairs x is uniform inside its range: 0.5
        assert privacy_filter.report().rho_spent == pytest.approx(privacy_filter.rho_total, rel=1e-9)


def test_first_pass_split_minimises_the_summed_l1_error_of_the_histograms():
    cells_per_histogram = [2, 17, 916]
    shares = np.array(first_shares(cells_per_histogram))
    shares /= shares.sum()
    cells_array = np.array(cells_per_histogram, dtype=float)

    def summed_error(rho):  # expected L1 error of a histogram ∝ cells · σ ∝ cells / √ρ
        return float((cells_array / np.sqrt(rho)).sum())

    best = summed_error(shares)
    rng = np.random.default_rng(0)
    for _ in range(200):  # every other split of the same total does worse
        other = shares * np.exp(rng.normal(scale=0.3, size=3))
        assert summed_error(other / other.sum()) > best
    assert summed_error(np.full(3, 1 / 3)) > 1.2 * best


def test_first_pass_charges_follow_the_split():
    schema, frame = _correlated(n=2000)
    privacy_filter = PrivacyFilter(PrivacyBudget(1.0, 1e-9))
    engine = get_engine("fpt", rounds_per_column=1.0, iterations=5, final_iterations=5, one_way_share=0.3)
    engine.fit(schema, oracle_over_frame(frame, schema, privacy_filter), LocalTaskRunner())
    first = [e.rho for e in privacy_filter.report().measurements[:3]]  # a, b: 4 cells; c: 3 cells
    assert first == pytest.approx(list(0.3 * privacy_filter.rho_total * np.array([4, 4, 3]) ** (2 / 3)
                                       / (2 * 4 ** (2 / 3) + 3 ** (2 / 3))), rel=1e-9)


def test_one_way_share_makes_the_expected_error_of_the_histograms_the_set_fraction_of_the_rows():
    rho, first_cells = 0.015, [85, 13, 5, 17, 17, 3]
    weight = sum(c ** (2 / 3) for c in first_cells)
    assert _one_way_share(FptConfig(one_way_share=0.3), first_cells, 1000.0, rho) == 0.3  # given: used as is
    assert _one_way_share(FptConfig(one_way_share=None), first_cells, None, rho) == 0.2  # no target pairs (or a hierarchy)
    assert FptConfig().one_way_share is None  # the default is the rule
    assert _one_way_share(FptConfig(one_way_share=None), first_cells, 1e7, rho) == 0.05  # many rows: the floor
    assert _one_way_share(FptConfig(one_way_share=None), first_cells, 100.0, rho) == 0.2  # few rows: the ceiling
    for total in (20_000.0, 30_000.0):
        share = _one_way_share(FptConfig(one_way_share=None), first_cells, total, rho)
        assert 0.05 < share < 0.2
        # the cells^(2/3) split of share·ρ: mean expected L1 error of the histograms / rows = one_way_error
        sigmas = [1 / math.sqrt(2 * share * rho * c ** (2 / 3) / weight) for c in first_cells]
        error = sum(c * s * math.sqrt(2 / math.pi) for c, s in zip(first_cells, sigmas)) / (len(first_cells) * total)
        assert error == pytest.approx(FptConfig().one_way_error, rel=1e-9)
    # fewer rows need more of ρ for the same relative error
    rule = FptConfig(one_way_share=None)
    assert _one_way_share(rule, first_cells, 20_000.0, rho) > _one_way_share(rule, first_cells, 30_000.0, rho)
    # a smaller error aimed at takes more: ρ₁ ∝ 1/one_way_error²
    tighter = FptConfig(one_way_share=None, one_way_error=FptConfig().one_way_error / 1.1)
    assert _one_way_share(tighter, first_cells, 30_000.0, rho) == pytest.approx(1.21 * _one_way_share(rule, first_cells, 30_000.0, rho))


@pytest.mark.parametrize("target", ["c", None])
def test_target_pairs_are_measured_first_and_set_the_one_way_share(target):
    schema, frame = _correlated(n=20_000, target=target)
    privacy_filter = PrivacyFilter(PrivacyBudget(1.0, 1e-9))
    engine = get_engine("fpt", rounds_per_column=1.0, iterations=5, final_iterations=5, one_way_share=None)
    engine.fit(schema, oracle_over_frame(frame, schema, privacy_filter), LocalTaskRunner())
    measurements = privacy_filter.report().measurements
    one_way_names = {f"1-way[{n}]" for n in schema.names}
    one_way = [e.rho for e in measurements if e.name in one_way_names]
    assert len(one_way) == 3
    if target:  # 20,000 rows, 3 small columns: the relative error is reached at the floor
        assert [e.name for e in measurements[:2]] == ["marginal[a, c]", "marginal[b, c]"]
        assert sum(one_way) == pytest.approx(0.05 * privacy_filter.rho_total, rel=1e-9)
    else:
        assert sum(one_way) == pytest.approx(0.2 * privacy_filter.rho_total, rel=1e-9)
    assert privacy_filter.report().rho_spent == pytest.approx(privacy_filter.rho_total, rel=1e-9)


def test_state_round_trip_samples_the_same_rows():
    schema, frame = _correlated(n=1000)
    model = exact_fit(get_engine("fpt", rounds_per_column=1.0, iterations=10, final_iterations=10), schema, frame)
    again = FptModel.from_state(model.to_state(), schema)
    one = model.sample_codes(500, np.random.default_rng(7))
    two = again.sample_codes(500, np.random.default_rng(7))
    assert np.array_equal(one, two)
    assert again.fit_summary() == model.fit_summary()


def _xor_target(n=6000, seed=0):
    """A target that is the XOR of two columns (invisible in every 2-way marginal), beside a noise column."""
    rng = np.random.default_rng(seed)
    a, b, c = rng.integers(0, 2, n), rng.integers(0, 2, n), rng.integers(0, 3, n)
    t = np.where(rng.random(n) < 0.95, a ^ b, 1 - (a ^ b))
    schema = schema_from_dict({"target": "t", "task": "classification", "columns": [
        {"name": n_, "type": "categorical", "categories": cats, "nullable": False}
        for n_, cats in (("a", ["0", "1"]), ("b", ["0", "1"]), ("c", ["0", "1", "2"]), ("t", ["no", "yes"]))]})
    frame = pd.DataFrame({"a": a.astype(str), "b": b.astype(str), "c": c.astype(str), "t": np.array(["no", "yes"])[t]})
    return schema, frame


def test_target_triples_join_the_workload_and_carry_what_no_pair_shows():
    from spark_synth.engines.fpt.workload_plan import _pmw_workload

    schema, frame = _xor_target()
    plain, triples = (_pmw_workload(schema, FptConfig(target_triples=on)) for on in (False, True))
    assert {c.scope for c in plain.candidates} == {(0, 1), (0, 2), (0, 3), (1, 2), (1, 3), (2, 3)}
    assert {c.scope for c in triples.candidates} - {c.scope for c in plain.candidates} == {(0, 1, 3), (0, 2, 3), (1, 2, 3)}
    weight = {c.scope: c.weight for c in triples.candidates}
    assert weight[(0, 3)] > weight[(0, 1)]  # the workload's weights follow it: the target's marginals weigh more
    assert {c.scope for c in _pmw_workload(schema, FptConfig(max_way=3, target_triples=True)).candidates} == \
        {c.scope for c in _pmw_workload(schema, FptConfig(max_way=3)).candidates}  # 3-way: nothing to add
    rates = {}
    for on in (False, True):
        model = exact_fit(get_engine("fpt", target_triples=on, rounds_per_column=2.0, iterations=100), schema, frame)
        synthetic = _sample(model, schema, 20_000)
        agree = (synthetic["a"] != synthetic["b"]) == (synthetic["t"] == "yes")
        rates[on] = float(agree.mean())
    assert rates[True] > 0.9 and rates[False] < 0.65, rates  # pairs alone leave t independent of (a, b)


@pytest.mark.parametrize("options, name", [
    ({"mode": "greedy"}, "fpt.mode"),
    ({"max_way": 4}, "fpt.max_way"),
    ({"rounds_per_column": 0}, "fpt.rounds_per_column"),
    ({"target_share": -0.1}, "fpt.target_share"),
    ({"one_way_share": 0.5, "target_share": 0.5}, "fpt.target_share"),
    ({"one_way_share": 1.0}, "fpt.one_way_share"),
    ({"one_way_error": 0}, "fpt.one_way_error"),
    ({"max_model_cells": 1}, "fpt.max_model_cells"),
    ({"device": "tpu"}, "fpt.device"),
    ({"compress_threshold": -1}, "fpt.compress_threshold"),
    ({"fit_precision": "float16"}, "fpt.fit_precision"),
    ({"cpu_threads": -1}, "fpt.cpu_threads"),
    ({"target_pair_level": 2}, "fpt.target_pair_level"),
    ({"target_pair_level": True}, "fpt.target_pair_level"),
    ({"target_split": "cells"}, "fpt.target_split"),
    ({"target_triples": "yes"}, "fpt.target_triples"),
    ({"target_triple_columns": 1}, "fpt.target_triple_columns"),
    ({"target_triple_columns": True}, "fpt.target_triple_columns"),
    ({"target_triple_columns": 4, "target_share": 0}, "fpt.target_triple_columns"),
    ({"target_triple_columns": 4, "every_triple_at_noise_share": 1.5}, "fpt.every_triple_at_noise_share"),
    ({"target_triple_columns": 4, "every_triple_at_noise_share": True}, "fpt.every_triple_at_noise_share"),
    ({"every_triple_at_noise_share": 0.4}, "fpt.every_triple_at_noise_share"),  # without target_triple_columns
])
def test_bad_options_name_the_option(options, name):
    with pytest.raises(ParameterError, match=name.replace(".", r"\.")):
        get_engine("fpt", **options)


# ---- hierarchies ---------------------------------------------------------------------------

def _hierarchical(n=20_000, seed=0):
    """A 40-code column under 8 groups under 2 super-groups, crossed with a binary column."""
    rng = np.random.default_rng(seed)
    codes = [f"k{i:02d}" for i in range(40)]
    levels = [{"name": "group", "parents": {c: f"g{i // 5}" for i, c in enumerate(codes)}},
              {"name": "super", "parents": {f"g{g}": f"s{g // 4}" for g in range(8)}}]
    schema = schema_from_dict({"columns": [
        {"name": "code", "type": "categorical", "categories": codes, "hierarchy": levels, "nullable": False},
        {"name": "flag", "type": "categorical", "categories": ["no", "yes"], "nullable": False}]})
    p = rng.dirichlet(np.full(40, 0.3))
    code = rng.choice(40, n, p=p)
    flag = np.where(rng.random(n) < 0.2 + 0.6 * (code < 20), "yes", "no")
    return schema, pd.DataFrame({"code": np.array(codes)[code], "flag": flag})


def test_every_hierarchy_level_is_measured_and_crosses_are_candidates():
    schema, frame = _hierarchical(n=2000)
    privacy_filter = PrivacyFilter(PrivacyBudget(1.0, 1e-9))
    engine = get_engine("fpt", rounds_per_column=2.0, iterations=10, final_iterations=10, hierarchy_crosses=["flag"])
    engine.fit(schema, oracle_over_frame(frame, schema, privacy_filter), LocalTaskRunner())
    names = [e.name for e in privacy_filter.report().measurements]
    assert {"marginal[code@group]", "marginal[code@super]"} <= set(names)
    selections = privacy_filter.report().selections
    assert all(e.candidates >= 3 for e in selections)  # (code, flag) at each level and at full resolution


def _recording(oracle, released: dict):
    """The oracle, also keeping every noisy answer by query name (test-side: to compare against them)."""
    from spark_synth.engines.base import MeasurementOracle

    class Recording(MeasurementOracle):
        rho_total = property(lambda self: oracle.rho_total)
        rho_remaining = property(lambda self: oracle.rho_remaining)

        def measure(self, query, rho):
            return self.measure_many([(query, rho)])[0]

        def measure_many(self, requests):
            out = oracle.measure_many(requests)
            released.update({m.query.name: np.asarray(m.values, dtype=float) for m in out})
            return out

        def prepare(self, queries):
            oracle.prepare(queries)

        def select(self, *args, **kwargs):
            return oracle.select(*args, **kwargs)

        def child(self, rho, label, columns=None):
            return oracle.child(rho, label, columns)

    return Recording()


def test_consistency_across_hierarchy_levels_lowers_every_level_error():
    """Census TopDown's point: fitting all levels jointly beats each level's own noisy counts (the
    very counts the engine measured: a paired comparison of squared errors over 30 fits)."""
    schema, frame = _hierarchical()
    column = schema["code"]
    levels = [("code", None)] + column.hierarchy_groupings()
    exact = {name: answer_frame(frame, schema, [MarginalQuery(("code",), groupings=None if g is None else (g,))])[0]
             for name, g in levels}
    fitted_error, alone_error = {name: [] for name, _ in levels}, {name: [] for name, _ in levels}
    for _ in range(30):
        released: dict = {}
        oracle = _recording(oracle_over_frame(frame, schema, PrivacyFilter(PrivacyBudget(0.3, 1e-9))), released)
        engine = get_engine("fpt", rounds_per_column=0.5, one_way_share=0.9, target_share=0.0, iterations=60, final_iterations=200)
        model = engine.fit(schema, oracle, LocalTaskRunner())
        marginal = model.gibbs().marginal((0,)).numpy() * model.estimated_rows
        for name, grouping in levels:
            alone = released["1-way[code]" if grouping is None else f"marginal[code@{name}]"]
            fitted = marginal if grouping is None else np.bincount(np.asarray(grouping), weights=marginal)
            fitted_error[name].append(((fitted - exact[name]) ** 2).sum())
            alone_error[name].append(((alone - exact[name]) ** 2).sum())
    for name, _ in levels:
        assert np.mean(fitted_error[name]) < np.mean(alone_error[name]), (name, fitted_error[name], alone_error[name])


def test_hierarchy_crosses_must_name_columns_and_need_a_hierarchy():
    schema, frame = _hierarchical(n=200)
    with pytest.raises(ParameterError, match="hierarchy_crosses"):
        exact_fit(get_engine("fpt", hierarchy_crosses=["nope"]), schema, frame)
    flat, flat_frame = _correlated(n=200)
    with pytest.raises(ParameterError, match="hierarchy_crosses"):
        exact_fit(get_engine("fpt", hierarchy_crosses=["a"]), flat, flat_frame)


@pytest.mark.parametrize("levels, message", [
    ([{"name": "g", "parents": {"a": "X"}}], "no parent"),
    ([{"name": "g", "parents": {"a": "X", "b": "X", "q": "Y"}}], "not values of the level below"),
    ([{"name": "g", "parents": {"a": "X", "b": "Y"}}, {"name": "g", "parents": {"X": "T", "Y": "T"}}], "unique non-empty 'name'"),
    ([{"name": "g", "parents": {"a": "X", "b": "Y"}}, {"name": "h", "parents": {"X": "T"}}], "no parent"),
    ([{"name": "g"}], "exactly 'name' and 'parents'"),
    ("missing", "not defined under the schema's 'hierarchies'"),
])
def test_bad_hierarchies_are_one_line_errors(levels, message):
    raw = {"columns": [{"name": "c", "type": "categorical", "categories": ["a", "b"], "hierarchy": levels}]}
    with pytest.raises(SchemaError, match=message):
        schema_from_dict(raw)


def test_numeric_columns_cannot_declare_a_hierarchy():
    raw = {"columns": [{"name": "x", "type": "integer", "min": 0, "max": 3, "hierarchy": [{"name": "g", "parents": {}}]}]}
    with pytest.raises(SchemaError, match="only categorical/ordinal"):
        schema_from_dict(raw)


def test_icd9_hierarchy_nests_code_category_block_chapter():
    assert [category(c) for c in ["250.01", "8", "V57", "E909"]] == ["250", "008", "V57", "E909"]
    assert block("250") == "250-259" and block("V57") == "V50-V59" and block("E909") == "E900-E909"
    assert chapter("250").startswith("240-279") and chapter("V57").startswith("V01") and chapter("E909").startswith("E000")
    levels = icd9_levels(["250.01", "250.02", "251", "8", "139", "140", "V57", "E909"])
    blocks_by_chapter = {}
    for cat, blk in levels[1]["parents"].items():  # every block lies in one chapter
        blocks_by_chapter.setdefault(blk, set()).add(chapter(cat))
    assert all(len(ch) == 1 for ch in blocks_by_chapter.values())
    schema = schema_from_dict(with_icd9_hierarchy({"columns": [
        {"name": "d1", "type": "categorical", "categories": ["250.01", "8"]},
        {"name": "d2", "type": "categorical", "categories": ["250.02", "V57", "8"]}]}, ["d1", "d2"]))
    assert [name for name, _ in schema["d1"].hierarchy_groupings()] == ["category", "block", "chapter"]
    assert schema["d2"].hierarchy_groupings()[0][1] == (0, 1, 2, 3)  # 250.02, V57, 8 in their own categories; null last


def test_on_a_small_table_the_one_way_histograms_are_as_good_as_independents():
    """German-credit-like, 800 rows, ε = 1: the noise swamps single codes. FPT models a swamped
    ordered column on ranges that hold ≥ 3 σ of rows on average and shrinks its codes' shares inside
    them, as ``independent``'s 1-way estimate does; before, a 73-value month column fell into one
    merged group whose few codes above the noise floor took all its rows (measured over six fits:
    coarse 1-way TVD of the three numeric columns 0.53 / 0.46 / 0.46 before, 0.28 / 0.18 / 0.19 now,
    independent's 0.22 / 0.19 / 0.19)."""
    from ..helpers import one_way_tvd, small_table

    schema, frame = small_table(800, seed=0)
    numeric = ["months", "amount", "age"]
    errors = {}
    for engine in ("independent", "fpt"):
        tvds = []
        for fit in range(3):
            oracle = oracle_over_frame(frame, schema, PrivacyFilter(PrivacyBudget(1.0, 1e-9)))
            model = get_engine(engine).fit(schema, oracle, LocalTaskRunner())
            tvds.append(one_way_tvd(frame, _sample(model, schema, 4000, seed=fit), schema))
        errors[engine] = {c: np.mean([t[c] for t in tvds]) for c in tvds[0]}
        if engine == "fpt":
            assert set(model._summary["columns_swamped"]) >= set(numeric)
    # the three columns' mean: one column's ratio over three fits of unseeded (OpenDP) noise swung to
    # 1.8 × by chance (months 0.287 against 0.159); their mean moves less and was 2.4 × before
    mean = {engine: np.mean([errors[engine][name] for name in numeric]) for engine in errors}
    assert mean["fpt"] < 1.5 * mean["independent"], errors
