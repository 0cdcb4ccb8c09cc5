"""Run by tests/integration/test_spark_connect.py in its own process, with ``SPARK_REMOTE=local[2]``:
the CLI's run → fit → sample through a Spark Connect session (no ``sparkContext``, no JVM on this
side). Argument 1 is the working folder; each command's JSON line is printed, then ``connect: true``."""

import json
import sys
from pathlib import Path

from spark_synth.cli import main
from spark_synth.io.filesystem import is_spark_connect
from spark_synth.session import get_spark

work = Path(sys.argv[1])
data = Path(__file__).resolve().parents[2] / "spark_synth" / "data"
common = ["--input", str(data / "adult_sample.csv"), "--schema", str(data / "adult_sample.schema.json"),
          "--epsilon", "1", "--delta", "1e-9", "--no-mlflow", "--spark-profile", str(work / "profile.yaml")]
commands = [
    ["run", *common, "--engine", "independent", "--rows", "300", "--seed", "1", "--output", str(work / "run_delta")],
    # dgm whose strict threshold join leaves rows to fill: the tasks' count comes back through an Observation
    ["run", *common, "--engine", "dgm", "--engine-option", "engines=independent", "--engine-option", "acceptance=threshold",
     "--engine-option", "keep_fraction=0.001", "--engine-option", "max_rounds=2", "--engine-option", "patience=1",
     "--rows", "200", "--seed", "1", "--output", "connect_synthetic"],
    ["fit", *common, "--engine", "splice", "--engine-option", "steps=30", "--model", str(work / "model")],
    ["sample", "--model", str(work / "model"), "--rows", "400", "--seed", "2", "--output", str(work / "sampled.parquet"),
     "--spark-profile", str(work / "profile.yaml")],
]
for argv in commands:
    code = main(argv)
    if code:
        sys.exit(code)
spark = get_spark()
print(json.dumps({"connect": is_spark_connect(spark), "table_rows": spark.table("connect_synthetic").count()}))
