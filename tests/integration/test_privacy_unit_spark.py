"""Person-level privacy on Spark: contribution bounding as a distributed step, every engine fitted
under a unit end to end, and the relation in the JSON line, MLflow, the ledger and Delta provenance."""

from __future__ import annotations

import json
import uuid

import mlflow
import numpy as np
import pandas as pd
import pytest

from spark_synth import Synthesizer, load_schema
from spark_synth.cli import main
from spark_synth.errors import UserInputError
from spark_synth.measure.bounding import bound_contributions
from spark_synth.privacy.unit import PrivacyUnit
from spark_synth.schema import schema_from_dict
from spark_synth.track import BudgetLedger

pytestmark = pytest.mark.spark

RELATION = "add/remove one unit of `customer_id`, at most 5 rows each"


@pytest.fixture(scope="module")
def unit_table(adult_sample_paths, tmp_path_factory):
    """The bundled sample with a `customer_id`: 5,000 rows over ~1,300 units of skewed sizes (1 to 400
    rows; ~3,500 rows kept at K = 5, so no column's DP estimate is all noise)."""
    data, schema_path = adult_sample_paths
    frame = pd.read_csv(data)
    rng = np.random.default_rng(7)
    sizes = np.minimum(1 + rng.zipf(2.2, 5000), 400)
    ids = np.repeat(np.arange(sizes.size), sizes)[: len(frame)]
    frame.insert(0, "customer_id", ids)
    path = tmp_path_factory.mktemp("units") / "adult_units.csv"
    frame.to_csv(path, index=False)
    return str(path), schema_path, frame


def _small_schema(schema_path: str, columns=("age", "workclass", "education", "sex", "hours-per-week", "income")):
    raw = load_schema(schema_path).to_dict()
    raw["columns"] = [c for c in raw["columns"] if c["name"] in columns]
    return schema_from_dict(raw)


def test_bounding_on_spark_keeps_at_most_k_rows_per_unit_and_is_stable(spark, unit_table):
    _, _, frame = unit_table
    df = spark.createDataFrame(frame)
    unit = PrivacyUnit("customer_id", 5)
    kept = bound_contributions(df, unit, salt=42).toPandas()
    sizes = frame.groupby("customer_id").size()
    assert kept.groupby("customer_id").size().to_dict() == np.minimum(sizes, 5).to_dict()
    # stability: adding a unit of 30 rows (placed first) changes no other unit's kept rows
    extra = frame.head(30).assign(customer_id=-1)
    again = bound_contributions(spark.createDataFrame(pd.concat([extra, frame])), unit, salt=42).toPandas()
    columns = list(frame.columns)
    before = kept.sort_values(columns).reset_index(drop=True)
    after = again[again.customer_id != -1].sort_values(columns).reset_index(drop=True)
    pd.testing.assert_frame_equal(before, after)
    assert (again.customer_id == -1).sum() == 5


@pytest.mark.parametrize("engine, options", [
    ("independent", {}),
    ("splice", {"components": 8, "steps": 150, "fits": 1}),
    ("fpt", {"rounds_per_column": 1.0, "iterations": 20, "final_iterations": 40}),
    ("dgm", {"n_partitions": 2, "validator": "dp"}),
])
def test_every_engine_fits_under_a_unit(spark, unit_table, engine, options, tmp_path):
    data, schema_path, frame = unit_table
    schema = _small_schema(schema_path)
    df = spark.createDataFrame(frame[["customer_id", *schema.names]])
    synth = Synthesizer(engine, epsilon=1.0, delta=1e-9, engine_options=options, privacy_unit="customer_id",
                        max_rows_per_unit=5).fit(df, schema)
    report = synth.privacy_report_
    assert report.neighbouring_relation == RELATION and report.epsilon_spent == pytest.approx(1.0, rel=1e-9)
    entries = report.measurements
    assert entries and all(e.sigma == pytest.approx(e.l2_sensitivity / np.sqrt(2 * e.rho)) for e in entries)
    counts = [e for e in entries if e.query.startswith("counts over")]
    assert counts and all(e.l2_sensitivity == 5 for e in counts)  # one unit: 5 rows, all in one cell
    assert all(s.score_sensitivity >= 5 for s in report.selections)
    rows = synth.sample(300, seed=1, spark=spark)
    assert rows.columns == list(schema.names) and rows.count() == 300  # the unit column is not modelled
    if engine == "independent":  # a saved model keeps its unit: sampled rows state the same relation
        loaded = Synthesizer.load(synth.save(tmp_path / "model"))
        assert loaded.unit == PrivacyUnit("customer_id", 5) and loaded.provenance().neighbouring_relation == RELATION


