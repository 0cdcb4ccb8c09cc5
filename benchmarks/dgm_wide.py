"""DGM on a wide table: the same engine on the whole of diabetes_readmission (48 columns, ICD-9 codes
with 915 levels) vs DGM with that engine on every partition, ε = 1, δ = 1e-9, through the shared
yardstick (../shared/bench/harness.py: split, 2-way/3-way TVD, TSTR, wall seconds).

Memory is the peak resident set of the run's process tree (``process_memory``: spark-synth's
driver Python, Spark's JVM and its Python workers, summed at each instant), since DGM moves the
partition fits into executor tasks, where the harness's own peak RSS (the largest process it reaps)
does not look. Beside it: the three parts at that instant, the driver's and the workers' own peaks
(on a cluster they are different machines), and "peak MB (tree)", which adds the harness process
(it peaks alone, while it scores). "peak MB (run, PSS)" is the run's physical memory: the RSS sum
counts every shared library page once per process that maps it (torch's alone, ~400 MB a process).

    python benchmarks/dgm_wide.py [--engine fpt] [--partitions 2 3] [--runs 1] [--out-dir /tmp/dgm_wide]

Prints a Markdown table; never asserts anything.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness_runs import harness_run, interval, read_run, spark_synth_template  # noqa: E402

DATASET = "diabetes_readmission"
METRICS = [("tvd_2way", "2-way TVD"), ("tvd_3way", "3-way TVD"), ("tstr_best", "TSTR best"), ("wall_s", "wall s"),
           ("peak_run_pss_mb", "peak MB (run, PSS)"), ("peak_run_mb", "peak MB (run, RSS sum)"), ("at_peak_driver_py_mb", "driver Python"), ("at_peak_jvm_mb", "JVM"),
           ("at_peak_workers_py_mb", "Python workers"), ("peak_driver_py_mb", "driver's own peak"),
           ("peak_workers_py_mb", "workers' own peak"), ("peak_total_mb", "peak MB (tree)")]


def run(label: str, engine: str, options: list[str], index: int, out_dir: Path) -> dict:
    memory: dict = {}
    out = harness_run(DATASET, spark_synth_template(engine, options), out_dir / f"{DATASET}_{label}_{index}.json",
                      memory=memory)
    return {**read_run(out), "peak_run_pss_mb": memory["run_pss"], "peak_run_mb": memory["run"], "peak_total_mb": memory["total"],
            "peak_driver_py_mb": memory["driver_py"], "peak_workers_py_mb": memory["workers_py"],
            **{f"at_peak_{part}_mb": memory["run_at_peak"].get(part, 0.0) for part in ("driver_py", "jvm", "workers_py")}}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--engine", default="fpt", help="the base engine, also DGM's partition engine")
    parser.add_argument("--partitions", nargs="+", type=int, default=[2, 3])
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--out-dir", default="/tmp/dgm_wide")
    args = parser.parse_args(argv)
    out_dir = Path(args.out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    variants = [(f"{args.engine} whole table", args.engine, [], args.engine)]
    variants += [(f"dgm, {k} × {args.engine}", "dgm", [f"n_partitions={k}", f"engines={args.engine}"], f"dgm{k}_{args.engine}")
                 for k in args.partitions]
    print("| variant | " + " | ".join(title for _, title in METRICS) + " |")
    print("|---|" + "---|" * len(METRICS))
    for title, engine, options, label in variants:
        runs = [run(label, engine, options, i, out_dir) for i in range(args.runs)]
        cells = []
        for key, _ in METRICS:
            mean, low, high = interval([r[key] for r in runs if r.get(key) is not None])
            cells.append(f"{mean:.4g} [{low:.4g}, {high:.4g}]" if args.runs > 1 else f"{mean:.4g}")
        print(f"| {title} | " + " | ".join(cells) + " |")
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
