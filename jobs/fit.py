"""spark-submit entry point for `fit`: fit a DP synthesizer and save it (this spends the budget).

The saved model (``--model`` directory, and an MLflow pyfunc model in the run unless
``--no-mlflow``) holds only DP post-processed state; ``spark-synth release --run-id RUN`` then
registers it. Settings: ``--config conf/runs/NAME.yaml`` plus the flags below. Local mode::

    SPARK_LOCAL_IP=127.0.0.1 spark-submit --master "local[*]" --driver-memory 4g \\
      --driver-java-options "-Dlog4j2.configurationFile=spark_synth/conf/spark/log4j2.properties" \\
      --packages io.delta:delta-spark_2.13:4.0.1 \\
      --conf spark.sql.extensions=io.delta.sql.DeltaSparkSessionExtension \\
      --conf spark.sql.catalog.spark_catalog=org.apache.spark.sql.delta.catalog.DeltaCatalog \\
      jobs/fit.py --config conf/runs/adult_sample.yaml --model /tmp/models/adult_sample

Cluster: README, "Where to run it". One JSON line and exit 0, or one error line and exit 2 — on
spark-submit's stdout, which Spark merges the job's stderr (its progress lines) into; spark-submit's
own stderr holds Spark's log (WARN and above with the log4j2 file named above).
"""

import sys

from spark_synth.cli import job_parser, run_job


def build_parser():
    return job_parser("fit", "Fit a DP synthesizer and save it.")


def main(argv: list[str] | None = None) -> int:
    return run_job("fit", build_parser(), argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
