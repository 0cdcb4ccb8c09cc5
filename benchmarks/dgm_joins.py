"""DGM joins side by side on ONE fitted model (ε = 1, δ = 1e-9, public seeded random partitions):
random join vs the DP validator's resampling join vs its swap join, scored with the harness's
binning against the real train split. Fitting once isolates what the join does (the ablation,
benchmarks/dgm_ablation.py, refits every variant end to end through the CLI).

The model is fitted on the harness's train split through the pandas oracle (same noise and
accounting as on Spark); "cross" is the mean 2-way TVD over column pairs in different partitions,
"all" over every pair, "recovered" = (random − join) / (random − whole-table reference) on cross,
where the reference is the base engine fitted on the whole table with the same budget.

    python benchmarks/dgm_joins.py [--datasets adult bank_marketing credit_default] [--partitions 2]
        [--sweeps 10 100] [--out-dir /tmp/dgm_joins]
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
from dgm_ablation import cross_partition_tvd, random_partitions  # noqa: E402
from harness_runs import SHARED  # noqa: E402

sys.path.insert(0, str(SHARED / "bench"))
import harness  # noqa: E402

from spark_synth.engines import LocalTaskRunner, get_engine  # noqa: E402
from spark_synth.engines.dgm.join import validator_join  # noqa: E402
from spark_synth.oracle import oracle_over_frame  # noqa: E402
from spark_synth.privacy import PrivacyBudget, PrivacyFilter  # noqa: E402
from spark_synth.schema import decode_codes, load_schema  # noqa: E402


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--datasets", nargs="+", default=["adult", "bank_marketing", "credit_default"])
    parser.add_argument("--partitions", type=int, default=2)
    parser.add_argument("--sweeps", nargs="+", type=int, default=[10, 100])
    parser.add_argument("--engine", default="fpt")
    parser.add_argument("--out-dir", default="/tmp/dgm_joins")
    args = parser.parse_args(argv)
    out_dir = Path(args.out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    print("| dataset | k | join | cross 2-way TVD | all-pairs 2-way TVD | join s | recovered |")
    print("|---|---|---|---|---|---|---|")
    for dataset in args.datasets:
        schema = load_schema(SHARED / "data" / f"{dataset}.schema.json")
        split = harness.prepare_split(str(SHARED / "data" / f"{dataset}.csv"), harness.Schema(SHARED / "data" / f"{dataset}.schema.json"))
        frame = pd.read_csv(split["train_csv"], dtype=str, keep_default_na=False, na_values=[""])
        partitions = random_partitions(list(schema.names), args.partitions)

        def oracle():
            return oracle_over_frame(frame, schema, PrivacyFilter(PrivacyBudget(1.0, 1e-9)))

        model = get_engine("dgm", partitions=partitions, engines=args.engine).fit(schema, oracle(), LocalTaskRunner())
        whole = get_engine(args.engine).fit(schema, oracle(), LocalTaskRunner())
        variants = [("whole table", None, None), ("random join", model.settings, False),
                    ("resample (50 candidates)", replace(model.settings, acceptance="resample"), True)]
        variants += [(f"swap ({n} sweeps)", replace(model.settings, acceptance="swap", swap_sweeps=n), True) for n in args.sweeps]
        results = {}
        for index, (label, settings, scored) in enumerate(variants):
            rng = np.random.default_rng(0)
            started = time.perf_counter()
            if settings is None:
                codes = whole.sample_codes(len(frame), rng)
            else:
                codes, _ = validator_join(lambda p, m: model.models[p].sample_codes(m, rng), model.partitions, model.n_columns,
                                          len(frame), model.validator.score if scored else None, settings, rng)
            seconds = time.perf_counter() - started
            path = out_dir / f"{dataset}_k{args.partitions}_variant{index}.csv"
            decode_codes(codes, schema, rng).to_csv(path, index=False)
            cross = cross_partition_tvd(dataset, str(path), partitions)
            every = cross_partition_tvd(dataset, str(path), [[c] for c in schema.names])
            results[label] = cross
            recovered = ""
            if scored:
                lost = results["random join"] - results["whole table"]
                recovered = f"{(results['random join'] - cross) / lost:.2f}" if lost > 0 else "–"
            print(f"| {dataset} | {args.partitions} | {label} | {cross:.4f} | {every:.4f} | {seconds:.1f} | {recovered} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
