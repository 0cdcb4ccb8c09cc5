"""The ``spark-synth`` argument parser: the subcommands, their flags and help texts (``build_parser``),
and the parser class whose errors keep the CLI's one-line contract (also used by the jobs' parser).
"""

from __future__ import annotations

import argparse
import sys

from .cli_report import EXIT_USER_ERROR
from .config import MAX_ROWS, parse_whole_number

_DESCRIPTION = """\
Differentially private synthetic copies of tables, on Spark.

  run     fit a synthesizer on a table and write N synthetic rows (one privacy spend)
  fit     fit a synthesizer and save it (holds only DP post-processed state)
  sample  load a saved synthesizer (or an MLflow model) and write N rows (spends no budget)
  evaluate  compare a synthetic table with the real one (fidelity, utility, privacy proxies;
            NOT private: reads real rows) and write metrics.json + report.html
  release   register a fit's MLflow model as a registry version, tagged with its privacy
            metadata, charged to its source table's cumulative budget (refused past a cap)
  budget    show (or cap) the cumulative privacy spend of a source table's releases
  schema init  draft a schema file from a table's declared column types (TODOs to fill in), or
               with --dp-bounds EPSILON estimate bounds and categories by a charged DP pre-pass

Guarantee: (epsilon, delta)-DP under add/remove-one-row neighbours. Inputs: CSV, Parquet, a Delta
path or a catalog table name. Outputs: format from the extension (.csv, .parquet), else Delta
(a bare name like db.table is a catalog table)."""


#: One line per engine for ``run --help`` and ``fit --help`` (an engine without a line here is
#: listed by name). Measured guidance: README, "Which engine for which table".
ENGINE_PURPOSES = {
    "auto": "the default: fpt when torch is installed and the table has at most 300 columns, dgm (fpt on "
            "partitions) above, independent without torch; says on stderr which it chose and why",
    "independent": "DP 1-way marginals, columns drawn independently: the baseline, and the best 1-way "
                   "fidelity; no extra needed",
    "fpt": "private multiplicative weights over a junction tree: the best 2-/3-way marginals and ML on a "
           "categorical schema target, a few thousand to tens of millions of rows (needs [torch])",
    "splice": "sliced Chebyshev moments and DP pair tables fitted by a mixture: numeric-heavy tables and "
              "regression targets (needs [torch])",
    "dgm": "disjoint generative models: column groups fitted in parallel on the executors, joined by a DP "
           "validator (in progress; docs/dgm.md)",
}


def engines_help() -> str:
    """The engines and their one-line purposes, for the ``--help`` of ``run`` and ``fit``."""
    from .engines import ENGINES

    names = ["auto", *ENGINES]
    width = max(len(name) for name in names)
    lines = [f"  {name:<{width}}  {ENGINE_PURPOSES.get(name, '(see docs/engines.md)')}" for name in names]
    return ("engines (--engine; options: --engine-option KEY=VALUE, see docs/engines.md):\n" + "\n".join(lines))


def whole_number(text: str) -> int:
    """argparse type of ``--rows`` and ``--seed``: 1000000, 1e6, 1_000_000 or 1,000,000."""
    try:
        return parse_whole_number(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"must be {exc}") from None


class _ArgumentParser(argparse.ArgumentParser):
    """argparse whose errors keep the CLI's contract: ONE line ``spark-synth: error: …`` on stderr, exit 2."""

    def error(self, message: str):
        text = " ".join(str(message).split())
        print(f"spark-synth: error: {text} (see `{self.prog} --help`)", file=sys.stderr)
        sys.exit(EXIT_USER_ERROR)


