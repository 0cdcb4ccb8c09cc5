"""Nothing in the pipeline may depend on running inside one JVM (as ``local[N]`` does): the CLI's run,
fit and sample must work on a cluster whose executors are separate processes. Here that cluster is
Spark's ``local-cluster[2,1,1024]`` — a standalone master and two workers started inside the driver's
JVM, each worker launching its executor as its own JVM from pyspark's ``bin/spark-class`` and
``jars/`` — in a separate application (the suite's session is ``local[2]``, one per test run).
The Delta jars (``spark.jars.packages``) reach the executors through the driver's file server,
and the executors' Python workers use the driver's interpreter and ``PYTHONPATH``."""

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pyspark
import pytest
from pyspark.sql import functions as F

from spark_synth import Synthesizer
from spark_synth.schema import load_schema
from tests.conftest import BUNDLED

pytestmark = pytest.mark.spark

CLIENT = Path(__file__).with_name("local_cluster_client.py")
MASTER = "local-cluster[2,1,1024]"
PROFILE = f"""master: {MASTER}
spark:
  spark.sql.shuffle.partitions: "2"
  spark.default.parallelism: "2"
  spark.driver.memory: 1g
  spark.executor.memory: 512m
  spark.ui.enabled: "false"
  spark.ui.showConsoleProgress: "false"
"""
PYSPARK_HOME = Path(pyspark.__file__).parent


def _out_of_domain(df, schema) -> int:
    """Rows holding a value outside the schema's domain (nulls are in every column's domain)."""
    bad = F.lit(False)
    for column in schema:
        c = F.col(f"`{column.name}`")
        if column.categories:
            outside = ~c.isin(*column.categories)
        else:
            outside = (c < column.min) | (c > column.max)
        bad = bad | (c.isNotNull() & outside)
    return df.filter(bad).count()


@pytest.mark.skipif(not (PYSPARK_HOME / "bin" / "spark-class").is_file() or not (PYSPARK_HOME / "jars").is_dir(),
                    reason="this pyspark has no bin/spark-class or jars/ to launch executor JVMs from (a client-only install)")
def test_run_fit_sample_on_a_cluster_of_two_executor_processes(spark, tmp_path):
    (tmp_path / "profile.yaml").write_text(PROFILE)
    env = {key: value for key, value in os.environ.items() if key not in ("SPARK_REMOTE", "PYSPARK_GATEWAY_PORT")}
    env["SPARK_SYNTH_HOME"] = str(tmp_path / "home")
    done = subprocess.run([sys.executable, str(CLIENT), str(tmp_path)], env=env, cwd=tmp_path, capture_output=True,
                          text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    lines = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    run_splice, run_stages, fit_dgm, fit_stages, sample_dgm, sample_stages, cluster = lines

    # the application really ran on two executor processes, and no task ran in the driver's JVM
    assert cluster["master"] == MASTER
    executors = set(cluster["executors"]) - {cluster["driver"]}
    assert len(executors) == 2 and len(cluster["executors"]) == 3
    for command in (run_stages, fit_stages, sample_stages):
        ran_on = {executor for stage in command["stages"] for executor in stage["executors"]}
        assert len(ran_on) == 2 and "driver" not in ran_on, command
    # dgm's partition models trained as two tasks, one in each executor process
    partition_fits = [s for s in fit_stages["stages"] if "spark_synth/tasks.py" in s["stage"]]
    assert len(partition_fits) == 1 and partition_fits[0]["tasks"] == 2 and len(partition_fits[0]["executors"]) == 2
    # the sampled rows were generated and written by both executors
    assert any(stage["tasks"] == 2 and len(stage["executors"]) == 2 for stage in sample_stages["stages"])

    # the outputs are right: counts, schema, values in the declared domain, spend and provenance
    schema = load_schema(BUNDLED / "adult_sample.schema.json")
    assert run_splice["engine"] == "splice" and run_splice["rows"] == 300
    assert fit_dgm["engine"] == sample_dgm["engine"] == "dgm" and sample_dgm["epsilon_spent"] == 0.0
    for summary in (run_splice, fit_dgm):
        assert summary["dp_guarantee"] is True and summary["epsilon_spent"] == pytest.approx(1.0, rel=1e-9)
    saved = Synthesizer.load(tmp_path / "dgm_model")
    report = saved.privacy_report_.to_dict()
    assert report["fit_id"] == fit_dgm["fit_id"] and report["dp_guarantee"] is True
    assert math.isclose(report["epsilon_spent"], 1.0, rel_tol=1e-9) and len(saved.privacy_report_.entries) >= 2
    for folder, rows, engine, fit_id in (("splice_delta", 300, "splice", run_splice["fit_id"]),
                                         ("dgm_delta", 400, "dgm", fit_dgm["fit_id"])):
        df = spark.read.format("delta").load(str(tmp_path / folder))
        assert df.count() == rows and df.columns == list(schema.names)
        assert _out_of_domain(df, schema) == 0
        assert df.select([F.countDistinct(F.col(f"`{c}`")).alias(c) for c in df.columns]).first()["age"] > 1
        properties = spark.sql(f"DESCRIBE DETAIL delta.`{tmp_path / folder}`").first().properties
        assert properties["spark_synth.engine"] == engine and properties["spark_synth.fit_id"] == fit_id
        assert properties["spark_synth.dp"] == "true" and float(properties["spark_synth.epsilon"]) == pytest.approx(1.0)
