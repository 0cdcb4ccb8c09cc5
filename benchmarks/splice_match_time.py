"""Time SPLICE's Match (``SpliceEngine.fit_measurements``) without Spark (prints one table row).

    python benchmarks/splice_match_time.py --dataset adult --seed 0 [steps=600 learning_rate=0.05 ...]
    PYTHONPATH=/path/to/other/checkout python benchmarks/splice_match_time.py ...   # the same for other code

Measurements come from ``splice_sweep.SweepOracle`` (exact answers on the 80 % train split plus
continuous noise of the pipeline's σ), built before the clock starts. The fit runs twice in this
process: "cold" (the first: includes importing torch, as a fresh ``spark-synth`` process pays) and
"warm". Wall and CPU seconds are printed; on a shared machine compare CPU seconds, and old against
new code run back to back.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
from splice_quality import ROOT, parse_option, split
from splice_sweep import SweepOracle

from spark_synth import load_schema
from spark_synth.engines import SpliceEngine
from spark_synth.privacy.conversions import rho_from_epsilon


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", default=str(ROOT.parent / "shared" / "data"))
    parser.add_argument("--dataset", default="adult")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--epsilon", type=float, default=1.0)
    parser.add_argument("--delta", type=float, default=1e-9)
    parser.add_argument("options", nargs="*", help="SpliceConfig options, e.g. steps=600 learning_rate=0.05")
    args = parser.parse_args()
    options = {k: parse_option(v) for k, v in (item.split("=", 1) for item in args.options)}
    schema = load_schema(Path(args.data) / f"{args.dataset}.schema.json")
    frame = pd.read_csv(Path(args.data) / f"{args.dataset}.csv", dtype=str, keep_default_na=False, na_values=[""])
    train, _ = split(frame)
    engine = SpliceEngine(**{**options, "fit_seed": args.seed, "direction_seed": args.seed})
    oracle = SweepOracle(train, schema, rho_from_epsilon(args.epsilon, args.delta), np.random.default_rng(args.seed))
    measurements = engine.measure(schema, oracle)
    cold = "torch" not in sys.modules
    times = []
    for _ in range(2):
        wall, cpu = time.perf_counter(), time.process_time()
        curve = engine.fit_measurements(schema, measurements).loss_curves()["match_loss"]
        times.append((time.perf_counter() - wall, time.process_time() - cpu))
    import spark_synth

    print(f"| {Path(spark_synth.__file__).parent.parent} | {args.dataset} | {args.seed} | `{' '.join(args.options) or 'defaults'}` | "
          f"{len(curve)} | {min(curve):.4g} | {times[0][0]:.1f} / {times[0][1]:.1f}{'' if cold else ' (torch preloaded)'} | "
          f"{times[1][0]:.1f} / {times[1][1]:.1f} |", flush=True)


if __name__ == "__main__":
    main()
