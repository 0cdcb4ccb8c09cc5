"""``spark-synth`` command line: ``run``, ``fit`` and ``sample``. ``main`` parses the arguments
(:mod:`spark_synth.cli_parser`) and dispatches each command to the function behind it.

Every command prints one line of JSON on success and exits 0; on bad input it prints one line
``spark-synth: error: …`` to stderr, exits 2 and writes nothing. Ctrl-C stops it cleanly: one line
``spark-synth: interrupted; nothing was written``, exit 130 (:mod:`spark_synth.interrupt`).
"""

from __future__ import annotations

import argparse
import sys

# the parser (cli_parser), the one-line reporting (cli_report) and the jobs' parser (cli_jobs) are
# their own modules; what callers import from spark_synth.cli is re-exported here
from .cli_jobs import job_parser, run_job  # noqa: F401
from .cli_parser import ENGINE_PURPOSES, build_parser, engines_help, whole_number  # noqa: F401
from .cli_report import EXIT_INTERNAL_ERROR, EXIT_USER_ERROR, run_and_report, strict_json  # noqa: F401


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return run_and_report(lambda: _dispatch(args), debug=args.debug)


def _dispatch(args: argparse.Namespace) -> dict:
    from .config import RunConfig

    if args.command == "run":
        from .commands import run

        config = RunConfig(
            input=args.input, schema=args.schema, engine=args.engine, epsilon=args.epsilon, delta=args.delta,
            rows=args.rows, output=args.output, seed=args.seed, out_of_domain=args.out_of_domain,
            overwrite=args.overwrite, mlflow=args.mlflow, spark_profile=args.spark_profile,
            engine_options=engine_options(args.engine, args.engine_option), dataset_id=args.dataset_id,
            privacy_unit=args.privacy_unit, max_rows_per_unit=args.max_rows_per_unit,
            where=args.where, rows_per=args.rows_per,
        )
        if not args.evaluate:
            return run(config)
        return run(config, evaluate={"out": args.evaluate_out, "target": args.target,
                                     "holdout_fraction": args.holdout_fraction, "seed": args.split_seed})
    if args.command == "evaluate":
        from .evaluate.command import evaluate_tables

        return evaluate_tables(
            real=args.real, synthetic=args.synthetic, schema=args.schema, out=args.out, target=args.target,
            holdout=args.holdout, holdout_fraction=args.holdout_fraction, seed=args.seed,
            privacy_report=args.privacy_report, overwrite=args.overwrite, mlflow=args.mlflow,
            mlflow_run_id=args.mlflow_run_id, spark_profile=args.spark_profile,
        )
    if args.command == "release":
        from .track.release import release

        return release(args.run_id, args.name, source=args.source_table, budget_cap=args.budget_cap,
                       cap_delta=args.cap_delta, metrics=args.metrics, ledger_prefix=args.ledger_prefix,
                       allow_non_dp=args.allow_non_dp, alias=args.alias)
    if args.command == "budget":
        from .track.release import budget

        return budget(args.source_table, budget_cap=args.budget_cap, cap_delta=args.cap_delta,
                      ledger_prefix=args.ledger_prefix)
    if args.command == "schema":
        from .schema_init import init_schema

        return init_schema(input=args.input, output=args.output, columns=_names(args.columns),
                           exclude=_names(args.exclude), dp_epsilon=args.dp_bounds, dp_delta=args.dp_delta,
                           overwrite=args.overwrite, mlflow=args.mlflow, dataset_id=args.dataset_id,
                           spark_profile=args.spark_profile, types=args.types, dp_types=args.dp_types,
                           privacy_unit=args.privacy_unit, max_rows_per_unit=args.max_rows_per_unit)
    if args.command == "fit":
        from .commands import fit_and_save

        return fit_and_save(
            input=args.input, schema=args.schema, engine=args.engine, epsilon=args.epsilon, delta=args.delta,
            model=args.model, out_of_domain=args.out_of_domain, mlflow=args.mlflow, spark_profile=args.spark_profile,
            engine_options=engine_options(args.engine, args.engine_option), dataset_id=args.dataset_id,
            privacy_unit=args.privacy_unit, max_rows_per_unit=args.max_rows_per_unit,
        )
    from .commands import load_and_sample

    return load_and_sample(
        model=args.model, rows=args.rows, output=args.output, seed=args.seed,
        overwrite=args.overwrite, spark_profile=args.spark_profile, mlflow=args.mlflow,
        where=args.where, rows_per=args.rows_per,
    )


def engine_options(engine: str, pairs: list[str]):
    """``KEY=VALUE`` strings (values parsed as YAML scalars) → the engine's typed config, checked
    once here; None when none are given (the engine's defaults)."""
    from .config import parse_option_pairs
    from .engines import typed_config
    from .engines.options import OPTION_FLAG
    from .errors import ParameterError

    options = parse_option_pairs(pairs)
    if not options:
        return None
    if engine == "auto":
        raise ParameterError(OPTION_FLAG, "none with --engine auto: name the engine they belong to (e.g. --engine fpt)",
                             sorted(options))
    return typed_config(engine, options, source=OPTION_FLAG)


def _names(values: list[str] | None) -> list[str] | None:
    """``--columns a,b --columns c`` → ``[a, b, c]``."""
    if values is None:
        return None
    return [name.strip() for value in values for name in value.split(",") if name.strip()]


if __name__ == "__main__":
    sys.exit(main())
