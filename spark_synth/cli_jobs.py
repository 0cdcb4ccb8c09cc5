"""The spark-submit jobs' command line (``jobs/*.py``): ``--config`` plus optional override flags,
merged over the run config file and run as the CLI runs its commands.
"""

from __future__ import annotations

import argparse

from .cli_parser import _ArgumentParser, whole_number
from .cli_report import run_and_report

#: Flags of the spark-submit jobs (``jobs/*.py``): every one optional, overriding the ``--config``
#: file; which job takes which is ``spark_synth.config.JOB_KEYS``.
_JOB_FLAGS = {
    "input": dict(help="CSV/Parquet file, Delta path, or table name"),
    "schema": dict(help="schema file (.json or .yaml)"),
    "engine": dict(help="synthesis engine (default from the config, else auto: chosen from the schema's width)"),
    "engine_options": dict(flag="--engine-option", action="append", default=None, metavar="KEY=VALUE",
                           help="an engine option, repeatable (e.g. --engine-option components=64); merged key by key "
                                "over the config file's and the engine defaults' options"),
    "epsilon": dict(type=float, help="privacy budget epsilon > 0"),
    "delta": dict(type=float, help="privacy budget delta in (0, 1)"),
    "model": dict(help="directory of a saved synthesizer (fit: to save into; must not hold one); sample also takes "
                       "an MLflow model URI (models:/NAME/VERSION, models:/NAME@ALIAS, runs:/RUN_ID/model)"),
    "rows": dict(type=whole_number, help="number of synthetic rows, e.g. 10000, 1e6 or 1_000_000"),
    "output": dict(help="output: *.csv, *.parquet or a Delta folder when it holds a '/', else a catalog table (db.table)"),
    "seed": dict(type=whole_number, help="sampling seed (default: random, reported)"),
    "out_of_domain": dict(choices=["clip", "error"], help="values outside the schema's domain"),
    "overwrite": dict(action="store_true", default=None, help="replace an existing output"),
    "mlflow": dict(action=argparse.BooleanOptionalAction, default=None, help="log to MLflow"),
    "spark_profile": dict(help="Spark profile (local, cluster or a YAML path) when no Spark session exists (not under spark-submit)"),
    "dataset_id": dict(help="the table's budget ledger the fit is charged to when MLflow is on (default: the input)"),
    "privacy_unit": dict(metavar="COLUMN", help="protect each value of COLUMN (a person) with all its rows, not one row; "
                                                "needs --max-rows-per-unit"),
    "max_rows_per_unit": dict(metavar="K", type=whole_number, help="most rows of one unit the fit keeps (public)"),
    "where": dict(metavar="CONDITION", help="only rows that satisfy CONDITION, drawn exactly from the model given it "
                                            "(docs/sampling.md)"),
    "rows_per": dict(metavar="COLUMN", help="give each value of categorical COLUMN its model share of the rows"),
}


def job_parser(command: str, description: str) -> argparse.ArgumentParser:
    """The argument parser of ``jobs/COMMAND.py``: ``--config`` plus the job's override flags."""
    from .config import JOB_KEYS

    p = _ArgumentParser(prog=f"jobs/{command}.py", description=description)
    p.add_argument("--config", help="run config YAML, e.g. conf/runs/adult_sample.yaml")
    for key in JOB_KEYS[command]:
        flag = dict(_JOB_FLAGS[key])
        p.add_argument(flag.pop("flag", f"--{key.replace('_', '-')}"), dest=key, **flag)
    return p


def run_job(command: str, parser: argparse.ArgumentParser, argv: list[str] | None) -> int:
    """Parse a job's arguments, merge them over its config file, run it, report as the CLI does."""
    from .config import RunConfig, load_job_config

    from .config import parse_option_pairs

    args = vars(parser.parse_args(argv))
    config = args.pop("config")

    def job() -> dict:
        if args.get("engine_options") is not None:
            args["engine_options"] = parse_option_pairs(args["engine_options"])
        settings = load_job_config(command, config, **args)
        if command == "run":
            from .commands import run

            return run(RunConfig(**settings))
        from .commands import fit_and_save, load_and_sample

        return {"fit": fit_and_save, "sample": load_and_sample}[command](**settings)

    return run_and_report(job)
