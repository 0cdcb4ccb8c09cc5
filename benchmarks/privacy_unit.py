"""Person-level privacy (issue 49, item 5): utility against K on a many-rows-per-unit table, and the
time of the contribution-bounding step at 10 M rows (prints Markdown tables; never asserts).

The table (public and seeded: built from the shared ``adult.csv``, nothing else). Customers have
skewed row counts: each unit's count is drawn from a discrete power law P(n) ∝ n^-α on 1..500
(``--alpha``, default 1.7: mean ≈ 9.2 rows, median 2, 99th percentile ≈ 173, 44 % of the rows in
units of more than 100 rows — many one-off customers, a few heavy ones). Units are drawn until the
table has ``--rows`` rows (the last unit cut to fit). Each unit gets a base row, an adult row drawn
uniformly with replacement, and its rows are that person seen at different times:

* ``education``, ``education-num``, ``sex``, ``race``, ``native-country``, ``fnlwgt``: the base row's,
  in every row of the unit (who the person is);
* ``age``: the base row's plus a drift of 0–4 years per row (clipped to 90);
* ``workclass``, ``occupation``, ``hours-per-week``, ``capital-gain``, ``capital-loss``, ``income``
  (the job): with probability 0.3 per row taken together from a *donor*, else the base row's;
* ``marital-status``, ``relationship`` (the household): with probability 0.1 per row taken together
  from the same donor, else the base row's.

A row's donor is an adult row drawn uniformly from the base row's neighbourhood: the adult rows of
the same education, sex and age decade (the base row among them). So a unit's rows resemble each
other as a customer's do (the same person, the job and household changing now and then), the
blocks stay coherent (a donor's job fields come together; its household matches the base's sex),
and a heavy unit weighs its base row heavily in the row distribution — which bounding to K rows
per unit then reweights toward one row per unit at K = 1. A ``customer_id`` column (int64, the
unit's index) names the unit; rows are shuffled within each chunk of units (a table is not sorted
by customer). Everything is reproducible from ``--seed``.

**Utility against K.** The table is split by unit, seeded: 20 % of the units (all their rows) are
the hold-out, the rest the train split. Each fit reads the train split (Parquet, with
``customer_id``) in one Spark session (``spark_synth.session.get_spark``) through
``Synthesizer(engine, epsilon=ε, delta=δ, privacy_unit="customer_id", max_rows_per_unit=K)`` — what
``spark-synth run --privacy-unit customer_id --max-rows-per-unit K`` runs — for every K of ``--ks``,
and once more without a unit (the row-level fit, the unit column dropped: a DIFFERENT guarantee,
add/remove one row, which does not protect a customer with many rows). It draws as many rows as the
train split has (seed = run index) and scores them with the shared yardstick
``../shared/bench/harness.py`` (called, not copied): 2-/3-way TVD against the train split (all its
rows: the row distribution a user wants), TSTR on the unit hold-out (best of logistic, random
forest and XGBoost; AUROC). The floor row scores the hold-out itself as if it were synthetic (TRTR
as its TSTR). "rows kept" is the train split's Σ min(rows of the unit, K), and "kept rows' TVD (no
noise)" the 2-/3-way TVD of those rows themselves (``bound_contributions_frame``, salt = seed) against
the whole train split: the bias bounding alone adds, before any noise (both exact, outside DP: a
benchmark's statement). "passes": the fit's scans of the table (``measure_passes_``). Cells: mean ±
sample std over ``--runs`` fits (the DP noise is not seeded).

**The bounding step at 10 M rows.** ``--bound-rows`` rows of the same construction are written once
as Parquet (1 M-row files of 100 k-row row groups, streamed with pyarrow; cached under
$SPARK_SYNTH_HOME/bench/privacy_unit). In one session, alternately ``--repeats`` times: the table
scanned by a full action (``.write.format("noop")``), and ``bound_contributions(df, unit, salt)``
(``spark_synth.measure.bounding``: a window row_number over a salted xxhash64 of each row,
partitioned by unit) forced by the same action; the ratio of the two is the bounding step's cost
relative to one scan of the table. Then (``--bound-fit ENGINE …``, default fpt) one fit per engine on
that table, row level and at ``--bound-k``: fit seconds, measure seconds and passes — the bounded
DataFrame is recomputed by every pass.

    python benchmarks/privacy_unit.py                                   # both parts, defaults
    python benchmarks/privacy_unit.py --rows 200000 --runs 2 --ks 1 5 20 100 --engines fpt independent
    python benchmarks/privacy_unit.py --skip-bounding                   # utility only
    python benchmarks/privacy_unit.py --skip-utility --bound-rows 10000000 --repeats 2
"""

