"""`spark-synth schema init` on Spark: declared types, the distributed profile, and init + run end to end."""

import json
import uuid

import numpy as np
import pandas as pd
import pytest
import yaml

from spark_synth.cli import main
from spark_synth.measure.profile import ProfileRequest, profile_columns, profile_frame
from spark_synth.prepass import GRID
from spark_synth.track import BudgetLedger

pytestmark = pytest.mark.spark


def _cli(capsys, *args):
    code = main([str(a) for a in args])
    captured = capsys.readouterr()
    return code, captured.out.strip(), captured.err.strip()


def test_distributed_profile_equals_the_in_process_one(spark):
    rng = np.random.default_rng(1)
    frame = pd.DataFrame({"t": rng.choice(["1", "2.5", "x", None, "17", "inf"], 3000).tolist(),
                          "n": rng.normal(0, 100, 3000)})
    requests = [ProfileRequest("t", numbers=True, categories=True), ProfileRequest("n", numbers=True, categories=False)]
    spread = profile_columns(spark.createDataFrame(frame).repartition(3), requests, GRID)
    local = profile_frame(frame, requests, GRID)
    for a, b in zip(spread, local):
        assert a.classes.tolist() == b.classes.tolist() and a.grid.tolist() == b.grid.tolist()
        assert a.ties.tolist() == b.ties.tolist() and a.categories == b.categories


def test_distributed_kinds_and_iso_dates_equal_the_in_process_ones(spark):
    """A CSV column's kinds (0/1, whole, other numbers, ISO dates, true/false, text) and its dates on
    the public day grid: the same counted by Spark over partitions as in one pandas frame."""
    from spark_synth.prepass import DATE_GRID

    rng = np.random.default_rng(2)
    values = ["0", "1", "7", "2.5", "2020-01-05", " 2020-1-6", "2020-02-30", "TRUE", "false", "x", "inf", None]
    frame = pd.DataFrame({"t": rng.choice(np.array(values, dtype=object), 3000).tolist()})
    requests = [ProfileRequest("t", numbers=True, categories=True, kinds=True, date_grid=DATE_GRID)]
    (spread,) = profile_columns(spark.createDataFrame(frame, "t string").repartition(3), requests, GRID)
    (local,) = profile_frame(frame, requests, GRID)
    assert spread.kinds.tolist() == local.kinds.tolist() and spread.kinds.sum() == frame["t"].notna().sum()
    assert local.kinds.tolist() == [int(frame["t"].isin(group).sum()) for group in (
        ["0", "1"], ["7"], ["2.5"], ["2020-01-05", " 2020-1-6"], ["TRUE", "false"], ["2020-02-30", "x", "inf"])]
    assert spread.date_cells.tolist() == local.date_cells.tolist() and spread.date_ties.tolist() == local.date_ties.tolist()
    assert local.date_ties.sum() == frame["t"].isin(["2020-01-05", " 2020-1-6"]).sum()


def test_init_drafts_declared_types_of_parquet_and_run_names_a_todo_left(spark, tmp_path, capsys):
    frame = pd.DataFrame({"age": np.arange(100, dtype=np.int64) % 90, "score": np.linspace(0, 1, 100),
                          "city": ["Oslo", "Rome"] * 50})
    source = tmp_path / "t.parquet"
    spark.createDataFrame(frame).write.parquet(str(source))
    out = tmp_path / "t.yaml"
    code, stdout, stderr = _cli(capsys, "schema", "init", "--input", source, "--output", out, "--no-mlflow")
    assert code == 0, stderr
    summary = json.loads(stdout)
    assert summary["todo"] == ["age", "score", "city"] and summary["dp_prepass"] is None
    assert yaml.safe_load(out.read_text())["columns"] == [
        {"name": "age", "type": "integer", "min": "TODO", "max": "TODO"},
        {"name": "score", "type": "continuous", "min": "TODO", "max": "TODO"},
        {"name": "city", "type": "categorical", "categories": "TODO"}]
    code, _, stderr = _cli(capsys, "run", "--engine", "independent", "--input", source, "--schema", out, "--epsilon", "1", "--delta", "1e-9",
                           "--rows", "10", "--output", tmp_path / "o.parquet", "--no-mlflow")
    assert code == 2 and stderr.count("\n") == 0 and "column 'age' still has 'min: TODO'" in stderr
    assert not (tmp_path / "o.parquet").exists()
    # an existing schema file is kept unless --overwrite; bad --columns is one line naming the flag
    code, _, stderr = _cli(capsys, "schema", "init", "--input", source, "--output", out, "--no-mlflow")
    assert code == 2 and "--overwrite" in stderr
    code, _, stderr = _cli(capsys, "schema", "init", "--input", source, "--output", tmp_path / "u.yaml",
                           "--columns", "age,nope", "--no-mlflow")
    assert code == 2 and "'--columns'" in stderr and "nope" in stderr and not (tmp_path / "u.yaml").exists()


