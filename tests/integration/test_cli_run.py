"""The CLI as a user runs it (in-process, on the shared session): outputs, MLflow, bad input."""

import json
import os
import shutil
import uuid

import mlflow
import numpy as np
import pytest

from tests.helpers import error_line

from spark_synth.cli import main
from spark_synth.pipeline import Synthesizer
from spark_synth.privacy import NoisyMeasurement
from spark_synth.engines import ENGINES, IndependentEngine
from spark_synth.track import BudgetLedger, source_key

pytestmark = pytest.mark.spark


def _run(capsys, *args):
    code = main(list(args))
    captured = capsys.readouterr()
    return code, captured.out.strip(), captured.err.strip()


def test_run_writes_delta_and_logs_mlflow(spark, spark_home, adult_sample_paths, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("SPARK_SYNTH_LEDGER_PREFIX", f"test-{uuid.uuid4().hex[:8]}:")
    data, schema = adult_sample_paths
    out = str(tmp_path / "synthetic" / "adult")
    code, stdout, stderr = _run(capsys, "run", "--input", data, "--schema", schema, "--engine", "independent",
                                "--epsilon", "1", "--delta", "1e-9", "--rows", "1234", "--output", out, "--seed", "5")
    assert code == 0, stderr
    summary = json.loads(stdout)
    assert summary["rows"] == 1234 and summary["engine"] == "independent" and summary["output_kind"] == "path"
    assert summary["epsilon_spent"] <= 1.0 and summary["epsilon_spent"] == pytest.approx(1.0, rel=1e-9)
    table = spark.read.format("delta").load(out)
    assert table.count() == 1234
    types = dict((f.name, f.dataType.simpleString()) for f in table.schema.fields)
    assert types["age"] == "bigint" and types["workclass"] == "string" and types["education-num"] == "bigint"
    labels = {r[0] for r in table.select("sex").distinct().collect()} - {None}
    assert labels <= {"Female", "Male"}

    mlflow.set_tracking_uri(f"sqlite:///{spark_home / 'mlflow.db'}")
    run = mlflow.get_run(summary["mlflow_run_id"])
    assert run.info.status == "FINISHED"
    assert run.data.metrics["epsilon_spent"] <= run.data.metrics["epsilon_requested"] == 1.0
    assert run.data.params["output_location"].endswith("synthetic/adult")
    assert json.loads(run.data.params["engine_config"]) == {"one_way_fine_share": 0.5, "one_way_sigmas_per_range": 3.0,
                                                           "null_floor": 2.0}  # independent's defaults
    report = mlflow.artifacts.load_dict(run.info.artifact_uri + "/privacy_report.json")
    assert len(report["releases"]) == 2 * 15  # each column's 1-way histogram in two stages
    assert {"name", "query", "l2_sensitivity", "sigma", "rho"} <= set(report["releases"][0])
    for stage in ("measure", "noise", "fit", "sample_and_write", "total"):
        assert f"seconds_{stage}" in run.data.metrics
    # the fit has its own identity, and is charged to its table's ledger (default: the input) as it is made
    assert run.data.tags["spark_synth.fit_id"] == report["fit_id"] == summary["fit_id"]
    assert summary["dataset_id"] == summary["ledger"]["dataset_id"] == source_key(data)
    assert summary["ledger"]["cumulative_rho"] == summary["rho_spent"]
    assert [(e.kind, e.fit_id) for e in BudgetLedger(data).entries()] == [("fit", summary["fit_id"])]


def test_same_seed_same_rows(spark, adult_sample_paths, tmp_path, capsys):
    data, schema = adult_sample_paths
    model = str(tmp_path / "model")
    code, out, err = _run(capsys, "fit", "--input", data, "--schema", schema, "--epsilon", "0.5", "--delta", "1e-9",
                          "--model", model, "--no-mlflow")
    assert code == 0, err
    assert json.loads(out)["ledger"] is None  # without MLflow nothing is charged
    saved = json.loads(open(os.path.join(model, "synthesizer.json")).read())
    assert saved["privacy"]["epsilon_spent"] == pytest.approx(0.5, rel=1e-9)
    outs = []
    for name in ("a.parquet", "b.parquet"):
        code, stdout, err = _run(capsys, "sample", "--model", model, "--rows", "500", "--seed", "9",
                                 "--output", str(tmp_path / name))
        assert code == 0, err
        assert json.loads(stdout)["epsilon_spent"] == 0.0 and json.loads(stdout)["output_kind"] == "path"
        outs.append(spark.read.parquet(str(tmp_path / name)).toPandas().sort_values(["fnlwgt", "age"]).reset_index(drop=True))
    assert outs[0].equals(outs[1])


def test_a_bare_output_name_is_a_catalog_table_and_says_so(spark, adult_sample_paths, tmp_path, capsys, monkeypatch):
    """``--output NAME`` (no ``/``) writes a catalog table, as ``saveAsTable`` would: stderr says so before
    anything runs, and the JSON line's ``output_kind`` is "table" (a path's is "path"). No ``--engine``:
    ``auto`` chose fpt for the sample's 15 columns and said so, next, on stderr and in the JSON line."""
    monkeypatch.chdir(tmp_path)
    data, schema = adult_sample_paths
    name = f"synthetic_{uuid.uuid4().hex[:8]}"
    code, stdout, stderr = _run(capsys, "run", "--input", data, "--schema", schema, "--epsilon", "1", "--delta", "1e-9",
                                "--rows", "50", "--output", name, "--seed", "1", "--no-mlflow")
    assert code == 0, stderr
    summary = json.loads(stdout)
    assert summary["output_kind"] == "table" and summary["output"] == name
    lines = stderr.splitlines()
    assert lines[0] == (f"spark-synth: output: catalog table {name} (Delta; a name without '/' is a table "
                        f"in Spark's catalog: write ./{name} for a folder)")
    assert lines[1].startswith("spark-synth: engine: auto chose fpt (15 columns: fpt has the lowest 2-/3-way TVD")
    assert summary["engine"] == "fpt" and summary["engine_choice"]["engine"] == "fpt"
    assert summary["engine_choice"]["reason"] in lines[1]
    assert spark.catalog.tableExists(name) and spark.table(name).count() == 50
    assert not (tmp_path / name).exists()
    spark.sql(f"DROP TABLE {name}")


def test_auto_gives_fpt_the_3_way_workload_on_a_categorical_table_at_epsilon_1(spark, tmp_path, capsys):
    """``auto`` reads the run's ε: a table of categorical columns only gets ``max_way=3`` at ε = 1 (not at 0.3),
    said on stderr and in the JSON line's ``engine_choice``."""
    rng = np.random.default_rng(0)
    a = rng.integers(0, 3, 600)
    rows = [f"{x},{(x + rng.integers(0, 2)) % 3},{'yn'[(x + y) % 2]}" for x, y in zip(a, rng.integers(0, 2, 600))]
    (tmp_path / "t.csv").write_text("a,b,c\n" + "\n".join(rows) + "\n")
    (tmp_path / "t.schema.json").write_text(json.dumps({"columns": [
        {"name": "a", "type": "categorical", "categories": ["0", "1", "2"]},
        {"name": "b", "type": "categorical", "categories": ["0", "1", "2"]},
        {"name": "c", "type": "categorical", "categories": ["y", "n"]}]}))
    for epsilon, options in (("1", {"max_way": 3}), ("0.3", None)):
        code, stdout, stderr = _run(capsys, "run", "--input", str(tmp_path / "t.csv"), "--schema", str(tmp_path / "t.schema.json"),
                                    "--epsilon", epsilon, "--delta", "1e-9", "--rows", "100", "--seed", "1", "--no-mlflow",
                                    "--output", str(tmp_path / f"out{epsilon}.parquet"))
        assert code == 0, stderr
        summary = json.loads(stdout)
        assert summary["engine"] == "fpt" and summary["engine_choice"].get("engine_options") == options
        assert ("max_way=3" in stderr) == (options is not None)


@pytest.mark.parametrize("case", ["missing_input", "absent_column", "unknown_type", "unwritable", "existing_output", "out_of_domain"])
def test_bad_input_one_line_error_no_output(spark, adult_sample_paths, tmp_path, capsys, case):
    data, schema = adult_sample_paths
    out = tmp_path / "out.parquet"
    raw_schema = json.loads(open(schema).read())
    if case == "missing_input":
        data, fragment = str(tmp_path / "nope.csv"), "does not exist"
    elif case == "absent_column":
        raw_schema["columns"].append({"name": "salary", "type": "integer", "min": 0, "max": 10})
        fragment = "missing columns ['salary']"
    elif case == "unknown_type":
        raw_schema["columns"][0]["type"] = "datetime"
        fragment = "unknown type 'datetime'"
    elif case == "unwritable":
        (tmp_path / "blocker").write_text("")
        out, fragment = tmp_path / "blocker" / "out.parquet", "is a file"
    elif case == "existing_output":
        out.mkdir()
        fragment = "already exists"
    else:
        age = next(c for c in raw_schema["columns"] if c["name"] == "age")
        age["max"] = 30
        fragment = "['age']"
    if case in ("absent_column", "unknown_type", "out_of_domain"):
        schema = str(tmp_path / "schema.json")
        open(schema, "w").write(json.dumps(raw_schema))
    before = sorted(p.name for p in tmp_path.iterdir())
    code, stdout, stderr = _run(capsys, "run", "--input", data, "--schema", schema, "--epsilon", "1", "--delta", "1e-9",
                                "--rows", "10", "--output", str(out), "--out-of-domain", "error", "--no-mlflow")
    assert code == 2 and stdout == ""
    assert fragment in error_line(stderr)
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # nothing partial written


def test_engines_receive_only_noisy_measurements(spark, adult_sample_paths, monkeypatch):
    """No private value reaches an engine: fit gets NoisyMeasurements whose values carry noise."""
    seen = []

    class Recording(IndependentEngine):
        def fit_measurements(self, schema, measurements):
            seen.extend(measurements)
            return super().fit_measurements(schema, measurements)

    monkeypatch.setitem(ENGINES, "independent", Recording)
    data, schema = adult_sample_paths
    from spark_synth.io import read_input

    synth = Synthesizer("independent", epsilon=1.0, delta=1e-9).fit(read_input(spark, data), schema)
    assert len(seen) == 2 * 15 and all(isinstance(m, NoisyMeasurement) for m in seen)  # two stages per column
    exact = read_input(spark, data).groupBy("sex").count().toPandas().set_index("sex")["count"]
    for sex in (m for m in seen if m.columns == ("sex",)):
        assert not np.allclose(sex.values[:2], [exact["Female"], exact["Male"]])  # noise was added
        assert abs(sex.values[0] - exact["Female"]) < 8 * sex.sigma
    assert synth.privacy_report_.epsilon_spent <= 1.0