def build_parser() -> argparse.ArgumentParser:
    parser = _ArgumentParser(
        prog="spark-synth", description=_DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="{run,fit,sample,evaluate,release,budget,schema}")

    def common_fit_args(p: argparse.ArgumentParser) -> None:
        p.add_argument("--input", required=True, help="CSV/Parquet file, Delta path, or table name")
        p.add_argument("--schema", required=True, help="schema file (.json as in the shared data, or .yaml)")
        p.add_argument("--engine", default="auto", help="synthesis engine (default: auto, which picks one from the "
                                                            "schema's width and whether torch is installed, and says "
                                                            "which; the engines are listed below)")
        p.add_argument("--epsilon", required=True, type=float, help="privacy budget epsilon > 0")
        p.add_argument("--delta", required=True, type=float, help="privacy budget delta in (0, 1), e.g. 1e-9")
        p.add_argument("--out-of-domain", default="clip", choices=["clip", "error"],
                       help="values outside the schema: clip numbers / null unknown categories (default), or error")
        p.add_argument("--engine-option", action="append", default=[], metavar="KEY=VALUE",
                       help="an engine option, repeatable (e.g. --engine-option components=64; see docs/splice.md)")
        p.add_argument("--dataset-id", default=None, metavar="ID",
                       help="the table's budget ledger this fit is charged to when MLflow is on, refused past its "
                            "cap (default: the input; see `spark-synth budget --source-table ID`)")
        p.add_argument("--privacy-unit", default=None, metavar="COLUMN",
                       help="person-level privacy: the guarantee protects each value of COLUMN (a customer, a "
                            "patient) with all its rows, not one row; needs --max-rows-per-unit (docs/privacy.md)")
        p.add_argument("--max-rows-per-unit", default=None, type=whole_number, metavar="K",
                       help="with --privacy-unit: the most rows of one unit the fit keeps, chosen at random "
                            "(public; noise grows with K)")

    def common_out_args(p: argparse.ArgumentParser) -> None:
        p.add_argument("--rows", required=True, type=whole_number,
                       help=f"number of synthetic rows to write, e.g. 10000, 1e6 or 1_000_000 (at most {MAX_ROWS:,})")
        p.add_argument("--output", required=True,
                       help="output: *.csv, *.parquet or a Delta folder when it holds a '/' (./synthetic), else a "
                            "catalog table (db.table); stderr and the JSON's output_kind say which")
        p.add_argument("--seed", type=whole_number, default=None, help="sampling seed, 0 to 2^63-1 (default: random, reported)")
        p.add_argument("--overwrite", action="store_true", help="replace an existing output")
        p.add_argument("--where", default=None, metavar="CONDITION",
                       help="only rows that satisfy CONDITION, drawn exactly from the model given it (no budget), e.g. "
                            "\"defaulted = 'Yes' AND age >= 65\": =, !=, <, <=, >, >=, IN (...), BETWEEN ... AND ..., "
                            "IS [NOT] NULL, joined by AND (docs/sampling.md)")
        p.add_argument("--rows-per", default=None, metavar="COLUMN",
                       help="give each value of categorical COLUMN its model share of --rows, exactly (with --where: "
                            "its share among the rows that satisfy it)")

    def common_env_args(p: argparse.ArgumentParser, mlflow_help: str | None = None) -> None:
        p.add_argument("--spark-profile", default="local", help="Spark profile (packaged: local, cluster; $SPARK_SYNTH_CONF/spark overrides) or a YAML path")
        p.add_argument("--mlflow", action=argparse.BooleanOptionalAction, default=True,
                       help=mlflow_help or "log the run to MLflow ($MLFLOW_TRACKING_URI or a local SQLite store)")

    engines = engines_help()
    run = commands.add_parser("run", help="fit and write synthetic rows", description="Fit a DP synthesizer and write N rows.",
                              epilog=engines, formatter_class=argparse.RawDescriptionHelpFormatter)
    common_fit_args(run)
    common_out_args(run)
    common_env_args(run)
    run.add_argument("--evaluate", action="store_true",
                     help="split the input (deterministic train/hold-out), fit on train only, then evaluate the "
                          "output (NOT private; writes metrics.json + report.html, logs them to their own MLflow "
                          "run nested under the fit's)")
    run.add_argument("--evaluate-out", default=None, help="evaluation directory (default: OUTPUT_evaluation beside a path output)")
    run.add_argument("--target", default=None, help="target column for TSTR/TRTR (default: the schema's target)")
    run.add_argument("--holdout-fraction", type=float, default=0.2, help="share of real rows held out (default 0.2)")
    run.add_argument("--split-seed", type=int, default=0, help="seed of the deterministic train/hold-out split (default 0)")

    fit = commands.add_parser("fit", help="fit and save a synthesizer", description="Fit a DP synthesizer and save it.",
                              epilog=engines, formatter_class=argparse.RawDescriptionHelpFormatter)
    common_fit_args(fit)
    fit.add_argument("--model", required=True, help="directory to save the fitted synthesizer in")
    common_env_args(fit)

    sample = commands.add_parser("sample", help="sample from a saved synthesizer (no budget)",
                                 description="Write N rows from a saved synthesizer or an MLflow model; spends no "
                                             "privacy budget.")
    sample.add_argument("--model", required=True,
                        help="directory of a synthesizer saved by `fit`, or an MLflow model URI: models:/NAME/VERSION, "
                             "models:/NAME@ALIAS, runs:/RUN_ID/model (a Delta output then also records the model and "
                             "its resolved version)")
    common_out_args(sample)
    common_env_args(sample, mlflow_help="sampling logs nothing to MLflow; --no-mlflow is accepted (as by run and fit) "
                                        "and refuses an MLflow model URI in --model, which is read from MLflow")

    ev = commands.add_parser("evaluate", help="evaluate a synthetic table against the real one (not private)",
                             description="Compare a synthetic table with the real one: marginal TVD, sliced Wasserstein, "
                                         "MMD, association structure, TSTR vs TRTR, privacy proxies. NOT private: it "
                                         "reads real rows. Writes metrics.json and report.html to --out.")
    ev.add_argument("--real", required=True, help="real table: CSV/Parquet file, Delta path, or table name")
    ev.add_argument("--synthetic", required=True, help="synthetic table: CSV/Parquet file, Delta path, or table name")
    ev.add_argument("--schema", required=True, help="schema file (.json or .yaml)")
    ev.add_argument("--target", default=None, help="target column for TSTR/TRTR (default: the schema's target)")
    ev.add_argument("--out", required=True, help="directory for metrics.json and report.html")
    ev.add_argument("--holdout", default=None,
                    help="real rows the synthesizer never saw; then --real is the train part. Default: split --real "
                         "deterministically (the synthesizer must have been fit on its train part, as run --evaluate does)")
    ev.add_argument("--holdout-fraction", type=float, default=0.2, help="share of --real held out when --holdout is absent")
    ev.add_argument("--seed", type=int, default=0, help="seed of the split, samples and projections (default 0)")
    ev.add_argument("--privacy-report", default=None,
                    help="privacy_report.json of the fit, or a saved synthesizer directory (shown in the report)")
    ev.add_argument("--mlflow-run-id", default=None,
                    help="log into this existing MLflow run, or into a new run nested under it when it holds a fit "
                         "(default: a new run)")
    ev.add_argument("--overwrite", action="store_true", help="replace metrics.json/report.html in --out")
    common_env_args(ev)

    rel = commands.add_parser(
        "release", help="register a fitted model in the MLflow registry (budget-checked)",
        description="Register the synthesizer model of a `fit`/`run` MLflow run as a new model version, tagged "
                    "with its privacy metadata and evaluation metrics, and add its spend to the source table's "
                    "cumulative budget. Refused for runs without a complete privacy report, and past the cap.")
    rel.add_argument("--run-id", required=True, help="the mlflow_run_id printed by `spark-synth fit` or `run`")
    rel.add_argument("--name", required=True, help="registered model name (catalog.schema.model in Unity Catalog)")
    budget_args(rel)
    rel.add_argument("--allow-non-dp", action="store_true",
                     help="release a fit that is NOT covered by the DP guarantee (e.g. dgm validator=real); "
                          "without it such a fit is refused. The version is tagged spark_synth.dp=false")
    rel.add_argument("--alias", default=None,
                     help="point this registered-model alias (e.g. champion) at the new version, moving it from any "
                          "earlier one; load it as models:/NAME@ALIAS (aliases replace the deprecated stages)")
    rel.add_argument("--metrics", default=None,
                     help="JSON file of evaluation metrics to tag the version with (eval_* run metrics are added anyway)")

    bud = commands.add_parser("budget", help="show or cap a source table's cumulative privacy spend",
                              description="Show the cumulative privacy spend of a source table (its charged fits, "
                                          "releases and schema pre-passes); --budget-cap with --cap-delta sets its cap. "
                                          "The ledger is in $MLFLOW_TRACKING_URI, else ~/.spark-synth/mlflow.db "
                                          "($SPARK_SYNTH_HOME/mlflow.db when set; the workspace on Databricks): "
                                          "the JSON's 'store'.")
    budget_args(bud, source_required=True)
    schema_args(commands, common_env_args)
    _add_debug_flag(parser)
    return parser


