"""Screen FPT (or, with ``--engine``, any engine's) options before a five-run harness batch: in-process fits scored by the shared harness.

Each variant (defaults, or comma-separated ``NAME=VALUE`` engine options, parsed and checked as
``--engine-option`` is by the CLI) is fitted ``--fits`` times on the harness's train split of ``--dataset`` at each ``--epsilon``
(δ = 1e-9, real OpenDP noise through the in-process pandas oracle: no Spark, no CLI start-up), rows
drawn as many as the split has, scored by ``../shared/bench/harness.py``: 1-/2-/3-way TVD against the
train split, TSTR on its test split (best learner and each learner). Prints one Markdown row per fit,
then each variant's mean and standard deviation over its fits. The noise cannot be seeded, so only
differences well outside the printed deviations mean anything; a candidate default then needs the
five-run CLI batch of ``fpt_vs_peers.py``. Needs ``../shared``; never asserts.

    python benchmarks/fpt_screen.py --dataset bank_marketing --fits 6 --variant '' --variant numeric_groups=32
    python benchmarks/fpt_screen.py --dataset bank_marketing --fits 1 --epsilon 1 4 30
    python benchmarks/fpt_screen.py --engine splice --dataset adult --fits 2 --variant '' --variant components=64
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from in_process import coded_rows, fit, harness, load_split  # noqa: E402


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataset", default="bank_marketing")
    parser.add_argument("--engine", default="fpt", help="engine to screen (default fpt)")
    parser.add_argument("--fits", type=int, default=3)
    parser.add_argument("--epsilon", type=float, nargs="+", default=[1.0])
    parser.add_argument("--variant", action="append", default=None,
                        help="engine options 'NAME=VALUE[,NAME=VALUE]' ('' for the defaults); repeatable")
    args = parser.parse_args(argv)
    variants = args.variant if args.variant is not None else [""]

    from spark_synth.config import parse_option_pairs  # checked where the engine is built
    from spark_synth.engines import get_engine

    threads = {"cpu_threads": 1} if "cpu_threads" in get_engine(args.engine).config() else {}  # one thread where the engine has the option
    split = load_split(args.dataset)
    print(f"{args.dataset}: {len(split.frame)} train rows, {args.fits} fits per variant and ε, {threads or 'engine threads'}\n")
    print("| variant | ε | fit | 1-way TVD | 2-way TVD | 3-way TVD | TSTR best | per learner | fit + score s |")
    print("|---|---|---|---|---|---|---|---|---|")
    results = {}
    for epsilon in args.epsilon:
        for text in variants:
            options = {**threads, **parse_option_pairs(list(filter(None, text.split(","))))}
            for run in range(args.fits):
                started = time.perf_counter()
                model = fit(args.engine, split, epsilon, **options)
                rng = np.random.default_rng(run)
                coded = coded_rows(model.sample_codes(split.real.train.n, rng), split, rng)
                tvds = harness.marginal_tvds(split.real.train, coded, split.bench_schema)
                ml = harness.ml_scores(coded, split.real.test, split.bench_schema)
                learners = " ".join(f"{name} {scores.get(ml['metric']) or float('nan'):.4f}" for name, scores in ml["learners"].items())
                row = (tvds["tvd_1way"], tvds["tvd_2way"], tvds["tvd_3way"], ml["best"])
                results.setdefault((text or "defaults", epsilon), []).append(row)
                print(f"| {text or 'defaults'} | {epsilon:g} | {run + 1} | {row[0]:.4f} | {row[1]:.4f} | {row[2]:.4f} | {row[3]:.4f} | {learners} | "
                      f"{time.perf_counter() - started:.0f} |", flush=True)
    print("\n| variant | ε | fits | 1-way TVD | 2-way TVD | 3-way TVD | TSTR best |")
    print("|---|---|---|---|---|---|---|")
    for (name, epsilon), rows in results.items():
        values = np.asarray(rows)
        sd = values.std(axis=0, ddof=1) if len(rows) > 1 else np.full(values.shape[1], np.nan)
        cells = " | ".join(f"{m:.4f} ± {s:.4f}" for m, s in zip(values.mean(axis=0), sd))
        print(f"| {name} | {epsilon:g} | {len(rows)} | {cells} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