@pytest.mark.shared_data
def test_adult_without_dp_from_declared_types_then_public_metadata(spark, shared_data, tmp_path, capsys):
    """No hand-written schema: the draft of a typed copy of adult, its TODOs filled from public metadata."""
    public = json.loads((shared_data / "adult.schema.json").read_text())
    numeric = [c["name"] for c in public["columns"] if c["type"] == "integer"]
    typed = spark.read.csv(str(shared_data / "adult.csv"), header=True)
    typed = typed.select(*[typed[f"`{n}`"].cast("bigint").alias(n) if n in numeric else typed[f"`{n}`"] for n in typed.columns])
    source = tmp_path / "adult.parquet"
    typed.write.parquet(str(source))
    out = tmp_path / "adult.yaml"
    assert _cli(capsys, "schema", "init", "--input", source, "--output", out, "--no-mlflow")[0] == 0
    text = yaml.safe_load(out.read_text())
    by_name = {c["name"]: c for c in public["columns"]}
    for column in text["columns"]:  # the user's part: fill the TODOs from public knowledge
        truth = by_name[column["name"]]
        if column["type"] == "integer":
            column.update(min=truth["min"], max=truth["max"])
        else:
            column.update(categories=[str(c) for c in truth["categories"]])
    out.write_text(yaml.safe_dump(text))
    code, stdout, stderr = _cli(capsys, "run", "--engine", "independent", "--input", source, "--schema", out, "--epsilon", "1", "--delta", "1e-9",
                                "--rows", "200", "--output", tmp_path / "o.parquet", "--seed", "1", "--no-mlflow")
    assert code == 0, stderr
    assert "delta_total" not in json.loads(stdout)  # a public schema adds no delta


@pytest.mark.shared_data
def test_adult_csv_with_dp_bounds_runs_end_to_end_and_the_ledger_composes_delta(spark, shared_data, tmp_path, capsys,
                                                                                 monkeypatch):
    monkeypatch.setenv("SPARK_SYNTH_LEDGER_PREFIX", f"test-{uuid.uuid4().hex[:8]}:")
    data, out = shared_data / "adult.csv", tmp_path / "adult.yaml"
    code, stdout, stderr = _cli(capsys, "schema", "init", "--input", data, "--output", out, "--dp-bounds", "1",
                                "--dp-delta", "1e-9")
    assert code == 0, stderr
    summary = json.loads(stdout)
    cost = summary["dp_prepass"]
    assert summary["todo"] == [] and cost["delta_approx"] == 5e-10 and cost["delta"] <= 1e-9 and cost["epsilon"] <= 1
    drafted = {c["name"]: c for c in yaml.safe_load(out.read_text())["columns"]}
    assert drafted["age"]["type"] == "integer" and drafted["sex"]["categories"] == ["Female", "Male"]
    assert 10 <= drafted["age"]["min"] <= 20 and 60 <= drafted["age"]["max"] <= 100
    code, stdout, stderr = _cli(capsys, "run", "--engine", "independent", "--input", data, "--schema", out, "--epsilon", "1", "--delta", "1e-9",
                                "--rows", "200", "--output", tmp_path / "o.parquet", "--seed", "1")
    assert code == 0, stderr
    run = json.loads(stdout)
    assert run["delta_total"] == 1e-9 + 5e-10 and run["schema_prepass_id"] == cost["id"]
    total = BudgetLedger(str(data)).summary()["cumulative"]
    assert total["rho"] == pytest.approx(cost["rho"] + run["rho_spent"], rel=1e-12)  # the pre-pass counted once
    assert total["delta_approx"] == 5e-10 and total["delta"] == pytest.approx(1e-9)  # 5e-10 conversion + 5e-10
    assert run["ledger"]["cumulative_rho"] == total["rho"]
    # the release states the fit's delta plus the schema's delta_approx, and names the pre-pass
    code, stdout, stderr = _cli(capsys, "release", "--run-id", run["mlflow_run_id"], "--name", "adult-prepass")
    assert code == 0, stderr
    from mlflow import MlflowClient

    tags = MlflowClient().get_model_version("adult-prepass", json.loads(stdout)["version"]).tags
    assert float(tags["spark_synth.delta"]) == 1e-9 + 5e-10 and tags["spark_synth.schema_prepass_id"] == cost["id"]
    assert "DP pre-pass" in tags["spark_synth.guarantee"]
