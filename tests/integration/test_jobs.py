"""The spark-submit jobs: in-process on the shared session (fit → sample), and one real spark-submit."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import mlflow
import pytest

pytestmark = pytest.mark.spark
REPO = Path(__file__).resolve().parents[2]
DELTA_PACKAGE = "io.delta:delta-spark_2.13:4.0.1"


def load_job(name: str):
    spec = importlib.util.spec_from_file_location(f"job_{name}", REPO / "jobs" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_fit_job_then_sample_job(spark, spark_home, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(REPO)
    model = tmp_path / "model"
    code = load_job("fit").main(["--config", "conf/runs/adult_sample.yaml", "--model", str(model), "--epsilon", "0.5"])
    out, err = capsys.readouterr()
    assert code == 0, err
    fitted = json.loads(out)
    assert fitted["epsilon_spent"] == pytest.approx(0.5, rel=1e-9) and (model / "synthesizer.json").is_file()
    run = mlflow.get_run(fitted["mlflow_run_id"])
    assert run.data.tags["spark_synth.model_uri"].startswith("models:/")  # ready for `spark-synth release`

    output = tmp_path / "out.parquet"
    code = load_job("sample").main(["--config", "conf/runs/adult_sample.yaml", "--model", str(model),
                                    "--rows", "321", "--output", str(output), "--seed", "4"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert json.loads(out)["epsilon_spent"] == 0.0
    assert spark.read.parquet(str(output)).count() == 321


def test_spark_submit_run_job_local_mode_writes_delta(spark, tmp_path):
    """The README's local-mode command line, run for real: spark-submit of jobs/run.py → a Delta table."""
    bin_dir = Path(sys.executable).parent
    submit = bin_dir / "spark-submit"
    if not submit.exists():
        import pyspark

        submit = Path(pyspark.__file__).parent / "bin" / "spark-submit"
    output = tmp_path / "synthetic" / "adult_sample"
    jars = os.environ.get("SPARK_SYNTH_DELTA_JARS")
    command = [
        str(submit), "--master", "local[2]", "--driver-memory", "1g",
        *(["--jars", jars] if jars else ["--packages", DELTA_PACKAGE]),
        "--conf", "spark.sql.extensions=io.delta.sql.DeltaSparkSessionExtension",
        "--conf", "spark.sql.catalog.spark_catalog=org.apache.spark.sql.delta.catalog.DeltaCatalog",
        "--conf", "spark.ui.enabled=false", "--conf", "spark.sql.shuffle.partitions=2",
        "jobs/run.py", "--config", "conf/runs/adult_sample.yaml",
        "--rows", "777", "--seed", "11", "--output", str(output), "--no-mlflow",
    ]
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable,
           "SPARK_SYNTH_HOME": str(tmp_path / "home")}
    done = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    summary = json.loads(done.stdout.strip().splitlines()[-1])
    assert summary["rows"] == 777 and summary["engine"] == "independent" and summary["epsilon_spent"] <= 1.0
    assert (output / "_delta_log").is_dir()
    table = spark.read.format("delta").load(str(output))
    assert table.count() == 777
    schema = json.loads((REPO / "spark_synth" / "data" / "adult_sample.schema.json").read_text())
    assert table.columns == [c["name"] for c in schema["columns"]]
