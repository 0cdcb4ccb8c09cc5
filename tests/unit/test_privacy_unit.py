"""Person-level privacy without Spark: the unit's options, K-scaled sensitivities in every mechanism,
the relation in the report, contribution bounding over pandas, and the CLI/config checks."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from spark_synth.config import RunConfig, load_job_config
from spark_synth.engines import get_engine
from spark_synth.errors import InternalError, ParameterError, UserInputError
from spark_synth.measure.bounding import bound_contributions_frame
from spark_synth.oracle import oracle_over_frame
from spark_synth.privacy import PrivacyBudget, PrivacyFilter, PrivacyReport, release_query, select_index
from spark_synth.privacy.mechanisms import integer_l2_sensitivity, release_counts
from spark_synth.privacy.thresholding import release_keys
from spark_synth.privacy.unit import ROW, ROW_RELATION, PrivacyUnit
from spark_synth.queries import MarginalQuery, MomentQuery
from spark_synth.schema import Column, ColumnType, Schema
from spark_synth.track.release import check_privacy_report

BUDGET = PrivacyBudget(1.0, 1e-9)


def unit_filter(k: int) -> PrivacyFilter:
    return PrivacyFilter(BUDGET, unit=PrivacyUnit.of("uid", k))


def test_a_unit_needs_its_bound_and_a_bound_needs_a_unit():
    assert PrivacyUnit.of(None, None) is ROW and ROW.relation == ROW_RELATION == "add/remove one row"
    assert PrivacyUnit.of("uid", 20).relation == "add/remove one unit of `uid`, at most 20 rows each"
    assert PrivacyUnit.of("uid", 1).relation == "add/remove one unit of `uid`, at most 1 row each"
    with pytest.raises(ParameterError, match="--max-rows-per-unit.*with --privacy-unit uid"):
        PrivacyUnit.of("uid", None)
    with pytest.raises(ParameterError, match="only with a privacy unit column"):
        PrivacyUnit.of(None, 5)
    for bad in (0, -3, 2.5, True, 10**7):
        with pytest.raises(ParameterError, match="max_rows_per_unit"):
            PrivacyUnit.of("uid", bad)
    with pytest.raises(ParameterError, match="privacy_unit"):
        PrivacyUnit.of(" ", 3)


@pytest.mark.parametrize("k", [1, 3, 20])
def test_a_measurement_under_a_unit_of_k_rows_has_k_times_the_noise(k):
    query = MarginalQuery(("a",))
    row = release_query(PrivacyFilter(BUDGET), query, np.array([10, 5]), 0.01)
    unit = release_query(unit_filter(k), query, np.array([10, 5]), 0.01)
    assert row.sigma == pytest.approx(1 / math.sqrt(0.02))
    assert unit.sigma == pytest.approx(k * row.sigma)
    entry = unit_filter(k)
    release_query(entry, query, np.array([10, 5]), 0.01)
    assert entry.report().entries[0].l2_sensitivity == k


def test_a_moment_querys_integer_sensitivity_scales_before_rounding_up():
    query = MomentQuery(name="m", directions=np.ones((3, 2)) / 2, degree=4, max_rows=1000)
    exact = 7 * query.l2_sensitivity * query.unit
    assert integer_l2_sensitivity(query, 7) == math.ceil(exact)
    assert integer_l2_sensitivity(query, 1) == query.integer_l2_sensitivity
    assert integer_l2_sensitivity(query, 7) >= 7 * query.l2_sensitivity * query.unit


def test_counts_and_selections_scale_by_k_too():
    f = unit_filter(6)
    release_counts(f, np.array([3, 4]), 0.001, name="c", description="counts")
    select_index(f, np.array([1.0, 2.0, 3.0]), 0.5, 0.001, name="s", description="scores")
    counts, selection = f.report().entries
    assert counts.l2_sensitivity == 6 and counts.sigma == pytest.approx(6 / math.sqrt(0.002))
    assert selection.score_sensitivity == 3.0
    assert selection.scale == pytest.approx(3.0 / math.sqrt(0.002))


def test_the_report_states_the_unit_and_round_trips():
    f = unit_filter(5)
    release_query(f, MarginalQuery(("a",)), np.array([1, 2]), 0.01)
    raw = f.report().to_dict()
    assert raw["neighbouring_relation"] == "add/remove one unit of `uid`, at most 5 rows each"
    assert raw["privacy_unit"] == {"column": "uid", "max_rows_per_unit": 5}
    assert PrivacyReport.from_dict(raw).privacy_unit == PrivacyUnit("uid", 5)
    assert check_privacy_report(raw).privacy_unit == PrivacyUnit("uid", 5)  # releasable
    tampered = {**raw, "neighbouring_relation": ROW_RELATION}  # a unit report claiming the row relation
    with pytest.raises(UserInputError, match="does not match the privacy unit"):
        PrivacyReport.from_dict(tampered)
    with pytest.raises(UserInputError, match="neighbouring_relation"):
        check_privacy_report(tampered)
    legacy = {k: v for k, v in PrivacyFilter(BUDGET).report().to_dict().items() if k != "privacy_unit"}
    assert PrivacyReport.from_dict(legacy).privacy_unit is ROW  # reports written before units: one row


def _units_frame(sizes: list[int], seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    ids = np.repeat(np.arange(len(sizes)), sizes)
    return pd.DataFrame({"uid": ids, "a": rng.choice(["x", "y", "z"], ids.size), "b": rng.integers(0, 50, ids.size)})


def test_bounding_keeps_at_most_k_rows_of_each_unit_and_all_of_a_small_one():
    frame = _units_frame([1, 3, 4, 40, 200])
    bounded = bound_contributions_frame(frame, PrivacyUnit("uid", 4), salt=11)
    assert bounded.groupby("uid").size().to_dict() == {0: 1, 1: 3, 2: 4, 3: 4, 4: 4}
    assert bound_contributions_frame(frame, ROW, salt=11) is frame


def test_a_units_kept_rows_depend_on_its_own_rows_only():
    """Stability: adding a unit (rows anywhere in the frame) leaves every other unit's kept rows as they were."""
    frame = _units_frame([30, 30, 30])
    unit = PrivacyUnit("uid", 5)
    before = bound_contributions_frame(frame, unit, salt=3)
    added = pd.DataFrame({"uid": [99] * 12, "a": ["x"] * 12, "b": list(range(12))})
    shuffled = pd.concat([added, frame]).sample(frac=1.0, random_state=1).reset_index(drop=True)
    after = bound_contributions_frame(shuffled, unit, salt=3)
    key = ["uid", "a", "b"]
    kept_before = before.sort_values(key).reset_index(drop=True)
    kept_after = after[after.uid != 99].sort_values(key).reset_index(drop=True)
    pd.testing.assert_frame_equal(kept_before, kept_after)
    assert (after.uid == 99).sum() == 5


