"""Time FPT's fitter on one fixed set of measurements: the same observations fitted from scratch and
warm-started, ``--steps`` mirror-descent steps each, with the current code.

The noise cannot be seeded, so the measurements of one in-process fit (real OpenDP noise, the
harness's train split, ε = 1) are saved with ``--save`` and read back with ``--load``: run the
script with ``--load`` from a checkout of another commit to compare fitters on the same problem
(same losses expected where only speed changed). Prints one Markdown row per fit. Needs ../shared
for ``--save``; never asserts.

    python benchmarks/fpt_fit_speed.py --dataset credit_default --save /tmp/credit.pkl
    python benchmarks/fpt_fit_speed.py --load /tmp/credit.pkl --steps 300
"""

from __future__ import annotations

import argparse
import pickle
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))


def capture(dataset: str, path: str) -> None:
    """Measure like one fit of ``dataset`` does, and pickle what the final fit needs."""
    from in_process import load_split, private_oracle

    from spark_synth.engines import get_engine

    split = load_split(dataset)
    measured = get_engine("fpt").measure(split.schema, private_oracle(split))
    with open(path, "wb") as out:
        pickle.dump({"dataset": dataset, "sizes": measured.sizes, "total": measured.total,
                     "observations": measured.observations, "potentials": measured.potentials}, out)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataset", default="credit_default")
    parser.add_argument("--save", help="measure once and save the measurements here")
    parser.add_argument("--load", help="time the fitter on measurements saved with --save")
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args(argv)
    if args.save:
        capture(args.dataset, args.save)
    path = args.load or args.save
    if not path:
        parser.error("give --save or --load")
    from spark_synth.engines.fpt.estimation import MirrorDescent
    from spark_synth.engines.fpt.graphical import JunctionTree

    torch.set_num_threads(args.threads)
    with open(path, "rb") as saved:
        problem = pickle.load(saved)
    observations = problem["observations"]
    tree = JunctionTree(problem["sizes"], [o.scope for o in observations])
    print(f"{problem['dataset']}: {len(observations)} observations, {len(tree.bags)} bags, largest {tree.largest_bag_cells} cells")
    print("| start | steps | seconds | loss before | loss after |")
    print("|---|---|---|---|---|")
    for label, potentials in (("scratch", None), ("warm", problem["potentials"])):
        fitter = MirrorDescent(tree, problem["total"], "cpu", potentials)
        started = time.perf_counter()
        fitter.fit(observations, args.steps)
        seconds = time.perf_counter() - started
        print(f"| {label} | {len(fitter.history) - 1} | {seconds:.2f} | {fitter.history[0]:.2f} | {fitter.history[-1]:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
