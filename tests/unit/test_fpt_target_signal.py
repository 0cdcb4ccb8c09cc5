"""FPT keeps a target pair in its model only when the pair's noisy table shows dependence above its noise."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from spark_synth.engines import LocalTaskRunner, get_engine
from spark_synth.engines.fpt.target_signal import MIN_POWER, association_statistic, carries_signal, detectable_shift_power
from spark_synth.oracle import oracle_over_frame
from spark_synth.privacy import PrivacyBudget, PrivacyFilter
from spark_synth.schema import schema_from_dict


def _independent_counts(rows=(5000, 3000, 400, 90), target=(0.88, 0.12)):
    return np.outer(rows, target)


def test_on_pure_noise_over_independent_counts_the_test_keeps_about_its_level():
    rng = np.random.default_rng(0)
    truth = _independent_counts()
    sigma = np.array([[100.0], [100.0], [141.4], [200.0]]) * np.ones((1, 2))  # grouped cells: σ·√(codes summed)
    kept = [carries_signal(truth + rng.normal(0, sigma), sigma, 1, 0.05) for _ in range(2000)]
    assert 0.03 < np.mean(kept) < 0.08  # the χ² level holds on noise alone (a mis-scaled statistic keeps far more)


def test_a_dependence_larger_than_the_noise_is_kept_and_level_zero_keeps_everything():
    rng = np.random.default_rng(1)
    truth = np.array([[4500.0, 500.0], [2900.0, 100.0], [200.0, 200.0], [80.0, 10.0]])  # P(t | code) 0.1, 0.03, 0.5, 0.1
    kept = [carries_signal(truth + rng.normal(0, 30.0, truth.shape), 30.0, 1, 0.01) for _ in range(200)]
    assert np.mean(kept) == 1.0
    assert carries_signal(_independent_counts(), 60.0, 1, 0.0)  # level 0: every pair enters the model
    assert carries_signal(_independent_counts(), 0.0, 1, 0.01)  # noise-free release: nothing to test against


def test_a_pair_the_test_could_not_have_judged_is_kept():
    """Few rows per code against the noise (a small table): failing the test says nothing, so the
    pair stays; the same shares over 100 times the rows fail it with power, and are left out."""
    rng = np.random.default_rng(5)
    small = np.outer([270, 270, 60, 400], [0.7, 0.3]) + rng.normal(0, 75.0, (4, 2))
    assert detectable_shift_power(small, 75.0, 1, 0.01) < MIN_POWER
    assert carries_signal(small, 75.0, 1, 0.01)
    assert not carries_signal(np.outer([270, 270, 60, 400], [0.7, 0.3]), 75.0, 1, 0.01, power_rule=False)  # a regression target's ranges
    large = np.outer([27_000, 27_000, 6000, 40_000], [0.7, 0.3])
    assert detectable_shift_power(large, 75.0, 1, 0.01) > 0.999
    kept = [carries_signal(large + rng.normal(0, 75.0, (4, 2)), 75.0, 1, 0.01) for _ in range(300)]
    assert np.mean(kept) < 0.04  # about the level


def test_the_statistic_reads_the_target_on_either_axis():
    rng = np.random.default_rng(2)
    table = _independent_counts() + rng.normal(0, 50.0, (4, 2))
    assert association_statistic(table, 50.0, 1) == pytest.approx(association_statistic(table.T, 50.0, 0))
    assert association_statistic(table, 50.0, 1)[1] == 3


def test_a_column_independent_of_the_target_with_small_cells_stays_out_of_the_model():
    """Low budget: z's table with the target is noise, x's carries the target. Only x's pair is
    modelled, and z's rare code does not get a target rate from the noise."""
    rng = np.random.default_rng(3)
    n = 20_000
    x = rng.integers(0, 4, n)
    y = np.where(rng.random(n) < np.array([0.05, 0.15, 0.4, 0.7])[x], "yes", "no")
    z = np.where(rng.random(n) < 0.02, "rare", np.where(rng.random(n) < 0.5, "a", "b"))  # independent of y
    schema = schema_from_dict({"target": "y", "task": "classification", "columns": [
        {"name": "x", "type": "categorical", "categories": ["0", "1", "2", "3"], "nullable": False},
        {"name": "z", "type": "categorical", "categories": ["a", "b", "rare"], "nullable": False},
        {"name": "y", "type": "categorical", "categories": ["no", "yes"], "nullable": False}]})
    frame = pd.DataFrame({"x": x.astype(str), "z": z, "y": y})
    left_out = []
    for _ in range(3):
        privacy_filter = PrivacyFilter(PrivacyBudget(0.3, 1e-9))
        engine = get_engine("fpt", rounds_per_column=1.0, iterations=20, final_iterations=50)
        model = engine.fit(schema, oracle_over_frame(frame, schema, privacy_filter), LocalTaskRunner())
        left_out.append(model.fit_summary()["target_pairs_left_out"])
        assert "marginal[x, y]" in [e.name for e in privacy_filter.report().entries]
        assert privacy_filter.report().rho_spent == pytest.approx(privacy_filter.rho_total, rel=1e-9)
    assert all("x" not in names for names in left_out)
    assert sum("z" in names for names in left_out) >= 2