from __future__ import annotations

import argparse
import math
import shlex
import shutil
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute  # noqa: F401  (pa.compute)
import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness_runs import SHARED, mean_std  # noqa: E402
from in_process import harness  # noqa: E402
from scale import typed_frame  # noqa: E402

UNIT = "customer_id"
MAX_ROWS = 500
FIXED = ["education", "education-num", "sex", "race", "native-country", "fnlwgt"]
JOB = ["workclass", "occupation", "hours-per-week", "capital-gain", "capital-loss", "income"]
HOUSEHOLD = ["marital-status", "relationship"]
P_JOB, P_HOUSEHOLD, MAX_DRIFT = 0.3, 0.1, 4
NEIGHBOURHOOD = ["education", "sex"]  # and the age decade
TEST_FRACTION = 0.2
CHUNK_ROWS = 1_000_000


# ---------------------------------------------------------------------------------------------
# The many-rows-per-unit table
# ---------------------------------------------------------------------------------------------
def unit_sizes(rows: int, alpha: float, rng: np.random.Generator) -> np.ndarray:
    """Rows per unit, P(n) ∝ n^-alpha on 1..MAX_ROWS, drawn until they sum to ``rows`` (last one cut)."""
    n = np.arange(1, MAX_ROWS + 1)
    p = n ** -float(alpha)
    p /= p.sum()
    mean = float((n * p).sum())
    sizes = np.empty(0, dtype=np.int64)
    while sizes.sum() < rows:
        sizes = np.concatenate([sizes, rng.choice(n, size=int((rows - sizes.sum()) / mean * 1.1) + 16, p=p)])
    cut = int(np.searchsorted(np.cumsum(sizes), rows))  # the unit that reaches ``rows``
    sizes = sizes[:cut + 1].copy()
    sizes[-1] -= int(sizes.sum()) - rows
    return sizes