_DEBUG_HELP = ("show DEBUG records and full Python/Java stack traces on stderr; that output is NOT covered by the "
               "DP guarantee (it may show timings and data-dependent values)")


def _add_debug_flag(parser: argparse.ArgumentParser, top: bool = True) -> None:
    """``--debug`` before or after any (sub)command: ``spark-synth --debug run ...`` = ``spark-synth run --debug ...``."""
    parser.add_argument("--debug", action="store_true", default=False if top else argparse.SUPPRESS, help=_DEBUG_HELP)
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                _add_debug_flag(sub, top=False)


_SCHEMA_INIT = """\
Draft a schema file (commented YAML) for a table. Without --dp-bounds only the table's declared
column names and storage types are read, never its values: integer/floating-point, date,
timestamp and timestamp_ntz columns get TODO bounds, string columns TODO categories, and a CSV's
columns (all text) `type: TODO`. Fill
the TODOs from public knowledge; `spark-synth run` refuses a schema with a TODO left, naming
the column. Everything in the file is treated as public.

With --dp-bounds EPSILON a differentially private pre-pass reads the values: numeric bounds by a
noisy histogram over powers of two (coarse to fine; bounds to check are named on stderr and in the file),
date and timestamp bounds by DP quantiles (dates on a public grid of days, timestamps of hours), categories by a DP thresholded count (a category is kept only if its noisy count clears
a threshold set by --dp-delta), and a CSV column's type by DP counts of numeric vs other values.
It is (EPSILON, DP_DELTA)-DP; its cost (rho, delta) is written in the file and, with MLflow on,
charged to the table's budget ledger, and its thresholding delta is added to every fit that uses
the schema."""


