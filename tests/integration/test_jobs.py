"""The spark-submit jobs: in-process on the shared session (fit → sample), and one real spark-submit."""

from __future__ import annotations

import importlib.util
import json
import os
import re
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

    shaped, config = tmp_path / "shaped.parquet", tmp_path / "sample.yaml"  # a run config's where/rows_per
    config.write_text("where: \"sex = 'Female' AND age >= 50\"\nrows_per: race\n", encoding="utf-8")
    code = load_job("sample").main(["--config", str(config), "--model", str(model), "--rows", "300",
                                    "--output", str(shaped), "--seed", "4"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert json.loads(out)["where"] == "sex = 'Female' AND age >= 50" and json.loads(out)["rows_per"] == "race"
    rows = spark.read.parquet(str(shaped)).toPandas()
    assert len(rows) == 300 and (rows["sex"] == "Female").all() and (rows["age"] >= 50).all()


#: The jars Ivy keeps after resolving DELTA_PACKAGE once (README: `--jars` in place of `--packages`).
IVY_JARS = [Path.home() / ".ivy2.5.2" / "jars" / name for name in
            ("io.delta_delta-spark_2.13-4.0.1.jar", "io.delta_delta-storage-4.0.1.jar", "org.antlr_antlr4-runtime-4.13.1.jar")]
#: Lines of Ivy's dependency report on spark-submit's stderr (printed before log4j is set up).
IVY_LINE = re.compile(r"^(::|\t|Ivy Default Cache|The jars for the packages|io\.delta#|\s*-{5,}|\s*\|)")


def test_spark_submit_run_job_local_mode_writes_delta(spark, tmp_path):
    """The README's local-mode command line, run for real: spark-submit of jobs/run.py → a Delta table.
    With the packaged log4j2 file and SPARK_LOCAL_IP, spark-submit's stderr is a few lines (was ~1,000:
    Spark's INFO log), and the job's progress lines come on stdout, before the JSON line — Spark runs the
    Python driver with its stderr merged into its stdout, as the README says."""
    bin_dir = Path(sys.executable).parent
    submit = bin_dir / "spark-submit"
    if not submit.exists():
        import pyspark

        submit = Path(pyspark.__file__).parent / "bin" / "spark-submit"
    output = tmp_path / "synthetic" / "adult_sample"
    jars = os.environ.get("SPARK_SYNTH_DELTA_JARS") or (",".join(map(str, IVY_JARS)) if all(j.is_file() for j in IVY_JARS)
                                                        else None)
    command = [
        str(submit), "--master", "local[2]", "--driver-memory", "1g",
        "--driver-java-options", "-Dlog4j2.configurationFile=spark_synth/conf/spark/log4j2.properties",
        *(["--jars", jars] if jars else ["--packages", DELTA_PACKAGE]),
        "--conf", "spark.sql.extensions=io.delta.sql.DeltaSparkSessionExtension",
        "--conf", "spark.sql.catalog.spark_catalog=org.apache.spark.sql.delta.catalog.DeltaCatalog",
        "--conf", "spark.ui.enabled=false", "--conf", "spark.sql.shuffle.partitions=2",
        "jobs/run.py", "--config", "conf/runs/adult_sample.yaml",
        "--rows", "777", "--seed", "11", "--output", str(output), "--no-mlflow",
    ]
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable,
           "SPARK_SYNTH_HOME": str(tmp_path / "home"), "SPARK_LOCAL_IP": "127.0.0.1"}
    done = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    spark_lines = [line for line in done.stderr.splitlines() if line.strip() and not IVY_LINE.match(line)]
    assert len(spark_lines) <= 3 and not any(" INFO " in line for line in spark_lines), done.stderr[-3000:]
    stdout = done.stdout.strip().splitlines()
    assert "spark-synth: fit: engine independent, epsilon 1, delta 1e-09, 15 columns" in stdout  # merged by Spark
    summary = json.loads(stdout[-1])
    assert summary["rows"] == 777 and summary["engine"] == "independent" and summary["epsilon_spent"] <= 1.0
    assert (output / "_delta_log").is_dir()
    table = spark.read.format("delta").load(str(output))
    assert table.count() == 777
    schema = json.loads((REPO / "spark_synth" / "data" / "adult_sample.schema.json").read_text())
    assert table.columns == [c["name"] for c in schema["columns"]]
