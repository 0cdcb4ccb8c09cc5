"""spark-submit entry point for `sample`: write N rows from a saved synthesizer (spends no budget).

Settings: ``--config conf/runs/NAME.yaml`` (its ``model``, ``rows``, ``output``, ``seed``) plus the
flags below. Local mode::

    spark-submit --master "local[*]" --driver-memory 4g \\
      --packages io.delta:delta-spark_2.13:4.0.1 \\
      --conf spark.sql.extensions=io.delta.sql.DeltaSparkSessionExtension \\
      --conf spark.sql.catalog.spark_catalog=org.apache.spark.sql.delta.catalog.DeltaCatalog \\
      jobs/sample.py --model /tmp/models/adult_sample --rows 100000 --output /tmp/synthetic/adult_100k

To sample from a registered MLflow model instead, use ``spark_synth.track.sample_model``.
Cluster: README, "Where to run it". One JSON line and exit 0, or one error line and exit 2.
"""

import argparse
import sys

from spark_synth.cli import run_and_report
from spark_synth.config import load_job_config


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="jobs/sample.py", description="Write N rows from a saved synthesizer (no budget).")
    p.add_argument("--config", help="run config YAML, e.g. conf/runs/adult_sample.yaml")
    p.add_argument("--model", help="directory of a synthesizer saved by `fit`")
    p.add_argument("--rows", type=int, help="number of synthetic rows")
    p.add_argument("--output", help="output: *.csv, *.parquet, a Delta path, or a table name")
    p.add_argument("--seed", type=int, help="sampling seed (default: random, reported)")
    p.add_argument("--overwrite", action="store_true", default=None, help="replace an existing output")
    p.add_argument("--spark-profile", help="conf/spark profile when no Spark session exists (not under spark-submit)")
    return p


def main(argv: list[str] | None = None) -> int:
    args = vars(build_parser().parse_args(argv))
    config = args.pop("config")

    def job() -> dict:
        from spark_synth.pipeline import load_and_sample

        return load_and_sample(**load_job_config("sample", config, **args))

    return run_and_report(job)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