def test_the_kept_rows_are_a_uniform_choice_whatever_their_values():
    """Over fresh salts each of a unit's 10 distinct rows is kept about K/10 of the time — the choice
    does not prefer small or large values (a sort by value would keep the same 2 every time)."""
    frame = pd.DataFrame({"uid": [0] * 10, "a": ["x"] * 10, "b": list(range(10))})
    kept = np.zeros(10)
    for salt in range(400):
        kept[bound_contributions_frame(frame, PrivacyUnit("uid", 2), salt).b.to_numpy()] += 1
    assert kept.sum() == 800
    assert np.all(np.abs(kept / 400 - 0.2) < 0.08), kept


def test_engines_plan_with_the_units_noise():
    """The oracle tells engines K (public), and the measured σ is K times the one-row σ."""
    schema = Schema((Column("a", ColumnType.CATEGORICAL, categories=("x", "y", "z")),
                     Column("b", ColumnType.INTEGER, min=0, max=49)))
    frame = bound_contributions_frame(_units_frame([50] * 40), PrivacyUnit("uid", 10), salt=5).drop(columns="uid")
    for k in (1, 10):
        f = PrivacyFilter(BUDGET, unit=PrivacyUnit("uid", k) if k > 1 else ROW)
        oracle = oracle_over_frame(frame, schema, f)
        assert oracle.rows_per_unit == k
        get_engine("independent").fit(schema, oracle, None)
        entries = f.report().measurements
        assert entries and all(e.l2_sensitivity == k and e.sigma == pytest.approx(k / math.sqrt(2 * e.rho)) for e in entries)


