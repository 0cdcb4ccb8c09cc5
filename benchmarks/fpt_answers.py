"""FPT's model answers to a round's candidate pairs: one by one vs together (prints a table; never asserts).

Fits FPT in process on ``--copies`` copies of a shared dataset's train split (as ``fpt_tall.py``), keeps
the model of the last round's refit, and times (CPU seconds, one torch thread) the model's marginal
of every pair of columns — ``GibbsModel.marginal`` per pair, against ``GibbsModel.marginals`` for all
of them, which carries p(u, x_bag) along the paths that pairs in no common bag share — and prints
the largest difference between the two.

    python benchmarks/fpt_answers.py --dataset adult --copies 25
"""

from __future__ import annotations

import argparse
import itertools
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from in_process import load_split, private_oracle  # noqa: E402


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataset", default="adult")
    parser.add_argument("--copies", type=int, default=25)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)

    from spark_synth.engines import get_engine
    from spark_synth.engines.fpt import estimation

    torch.set_num_threads(1)
    last = {}
    fit = estimation.MirrorDescent.fit

    def keeping(self, observations, iterations):
        last["model"] = fit(self, observations, iterations)
        return last["model"]

    estimation.MirrorDescent.fit = keeping
    split = load_split(args.dataset)
    engine = get_engine("fpt", cpu_threads=1)
    oracle = private_oracle(split, 1.0, args.copies)
    oracle.prepare(engine.planned_queries(split.schema))
    engine.measure(split.schema, oracle)
    model = last["model"]
    pairs = list(itertools.combinations(range(len(model.tree.sizes)), 2))
    across = sum(model.tree.bag_containing(p) is None for p in pairs)
    print(f"{args.dataset} × {args.copies}: the last round's model, {len(model.tree.bags)} bags, largest "
          f"{model.tree.largest_bag_cells:,} cells, {model.log_beliefs[0].dtype}; {len(pairs)} pairs, {across} in no common bag\n")
    print("| repeat | one by one, CPU s | together, CPU s | largest difference |")
    print("|---|---|---|---|")
    for repeat in range(args.repeats):
        started = time.process_time()
        one = [model.marginal(p) for p in pairs]
        middle = time.process_time()
        together = model.marginals(pairs)
        ended = time.process_time()
        difference = max(float((a - b).abs().max()) for a, b in zip(one, together))
        print(f"| {repeat + 1} | {middle - started:.3f} | {ended - middle:.3f} | {difference:.1e} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