def schema_args(commands, common_env_args) -> None:
    """The ``schema`` command and its ``init`` subcommand."""
    schema = commands.add_parser("schema", help="draft a schema file for a table",
                                 description="Schema tools: `spark-synth schema init --input IN --output schema.yaml`.")
    actions = schema.add_subparsers(dest="schema_command", required=True, metavar="{init}")
    typing = """

A CSV declares no types: give them with --types "age INT, income DOUBLE, joined DATE" (a Spark DDL,
or @FILE holding one; some or all columns — the rest stay `type: TODO`), or let a DP pass decide
them with --dp-types EPSILON (integer, continuous, 0/1, ISO date, true/false or text; charged like
--dp-bounds, which decides them too, in its own pass)."""
    init = actions.add_parser("init", help="draft a schema from declared types (optionally DP bounds/categories)",
                              description=_SCHEMA_INIT + typing, formatter_class=argparse.RawDescriptionHelpFormatter)
    init.add_argument("--input", required=True, help="CSV/Parquet file, Delta path, or table name")
    init.add_argument("--output", required=True, help="schema file to write (.yaml); written atomically")
    init.add_argument("--columns", action="append", default=None, metavar="A,B,...",
                      help="only these columns (comma-separated, repeatable; default: all)")
    init.add_argument("--exclude", action="append", default=None, metavar="A,B,...",
                      help="leave these columns out (comma-separated, repeatable)")
    init.add_argument("--dp-bounds", type=float, default=None, metavar="EPSILON",
                      help="spend EPSILON on a DP pre-pass estimating types, bounds and categories (charged)")
    init.add_argument("--types", default=None, metavar="DDL",
                      help='a CSV\'s column types as a Spark DDL ("age INT, joined DATE") or @FILE; unlisted columns stay TODO')
    init.add_argument("--dp-types", type=float, default=None, metavar="EPSILON",
                      help="spend EPSILON on a DP pass deciding only the types of a CSV's untyped columns (charged)")
    init.add_argument("--dp-delta", type=float, default=None,
                      help="delta of the pre-pass (default 1e-9): half for the rho conversion, half for thresholding")
    init.add_argument("--dataset-id", default=None, metavar="ID",
                      help="the budget ledger the pre-pass is charged to when MLflow is on (default: the input)")
    init.add_argument("--privacy-unit", default=None, metavar="COLUMN",
                      help="the column that identifies a person: left out of the schema; with a DP pre-pass it runs "
                           "per person (needs --max-rows-per-unit), so `run --privacy-unit COLUMN` may use the schema")
    init.add_argument("--max-rows-per-unit", default=None, type=whole_number, metavar="K",
                      help="with --privacy-unit and a DP pre-pass: the most rows of one unit it reads (public)")
    init.add_argument("--overwrite", action="store_true", help="replace an existing schema file")
    common_env_args(init)


def budget_args(p: argparse.ArgumentParser, source_required: bool = False) -> None:
    p.add_argument("--source-table", required=source_required, default=None,
                   help="the source table (name or path) whose budget is charged (default: the one the run was fitted on)")
    p.add_argument("--budget-cap", type=float, default=None,
                   help="set the table's cumulative cap epsilon (kept for later releases; ρ-zCDP composition)")
    p.add_argument("--cap-delta", type=float, default=None, help="delta the cap is stated at (default: the fit's delta)")
    p.add_argument("--ledger-prefix", default=None,
                   help="prefix of the per-table ledger experiments (default: $SPARK_SYNTH_LEDGER_PREFIX or spark-synth-budget:)")
