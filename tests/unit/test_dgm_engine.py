"""The dgm engine: partitions, budget shares, the DP validator and the join (pandas oracle, no Spark)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from spark_synth.engines import LocalTaskRunner, get_engine
from spark_synth.engines.dgm import DgmModel
from spark_synth.engines.dgm.join import JoinSettings, validator_join
from spark_synth.engines.dgm.partitions import association, grouped_by_association
from spark_synth.errors import ParameterError
from spark_synth.measure import answer_frame
from spark_synth.oracle import oracle_over_frame
from spark_synth.privacy import PrivacyBudget, PrivacyFilter
from spark_synth.queries import MarginalQuery
from spark_synth.schema import decode_codes, schema_from_dict


def _linked(n=6000, seed=0):
    """a–b and c–d strongly linked (b ≈ a, d ≈ c); a–c linked more weakly; the rest noise."""
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 4, n)
    b = np.where(rng.random(n) < 0.9, a, rng.integers(0, 4, n))
    c = np.where(rng.random(n) < 0.6, a % 3, rng.integers(0, 3, n))
    d = np.where(rng.random(n) < 0.9, c, rng.integers(0, 3, n))
    schema = schema_from_dict({"columns": [
        {"name": "a", "type": "categorical", "categories": [0, 1, 2, 3], "nullable": False},
        {"name": "b", "type": "categorical", "categories": [0, 1, 2, 3], "nullable": False},
        {"name": "c", "type": "categorical", "categories": [0, 1, 2], "nullable": False},
        {"name": "d", "type": "categorical", "categories": [0, 1, 2], "nullable": False}]})
    return schema, pd.DataFrame({"a": a, "b": b, "c": c, "d": d})


def _fit(schema, frame, epsilon=1.0, **options):
    privacy_filter = PrivacyFilter(PrivacyBudget(epsilon, 1e-9))
    engine = get_engine("dgm", **options)
    model = engine.fit(schema, oracle_over_frame(frame, schema, privacy_filter), LocalTaskRunner())
    return model, privacy_filter


def _pair_tvd(schema, frame, synthetic, pair):
    query = MarginalQuery(pair)
    real, synth = (answer_frame(f, schema, [query])[0].astype(float) for f in (frame, synthetic))
    return 0.5 * np.abs(real / real.sum() - synth / synth.sum()).sum()


@pytest.mark.parametrize("partitions, fragment", [
    ([["a", "b"], ["c", "x"]], "unknown: ['x']"),
    ([["a", "b"], ["b", "c", "d"]], "in more than one partition: ['b']"),
    ([["a", "b"], ["c"]], "not in any partition: ['d']"),
])
def test_partitions_must_be_disjoint_cover_and_name_columns(partitions, fragment):
    schema, frame = _linked(200)
    privacy_filter = PrivacyFilter(PrivacyBudget(1.0, 1e-9))
    with pytest.raises(ParameterError, match=r"dgm\.partitions.*" + fragment.replace("[", r"\[").replace("]", r"\]")):
        get_engine("dgm", partitions=partitions, engines="independent").fit(
            schema, oracle_over_frame(frame, schema, privacy_filter), LocalTaskRunner())
    assert privacy_filter.rho_remaining == privacy_filter.rho_total  # nothing spent


@pytest.mark.parametrize("options, name", [
    ({"partitions": [["a"], ["b"]], "n_partitions": 2}, "dgm.partitions"),
    ({"partitions": [["a", "b", "c", "d"]]}, "dgm.partitions"),
    ({"n_partitions": 1}, "dgm.n_partitions"),
    ({"n_partitions": 2, "validator": "forest"}, "dgm.validator"),
    ({"n_partitions": 2, "validator": "real"}, "dgm.allow_non_dp_validator"),  # the paper's forest: opt-in only
    ({"n_partitions": 2, "validator": "real", "allow_non_dp_validator": "yes"}, "dgm.allow_non_dp_validator"),
    ({"n_partitions": 2, "validator": "real", "allow_non_dp_validator": True, "validator_pairs": 3}, "dgm.validator_pairs"),
    ({"n_partitions": 2, "acceptance": "top"}, "dgm.acceptance"),
    ({"n_partitions": 2, "validator_share": 1.5}, "dgm.validator_share"),
    ({"n_partitions": 2, "join_multiplier": 0}, "dgm.join_multiplier"),
    ({"n_partitions": 2, "candidates_per_row": 0}, "dgm.candidates_per_row"),
])
def test_bad_options_name_the_option(options, name):
    with pytest.raises(ParameterError, match=name.replace(".", r"\.")):
        get_engine("dgm", **options)


@pytest.mark.parametrize("options, name", [
    ({"n_partitions": 9}, "dgm.n_partitions"),
    ({"n_partitions": 2, "engines": ["independent"] * 3}, "dgm.engines"),
    ({"n_partitions": 2, "engines": "dgm"}, "dgm.engines"),
    ({"n_partitions": 2, "engines": "independent", "engine_options": {"steps": 3}}, "independent option"),
    ({"n_partitions": 2, "engines": "fpt", "engine_options": {"max_way": 7}}, "fpt.max_way"),
])
def test_partition_engine_problems_are_refused_before_anything_is_spent(options, name):
    schema, frame = _linked(200)
    privacy_filter = PrivacyFilter(PrivacyBudget(1.0, 1e-9))
    with pytest.raises(ParameterError, match=name.replace(".", r"\.")):
        get_engine("dgm", **options).fit(schema, oracle_over_frame(frame, schema, privacy_filter), LocalTaskRunner())
    assert privacy_filter.report().entries == ()


def test_association_grouping_keeps_linked_columns_together():
    assert association(np.diag([50.0, 60.0, 70.0])) == pytest.approx(1.0)
    assert association(np.full((3, 4), 25.0)) == pytest.approx(0.0)
    strength = {(0, 1): 0.9, (2, 3): 0.8, (0, 2): 0.3, (1, 3): 0.1, (4, 5): 0.7}
    assert grouped_by_association(6, strength, 3) == [(0, 1), (2, 3), (4, 5)]
    # no merge of two pairs fits ⌈6/2⌉ columns: then the strongest link wins over balance
    assert grouped_by_association(6, strength, 2) == [(0, 1, 2, 3), (4, 5)]
    assert grouped_by_association(5, {(0, 1): 0.9, (2, 3): 0.8, (1, 4): 0.5}, 2) == [(0, 1, 4), (2, 3)]
    schema, frame = _linked()
    model, _ = _fit(schema, frame, n_partitions=2, engines="independent", validator="none")
    assert model.partitions == [(0, 1), (2, 3)]  # from noisy associations only


@pytest.mark.parametrize("options, scans", [
    ({"partitions": [["a", "c"], ["b", "d"]]}, 1),  # every partition's workload and the validator's pairs
    ({"n_partitions": 2}, 2),  # the associations first: the partitions come from their releases
])
@pytest.mark.parametrize("engine", ["independent", "fpt"])
def test_partitions_and_validator_are_measured_in_one_scan(options, scans, engine):
    schema, frame = _linked(3000)
    timings = {}
    engine_options = {"rounds_per_column": 1, "iterations": 20, "final_iterations": 20} if engine == "fpt" else {}
    get_engine("dgm", engines=engine, engine_options=engine_options, **options).fit(
        schema, oracle_over_frame(frame, schema, PrivacyFilter(PrivacyBudget(1.0, 1e-9)), timings=timings), LocalTaskRunner())
    assert timings["scans"] == scans  # one per partition (and one for the validator) before


def test_budget_shares_are_reported_per_partition_and_sum_to_the_total():
    schema, frame = _linked(3000)
    model, privacy_filter = _fit(schema, frame, partitions=[["a"], ["b", "c", "d"]], engines="independent")
    report = privacy_filter.report()
    assert math.isclose(report.rho_spent, privacy_filter.rho_total, rel_tol=1e-9)
    by_scope = {}
    for entry in report.entries:
        by_scope[entry.scope] = by_scope.get(entry.scope, 0.0) + entry.rho
    rho = privacy_filter.rho_total
    assert set(by_scope) == {"partition1", "partition2", "validator"}
    assert by_scope["validator"] == pytest.approx(0.15 * rho, rel=1e-9)
    assert by_scope["partition1"] == pytest.approx(0.85 * rho / 4, rel=1e-9)  # ∝ its one column of four
    assert by_scope["partition2"] == pytest.approx(0.85 * rho * 3 / 4, rel=1e-9)
    summary = model.fit_summary()
    assert summary["partitions"] == [["a"], ["b", "c", "d"]] and summary["partition_rho"] == pytest.approx(
        [by_scope["partition1"], by_scope["partition2"]], rel=1e-9)
    selections = [e for e in report.entries if e.kind == "selection"]
    assert len(selections) == len(summary["validator_pairs"]) == 3  # a is crossed with b, c, d


def test_the_dp_validator_recovers_cross_partition_dependence_the_random_join_loses():
    schema, frame = _linked(8000)
    partitions = [["a", "c"], ["b", "d"]]  # splits both strong links: the join has everything to restore
    results = {}
    for validator in ("none", "dp"):
        model, _ = _fit(schema, frame, epsilon=2.0, partitions=partitions, engines="fpt", validator=validator,
                        engine_options={"iterations": 20, "final_iterations": 50})
        rng = np.random.default_rng(3)
        synthetic = decode_codes(model.sample_codes(8000, rng), schema, rng)
        results[validator] = _pair_tvd(schema, frame, synthetic, ("a", "b")) + _pair_tvd(schema, frame, synthetic, ("c", "d"))
    assert results["none"] > 0.8  # independent halves: (a, b) and (c, d) TVD ≈ 0.5 each
    assert results["dp"] < 0.5 * results["none"]


def test_the_opt_in_forest_validator_is_labelled_outside_the_dp_guarantee():
    schema, frame = _linked(6000)
    partitions = [["a", "c"], ["b", "d"]]
    results = {}
    for validator in ("none", "real"):
        extra = {"allow_non_dp_validator": True} if validator == "real" else {}
        model, privacy_filter = _fit(schema, frame, epsilon=2.0, partitions=partitions, engines="independent",
                                     validator=validator, **extra)
        rng = np.random.default_rng(3)
        synthetic = decode_codes(model.sample_codes(6000, rng), schema, rng)
        results[validator] = _pair_tvd(schema, frame, synthetic, ("a", "b")) + _pair_tvd(schema, frame, synthetic, ("c", "d"))
        report = privacy_filter.report()
        assert math.isclose(report.rho_spent, privacy_filter.rho_total, rel_tol=1e-9)  # all of ρ to the partitions
        if validator == "real":
            assert not report.dp_guarantee and [e.name for e in report.not_covered] == [
                "dgm validator=real: random forest trained on real rows"]
            assert report.to_dict()["dp_guarantee"] is False
            again = DgmModel.from_state(model.to_state(), schema)
            assert np.array_equal(again.sample_codes(300, np.random.default_rng(4)), model.sample_codes(300, np.random.default_rng(4)))
        else:
            assert report.dp_guarantee
    assert results["real"] < 0.6 * results["none"]  # the forest sees the real links the random join loses


def test_the_dp_validator_never_reads_rows():
    """validator=dp learns only through noisy measurements: an oracle without row access is enough,
    and only the opt-in (validator=real) asks for rows anywhere in the engines."""
    from pathlib import Path

    from spark_synth.measure import answer_frame as exact
    from spark_synth.oracle import build_oracle

    schema, frame = _linked(3000)
    privacy_filter = PrivacyFilter(PrivacyBudget(1.0, 1e-9))
    oracle = build_oracle(schema, privacy_filter, lambda queries: exact(frame, schema, queries))  # rows=None
    with pytest.raises(NotImplementedError):
        oracle.rows_not_covered_by_dp(10, 0, "probe")
    get_engine("dgm", partitions=[["a", "c"], ["b", "d"]], engines="independent").fit(schema, oracle, LocalTaskRunner())
    assert privacy_filter.report().dp_guarantee
    engines = Path(__file__).resolve().parents[2] / "spark_synth" / "engines"
    callers = sorted(str(p.relative_to(engines)) for p in engines.rglob("*.py") if ".rows_not_covered_by_dp(" in p.read_text())
    assert callers == ["dgm/engine.py"]


def test_join_returns_exactly_the_rows_asked_and_is_reproducible_per_seed():
    def draw(rng):
        return lambda p, m: rng.integers(0, 3, size=(m, 1))

    score = lambda rows: (rows[:, 0] == rows[:, 1]).astype(float) * 4.0 - 2.0  # noqa: E731  likes equal pairs
    settings = JoinSettings(join_multiplier=3, max_rounds=100, patience=3, keep_fraction=0.1, acceptance="ratio")
    outputs = []
    for _ in range(2):
        rng = np.random.default_rng(11)
        rows, filled = validator_join(draw(rng), [(0,), (1,)], 2, 1000, score, settings, rng)
        outputs.append(rows)
        assert rows.shape == (1000, 2) and 0 <= filled < 1000
    assert np.array_equal(outputs[0], outputs[1])
    assert (outputs[0][:, 0] == outputs[0][:, 1]).mean() > 0.6  # a random join would give 1/3
    rows, filled = validator_join(draw(np.random.default_rng(1)), [(0,), (1,)], 2, 500, lambda r: np.full(len(r), -50.0),
                                  JoinSettings(max_rounds=5, patience=2, acceptance="threshold"), np.random.default_rng(2))
    assert rows.shape == (500, 2) and filled == 0  # θ is the first round's top-10 % score: ties at it are kept
    rows, filled = validator_join(draw(np.random.default_rng(1)), [(0,), (1,)], 2, 500,
                                  lambda r: np.where(np.arange(len(r)) < 5, 1.0, -50.0), JoinSettings(max_rounds=4, patience=2,
                                                                                                      keep_fraction=0.001,
                                                                                                      acceptance="threshold"),
                                  np.random.default_rng(2))
    assert rows.shape == (500, 2) and filled > 0  # few accepted: the rest are random joins, and counted


def test_resampling_join_picks_each_row_among_its_candidates_by_score():
    def draw(rng):
        return lambda p, m: rng.integers(0, 3, size=(m, 1))

    score = lambda rows: np.where(rows[:, 0] == rows[:, 1], 3.0, 0.0)  # noqa: E731  ratio e³ ≈ 20 for equal pairs
    outputs = []
    for _ in range(2):
        rng = np.random.default_rng(5)
        rows, filled = validator_join(draw(rng), [(0,), (1,)], 2, 5000, score, JoinSettings(acceptance="resample", candidates_per_row=50), rng)
        assert rows.shape == (5000, 2) and filled == 0
        outputs.append(rows)
    assert np.array_equal(outputs[0], outputs[1])
    # target ∝ p_join · e^s: P(equal) = e³/3 / (e³/3 + 2/3) ≈ 0.91; 50 candidates get close to it
    assert 0.85 < (outputs[0][:, 0] == outputs[0][:, 1]).mean() < 0.95
    rng = np.random.default_rng(5)
    one, _ = validator_join(draw(rng), [(0,), (1,)], 2, 5000, score, JoinSettings(acceptance="resample", candidates_per_row=1), rng)
    assert abs((one[:, 0] == one[:, 1]).mean() - 1 / 3) < 0.03  # one candidate: the random join


def test_swap_join_keeps_every_drawn_piece_and_matches_them_by_score():
    drawn = {}

    def draw(rng):
        def pieces(p, m):
            drawn[p] = np.column_stack([rng.integers(0, 3, m), rng.integers(0, 5, m)])  # two columns per partition
            return drawn[p]
        return pieces

    score = lambda rows: np.where(rows[:, 0] == rows[:, 2], 3.0, 0.0)  # noqa: E731  likes equal first columns
    settings = JoinSettings(acceptance="swap", swap_sweeps=100)
    outputs = []
    for _ in range(2):
        rng = np.random.default_rng(8)
        rows, filled = validator_join(draw(rng), [(0, 1), (2, 3)], 4, 6000, score, settings, rng)
        assert rows.shape == (6000, 4) and filled == 0
        for p, columns in enumerate([[0, 1], [2, 3]]):  # each partition's pieces exactly as drawn (whole pieces)
            assert sorted(map(tuple, rows[:, columns])) == sorted(map(tuple, drawn[p]))
        outputs.append(rows)
    assert np.array_equal(outputs[0], outputs[1])  # reproducible per seed
    # ∝ exp(Σ s) over matchings of uniform pieces: P(equal) → e³ / (e³ + 2) ≈ 0.91 (a random join: 1/3)
    assert 0.85 < (outputs[0][:, 0] == outputs[0][:, 2]).mean() < 0.95


def test_state_round_trip_samples_the_same_rows():
    schema, frame = _linked(2000)
    model, _ = _fit(schema, frame, partitions=[["a", "b"], ["c", "d"]], engines=["independent", "fpt"],
                    engine_options=[{}, {"iterations": 5, "final_iterations": 5}])
    again = DgmModel.from_state(model.to_state(), schema)
    assert np.array_equal(model.sample_codes(300, np.random.default_rng(4)), again.sample_codes(300, np.random.default_rng(4)))
    assert again.fit_summary() == model.fit_summary() and again.engines == ["independent", "fpt"]


def _mixed(n=3000, seed=0):
    """Numeric and categorical columns, for SPLICE partitions (moment queries)."""
    rng = np.random.default_rng(seed)
    x = rng.normal(50, 10, n).clip(0, 100)
    schema = schema_from_dict({"columns": [
        {"name": "x", "type": "continuous", "min": 0, "max": 100, "nullable": False},
        {"name": "y", "type": "continuous", "min": 0, "max": 100, "nullable": False},
        {"name": "k", "type": "categorical", "categories": ["p", "q", "r"], "nullable": False},
        {"name": "m", "type": "integer", "min": 0, "max": 9, "nullable": False}]})
    frame = pd.DataFrame({"x": x, "y": (x + rng.normal(0, 2, n)).clip(0, 100), "k": rng.choice(["p", "q", "r"], n),
                          "m": rng.integers(0, 10, n)})
    return schema, frame


@pytest.mark.parametrize("compiled", [True, False])
def test_a_scoped_moment_query_embeds_only_its_columns(compiled, monkeypatch):
    from dataclasses import replace

    from spark_synth.measure import moment_kernel
    from spark_synth.queries import MomentQuery
    from spark_synth.schema.embedding import Embedding

    schema, frame = _mixed(500)
    part = schema_from_dict({"columns": [c.to_dict() for c in schema.columns if c.name in ("y", "k")]})
    width = Embedding(part).width
    directions = np.random.default_rng(3).normal(size=(6, width))
    directions /= np.abs(directions).sum(axis=1, keepdims=True)  # |wᵀx| ≤ 1 on the [-1, 1] embedding
    query = MomentQuery(name="m", directions=directions, degree=3)
    monkeypatch.setattr(moment_kernel, "COMPILED", compiled and moment_kernel.COMPILED)  # the kernel, or the reference
    alone = answer_frame(frame[["y", "k"]], part, [query])[0]
    scoped = answer_frame(frame, schema, [replace(query, columns=("y", "k"))])[0]
    assert np.array_equal(alone, scoped) and np.any(alone != 0)
    with pytest.raises(ParameterError, match="directions"):  # unscoped, the same directions do not fit the table
        answer_frame(frame, schema, [query])


def test_splice_partitions_are_measured_over_their_own_columns():
    schema, frame = _mixed()
    model, privacy_filter = _fit(schema, frame, partitions=[["x", "k"], ["y", "m"]], engines="splice",
                                 engine_options={"steps": 20}, validator="none")
    assert [m.engine for m in model.models] == ["splice", "splice"]
    assert privacy_filter.rho_remaining == pytest.approx(0.0, abs=1e-12)
    child = oracle_over_frame(frame, schema, PrivacyFilter(PrivacyBudget(1.0, 1e-9))).child(0.001, "p", ["k", "x"])
    with pytest.raises(Exception, match="'y'"):  # a column outside the child's scope is refused before any spend
        child.measure(MarginalQuery(("y",)), 0.0005)
    assert child.rho_remaining == pytest.approx(0.001)
