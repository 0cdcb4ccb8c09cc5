"""SPLICE measurement throughput and scaling (prints tables; never asserts on time).

    python benchmarks/splice_scaling.py [--data ../shared/data] [--sizes 50000 500000 5000000]

(a) throughput: the distributed Spark moment pass vs a single-process pass of the same kernel over
    the same rows (adult), printed as a ratio, and the dense numpy reference for comparison;
(b) scaling: measurement time and fit (Match) time for each table size (adult rows resampled with
    replacement, written once as Parquet under $SPARK_SYNTH_HOME/bench). Fit time depends only on
    the model and the number of moments, so it should stay flat in n.
Default SPLICE options; ε = 1, δ = 1e-9.
"""

from __future__ import annotations

import argparse
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd

from spark_synth import Synthesizer, get_spark, load_schema
from spark_synth.engines import SpliceEngine
from spark_synth.engines.splice.engine import encoding_knots
from spark_synth.measure import chebyshev_fixed_point_sums, measure_moment_sums, moment_kernel
from spark_synth.measure.answers import answer_frame
from spark_synth.schema import OutOfDomainPolicy
from spark_synth.schema.embedding import Embedding
from spark_synth.session import spark_synth_home

ROOT = Path(__file__).resolve().parents[1]


def resampled(spark, frame: pd.DataFrame, rows: int, folder: Path):
    path = folder / f"adult_{rows}.parquet"
    if not path.exists():
        rng = np.random.default_rng(rows)
        chunk = 500_000
        parts = []
        for start in range(0, rows, chunk):
            take = frame.iloc[rng.integers(0, len(frame), min(chunk, rows - start))]
            parts.append(take)
        out = pd.concat(parts, ignore_index=True)
        path.parent.mkdir(parents=True, exist_ok=True)
        out.to_parquet(path, index=False)
    return spark.read.parquet(str(path))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", default=str(ROOT.parent / "shared" / "data"))
    parser.add_argument("--sizes", type=int, nargs="+", default=[50_000, 500_000, 5_000_000])
    args = parser.parse_args()
    spark = get_spark(extra_conf={"spark.master": "local[2]", "spark.sql.shuffle.partitions": "4"})
    schema = load_schema(Path(args.data) / "adult.schema.json")
    frame = pd.read_csv(Path(args.data) / "adult.csv", dtype=str, keep_default_na=False, na_values=[""])
    query = SpliceEngine().moment_query(schema, None)
    # the default query is adaptive (numeric columns encoded through knots from the DP histograms):
    # complete it with knots from uniform histograms, so both passes run the piecewise-linear encoding
    uniform = [np.full(c.size, 1.0 / c.size) for c in schema]
    query = replace(query, value_knots=encoding_knots(schema, uniform, SpliceEngine().options.quantile_encoding))
    print(f"moments: {query.n_directions} directions x degree {query.degree}")

    # (a) throughput on the same rows
    df = spark.createDataFrame(frame.astype(object).where(frame.notna(), None)).cache()
    df.count()
    measure_moment_sums(df, schema, query, OutOfDomainPolicy.CLIP)  # warm up the Python workers
    started = time.perf_counter()
    spark_sums = measure_moment_sums(df, schema, query, OutOfDomainPolicy.CLIP)
    spark_seconds = time.perf_counter() - started
    typed = df.toPandas()  # the rows as the Spark pass sees them (typed columns, not CSV strings)
    started = time.perf_counter()
    (single_sums,) = answer_frame(typed, schema, [query], OutOfDomainPolicy.CLIP)
    single_seconds = time.perf_counter() - started
    started = time.perf_counter()
    x, _ = Embedding(schema, query.value_knots).embed(typed, OutOfDomainPolicy.CLIP)
    reference_sums = chebyshev_fixed_point_sums(x, query)
    reference_seconds = time.perf_counter() - started
    assert np.array_equal(spark_sums, single_sums) and np.array_equal(spark_sums, reference_sums)
    print(f"\n(a) throughput, adult ({len(frame):,} rows, cached DataFrame vs in-memory pandas; compiled kernel: {moment_kernel.COMPILED})")
    print("| pass | seconds | rows/s |\n|---|---|---|")
    print(f"| Spark (local[2]) | {spark_seconds:.2f} | {len(frame) / spark_seconds:,.0f} |")
    print(f"| same kernel, 1 process | {single_seconds:.2f} | {len(frame) / single_seconds:,.0f} |")
    print(f"| numpy reference (dense embedding), 1 process | {reference_seconds:.2f} | {len(frame) / reference_seconds:,.0f} |")
    print(f"Spark / single-process time ratio: {spark_seconds / single_seconds:.2f}")
    df.unpersist()

    # (b) scaling in n
    print("\n(b) scaling (adult resampled; Parquet input; measure = all Spark passes; fit = Match)")
    print("| rows | measure s | measure s per million rows | fit s |\n|---|---|---|---|")
    folder = spark_synth_home() / "bench"
    for rows in args.sizes:
        table = resampled(spark, frame, rows, folder)
        synth = Synthesizer("splice", epsilon=1.0, delta=1e-9).fit(table, schema)
        t = synth.timings_
        print(f"| {rows:,} | {t['measure']:.1f} | {t['measure'] / rows * 1e6:.1f} | {t['fit']:.1f} |", flush=True)


if __name__ == "__main__":
    main()
