"""Serverless and shared-access Databricks compute are Spark Connect sessions: no ``sparkContext``, no
JVM on the client. The CLI's run (to a Delta path and to a catalog table), fit and sample (to
Parquet) must work through one — here a local Spark Connect server (``SPARK_REMOTE=local[2]``,
pyspark's connect client from the ``local`` extra), in its own process."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from spark_synth.schema import load_schema
from tests.conftest import BUNDLED

pytestmark = pytest.mark.spark

CLIENT = Path(__file__).with_name("spark_connect_client.py")
PROFILE = """master: local[2]
spark:
  spark.sql.shuffle.partitions: "2"
  spark.default.parallelism: "2"
  spark.driver.memory: 1g
  spark.ui.enabled: "false"
  spark.ui.showConsoleProgress: "false"
"""


def test_run_fit_sample_through_spark_connect(spark, tmp_path):
    (tmp_path / "profile.yaml").write_text(PROFILE)
    env = {**os.environ, "SPARK_REMOTE": "local[2]", "SPARK_SYNTH_HOME": str(tmp_path / "home")}
    done = subprocess.run([sys.executable, str(CLIENT), str(tmp_path)], env=env, cwd=tmp_path, capture_output=True,
                          text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    lines = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    run_delta, run_table, fit, sample, check = lines
    assert check == {"connect": True, "table_rows": 200}
    assert run_delta["output"] == f"file:{tmp_path / 'run_delta'}" and run_delta["rows"] == 300
    assert run_table["output"] == "connect_synthetic" and fit["engine"] == sample["engine"] == "splice"
    assert run_table["join"]["acceptance"] == "threshold" and 0 < run_table["join"]["filled_rows"] <= 200
    assert fit["dp_guarantee"] is True and sample["epsilon_spent"] == 0.0

    names = list(load_schema(BUNDLED / "adult_sample.schema.json").names)
    delta = spark.read.format("delta").load(str(tmp_path / "run_delta"))
    assert delta.count() == 300 and delta.columns == names
    detail = spark.sql(f"DESCRIBE DETAIL delta.`{tmp_path / 'run_delta'}`").collect()[0]
    assert detail.properties["spark_synth.engine"] == "independent"  # provenance written through Connect too
    assert detail.properties["spark_synth.fit_id"] == run_delta["fit_id"]
    parquet = spark.read.parquet(str(tmp_path / "sampled.parquet"))
    assert parquet.count() == 400 and parquet.columns == names
