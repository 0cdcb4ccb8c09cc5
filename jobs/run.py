"""spark-submit entry point for `run`: fit a DP synthesizer on a table and write N synthetic rows.

Settings come from a run config (``--config conf/runs/NAME.yaml``, over the engine's defaults in
``spark_synth/conf/engines/``); any flag below overrides the file. Local mode, from the repository root (the
Delta Lake jars are fetched from Maven Central once, then cached by Ivy)::

    SPARK_LOCAL_IP=127.0.0.1 spark-submit --master "local[*]" --driver-memory 4g \\
      --driver-java-options "-Dlog4j2.configurationFile=spark_synth/conf/spark/log4j2.properties" \\
      --packages io.delta:delta-spark_2.13:4.0.1 \\
      --conf spark.sql.extensions=io.delta.sql.DeltaSparkSessionExtension \\
      --conf spark.sql.catalog.spark_catalog=org.apache.spark.sql.delta.catalog.DeltaCatalog \\
      jobs/run.py --config conf/runs/adult_sample.yaml --overwrite

On a cluster, drop ``--master`` (or give the cluster's), ship the package as a wheel with
``--py-files dist/spark_synth-0.1.0-py3-none-any.whl`` or install it on the nodes, and pass table
names: see README, "Where to run it". The job sets no master and no Spark settings of its own.
Prints one JSON line (engine, ε, δ, ρ spent, rows, output, MLflow run id) and exits 0; on bad
input prints one line ``spark-synth: error: …``, exits 2 and writes nothing. Under spark-submit both,
and the ``spark-synth: …`` progress lines, come on spark-submit's stdout (Spark merges the Python
driver's stderr into it); its stderr holds Spark's own log — WARN and above with the log4j2 file
named above (``SPARK_LOCAL_IP`` keeps a local run from warning about a loopback host name).
"""

import sys

from spark_synth.cli import job_parser, run_job


def build_parser():
    return job_parser("run", "Fit a DP synthesizer and write N synthetic rows.")


def main(argv: list[str] | None = None) -> int:
    return run_job("run", build_parser(), argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
