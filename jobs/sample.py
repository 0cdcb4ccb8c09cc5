"""spark-submit entry point for `sample`: write N rows from a saved synthesizer (spends no budget).

Settings: ``--config conf/runs/NAME.yaml`` (its ``model``, ``rows``, ``output``, ``seed``) plus the
flags below. Local mode::

    SPARK_LOCAL_IP=127.0.0.1 spark-submit --master "local[*]" --driver-memory 4g \\
      --driver-java-options "-Dlog4j2.configurationFile=spark_synth/conf/spark/log4j2.properties" \\
      --packages io.delta:delta-spark_2.13:4.0.1 \\
      --conf spark.sql.extensions=io.delta.sql.DeltaSparkSessionExtension \\
      --conf spark.sql.catalog.spark_catalog=org.apache.spark.sql.delta.catalog.DeltaCatalog \\
      jobs/sample.py --model /tmp/models/adult_sample --rows 100000 --output /tmp/synthetic/adult_100k

``--model`` may also be an MLflow model URI (``models:/NAME/VERSION``, ``models:/NAME@ALIAS``,
``runs:/RUN_ID/model``): a Delta output then also records the model and the version it resolved to.
Cluster: README, "Where to run it". One JSON line and exit 0, or one error line and exit 2 — on
spark-submit's stdout, which Spark merges the job's stderr (its progress lines) into; spark-submit's
own stderr holds Spark's log (WARN and above with the log4j2 file named above).
"""

import sys

from spark_synth.cli import job_parser, run_job


def build_parser():
    return job_parser("sample", "Write N rows from a saved synthesizer or an MLflow model (no budget).")


def main(argv: list[str] | None = None) -> int:
    return run_job("sample", build_parser(), argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
