"""Per-core throughput of every distributed stage, and Spark's efficiency on local[2] (prints a table).

    python benchmarks/throughput.py [--rows 1000000] [--data ../shared/data]

Input: the adult-shaped table of benchmarks/scale.py (``rows`` rows, typed columns, Delta).
For each stage, the same kernel runs
* in ONE process over the table's Arrow batches (20,000 rows each, as Spark hands them to Python):
  rows/s per core;
* as a Spark job on local[2] (after one warm-up run): rows/s on 2 cores.
"Spark / 1 process" is the Spark job's time over the single process's (issue 14's target: ≤ 1.5;
1.0 means two cores buy nothing, 0.5 is perfect scaling). Stages: the scan with SPLICE's 1-way
anchors, with its moment query (320 directions × degree 12), with both (one pass), FPT's first
scan (every 2-way marginal of adult), and sampling + decoding for independent, splice and fpt
models fitted on the first 20,000 rows (Spark: written to the ``noop`` sink). Never asserts on time.
"""

from __future__ import annotations

import argparse
import glob
import time
from dataclasses import replace
from itertools import combinations
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from scale import ROOT, bench_folder, generate, source, to_delta
from spark_synth import get_spark, load_schema
from spark_synth.engines import LocalTaskRunner, get_engine
from spark_synth.engines.splice.engine import encoding_knots
from spark_synth.measure.answers import answer_queries, partition_scan
from spark_synth.oracle import oracle_over_frame
from spark_synth.privacy import PrivacyBudget, PrivacyFilter
from spark_synth.queries import MarginalQuery
from spark_synth.sample.generate import generate_rows
from spark_synth.schema import OutOfDomainPolicy, decode_codes

BATCH = 20_000


def timed(function) -> float:
    started = time.perf_counter()
    function()
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--data", default=str(ROOT.parent / "shared" / "data"))
    args = parser.parse_args()
    csv, schema_path = source(Path(args.data), "adult")
    parquet = generate(csv, schema_path, args.rows, bench_folder() / f"adult_{args.rows}.parquet")
    delta = bench_folder() / f"adult_{args.rows}.delta"
    schema = load_schema(schema_path)
    spark = get_spark(extra_conf={"spark.master": "local[2]"})
    to_delta(parquet, delta, spark)
    df = spark.read.format("delta").load(str(delta))
    table = pa.concat_tables([pq.read_table(f) for f in sorted(glob.glob(str(parquet / "*.parquet")))])
    frames = [b.to_pandas() for b in table.to_batches(max_chunksize=BATCH)]

    splice = get_engine("splice")
    moments = splice.moment_query(schema, None)
    uniform = [np.full(c.size, 1.0 / c.size) for c in schema]
    moments = replace(moments, value_knots=encoding_knots(schema, uniform, splice.options.quantile_encoding))
    one_way = [MarginalQuery((c.name,)) for c in schema]
    two_way = [MarginalQuery(pair) for pair in combinations(schema.names, 2)]
    scans = {"scan: 1-way anchors": one_way, "scan: SPLICE moments": [moments], "scan: anchors + moments (one pass)": [*one_way, moments],
             "scan: every 2-way marginal (105)": two_way}

    print(f"adult-shaped, {args.rows:,} rows, {len(schema)} columns; Arrow batches of {BATCH:,} rows")
    print("| stage | 1 process s | rows/s per core | Spark local[2] s | rows/s on 2 cores | Spark / 1 process |")
    print("|---|---|---|---|---|---|", flush=True)

    def report(stage: str, single: float, distributed: float) -> None:
        print(f"| {stage} | {single:.2f} | {args.rows / single:,.0f} | {distributed:.2f} | {args.rows / distributed:,.0f} | "
              f"{distributed / single:.2f} |", flush=True)

    for stage, queries in scans.items():
        scan = partition_scan(schema, queries, OutOfDomainPolicy.CLIP)
        single = timed(lambda: list(scan(iter(frames))))
        answer_queries(df, schema, queries)  # warm-up: Python workers, kernel compilation
        report(stage, single, timed(lambda: answer_queries(df, schema, queries)))

    head = frames[0]
    for engine in ("independent", "splice", "fpt"):
        oracle = oracle_over_frame(head, schema, PrivacyFilter(PrivacyBudget(1.0, 1e-9)))
        model = get_engine(engine).fit(schema, oracle, LocalTaskRunner())
        rng = np.random.default_rng(0)

        def sample_locally():
            for _ in range(0, args.rows, BATCH):
                pa.Table.from_pandas(decode_codes(model.sample_codes(BATCH, rng), schema, rng))

        single = timed(sample_locally)
        generate_rows(spark, model, schema, args.rows, 0).write.format("noop").mode("overwrite").save()  # warm-up
        report(f"sample + decode: {engine}", single,
               timed(lambda: generate_rows(spark, model, schema, args.rows, 0).write.format("noop").mode("overwrite").save()))


if __name__ == "__main__":
    main()