class Source:
    """adult typed as the schema says, with each row's neighbourhood (same education, sex, age decade)."""

    def __init__(self, csv: Path, schema: Path):
        self.frame, _ = typed_frame(csv, schema)
        key = [self.frame[c].astype("string").fillna("") for c in NEIGHBOURHOOD] + [(self.frame["age"] // 10).astype("string")]
        group = pd.MultiIndex.from_arrays(key).factorize()[0]
        self.order = np.argsort(group, kind="stable")
        counts = np.bincount(group)
        self.start = (np.cumsum(counts) - counts)[group]  # per adult row: its group's first slot in ``order``
        self.count = counts[group]

    def donors(self, base: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """A uniform adult row from each base row's neighbourhood."""
        return self.order[self.start[base] + (rng.random(len(base)) * self.count[base]).astype(np.int64)]


def unit_chunk(source: Source, sizes: np.ndarray, first_id: int, rng: np.random.Generator) -> pd.DataFrame:
    """The rows of units ``first_id`` … ``first_id + len(sizes) - 1`` (module docstring), shuffled."""
    base_of_unit = rng.integers(0, len(source.frame), len(sizes))
    unit = np.repeat(np.arange(len(sizes)), sizes)
    base = base_of_unit[unit]
    n = len(base)
    donor = source.donors(base, rng)
    job = np.where(rng.random(n) < P_JOB, donor, base)
    household = np.where(rng.random(n) < P_HOUSEHOLD, donor, base)
    columns = {UNIT: (first_id + unit).astype(np.int64)}
    for name in source.frame.columns:
        index = job if name in JOB else household if name in HOUSEHOLD else base
        columns[name] = source.frame[name].array.take(index)
    columns["age"] = pd.array(np.minimum(np.asarray(source.frame["age"].array.take(base), dtype=np.int64)
                                         + rng.integers(0, MAX_DRIFT + 1, n), 90), dtype="Int64")
    return pd.DataFrame(columns).iloc[rng.permutation(n)].reset_index(drop=True)


def unit_chunks(source: Source, rows: int, alpha: float, seed: int, chunk_rows: int = CHUNK_ROWS):
    """The table of ``rows`` rows as chunks of whole units of about ``chunk_rows`` rows each."""
    sizes = unit_sizes(rows, alpha, np.random.default_rng([seed, 0]))
    ends = np.cumsum(sizes)
    first, part = 0, 0
    while first < len(sizes):
        last = int(np.searchsorted(ends, (ends[first - 1] if first else 0) + chunk_rows, side="left")) + 1
        last = min(max(last, first + 1), len(sizes))
        yield unit_chunk(source, sizes[first:last], first, np.random.default_rng([seed, 1, part]))
        first, part = last, part + 1


def write_parquet(source: Source, rows: int, alpha: float, seed: int, folder: Path) -> Path:
    """The table as a Parquet folder (once: a ``_done`` marker), 1 M-row files of 100 k-row row groups."""
    if (folder / "_done").exists():
        return folder
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    for part, chunk in enumerate(unit_chunks(source, rows, alpha, seed)):
        pq.write_table(pa.Table.from_pandas(chunk, preserve_index=False), folder / f"part-{part:05d}.parquet",
                       row_group_size=100_000)
    (folder / "_done").touch()
    return folder


def size_stats(sizes: np.ndarray, ks: list[int]) -> dict:
    """Units, rows and the spread of rows per unit; share of rows kept at each K."""
    return {"units": len(sizes), "rows": int(sizes.sum()), "mean": float(sizes.mean()),
            "median": float(np.median(sizes)), "p90": float(np.percentile(sizes, 90)),
            "p99": float(np.percentile(sizes, 99)), "max": int(sizes.max()),
            "share_in_units_over_100": float(sizes[sizes > 100].sum() / sizes.sum()),
            "kept": {k: int(np.minimum(sizes, k).sum()) for k in ks}}


# ---------------------------------------------------------------------------------------------
# Utility against K
# ---------------------------------------------------------------------------------------------
def coded(frame: pd.DataFrame, bench_schema) -> "harness.Coded":
    """A frame coded as the harness codes a table (nulls as None)."""
    return harness.code_table(frame.astype(object).where(frame.notna(), None), bench_schema)


def split_by_unit(table: pd.DataFrame, seed: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(train, test): a seeded TEST_FRACTION of the units, with all their rows, is the test split."""
    units = np.unique(table[UNIT].to_numpy())
    perm = np.random.default_rng([seed, 2]).permutation(units)
    test_units = perm[:int(round(TEST_FRACTION * len(units)))]
    is_test = table[UNIT].isin(test_units).to_numpy()
    return table[~is_test].reset_index(drop=True), table[is_test].reset_index(drop=True)


def fit_and_score(spark, train_path: Path, schema, bench_schema, real_train, real_test, engine: str, k: int | None,
                  epsilon: float, delta: float, run: int) -> dict:
    """One fit (K None: row level, unit column dropped), as many rows as the train split, scored."""
    from spark_synth.pipeline import Synthesizer

    df = spark.read.parquet(str(train_path))
    if k is None:
        df = df.drop(UNIT)
        synth = Synthesizer(engine, epsilon=epsilon, delta=delta)
    else:
        synth = Synthesizer(engine, epsilon=epsilon, delta=delta, privacy_unit=UNIT, max_rows_per_unit=k)
    started = time.perf_counter()
    synth.fit(df, schema)
    fit_s = time.perf_counter() - started
    rows = synth.sample(real_train.n, seed=run).toPandas()
    syn = coded(rows, bench_schema)
    tvds = harness.marginal_tvds(real_train, syn, bench_schema)
    tstr = harness.ml_scores(syn, real_test, bench_schema)
    return {"engine": engine, "k": k, "run": run, "fit_s": fit_s, "passes": synth.measure_passes_, "tvd_2way": tvds["tvd_2way"],
            "tvd_3way": tvds["tvd_3way"], "tstr": tstr["best"], "relation": synth.privacy_report_.neighbouring_relation}


def cell(values: list[float], decimals: int) -> str:
    mean, std = mean_std(values)
    return f"{mean:.{decimals}f}" + ("" if math.isnan(std) else f" ± {std:.{decimals}f}")


def utility(args, source: Source, spark, work: Path) -> None:
    from spark_synth import load_schema
    from spark_synth.measure.bounding import bound_contributions_frame
    from spark_synth.privacy.unit import PrivacyUnit

    schema_path = Path(args.data) / "adult.schema.json"
    bench_schema = harness.Schema(schema_path)
    schema = load_schema(str(schema_path))
    table = pd.concat(list(unit_chunks(source, args.rows, args.alpha, args.seed)), ignore_index=True)
    train, test = split_by_unit(table, args.seed)
    train_path = work / f"units_{args.rows}_seed{args.seed}_train.parquet"
    shutil.rmtree(train_path, ignore_errors=True)
    train_path.mkdir(parents=True)
    pq.write_table(pa.Table.from_pandas(train, preserve_index=False), train_path / "part-00000.parquet",
                   row_group_size=50_000)
    sizes = train.groupby(UNIT).size().to_numpy()
    stats = size_stats(sizes, args.ks)
    test_units = test[UNIT].nunique()
    print(f"\n### The table: {len(table):,} rows, {table[UNIT].nunique():,} units (α = {args.alpha:g}, seed {args.seed}); "
          f"split by unit: train {len(train):,} rows / {stats['units']:,} units, hold-out {len(test):,} rows / "
          f"{test_units:,} units\n")
    print("| split | units | rows | rows per unit: mean | median | p90 | p99 | max | rows in units > 100 |")
    print("|---|---|---|---|---|---|---|---|---|")
    print(f"| train | {stats['units']:,} | {stats['rows']:,} | {stats['mean']:.1f} | {stats['median']:g} | {stats['p90']:g} | "
          f"{stats['p99']:g} | {stats['max']} | {stats['share_in_units_over_100']:.1%} |", flush=True)

    real_train, real_test = coded(train.drop(columns=UNIT), bench_schema), coded(test.drop(columns=UNIT), bench_schema)
    settings = [None] + list(args.ks)
    kept_tvds = {k: harness.marginal_tvds(real_train, coded(bound_contributions_frame(train, PrivacyUnit(UNIT, k), args.seed)
                                                           .drop(columns=UNIT), bench_schema), bench_schema) for k in args.ks}
    records = []
    for engine in args.engines:
        for k in settings:
            for run in range(args.runs):
                record = fit_and_score(spark, train_path, schema, bench_schema, real_train, real_test, engine, k,
                                       args.epsilon, args.delta, run)
                records.append(record)
                print(f"  {engine} {'row level' if k is None else f'K={k}'} run {run}: fit {record['fit_s']:.1f} s, "
                      f"2-way {record['tvd_2way']:.4f}, 3-way {record['tvd_3way']:.4f}, TSTR {record['tstr']:.4f}",
                      flush=True)

    floor = harness.marginal_tvds(real_train, real_test, bench_schema)
    trtr = harness.ml_scores(real_train, real_test, bench_schema)["best"]
    print(f"\n### Utility against K (ε = {args.epsilon:g}, δ = {args.delta:g}; {args.runs} fit(s) per cell, mean ± std; "
          f"TSTR: AUROC on the unit hold-out)\n")
    print("| engine | guarantee | K | rows kept (train) | kept rows' 2-way / 3-way TVD (no noise) | 2-way TVD | 3-way TVD "
          "| TSTR | fit s | passes |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for engine in args.engines:
        for k in settings:
            group = [r for r in records if r["engine"] == engine and r["k"] == k]
            guarantee = "one row (add/remove one row)" if k is None else f"one customer, ≤ {k} rows"
            kept = f"{stats['rows']:,} (all)" if k is None else f"{stats['kept'][k]:,} ({stats['kept'][k] / stats['rows']:.1%})"
            bias = "0 / 0" if k is None else f"{kept_tvds[k]['tvd_2way']:.4f} / {kept_tvds[k]['tvd_3way']:.4f}"
            print(f"| {engine} | {guarantee} | {'–' if k is None else k} | {kept} | {bias} | {cell([r['tvd_2way'] for r in group], 4)} | "
                  f"{cell([r['tvd_3way'] for r in group], 4)} | {cell([r['tstr'] for r in group], 4)} | "
                  f"{cell([r['fit_s'] for r in group], 1)} | {'/'.join(str(r['passes']) for r in group)} |")
    print(f"| floor (hold-out as synthetic) | – | – | – | – | {floor['tvd_2way']:.4f} | {floor['tvd_3way']:.4f} | "
          f"{trtr:.4f} (TRTR) | – | – |", flush=True)


# ---------------------------------------------------------------------------------------------
# The bounding step at 10 M rows
# ---------------------------------------------------------------------------------------------
def bounding(args, source: Source, spark, work: Path) -> None:
    from spark_synth.measure.bounding import bound_contributions
    from spark_synth.privacy.unit import PrivacyUnit

    started = time.perf_counter()
    folder = write_parquet(source, args.bound_rows, args.alpha, args.seed,
                           work / f"units_{args.bound_rows}_a{args.alpha:g}_seed{args.seed}.parquet")
    written = time.perf_counter() - started
    files = sorted(folder.glob("*.parquet"))
    rows = sum(pq.ParquetFile(f).metadata.num_rows for f in files)
    mib = sum(f.stat().st_size for f in files) / 2**20
    units = pa.compute.count_distinct(pq.read_table(folder, columns=[UNIT])[UNIT]).as_py()
    print(f"\n### The bounding step: {rows:,} rows, {units:,} units, {len(files)} Parquet files, {mib:.0f} MiB "
          f"(built or found in {written:.0f} s: {folder})\n")
    unit = PrivacyUnit(UNIT, args.bound_k)
    df = spark.read.parquet(str(folder))

    def noop(frame) -> float:
        t = time.perf_counter()
        frame.write.format("noop").mode("overwrite").save()
        return time.perf_counter() - t

    noop(df)  # warm-up: JVM classes, file listing, page cache (not reported)
    print(f"| repeat | scan (noop) s | bound_contributions (K = {args.bound_k}) + noop s | ratio |")
    print("|---|---|---|---|")
    scans, bounds = [], []
    for repeat in range(args.repeats):
        scans.append(noop(df))
        bounds.append(noop(bound_contributions(df, unit, salt=int.from_bytes(np.random.default_rng(repeat).bytes(7), "big"))))
        print(f"| {repeat + 1} | {scans[-1]:.1f} | {bounds[-1]:.1f} | {bounds[-1] / scans[-1]:.1f} × |", flush=True)
    print(f"| mean | {np.mean(scans):.1f} | {np.mean(bounds):.1f} | {np.mean(bounds) / np.mean(scans):.1f} × |")
    print(f"\nshuffle partitions {spark.conf.get('spark.sql.shuffle.partitions')}, AQE "
          f"{spark.conf.get('spark.sql.adaptive.enabled')}, master {spark.sparkContext.master}")
    if args.bound_fit:
        fits_at_scale(args, df, rows)


def fits_at_scale(args, df, rows: int) -> None:
    """One fit per engine of ``--bound-fit`` on the big table, row level and at ``--bound-k``: the
    bounding is part of every measurement pass (the bounded DataFrame is not persisted)."""
    from spark_synth import load_schema
    from spark_synth.pipeline import Synthesizer

    schema = load_schema(str(Path(args.data) / "adult.schema.json"))
    print(f"\n### One fit on the {rows:,}-row table (ε = {args.epsilon:g}; fit only, no sampling)\n")
    print("| engine | unit | fit s | measure s | passes | measure s per pass |")
    print("|---|---|---|---|---|---|")
    for engine in args.bound_fit:
        for k in (None, args.bound_k):
            if k is None:
                synth, data = Synthesizer(engine, epsilon=args.epsilon, delta=args.delta), df.drop(UNIT)
            else:
                synth, data = Synthesizer(engine, epsilon=args.epsilon, delta=args.delta, privacy_unit=UNIT,
                                          max_rows_per_unit=k), df
            started = time.perf_counter()
            synth.fit(data, schema)
            seconds = time.perf_counter() - started
            measure, passes = synth.timings_["measure"], synth.measure_passes_
            print(f"| {engine} | {'row level' if k is None else f'{UNIT}, K = {k}'} | {seconds:.1f} | {measure:.1f} | {passes} | "
                  f"{measure / max(passes, 1):.1f} |", flush=True)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=200_000, help="rows of the utility table (before the split)")
    parser.add_argument("--ks", type=int, nargs="+", default=[1, 5, 20, 100])
    parser.add_argument("--engines", nargs="+", default=["fpt", "independent"])
    parser.add_argument("--runs", type=int, default=2, help="fits per cell")
    parser.add_argument("--epsilon", type=float, default=1.0)
    parser.add_argument("--delta", type=float, default=1e-9)
    parser.add_argument("--alpha", type=float, default=1.7, help="power-law exponent of rows per unit")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--bound-rows", type=int, default=10_000_000)
    parser.add_argument("--bound-k", type=int, default=20, help="K of the timed bounding step")
    parser.add_argument("--repeats", type=int, default=2, help="scan / bound pairs timed")
    parser.add_argument("--bound-fit", nargs="*", default=["fpt"], metavar="ENGINE",
                        help="engines fitted once on the big table, row level and at --bound-k (none: skip)")
    parser.add_argument("--skip-utility", action="store_true")
    parser.add_argument("--skip-bounding", action="store_true")
    parser.add_argument("--data", default=str(SHARED / "data"))
    args = parser.parse_args(argv)

    from spark_synth.errors import UnrecordedSpendWarning
    from spark_synth.session import get_spark, spark_synth_home

    warnings.filterwarnings("ignore", category=UnrecordedSpendWarning)  # benchmark fits: no ledger
    print(f"command: python {' '.join(shlex.quote(a) for a in sys.argv)}", flush=True)
    work = spark_synth_home() / "bench" / "privacy_unit"
    work.mkdir(parents=True, exist_ok=True)
    source = Source(Path(args.data) / "adult.csv", Path(args.data) / "adult.schema.json")
    spark = get_spark()
    if not args.skip_utility:
        utility(args, source, spark, work)
    if not args.skip_bounding:
        bounding(args, source, spark, work)
    return 0


if __name__ == "__main__":
    sys.exit(main())
