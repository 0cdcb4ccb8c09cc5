"""SPLICE measurement throughput and scaling (prints tables; never asserts on time).

    python benchmarks/splice_scaling.py [--data ../shared/data] [--sizes 50000 500000 5000000]

(a) throughput: the distributed Spark moment pass vs a single-process numpy pass over the same
    rows (adult), printed as a ratio;
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
from spark_synth.measure import chebyshev_fixed_point_sums, measure_moment_sums
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
    started = time.perf_counter()
    x, _ = Embedding(schema, query.value_knots).embed(frame, OutOfDomainPolicy.CLIP)
    numpy_sums = chebyshev_fixed_point_sums(x, query)
    numpy_seconds = time.perf_counter() - started
    assert np.array_equal(spark_sums, numpy_sums)
    print("\n(a) throughput, adult (48,842 rows, cached DataFrame vs in-memory pandas)")
    print("| pass | seconds | rows/s |\n|---|---|---|")
    print(f"| Spark (local[2]) | {spark_seconds:.2f} | {len(frame) / spark_seconds:,.0f} |")
    print(f"| numpy (1 process) | {numpy_seconds:.2f} | {len(frame) / numpy_seconds:,.0f} |")
    print(f"Spark / numpy time ratio: {spark_seconds / numpy_seconds:.2f}")
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
