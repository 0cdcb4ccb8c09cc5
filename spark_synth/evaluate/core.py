"""``evaluate``: how close a synthetic table is to the real one, how useful, and how much it exposes.

NOT PRIVATE. Evaluation reads real rows (the train part the synthesizer saw, and a hold-out part it
never saw); its metrics and report are *not* covered by the differential-privacy guarantee and must
not be released as if they were.

Scale: marginal counts, association statistics and sliced-Wasserstein histograms are distributed
Spark aggregations (the driver receives small arrays over the public domain). Only the kernel MMD,
the learners (TSTR/TRTR) and the privacy proxies work on samples, bounded by ``mmd_rows``,
``utility_rows`` and ``privacy_rows`` whatever the tables' sizes.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .._version import __version__
from ..errors import OutputError, ParameterError
from ..measure import check_structure
from ..privacy.report import PrivacyReport
from ..schema import Schema, load_schema
from . import association, distance, fidelity, privacy, profile, utility
from .encoding import PublicEncoder
from .progress import Progress
from .split import check_seed, hash_sample, train_holdout_split

NOT_PRIVATE_NOTE = (
    "NOT PRIVATE: this evaluation reads real rows (train and hold-out parts); its metrics and report are "
    "not covered by the differential-privacy guarantee of the synthetic table."
)
METRICS_FILE = "metrics.json"
REPORT_FILE = "report.html"


@dataclass
class Evaluation:
    """The outcome of :func:`evaluate`: JSON-able ``metrics`` and the arrays the report plots."""

    metrics: dict
    schema: Schema
    details: dict = field(default_factory=dict, repr=False)

    def flat_metrics(self) -> dict[str, float]:
        """Numeric metrics flattened to ``eval.<group>.<name>`` keys (for MLflow)."""
        out: dict[str, float] = {}

        def walk(prefix: str, value) -> None:
            if isinstance(value, dict):
                for k, v in value.items():
                    if k in ("by_column", "matrix_real", "matrix_synthetic", "timings_s", "columns"):
                        continue
                    walk(f"{prefix}.{k}", v)
            elif isinstance(value, (int, float)) and not isinstance(value, bool) and value is not None and np.isfinite(value):
                out[prefix] = float(value)

        for group in ("rows", "marginals", "distance", "association", "utility", "privacy_proxies", "privacy_budget"):
            if group in self.metrics:
                walk(f"eval.{group}", self.metrics[group])
        return out

    def write(self, out_dir: str | Path, overwrite: bool = False) -> dict[str, str]:
        """Write ``metrics.json`` and the self-contained ``report.html`` into ``out_dir``."""
        from .report import render_report

        out = check_out_dir(out_dir, overwrite)
        out.mkdir(parents=True, exist_ok=True)
        metrics_path, report_path = out / METRICS_FILE, out / REPORT_FILE
        tmp = out / f".{METRICS_FILE}.tmp"
        tmp.write_text(json.dumps(self.metrics, indent=2, default=_json_default), encoding="utf-8")
        tmp.replace(metrics_path)
        tmp = out / f".{REPORT_FILE}.tmp"
        tmp.write_text(render_report(self), encoding="utf-8")
        tmp.replace(report_path)
        return {"metrics": str(metrics_path.resolve()), "report": str(report_path.resolve())}


def check_out_dir(out_dir: str | Path, overwrite: bool = False) -> Path:
    """Fail early if the evaluation output directory cannot be written."""
    if not isinstance(out_dir, (str, Path)) or not str(out_dir).strip():
        raise ParameterError("out", "a directory path", out_dir)
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise OutputError(f"evaluation output '{out}' is a file; pass a directory")
    if not overwrite and any((out / f).exists() for f in (METRICS_FILE, REPORT_FILE)):
        raise OutputError(f"evaluation output '{out}' already holds {METRICS_FILE}/{REPORT_FILE}; choose another directory or pass --overwrite")
    ancestor = out.resolve()
    while not ancestor.exists():
        ancestor = ancestor.parent
    import os

    if not os.access(ancestor, os.W_OK | os.X_OK):
        raise OutputError(f"evaluation output '{out}' cannot be created: '{ancestor}' is not writable")
    return out


def _json_default(value):
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, (np.floating, np.integer)):
        return value.item()
    return str(value)


def _check_count(value, name: str, minimum: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ParameterError(name, f"a whole number >= {minimum}", value)
    return value


def evaluate(real, synthetic, schema: Schema | str | Path, *, target: str | None = None, holdout=None,
             holdout_fraction: float = 0.2, seed: int = 0, numeric_bins: int | None = fidelity.DEFAULT_NUMERIC_BINS,
             max_triples: int = fidelity.DEFAULT_MAX_TRIPLES, projections: int = profile.DEFAULT_PROJECTIONS,
             mmd_rows: int = 2_000, utility_rows: int = 30_000, privacy_rows: int = 5_000,
             privacy_report: PrivacyReport | None = None, progress: bool = True, table: str | None = None) -> Evaluation:
    """Compare a synthetic Spark DataFrame with the real one. **Not private** (reads real rows).

    ``real`` is the real table. When ``holdout`` is None it is split deterministically with
    :func:`train_holdout_split` (``holdout_fraction``, ``seed``) and the synthesizer must have been fit on
    the train part only (``spark-synth run --evaluate`` does this); otherwise ``real`` is the train part
    and ``holdout`` the rows the synthesizer never saw. Fidelity compares the synthetic table with the
    train part; utility scores on the hold-out part; privacy proxies compare both.

    ``target`` (default: the schema's) enables TSTR/TRTR; without one, utility is skipped.
    ``privacy_report`` (the fit's :class:`~spark_synth.privacy.PrivacyReport`) is shown in the report when given.
    ``table`` names the real table in the report's title and ``metrics['table']`` (default: the name of
    the files ``real`` was read from, else the schema's ``name``).

    Every measure is set beside two baselines computed from the real rows (no budget is spent; like
    the rest of the evaluation they are not private): the real hold-out part (what rows the
    synthesizer never saw score: the target) and the *independent reference* (every column drawn on
    its own from the real train part's marginals: what the ``independent`` engine would give with no
    noise, the floor a model of the columns' relations should beat).
    """
    schema = schema if isinstance(schema, Schema) else load_schema(schema)
    seed = check_seed(seed)
    for name, value in (("projections", projections), ("mmd_rows", mmd_rows), ("utility_rows", utility_rows),
                        ("privacy_rows", privacy_rows)):
        _check_count(value, name, 2 if name != "projections" else 1)
    if target is not None or schema.target is not None:
        target = utility.check_target(schema, target)
    for name, df in (("real", real), ("synthetic", synthetic), ("holdout", holdout)):
        if df is not None:
            try:
                check_structure(df, schema)
            except Exception as exc:
                raise type(exc)(f"{name} table: {exc}") from None
    if holdout is None:
        train, holdout = train_holdout_split(real, holdout_fraction, seed)
        split = {"mode": "split", "holdout_fraction": holdout_fraction, "seed": seed}
    else:
        train = real
        split = {"mode": "given"}
    columns = list(schema.names)
    train, holdout, synthetic = (df.select(*[f"`{c}`" for c in columns]) for df in (train, holdout, synthetic))
    eval_schema = fidelity.evaluation_schema(schema, numeric_bins)
    table = _check_table(table) if table is not None else (table_name_of(real) or schema.name or "table")
    steps = Progress(9 if target else 8, enabled=progress)
    details: dict = {"privacy_report": privacy_report}

    # 1-3. Marginal counts (one distributed pass per table; the hold-out's are a baseline).
    sets = fidelity.column_sets(eval_schema, max_triples, seed)
    real_counts = steps.run("marginal counts of the real train part", fidelity.count_all, train, eval_schema, sets)
    synth_counts = steps.run("marginal counts of the synthetic table", fidelity.count_all, synthetic, eval_schema, sets)
    holdout_counts = steps.run("marginal counts of the real hold-out part", fidelity.count_all, holdout, eval_schema, sets)
    marginals = fidelity.marginal_fidelity(real_counts, synth_counts, sets)
    marginals["numeric_bins"] = numeric_bins
    holdout_fidelity = fidelity.marginal_fidelity(real_counts, holdout_counts, sets)
    holdout_fidelity["1way"].pop("by_column", None)
    synthetic_rows = int(sum(synth_counts[s].sum() for s in sets[1][:1])) if sets[1] else None
    marginals["baselines"] = {"holdout": holdout_fidelity,
                              "independent": fidelity.independent_fidelity(real_counts, sets, synthetic_rows or None, seed)}
    marginals["hierarchy"] = fidelity.hierarchy_fidelity(eval_schema, real_counts, synth_counts)
    details["one_way"] = {s[0]: (real_counts[s], synth_counts[s]) for s in sets[1]}
    details["one_way_holdout"] = {s[0]: holdout_counts[s] for s in sets[1]}
    details["eval_schema"] = eval_schema

    # 4-5. Moments and projection histograms (one distributed pass per table).
    plan = profile.make_plan(schema, projections, seed=seed)
    real_stats = steps.run("moments and projections of the real train part", profile.table_stats, train, plan)
    synth_stats = steps.run("moments and projections of the synthetic table", profile.table_stats, synthetic, plan)
    pair_counts = {s: real_counts[s] for s in sets[2]}
    synth_pairs = {s: synth_counts[s] for s in sets[2]}
    matrix_real = association.association_matrix(eval_schema, pair_counts, real_stats)
    matrix_synth = association.association_matrix(eval_schema, synth_pairs, synth_stats)
    assoc = association.association_difference(matrix_real, matrix_synth, columns)
    assoc.update({"columns": columns, "matrix_real": matrix_real, "matrix_synthetic": matrix_synth})
    details["association"] = (matrix_real, matrix_synth)

    # 6. Bounded, content-hashed samples (same salt for train and synthetic: equal tables, equal samples).
    n_sample = max(mmd_rows, utility_rows if target else 0, privacy_rows)

    def samples():
        return (hash_sample(train, n_sample, seed), hash_sample(holdout, n_sample, seed + 1),
                hash_sample(synthetic, n_sample, seed))

    train_pd, holdout_pd, synth_pd = steps.run("bounded samples of train, hold-out and synthetic rows", samples)
    holdout_rows = int(holdout.count())
    encoder = PublicEncoder(schema)
    enc_train, enc_holdout, enc_synth = (encoder.transform(f) for f in (train_pd, holdout_pd, synth_pd))

    # 7. Distances.
    def distances():
        return {**distance.sliced_wasserstein(real_stats, synth_stats, plan),
                **distance.mmd(enc_train[:mmd_rows], enc_synth[:mmd_rows])}

    dist = steps.run("sliced Wasserstein and kernel MMD", distances)

    # 8. Utility.
    util = None
    if target:
        util = steps.run("utility: TSTR vs TRTR and the independent reference (3 learners, 3 times)", utility.utility, train_pd.iloc[:utility_rows],
                         holdout_pd.iloc[:utility_rows], synth_pd.iloc[:utility_rows], schema, target, seed)

    # 9. Privacy proxies.
    proxies = steps.run("privacy proxies (DCR, membership inference, identification risk and its baselines)", privacy.privacy_proxies,
                        enc_train[:privacy_rows], enc_holdout[:privacy_rows], enc_synth[:privacy_rows], encoder.slices, seed)
    details["dcr"] = (proxies.pop("_dcr_train", None), proxies.pop("_dcr_holdout", None))

    metrics = {
        "not_private": NOT_PRIVATE_NOTE,
        "spark_synth_version": __version__,
        "table": table,
        "schema": schema.name,
        "target": target,
        "seed": seed,
        "split": split,
        "rows": {"real_train": int(real_stats.rows), "real_holdout": holdout_rows, "synthetic": int(synth_stats.rows)},
        "marginals": marginals,
        "distance": dist,
        "association": assoc,
        "utility": util if util is not None else {"skipped": "no target: pass --target or set 'target' in the schema"},
        "privacy_proxies": proxies,
        "privacy_budget": _budget_summary(privacy_report),
        "timings_s": {k: round(v, 3) for k, v in steps.timings.items()},
    }
    return Evaluation(metrics=metrics, schema=schema, details=details)


def _check_table(table) -> str:
    if not isinstance(table, str) or not table.strip():
        raise ParameterError("table", "the real table's name (a non-empty string)", table)
    return table.strip()


_DATA_SUFFIXES = (".csv", ".parquet", ".delta", ".json", ".orc", ".txt", ".gz", ".snappy")


def table_label(source: str) -> str:
    """A short name for an input: a table name as given; a file or folder by its last path part,
    without its data extension (``/data/adult_sample.csv`` → ``adult_sample``)."""
    text = str(source).rstrip("/")
    last = text.rsplit("/", 1)[-1] or text
    stem = last
    while stem.lower().endswith(_DATA_SUFFIXES) and "." in stem[1:]:
        stem = stem[: stem.rfind(".")]
    return stem or last


def table_name_of(df) -> str | None:
    """The name of the table a DataFrame was read from, from its input files (a single file: its
    name; a folder, Delta or catalog table: its folder, above any ``key=value`` partition folders);
    None when it was not read from files (e.g. built in memory) or they cannot be listed."""
    import os
    import re
    from urllib.parse import unquote, urlparse

    try:
        files = [unquote(urlparse(f).path) or f for f in df.inputFiles()]
    except Exception:  # noqa: BLE001 - a name for a title only: any failure means "unknown"
        return None
    if not files:
        return None
    if len(files) == 1 and not os.path.basename(files[0]).startswith("part-"):
        path = files[0]
    else:
        path = os.path.commonpath([os.path.dirname(f) for f in files]) if len(files) > 1 else os.path.dirname(files[0])
    while re.fullmatch(r"[^=/]+=[^/]*", os.path.basename(path) or ""):
        path = os.path.dirname(path)
    name = table_label(path)
    return name or None


def _budget_summary(report: PrivacyReport | None) -> dict | None:
    if report is None:
        return None
    return {"epsilon_requested": report.epsilon_requested, "epsilon_spent": report.epsilon_spent,
            "delta": report.delta, "rho_spent": report.rho_spent, "n_releases": len(report.entries)}


def load_privacy_report(path: str | Path) -> PrivacyReport:
    """A privacy report from ``privacy_report.json`` (MLflow artifact) or a saved synthesizer directory."""
    path = Path(path)
    if path.is_dir():
        path = path / "synthesizer.json"
    if not path.is_file():
        raise ParameterError("privacy-report", "a privacy_report.json file or a saved synthesizer directory", str(path))
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ParameterError("privacy-report", "a JSON file", f"{path} ({exc.msg})") from None
    report = raw.get("privacy", raw) if isinstance(raw, dict) else None
    if not isinstance(report, dict) or "epsilon_spent" not in report:
        raise ParameterError("privacy-report", "a spark-synth privacy report (with 'epsilon_spent')", str(path))
    return PrivacyReport.from_dict(report, f"the privacy report in '{path}'")