def test_the_columns_ranked_for_the_target_triples_are_those_whose_pairs_depend_most():
    """Strong before weak before none, whatever their codes: a 64-code column without dependence
    (its χ² about its 63 degrees of freedom) does not outrank a 2-code one with a weak dependence."""
    rng = np.random.default_rng(4)
    sigma = 40.0
    strong = np.array([[4000.0, 1000.0], [1000.0, 4000.0]])  # P(t | code) 0.2 / 0.8
    weak = np.array([[2600.0, 2400.0], [2400.0, 2600.0]])  # 0.48 / 0.52
    wide_none = np.outer(np.full(64, 160.0), [0.5, 0.5])  # 64 codes, independent of t
    noisy = [((j, 3), t + rng.normal(0, sigma, t.shape), sigma) for j, t in ((0, strong), (1, weak), (2, wide_none))]
    from spark_synth.engines.fpt.target_signal import strongest_columns
    assert strongest_columns(noisy, 3, 3) == [0, 1, 2]
    assert strongest_columns(noisy, 3, 1) == [0]
    flipped = [((3, 5), strong.T + rng.normal(0, sigma, (2, 2)), sigma)]  # the target first in the scope
    assert strongest_columns(flipped, 3, 2) == [5]


def test_fpt_offers_only_the_triples_of_the_columns_its_pairs_rank_first():
    """x1 and x2 carry the target (and their triple with it), z1..z3 do not: with
    target_triple_columns=2 the first pass ranks x1 and x2 first, and every triple a round
    selects is (x1, x2, y)."""
    rng = np.random.default_rng(6)
    n = 20_000
    x1, x2 = rng.integers(0, 3, n), rng.integers(0, 3, n)
    rate = np.array([0.1, 0.4, 0.7])[x1] * 0.6 + np.array([0.1, 0.3, 0.5])[x2] * 0.6 + 0.1 * ((x1 == 2) & (x2 == 2))
    y = np.where(rng.random(n) < rate, "yes", "no")
    columns = {"x1": x1, "x2": x2, **{f"z{k}": rng.integers(0, 3, n) for k in (1, 2, 3)}}
    schema = schema_from_dict({"target": "y", "task": "classification", "columns": [
        *({"name": name, "type": "categorical", "categories": ["0", "1", "2"], "nullable": False} for name in columns),
        {"name": "y", "type": "categorical", "categories": ["no", "yes"], "nullable": False}]})
    frame = pd.DataFrame({**{name: v.astype(str) for name, v in columns.items()}, "y": y})
    privacy_filter = PrivacyFilter(PrivacyBudget(3.0, 1e-9))
    engine = get_engine("fpt", target_triples=True, target_triple_columns=2, rounds_per_column=3.0, iterations=20,
                        final_iterations=50)
    model = engine.fit(schema, oracle_over_frame(frame, schema, privacy_filter), LocalTaskRunner())
    summary = model.fit_summary()
    assert sorted(summary["target_triple_columns"]) == ["x1", "x2"]
    triples = [name for name in summary["selected"] if name.count(",") == 2]
    assert triples and set(triples) == {"marginal[x1, x2, y]"}, summary["selected"]
    assert privacy_filter.report().rho_spent == pytest.approx(privacy_filter.rho_total, rel=1e-9)


