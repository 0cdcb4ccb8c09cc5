"""``spark-synth`` command line: ``run``, ``fit`` and ``sample``.

Every command prints one line of JSON on success and exits 0; on bad input it prints one line
``spark-synth: error: …`` to stderr, exits 2 and writes nothing.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

from .errors import InternalError, SparkSynthError

EXIT_USER_ERROR = 2
EXIT_INTERNAL_ERROR = 1

_DESCRIPTION = """\
Differentially private synthetic copies of tables, on Spark.

  run     fit a synthesizer on a table and write N synthetic rows (one privacy spend)
  fit     fit a synthesizer and save it (holds only DP post-processed state)
  sample  load a saved synthesizer and write N rows (spends no budget)

Guarantee: (epsilon, delta)-DP under add/remove-one-row neighbours. Inputs: CSV, Parquet, a Delta
path or a catalog table name. Outputs: format from the extension (.csv, .parquet), else Delta
(a bare name like db.table is a catalog table)."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="spark-synth", description=_DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="{run,fit,sample}")

    def common_fit_args(p: argparse.ArgumentParser) -> None:
        p.add_argument("--input", required=True, help="CSV/Parquet file, Delta path, or table name")
        p.add_argument("--schema", required=True, help="schema file (.json as in the shared data, or .yaml)")
        p.add_argument("--engine", default="independent", help="synthesis engine (default: independent)")
        p.add_argument("--epsilon", required=True, type=float, help="privacy budget epsilon > 0")
        p.add_argument("--delta", required=True, type=float, help="privacy budget delta in (0, 1), e.g. 1e-9")
        p.add_argument("--out-of-domain", default="clip", choices=["clip", "error"],
                       help="values outside the schema: clip numbers / null unknown categories (default), or error")

    def common_out_args(p: argparse.ArgumentParser) -> None:
        p.add_argument("--rows", required=True, type=int, help="number of synthetic rows to write")
        p.add_argument("--output", required=True, help="output: *.csv, *.parquet, a Delta path, or a table name")
        p.add_argument("--seed", type=int, default=None, help="sampling seed (default: random, reported)")
        p.add_argument("--overwrite", action="store_true", help="replace an existing output")

    def common_env_args(p: argparse.ArgumentParser, mlflow: bool = True) -> None:
        p.add_argument("--spark-profile", default="local", help="Spark profile in conf/spark or a YAML path")
        if mlflow:
            p.add_argument("--mlflow", action=argparse.BooleanOptionalAction, default=True,
                           help="log the run to MLflow ($MLFLOW_TRACKING_URI or a local SQLite store)")

    run = commands.add_parser("run", help="fit and write synthetic rows", description="Fit a DP synthesizer and write N rows.")
    common_fit_args(run)
    common_out_args(run)
    common_env_args(run)

    fit = commands.add_parser("fit", help="fit and save a synthesizer", description="Fit a DP synthesizer and save it.")
    common_fit_args(fit)
    fit.add_argument("--model", required=True, help="directory to save the fitted synthesizer in")
    common_env_args(fit)

    sample = commands.add_parser("sample", help="sample from a saved synthesizer (no budget)",
                                 description="Write N rows from a saved synthesizer; spends no privacy budget.")
    sample.add_argument("--model", required=True, help="directory of a synthesizer saved by `fit`")
    common_out_args(sample)
    common_env_args(sample, mlflow=False)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        summary = _dispatch(args)
    except SparkSynthError as exc:
        print(f"spark-synth: error: {_one_line(exc)}", file=sys.stderr)
        return EXIT_INTERNAL_ERROR if isinstance(exc, InternalError) else EXIT_USER_ERROR
    except Exception as exc:  # Spark/Java failures: one line, no stack dump of private values
        print(f"spark-synth: error: {type(exc).__name__}: {_one_line(exc)}", file=sys.stderr)
        return EXIT_INTERNAL_ERROR
    print(json.dumps(summary, default=str))
    return 0


def _dispatch(args: argparse.Namespace) -> dict:
    from .config import RunConfig

    if args.command == "run":
        from .pipeline import run

        config = RunConfig(
            input=args.input, schema=args.schema, engine=args.engine, epsilon=args.epsilon, delta=args.delta,
            rows=args.rows, output=args.output, seed=args.seed, out_of_domain=args.out_of_domain,
            overwrite=args.overwrite, mlflow=args.mlflow, spark_profile=args.spark_profile,
        )
        return run(config)
    if args.command == "fit":
        from .pipeline import fit_and_save

        return fit_and_save(
            input=args.input, schema=args.schema, engine=args.engine, epsilon=args.epsilon, delta=args.delta,
            model=args.model, out_of_domain=args.out_of_domain, mlflow=args.mlflow, spark_profile=args.spark_profile,
        )
    from .pipeline import load_and_sample

    return load_and_sample(
        model=args.model, rows=args.rows, output=args.output, seed=args.seed,
        overwrite=args.overwrite, spark_profile=args.spark_profile,
    )


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


if __name__ == "__main__":
    sys.exit(main())
