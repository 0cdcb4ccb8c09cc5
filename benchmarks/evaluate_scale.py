"""Evaluate a 5-million-row synthetic table against a 5-million-row real table on one small machine.

    python benchmarks/evaluate_scale.py [--data ../shared/data] [--rows 5000000] [--driver-memory 2g] [--work DIR]

The real table is adult resampled with replacement to ~ROWS rows; the synthetic one is ROWS rows of
the `independent` engine fit on adult (ε = 1). Both are written to Parquet first (not timed), then
`spark_synth.evaluate.evaluate` runs on them (real split 80/20, target income) in local mode with
the given driver heap. Prints wall time, the evaluation's step timings, and the peak resident memory
of the driver's Python process and of the Spark JVM (driver and executors in local mode). Never asserts.
"""

from __future__ import annotations

import argparse
import os
import resource
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _peak_kib(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def _java_children() -> list[int]:
    me = os.getpid()
    out = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                stat = (proc / "stat").read_text().split()
                if int(stat[3]) == me and "java" in (proc / "comm").read_text():
                    out.append(int(proc.name))
            except OSError:
                continue
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", default=str(ROOT.parent / "shared" / "data"))
    parser.add_argument("--rows", type=int, default=5_000_000)
    parser.add_argument("--driver-memory", default="2g")
    parser.add_argument("--work", default=None, help="folder for the Parquet tables (default: a temporary one)")
    args = parser.parse_args()

    os.environ.setdefault("SPARK_SYNTH_HOME", tempfile.mkdtemp(prefix="spark-synth-scale-"))
    from spark_synth import Synthesizer, load_schema
    from spark_synth.evaluate import evaluate
    from spark_synth.io import read_input
    from spark_synth.session import get_spark

    spark = get_spark("local", extra_conf={"spark.master": "local[2]", "spark.driver.memory": args.driver_memory,
                                           "spark.sql.shuffle.partitions": "8"})
    work = Path(args.work or tempfile.mkdtemp(prefix="spark-synth-scale-data-"))
    schema = load_schema(Path(args.data) / "adult.schema.json")
    adult = read_input(spark, str(Path(args.data) / "adult.csv"))
    n_adult = adult.count()
    real_path, synth_path = work / "real.parquet", work / "synthetic.parquet"
    started = time.perf_counter()
    if not real_path.exists():
        adult.sample(withReplacement=True, fraction=args.rows / n_adult, seed=0).write.parquet(str(real_path))
    if not synth_path.exists():
        synth = Synthesizer("independent", epsilon=1.0, delta=1e-9).fit(adult, schema)
        synth.sample(args.rows, seed=0, spark=spark).write.parquet(str(synth_path))
    prepare = time.perf_counter() - started
    real, synthetic = spark.read.parquet(str(real_path)), spark.read.parquet(str(synth_path))
    n_real, n_synth = real.count(), synthetic.count()

    started = time.perf_counter()
    ev = evaluate(real, synthetic, schema, target="income", seed=0)
    wall = time.perf_counter() - started
    python_peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    jvm_peak_mib = max((_peak_kib(p) for p in _java_children()), default=0) / 1024
    m = ev.metrics
    print(f"real rows {n_real:,} | synthetic rows {n_synth:,} | partitions real {real.rdd.getNumPartitions()} | "
          f"driver heap {args.driver_memory} | local[2] | data prep (not timed below) {prepare:.0f} s")
    print("| step | seconds |\n|---|---|")
    for step, seconds in m["timings_s"].items():
        print(f"| {step} | {seconds:.1f} |")
    print(f"| **evaluate total** | **{wall:.1f}** |")
    print(f"peak RSS: driver Python {python_peak_mib:.0f} MiB; Spark JVM (driver + local executors) {jvm_peak_mib:.0f} MiB")
    print(f"1-way TVD mean {m['marginals']['1way']['tvd_mean']:.4f}; 2-way {m['marginals']['2way']['tvd_mean']:.4f}; "
          f"3-way {m['marginals']['3way']['tvd_mean']:.4f}; sliced W1 {m['distance']['sliced_w1']:.4f}; "
          f"TSTR/TRTR AUROC {m['utility']['best']['tstr']['auroc']:.3f}/{m['utility']['best']['trtr']['auroc']:.3f}")


if __name__ == "__main__":
    main()
