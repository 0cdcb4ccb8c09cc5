"""Engines on wide tables through the shared yardstick: 2-way TVD (all pairs; and, on generated
networks, the pairs that are edges of the generating network and those independent by
construction), 3-way TVD, TSTR, wall seconds and the run's peak memory. Prints a Markdown table;
never asserts.

Tables: ``wide108`` — ``../shared/bench/wide_table.py`` (adult, bank_marketing, credit_default and
diabetes_readmission side by side, 30 k rows, dependence only inside each block); ``networkD`` —
``benchmarks/wide_network.py`` with D columns (a seeded sparse Bayesian network, 30 k rows), whose
truth says which pairs a model should recover. Every run is ``harness.py run`` of ``spark-synth run``
(ε = 1, δ = 1e-9, MLflow off); memory is the peak RSS sum of the run's process tree
(``process_memory``: driver Python, JVM, Python workers).

    python benchmarks/fpt_wide.py --tables wide108 network100 network300 --engines independent fpt splice dgm
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness_runs import SHARED, harness_run, read_result, read_run, spark_synth_template  # noqa: E402


def table(name: str, folder: Path) -> Path:
    """The table's ``DIR/NAME`` stem, written once."""
    stem = folder / name
    if not Path(f"{stem}.csv").exists():
        if name == "wide108":
            subprocess.run([sys.executable, str(SHARED / "bench" / "wide_table.py"), str(folder)], check=True)
            for suffix in (".csv", ".schema.json"):
                (folder / f"wide{suffix}").rename(folder / f"wide108{suffix}")
        elif name.startswith("network"):
            from wide_network import write

            write(folder, columns=int(name[len("network"):]), rows=30_000, seed=0, name=name)
        else:
            raise SystemExit(f"unknown table {name!r}: wide108 or networkD")
    return stem


def pair_tvds(stem: Path, synthetic: str) -> dict:
    """Mean 2-way TVD (harness coding, against the train split) over the network's edges and over its
    pairs independent by construction (empty without a truth file)."""
    truth_path = Path(f"{stem}.truth.json")
    if not truth_path.exists():
        return {}
    from in_process import harness, load_split
    from wide_network import edge_pairs, load_truth

    split = load_split(str(stem))
    path = Path(synthetic)  # a CSV file, or the folder of part files Spark wrote
    parts = sorted(path.glob("*.csv")) if path.is_dir() else [path]
    frame = pd.concat([pd.read_csv(p, dtype=str, keep_default_na=False, na_values=[""]) for p in parts], ignore_index=True)
    coded = harness.code_table(frame.astype(object).where(frame.notna(), None), split.bench_schema)
    real = split.real.train

    def tvd(pair):
        keys, size = harness._joint(real, split.bench_schema, pair)
        return harness._tvd_keys(keys, harness._joint(coded, split.bench_schema, pair)[0], size)

    dependent, independent = edge_pairs(load_truth(truth_path))
    return {"tvd_2way_edges": float(np.mean([tvd(p) for p in dependent])),
            "tvd_2way_independent": float(np.mean([tvd(p) for p in independent]))}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tables", nargs="+", default=["wide108", "network100", "network300"])
    parser.add_argument("--engines", nargs="+", default=["independent", "fpt", "splice", "dgm"])
    parser.add_argument("--engine-option", action="append", default=[], help="ENGINE:KEY=VALUE, repeatable")
    parser.add_argument("--out-dir", default="/tmp/fpt_wide")
    parser.add_argument("--timeout", type=float, default=3600.0, help="seconds per run")
    parser.add_argument("--reuse", action="store_true", help="read a successful result already in --out-dir instead of running again")
    args = parser.parse_args(argv)
    folder = Path(args.out_dir)
    folder.mkdir(parents=True, exist_ok=True)
    print("| table | columns | engine | 2-way TVD | edges' 2-way | independent pairs' 2-way | 3-way TVD | TSTR best | "
          "wall s | peak MB (run, RSS sum) |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for name in args.tables:
        stem = table(name, folder)
        columns = len(pd.read_csv(f"{stem}.csv", nrows=1).columns)
        for engine in args.engines:
            options = [o.split(":", 1)[1] for o in args.engine_option if o.split(":", 1)[0] == engine]
            memory: dict = {"run": float("nan")}
            out = folder / f"{name}_{engine}.json"
            if not (args.reuse and read_result(out)["status"] == "ok"):
                harness_run(str(stem), spark_synth_template(engine, options, seed=0), out, timeout_s=args.timeout, memory=memory)
            try:
                run = read_run(out)
            except SystemExit as failed:
                print(f"| {name} | {columns} | {engine} | failed: {failed} | | | | | | |", flush=True)
                continue
            pairs = pair_tvds(stem, run["synthetic"])
            cells = [run["tvd_2way"], pairs.get("tvd_2way_edges"), pairs.get("tvd_2way_independent"), run["tvd_3way"],
                     run["tstr_best"]]
            text = " | ".join("–" if v is None else f"{v:.4f}" for v in cells)
            print(f"| {name} | {columns} | {engine} | {text} | {run['wall_s']:.0f} | {memory['run']:.0f} |", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