def test_run_config_and_job_config_check_the_unit(tmp_path):
    base = dict(input="in.csv", schema="s.json", epsilon=1.0, delta=1e-9, rows=10, output="out.csv")
    assert RunConfig(**base, privacy_unit="uid", max_rows_per_unit=5).max_rows_per_unit == 5
    with pytest.raises(ParameterError, match="--max-rows-per-unit"):
        RunConfig(**base, privacy_unit="uid")
    with pytest.raises(ParameterError, match="only with a privacy unit"):
        RunConfig(**base, max_rows_per_unit=5)
    config = tmp_path / "run.yaml"
    config.write_text("input: in.csv\nschema: s.json\nepsilon: 1.0\ndelta: 1.0e-9\nrows: 10\noutput: out.csv\n"
                      "engine: independent\nprivacy_unit: uid\nmax_rows_per_unit: 1e2\n", encoding="utf-8")
    settings = load_job_config("run", config)
    assert settings["privacy_unit"] == "uid" and settings["max_rows_per_unit"] == 100
    config.write_text(config.read_text(encoding="utf-8").replace("1e2", "-4"), encoding="utf-8")
    with pytest.raises(ParameterError, match="max_rows_per_unit"):
        load_job_config("run", config)


@pytest.mark.parametrize("k", [1, 4, 30])
def test_thresholded_counts_under_a_unit_keep_a_lone_units_keys_with_probability_at_most_delta(k):
    """One unit of K rows can bring up to K keys of its own, counting c_i ≤ K (Σ c_i ≤ K): the
    threshold makes K·P[Z ≥ τ − K] ≤ δ, and σ is calibrated to the counts' ℓ2 change K."""
    from spark_synth.privacy.thresholding import log_tail_bound, threshold_for, unit_threshold_for

    f = unit_filter(k) if k > 1 else PrivacyFilter(BUDGET)
    kept, _ = release_keys(f, np.array([500, 3]), 0.01, 1e-9, name="k", description="keys")
    (entry,) = f.report().entries
    assert entry.l2_sensitivity == k and entry.sigma == pytest.approx(k / math.sqrt(0.02), rel=1e-6)
    tau = entry.threshold
    assert tau == unit_threshold_for(entry.sigma, 1e-9, k)
    assert math.log(k) + log_tail_bound(entry.sigma, tau - k) <= math.log(1e-9)
    assert math.log(k) + log_tail_bound(entry.sigma, tau - k - 1) > math.log(1e-9)  # the smallest such τ
    if k == 1:
        assert tau == threshold_for(entry.sigma, 1e-9)


def test_the_schema_prepass_runs_under_the_unit_and_records_it():
    from spark_synth.measure.profile import profile_frame
    from spark_synth.prepass import GRID, plan_prepass, run_prepass
    from spark_synth.schema.cost import PrepassCost
    from spark_synth.schema.draft import declared_columns

    frame = _units_frame([40] * 200)[["a", "b"]]
    declared = declared_columns(_spark_like_schema(frame), False)
    unit = PrivacyUnit("uid", 8)
    plan = plan_prepass(declared, 1.0, 1e-9, unit=unit)
    result = run_prepass(lambda requests, grid: profile_frame(frame, requests, grid), plan)
    assert result.report.neighbouring_relation == unit.relation
    assert all(e.l2_sensitivity == 8 for e in result.report.measurements)
    cost = result.cost
    assert cost.unit == unit and cost.to_dict()["privacy_unit"] == {"column": "uid", "max_rows_per_unit": 8}
    assert PrepassCost.from_dict(cost.to_dict(), "test").unit == unit
    assert "privacy_unit" not in run_prepass(lambda r, g: profile_frame(frame, r, g),
                                             plan_prepass(declared, 1.0, 1e-9)).cost.to_dict()


def _spark_like_schema(frame):
    """A Spark StructType for ``frame``'s columns (declared types, as a Parquet table has)."""
    from pyspark.sql import types as T

    kinds = {"object": T.StringType(), "int64": T.LongType()}
    return T.StructType([T.StructField(c, kinds[str(frame[c].dtype)], True) for c in frame.columns])


def test_the_json_line_stays_strict_json_with_an_unbounded_total():
    import json

    from spark_synth.cli import strict_json

    summary = {"cumulative_per_unit": {"customer_id": {"epsilon": math.inf, "rho": 0.1}}, "x": [-math.inf, math.nan, 1.5]}
    text = json.dumps(strict_json(summary), allow_nan=False)
    assert json.loads(text) == {"cumulative_per_unit": {"customer_id": {"epsilon": "Infinity", "rho": 0.1}},
                                "x": ["-Infinity", "NaN", 1.5]}
    assert float(json.loads(text)["cumulative_per_unit"]["customer_id"]["epsilon"]) == math.inf
