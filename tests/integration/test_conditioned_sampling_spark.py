"""Conditioned sampling as users run it: ``Synthesizer.sample(conditions=, rows_per=)`` on Spark, the CLI's
``--where``/``--rows-per`` on ``sample`` and ``run``, refusals that write nothing, and fitted fpt and splice
models whose conditioned Spark samples follow the model's exact conditional marginals (a fitted dgm's rows
satisfy the condition too; its exactness per partition is tested in tests/unit/test_conditioned_sampling.py)."""

from __future__ import annotations

import json
import uuid

import mlflow

import numpy as np
import pandas as pd
import pytest

from spark_synth import Synthesizer, load_schema
from spark_synth.cli import main
from spark_synth.io import read_input

pytestmark = pytest.mark.spark

WHERE = "sex = 'Female' AND age >= 60 AND `hours-per-week` BETWEEN 20 AND 40"


def _satisfies(frame: pd.DataFrame) -> pd.Series:
    return (frame["sex"] == "Female") & (frame["age"] >= 60) & frame["hours-per-week"].between(20, 40)


@pytest.fixture(scope="module")
def fitted(spark, adult_sample_paths):
    data, schema_path = adult_sample_paths
    schema = load_schema(schema_path)
    frame = read_input(spark, data)
    return {
        "fpt": Synthesizer("fpt", epsilon=1.0, delta=1e-9, engine_options={
            "rounds_per_column": 1.0, "iterations": 20, "final_iterations": 40}).fit(frame, schema),
        "splice": Synthesizer("splice", epsilon=1.0, delta=1e-9, engine_options={"steps": 20}).fit(frame, schema),
        "dgm": Synthesizer("dgm", epsilon=1.0, delta=1e-9, engine_options={"n_partitions": 2, "engines": "independent"})
        .fit(frame, schema),
    }


@pytest.mark.parametrize("engine", ["fpt", "splice", "dgm"])
def test_every_row_satisfies_the_condition_and_the_same_seed_gives_the_same_rows(spark, fitted, engine):
    synth = fitted[engine]
    rows = synth.sample(3000, seed=4, spark=spark, partitions=3, conditions=WHERE).toPandas()
    assert len(rows) == 3000 and _satisfies(rows).all()
    again = synth.sample(3000, seed=4, spark=spark, partitions=3, conditions=WHERE).toPandas()
    pd.testing.assert_frame_equal(rows, again)
    assert synth.last_condition_["where"] == WHERE and 0 < synth.last_condition_["condition_probability"] < 1


@pytest.mark.parametrize("engine", ["fpt", "splice"])
def test_a_conditioned_sample_follows_the_models_conditional_marginals(spark, fitted, engine):
    """P(education | condition) of 40 000 conditioned rows against the model's own, computed exactly from
    the conditioned model's probabilities (P(condition AND education = v) / P(condition))."""
    from spark_synth.sample.conditions import parse_condition

    synth = fitted[engine]
    schema, model = synth.schema_, synth.model_
    condition = parse_condition("sex = 'Female' AND age >= 50", schema)
    evidence = condition.evidence()
    j = schema.names.index("education")
    size = schema.columns[j].size
    expected = np.array([model.conditioned(evidence.and_code(j, v, size))[1] for v in range(size)])
    expected = expected / model.conditioned(evidence)[1]
    assert expected.sum() == pytest.approx(1.0, abs=1e-6)
    rows = synth.sample(40_000, seed=1, spark=spark, conditions=condition).toPandas()
    labels = list(schema.columns[j].categories)
    observed = rows["education"].map({c: i for i, c in enumerate(labels)}).fillna(size - 1).astype(int)
    shares = np.bincount(observed, minlength=size) / len(rows)
    assert 0.5 * np.abs(shares - expected).sum() < 0.03


