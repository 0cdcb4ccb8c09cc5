"""How well can a mixture of K product distributions fit a table at all? (prints a table)

    python benchmarks/mixture_capacity.py --dataset adult --components 32 128

Fits the mixture to the train split's own rows by EM (no privacy, 300 iterations; numeric columns
on the 16 equal-width bins of ``splice_quality.eval_schema``), draws as many rows and scores them as
``splice_sweep.py`` does. A ceiling for SPLICE's model class, to set beside SPLICE fitted to exact
moments (``splice_sweep.py --epsilon 100``): docs/splice.md, "Pair anchors".
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pandas as pd
from splice_quality import ROOT, eval_schema, split, tvd

from spark_synth import load_schema
from spark_synth.schema import OutOfDomainPolicy, encode_frame


def fit_em(codes: np.ndarray, sizes: list[int], components: int, iterations: int, rng: np.random.Generator):
    """Mixture weights (K,) and per-column (K, size) probabilities by EM on the rows' codes."""
    weights = np.full(components, 1.0 / components)
    probabilities = [rng.dirichlet(np.ones(size), size=components) for size in sizes]
    for _ in range(iterations):
        log_r = np.log(weights)[None, :] + sum(np.log(p[:, codes[:, c]].T + 1e-300) for c, p in enumerate(probabilities))
        log_r -= log_r.max(axis=1, keepdims=True)
        r = np.exp(log_r)
        r /= r.sum(axis=1, keepdims=True)
        weights = r.mean(axis=0)
        for c, size in enumerate(sizes):
            counts = np.zeros((components, size))
            np.add.at(counts.T, codes[:, c], r)
            probabilities[c] = (counts + 1e-9) / (counts + 1e-9).sum(axis=1, keepdims=True)
    return weights, probabilities


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", default=str(ROOT.parent / "shared" / "data"))
    parser.add_argument("--dataset", default="adult")
    parser.add_argument("--components", type=int, nargs="+", default=[32])
    parser.add_argument("--iterations", type=int, default=300)
    args = parser.parse_args()
    schema = load_schema(Path(args.data) / f"{args.dataset}.schema.json")
    frame = pd.read_csv(Path(args.data) / f"{args.dataset}.csv", dtype=str, keep_default_na=False, na_values=[""])
    train, _ = split(frame)
    scoring = eval_schema(schema)
    sizes = [c.size for c in scoring]
    codes, _ = encode_frame(train, scoring, OutOfDomainPolicy.CLIP)
    print("| dataset | components | 2-way TVD | 3-way TVD |")
    print("|---|---|---|---|")
    for k in args.components:
        rng = np.random.default_rng(0)
        weights, probabilities = fit_em(codes, sizes, k, args.iterations, rng)
        component = rng.choice(k, size=len(codes), p=weights)
        synthetic = np.stack([(p[component].cumsum(axis=1) > rng.random(len(codes))[:, None]).argmax(axis=1) for p in probabilities], axis=1)
        print(f"| {args.dataset} | {k} | {tvd(codes, synthetic, sizes, 2):.4f} | {tvd(codes, synthetic, sizes, 3):.4f} |", flush=True)


if __name__ == "__main__":
    main()
