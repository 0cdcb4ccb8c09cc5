"""FPT's fit time and fidelity as the row count grows, in process (prints a table; never asserts).

A table of ``k`` copies of a shared dataset's train split has the split's distribution at k× its
rows: every exact answer is k times the split's, while the noise stays the same — exactly what a
k× larger table with that distribution gives the engine. So the fit's dependence on n can be
measured without materialising or scanning the rows (the scan is linear in n and measured by
``scale.py``). Each variant (defaults, or comma-separated ``NAME=VALUE`` engine options) is fitted
``--fits`` times per ``--copies`` at ε (δ = 1e-9, real OpenDP noise, one torch thread); rows as many
as the split has are drawn and scored against the split by ``../shared/bench/harness.py`` (1-/2-/3-way
TVD; ``--tstr`` adds TSTR). Printed per fit: fit seconds (the rounds and the final fit, scan
excluded), rounds, largest bag's cells, TVDs.

    python benchmarks/fpt_tall.py --dataset adult --copies 1 3 25 250 --fits 2
    python benchmarks/fpt_tall.py --dataset adult --copies 25 --variant '' --variant max_model_cells=2000000
    python benchmarks/fpt_tall.py --dataset DIR/wide108 --copies 1 --profile 30   # where the fit's time goes
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from in_process import coded_rows, harness, load_split, private_oracle  # noqa: E402


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataset", default="adult")
    parser.add_argument("--copies", type=int, nargs="+", default=[1, 3, 25, 250])
    parser.add_argument("--fits", type=int, default=1)
    parser.add_argument("--epsilon", type=float, default=1.0)
    parser.add_argument("--variant", action="append", default=None,
                        help="engine options 'NAME=VALUE[,NAME=VALUE]' ('' for the defaults); repeatable")
    parser.add_argument("--tstr", action="store_true", help="also score TSTR (slower)")
    parser.add_argument("--profile", type=int, default=0, metavar="N",
                        help="profile each fit (cProfile) and print its N most expensive calls, by cumulative time")
    args = parser.parse_args(argv)
    variants = args.variant if args.variant is not None else [""]

    from spark_synth.config import parse_option_pairs  # checked where the engine is built
    from spark_synth.engines import get_engine

    split = load_split(args.dataset)
    print(f"{args.dataset}: {len(split.frame)} train rows × copies, ε = {args.epsilon:g}, one torch thread\n")
    print("| variant | rows | fit | fit s | rounds | largest bag | 1-way TVD | 2-way TVD | 3-way TVD |" + (" TSTR |" if args.tstr else ""))
    print("|---|---|---|---|---|---|---|---|---|" + ("---|" if args.tstr else ""))
    for text in variants:
        options = {"cpu_threads": 1, **parse_option_pairs(list(filter(None, text.split(","))))}
        for copies in args.copies:
            for run in range(args.fits):
                engine = get_engine("fpt", **options)
                oracle = private_oracle(split, args.epsilon, copies)
                oracle.prepare(engine.planned_queries(split.schema))  # the scan, outside the fit's time
                profiler = cProfile.Profile() if args.profile else None
                started = time.perf_counter()
                if profiler is not None:
                    profiler.enable()
                model = engine.fit_measurements(split.schema, engine.measure(split.schema, oracle))
                seconds = time.perf_counter() - started
                if profiler is not None:  # cProfile's overhead inflates many small calls: read it as shares
                    profiler.disable()
                    pstats.Stats(profiler, stream=sys.stderr).sort_stats("cumulative").print_stats(args.profile)
                rng = np.random.default_rng(run)
                coded = coded_rows(model.sample_codes(split.real.train.n, rng), split, rng)
                tvds = harness.marginal_tvds(split.real.train, coded, split.bench_schema)
                summary = model.fit_summary()
                row = (f"| {text or 'defaults'} | {copies * len(split.frame):,} | {run + 1} | {seconds:.1f} | {summary.get('rounds')} | "
                       f"{summary.get('largest_bag_cells'):,} | {tvds['tvd_1way']:.4f} | {tvds['tvd_2way']:.4f} | {tvds['tvd_3way']:.4f} |")
                if args.tstr:
                    row += f" {harness.ml_scores(coded, split.real.test, split.bench_schema)['best']:.4f} |"
                print(row, flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
