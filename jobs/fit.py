"""spark-submit entry point for `fit`: fit a DP synthesizer and save it (this spends the budget).

The saved model (``--model`` directory, and an MLflow pyfunc model in the run unless
``--no-mlflow``) holds only DP post-processed state; ``spark-synth release --run-id RUN`` then
registers it. Settings: ``--config conf/runs/NAME.yaml`` plus the flags below. Local mode::

    spark-submit --master "local[*]" --driver-memory 4g \\
      --packages io.delta:delta-spark_2.13:4.0.1 \\
      --conf spark.sql.extensions=io.delta.sql.DeltaSparkSessionExtension \\
      --conf spark.sql.catalog.spark_catalog=org.apache.spark.sql.delta.catalog.DeltaCatalog \\
      jobs/fit.py --config conf/runs/adult_sample.yaml --model /tmp/models/adult_sample

Cluster: README, "Where to run it". One JSON line and exit 0, or one error line and exit 2.
"""

import argparse
import json
import sys

from spark_synth.cli import run_and_report
from spark_synth.config import load_job_config


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="jobs/fit.py", description="Fit a DP synthesizer and save it.")
    p.add_argument("--config", help="run config YAML, e.g. conf/runs/adult_sample.yaml")
    p.add_argument("--input", help="CSV/Parquet file, Delta path, or table name")
    p.add_argument("--schema", help="schema file (.json or .yaml)")
    p.add_argument("--engine", help="synthesis engine (default from the config, else independent)")
    p.add_argument("--engine-options", type=json.loads, help='engine options as JSON, e.g. \'{"degree": 8}\'')
    p.add_argument("--epsilon", type=float, help="privacy budget epsilon > 0")
    p.add_argument("--delta", type=float, help="privacy budget delta in (0, 1)")
    p.add_argument("--model", help="directory to save the fitted synthesizer in (must not hold one)")
    p.add_argument("--out-of-domain", choices=["clip", "error"], help="values outside the schema's domain")
    p.add_argument("--mlflow", action=argparse.BooleanOptionalAction, default=None, help="log the fit and model to MLflow")
    p.add_argument("--spark-profile", help="conf/spark profile when no Spark session exists (not under spark-submit)")
    return p


def main(argv: list[str] | None = None) -> int:
    args = vars(build_parser().parse_args(argv))
    config = args.pop("config")

    def job() -> dict:
        from spark_synth.pipeline import fit_and_save

        return fit_and_save(**load_job_config("fit", config, **args))

    return run_and_report(job)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