def test_a_fit_under_a_unit_refuses_a_missing_column_and_a_row_level_drafted_schema(spark, unit_table):
    data, schema_path, frame = unit_table
    schema = _small_schema(schema_path)
    df = spark.createDataFrame(frame[list(schema.names)])
    with pytest.raises(UserInputError, match="privacy unit column 'customer_id'.*not in the data"):
        Synthesizer("independent", epsilon=1.0, delta=1e-9, privacy_unit="customer_id", max_rows_per_unit=3).fit(df, schema)
    drafted = schema_from_dict({**schema.to_dict(), "dp_prepass": {"id": "p1", "rho": 0.01, "delta_approx": 1e-10,
                                                                   "epsilon": 0.5, "delta_conversion": 1e-9}})
    df = spark.createDataFrame(frame[["customer_id", *schema.names]])
    with pytest.raises(UserInputError, match="drafted with DP at row level"):
        Synthesizer("independent", epsilon=1.0, delta=1e-9, privacy_unit="customer_id", max_rows_per_unit=3).fit(df, drafted)
    prepass = {"id": "p2", "rho": 0.01, "delta_approx": 1e-10, "epsilon": 0.5, "delta_conversion": 1e-9,
               "privacy_unit": {"column": "customer_id", "max_rows_per_unit": 9}}
    per_person = schema_from_dict({**schema.to_dict(), "dp_prepass": prepass})
    with pytest.raises(UserInputError, match="drafted with DP at units of 'customer_id'"):
        Synthesizer("independent", epsilon=1.0, delta=1e-9, privacy_unit="account", max_rows_per_unit=3).fit(
            df.withColumnRenamed("customer_id", "account"), per_person)
    synth = Synthesizer("independent", epsilon=1.0, delta=1e-9, privacy_unit="customer_id", max_rows_per_unit=3).fit(
        df, per_person)  # drafted per person (any K): the same unit
    assert synth.privacy_report_.schema_prepass.unit == PrivacyUnit("customer_id", 9)


def test_schema_init_leaves_the_unit_column_out(spark, unit_table, tmp_path, capsys):
    data, _, _ = unit_table
    out = tmp_path / "s.yaml"
    assert main(["schema", "init", "--input", data, "--output", str(out), "--privacy-unit", "customer_id", "--no-mlflow"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["columns"] == 15 and "customer_id" not in out.read_text(encoding="utf-8")
    assert main(["schema", "init", "--input", data, "--output", str(tmp_path / "t.yaml"), "--privacy-unit", "customer_id",
                 "--dp-bounds", "1", "--no-mlflow"]) == 2  # a DP pre-pass per person needs K
    assert "--max-rows-per-unit" in capsys.readouterr().err and not (tmp_path / "t.yaml").exists()


def test_run_under_a_unit_states_the_relation_everywhere(spark, spark_home, unit_table, adult_sample_paths, tmp_path, capsys,
                                                         monkeypatch):
    monkeypatch.setenv("SPARK_SYNTH_LEDGER_PREFIX", f"test-{uuid.uuid4().hex[:8]}:")
    data, schema_path, _ = unit_table
    dataset = f"sales.tx_{uuid.uuid4().hex[:6]}"
    out = tmp_path / "synthetic"
    code = main(["run", "--input", data, "--schema", schema_path, "--engine", "independent", "--epsilon", "1", "--delta",
                 "1e-9", "--rows", "50", "--output", str(out), "--privacy-unit", "customer_id", "--max-rows-per-unit", "5",
                 "--dataset-id", dataset])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    line = json.loads(captured.out)
    assert line["neighbouring_relation"] == RELATION
    assert line["privacy_unit"] == "customer_id" and line["max_rows_per_unit"] == 5
    assert line["ledger"]["privacy_unit"] == "customer_id"
    props = {r[0]: r[1] for r in spark.sql(f"SHOW TBLPROPERTIES delta.`{out}`").collect()}
    assert props["spark_synth.neighbouring_relation"] == RELATION
    assert "customer_id" not in spark.read.format("delta").load(str(out)).columns
    mlflow.set_tracking_uri(f"sqlite:///{spark_home / 'mlflow.db'}")
    run = mlflow.get_run(line["mlflow_run_id"])
    assert run.data.tags["spark_synth.neighbouring_relation"] == RELATION
    assert run.data.tags["spark_synth.privacy_unit"] == "customer_id" and run.data.params["max_rows_per_unit"] == "5"
    report = json.loads(mlflow.artifacts.load_text(f"runs:/{line['mlflow_run_id']}/privacy_report.json"))
    assert report["privacy_unit"] == {"column": "customer_id", "max_rows_per_unit": 5}
    (entry,) = BudgetLedger(dataset).entries()
    assert (entry.unit, entry.rows_per_unit, entry.fit_id) == ("customer_id", 5, line["fit_id"])
    # a row-level fit charged to the same table next: per unit of customer_id the spend is now unbounded, and the budget says so
    sample, _ = adult_sample_paths
    code = main(["fit", "--input", sample, "--schema", schema_path, "--engine", "independent", "--epsilon", "1", "--delta",
                 "1e-9", "--model", str(tmp_path / "m"), "--dataset-id", dataset])
    assert code == 0, capsys.readouterr().err
    capsys.readouterr()
    assert main(["budget", "--source-table", dataset]) == 0
    budget = json.loads(capsys.readouterr().out)
    per_unit = budget["cumulative_per_unit"]["customer_id"]
    assert per_unit["epsilon"] == "Infinity" and per_unit["unbounded_entries"] == 1  # strict JSON: jq reads it
    assert budget["cumulative"]["rho"] == pytest.approx(2 * line["rho_spent"])


def test_evaluate_under_a_unit_splits_by_person(spark, unit_table, tmp_path, capsys):
    from spark_synth.evaluate import train_holdout_split

    data, schema_path, frame = unit_table
    train, holdout = train_holdout_split(spark.createDataFrame(frame), 0.3, 0, unit="customer_id")
    seen, unseen = set(train.toPandas().customer_id), set(holdout.toPandas().customer_id)
    assert seen and unseen and not seen & unseen and len(seen | unseen) == frame.customer_id.nunique()
    out = tmp_path / "evaluated"
    code = main(["run", "--input", data, "--schema", schema_path, "--engine", "independent", "--epsilon", "1", "--delta",
                 "1e-9", "--rows", "200", "--output", str(out), "--privacy-unit", "customer_id", "--max-rows-per-unit", "5",
                 "--no-mlflow", "--evaluate"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert json.loads(captured.out)["evaluation"]["metrics"]