def test_rows_per_gives_each_value_its_share_of_the_rows(spark, fitted):
    synth = fitted["fpt"]
    from spark_synth.sample.conditions import as_condition

    condition = as_condition({"sex": "Male"}, synth.schema_)
    j = synth.schema_.names.index("race")
    size, labels = synth.schema_.columns[j].size, list(synth.schema_.columns[j].categories)
    rows = synth.sample(2000, seed=2, spark=spark, partitions=4, rows_per="race", conditions=condition).toPandas()
    assert len(rows) == 2000 and (rows["sex"] == "Male").all()
    counts = rows["race"].value_counts(dropna=False)  # a null race is a value too (the fit's noise may give it rows)
    assert counts.sum() == 2000 and counts.idxmax() == "White"
    shares = np.array([synth.model_.conditioned(condition.evidence().and_code(j, v, size))[1] for v in range(size)])
    expected = 2000 * shares / shares.sum()
    observed = [counts.get(label, 0) for label in labels] + ([int(rows["race"].isna().sum())] if size > len(labels) else [])
    assert np.abs(np.array(observed) - expected).max() < 1  # each value's share, rounded: exact


def test_sample_command_with_where_writes_only_matching_rows_and_reports_the_probability(spark, fitted, tmp_path, capsys):
    model = tmp_path / "model"
    fitted["fpt"].save(model)
    out = tmp_path / "old.parquet"
    code = main(["sample", "--model", str(model), "--rows", "1500", "--seed", "3", "--output", str(out),
                 "--where", WHERE, "--no-mlflow"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    summary = json.loads(captured.out)
    assert summary["where"] == WHERE and summary["rows_per"] is None and 0 < summary["condition_probability"] < 1
    assert summary["epsilon_spent"] == 0.0
    rows = spark.read.parquet(str(out)).toPandas()
    assert len(rows) == 1500 and _satisfies(rows).all()


@pytest.mark.parametrize("where, fragment", [
    ("sex = 'Femal'", "did you mean 'Female'"),
    ("age > 200", "probability 0"),
    ("workclass = 'Private' OR age > 3", "OR is not supported"),
])
def test_a_bad_or_impossible_condition_is_refused_and_writes_nothing(fitted, tmp_path, capsys, where, fragment):
    model = tmp_path / "model"
    fitted["fpt"].save(model)
    out = tmp_path / "never.parquet"
    code = main(["sample", "--model", str(model), "--rows", "10", "--output", str(out), "--where", where, "--no-mlflow"])
    captured = capsys.readouterr()
    assert code == 2 and captured.out == ""
    assert fragment in captured.err.strip().splitlines()[-1]
    assert not out.exists()


def test_run_with_where_writes_the_conditioned_rows_and_logs_the_condition(spark, spark_home, adult_sample_paths, tmp_path,
                                                                          capsys, monkeypatch):
    monkeypatch.setenv("SPARK_SYNTH_LEDGER_PREFIX", f"test-{uuid.uuid4().hex[:8]}:")
    data, schema = adult_sample_paths
    out = tmp_path / "run.parquet"
    code = main(["run", "--input", data, "--schema", schema, "--engine", "independent", "--epsilon", "1", "--delta", "1e-9",
                 "--rows", "800", "--output", str(out), "--seed", "1", "--where", WHERE, "--rows-per", "race"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    summary = json.loads(captured.out)
    assert summary["where"] == WHERE and summary["rows_per"] == "race"
    rows = spark.read.parquet(str(out)).toPandas()
    assert len(rows) == 800 and _satisfies(rows).all()
    mlflow.set_tracking_uri(f"sqlite:///{spark_home / 'mlflow.db'}")
    run = mlflow.get_run(summary["mlflow_run_id"])
    assert run.data.params["sample_where"] == WHERE and run.data.params["sample_rows_per"] == "race"
    assert run.data.metrics["condition_probability"] == pytest.approx(summary["condition_probability"])


def test_run_refuses_a_bad_condition_before_the_fit_spends_anything(adult_sample_paths, tmp_path, capsys):
    data, schema = adult_sample_paths
    code = main(["run", "--input", data, "--schema", schema, "--engine", "independent", "--epsilon", "1", "--delta", "1e-9",
                 "--rows", "10", "--output", str(tmp_path / "x.parquet"), "--where", "nope = 1", "--no-mlflow"])
    captured = capsys.readouterr()
    assert code == 2 and "no column 'nope'" in captured.err
    assert "fit:" not in captured.err and not (tmp_path / "x.parquet").exists()