def test_every_triple_is_wanted_when_enough_target_pairs_were_left_out_as_noise():
    from spark_synth.engines.fpt.target_signal import every_triple_wanted
    assert every_triple_wanted([True, False, False], 0.5)  # two of three left out
    assert every_triple_wanted([True, True, False, False], 0.5)  # exactly the share
    assert not every_triple_wanted([True, True, False], 0.5)
    assert not every_triple_wanted([False, False], 0.0)  # 0: never
    assert not every_triple_wanted([], 0.4)  # no target pairs: nothing to judge by


def test_where_most_target_pairs_are_noise_every_triple_is_offered_and_finds_a_dependence_only_triples_show():
    """z1 moves the target one way where x1 = 0 and the other where x1 = 2, so its own pair with
    the target is exactly independent (left out as noise, as are z2's and z3's, spread evenly
    within every cell) while (x1, z1, y) carries the strongest dependence of the table. With two or
    three of five pairs left out (the χ² test keeps a pure-noise pair now and then) and
    every_triple_at_noise_share=0.3 every triple is offered and a round selects (x1, z1, y); at 0.7
    only the triple of x1 and x2 (the columns the pairs rank first) is, and no round can select
    (x1, z1, y)."""
    rng = np.random.default_rng(7)
    blocks = []
    for x1, x2, z1 in np.ndindex(3, 3, 2):  # 1,000 rows a cell, the target's rate exact in every cell
        yes = round(1000 * ([0.15, 0.4, 0.65][x1] + [0.0, 0.1, 0.2][x2] + 0.3 * z1 * ((x1 == 0) - (x1 == 2))))
        blocks.append(pd.DataFrame({"x1": x1, "x2": x2, "z1": z1, "y": np.arange(1000) < yes}))
    frame = pd.concat(blocks, ignore_index=True)
    for name in ("z2", "z3"):  # each of 3 codes on a third of every (x1, x2, z1, y) cell
        frame[name] = frame.groupby(["x1", "x2", "z1", "y"]).cumcount().to_numpy() % 3
        frame[name] = frame.groupby(["x1", "x2", "z1", "y"])[name].transform(lambda codes: rng.permutation(codes.to_numpy()))
    frame = frame.astype(str).replace({"y": {"True": "yes", "False": "no"}})
    schema = schema_from_dict({"target": "y", "task": "classification", "columns": [
        *({"name": name, "type": "categorical", "categories": ["0", "1", "2"], "nullable": False}
          for name in ("x1", "x2", "z1", "z2", "z3")),
        {"name": "y", "type": "categorical", "categories": ["no", "yes"], "nullable": False}]})
    summaries = {}
    for share in (0.3, 0.7):
        privacy_filter = PrivacyFilter(PrivacyBudget(1.0, 1e-9))
        engine = get_engine("fpt", target_triples=True, target_triple_columns=2, every_triple_at_noise_share=share,
                            rounds_per_column=3.0, iterations=20, final_iterations=50)
        model = engine.fit(schema, oracle_over_frame(frame, schema, privacy_filter), LocalTaskRunner())
        summaries[share] = model.fit_summary()
        assert privacy_filter.report().rho_spent == pytest.approx(privacy_filter.rho_total, rel=1e-9)
    for summary in summaries.values():
        left_out = summary["target_pairs_left_out"]
        assert set(left_out) <= {"z1", "z2", "z3"} and len(left_out) >= 2, left_out
    every, strongest = summaries[0.3], summaries[0.7]
    assert every["every_target_triple"] and "target_triple_columns" not in every
    assert "marginal[x1, z1, y]" in every["selected"], every["selected"]
    assert not strongest["every_target_triple"] and sorted(strongest["target_triple_columns"]) == ["x1", "x2"]
    assert "marginal[x1, z1, y]" not in strongest["selected"], strongest["selected"]
