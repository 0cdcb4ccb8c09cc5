"""spark-submit entry point for `run`: fit a DP synthesizer on a table and write N synthetic rows.

Settings come from a run config (``--config conf/runs/NAME.yaml``, over the engine's defaults in
``conf/engines/``); any flag below overrides the file. Local mode, from the repository root (the
Delta Lake jars are fetched from Maven Central once, then cached by Ivy)::

    spark-submit --master "local[*]" --driver-memory 4g \\
      --packages io.delta:delta-spark_2.13:4.0.1 \\
      --conf spark.sql.extensions=io.delta.sql.DeltaSparkSessionExtension \\
      --conf spark.sql.catalog.spark_catalog=org.apache.spark.sql.delta.catalog.DeltaCatalog \\
      jobs/run.py --config conf/runs/adult_sample.yaml --overwrite

On a cluster, drop ``--master`` (or give the cluster's), ship the package as a wheel with
``--py-files dist/spark_synth-0.1.0-py3-none-any.whl`` or install it on the nodes, and pass table
names: see README, "Where to run it". The job sets no master and no Spark settings of its own.
Prints one JSON line (engine, ε, δ, ρ spent, rows, output, MLflow run id) and exits 0; on bad
input prints one line ``spark-synth: error: …`` to stderr, exits 2 and writes nothing.
"""

import argparse
import json
import sys

from spark_synth.cli import run_and_report
from spark_synth.config import load_job_config


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="jobs/run.py", description="Fit a DP synthesizer and write N synthetic rows.")
    p.add_argument("--config", help="run config YAML, e.g. conf/runs/adult_sample.yaml")
    p.add_argument("--input", help="CSV/Parquet file, Delta path, or table name")
    p.add_argument("--schema", help="schema file (.json or .yaml)")
    p.add_argument("--engine", help="synthesis engine (default from the config, else independent)")
    p.add_argument("--engine-options", type=json.loads, help='engine options as JSON, e.g. \'{"degree": 8}\'')
    p.add_argument("--epsilon", type=float, help="privacy budget epsilon > 0")
    p.add_argument("--delta", type=float, help="privacy budget delta in (0, 1)")
    p.add_argument("--rows", type=int, help="number of synthetic rows")
    p.add_argument("--output", help="output: *.csv, *.parquet, a Delta path, or a table name")
    p.add_argument("--seed", type=int, help="sampling seed (default: random, reported)")
    p.add_argument("--out-of-domain", choices=["clip", "error"], help="values outside the schema's domain")
    p.add_argument("--overwrite", action="store_true", default=None, help="replace an existing output")
    p.add_argument("--mlflow", action=argparse.BooleanOptionalAction, default=None, help="log the run to MLflow")
    p.add_argument("--spark-profile", help="conf/spark profile when no Spark session exists (not under spark-submit)")
    return p


def main(argv: list[str] | None = None) -> int:
    args = vars(build_parser().parse_args(argv))
    config = args.pop("config")

    def job() -> dict:
        from spark_synth import RunConfig, run

        return run(RunConfig(**load_job_config("run", config, **args)))

    return run_and_report(job)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
