"""Fast SPLICE option sweeps without Spark (prints a table).

    python benchmarks/splice_sweep.py --dataset california_housing \
        "numeric_model=gaussian,rank=1" "numeric_model=gaussian,rank=0,components=64" "engine=independent"

Each argument is one configuration (comma-separated SpliceConfig options; ``engine=independent``
for the baseline). Same 80/20 split and metrics as ``benchmarks/splice_quality.py``, but the
statistics are computed in numpy on the train split and perturbed with continuous Gaussian noise of
the σ the pipeline would use (ρ from ε, δ by the tight conversion, split by the queries' weights),
so a configuration takes seconds to set up instead of a Spark run. For choosing options only; the
figures in docs come from ``splice_quality.py``, which runs the real pipeline.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import pandas as pd
from splice_quality import ROOT, eval_schema, parse_option, sliced_w1, split, tvd

from spark_synth import load_schema
from spark_synth.engines import IndependentEngine, SpliceEngine
from spark_synth.measure import chebyshev_fixed_point_sums
from spark_synth.privacy import NoisyMeasurement
from spark_synth.privacy.conversions import rho_from_epsilon
from spark_synth.queries import MarginalQuery, measurement_rounds
from spark_synth.schema import OutOfDomainPolicy, decode_codes, encode_frame
from spark_synth.schema.embedding import Embedding


def noisy_measurements(engine, schema, codes, frame, rho, rng):
    """Noisy answers in the pipeline's order (adaptive queries completed from the earlier ones)."""
    out = []
    first, adaptive = measurement_rounds(engine.plan(schema))
    for q in first + adaptive:
        if q in adaptive:
            q = engine.adapt(schema, q, out)
        share = rho * q.weight
        if isinstance(q, MarginalQuery):
            j = schema.names.index(q.columns[0])
            counts = np.bincount(codes[:, j], minlength=schema.columns[j].size).astype(float)
            sigma = np.sqrt(1.0 / (2.0 * share))
            out.append(NoisyMeasurement(q.name, q.columns, counts + sigma * rng.standard_normal(counts.shape), sigma=sigma, l2_sensitivity=1.0))
        else:
            x, _ = Embedding(schema, q.value_knots).embed(frame, OutOfDomainPolicy.CLIP)
            sums = chebyshev_fixed_point_sums(x, q) / 2.0**q.fraction_bits
            sigma = q.l2_sensitivity / 2.0**q.fraction_bits / np.sqrt(2.0 * share)
            out.append(NoisyMeasurement(q.name, (), sums + sigma * rng.standard_normal(sums.shape), sigma=sigma, l2_sensitivity=q.l2_sensitivity))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", default=str(ROOT.parent / "shared" / "data"))
    parser.add_argument("--dataset", default="california_housing")
    parser.add_argument("--epsilon", type=float, default=1.0)
    parser.add_argument("--delta", type=float, default=1e-9)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    parser.add_argument("configs", nargs="+")
    args = parser.parse_args()
    schema = load_schema(Path(args.data) / f"{args.dataset}.schema.json")
    frame = pd.read_csv(Path(args.data) / f"{args.dataset}.csv", dtype=str, keep_default_na=False, na_values=[""])
    train, _ = split(frame)
    codes, _ = encode_frame(train, schema, OutOfDomainPolicy.CLIP)
    embedding = Embedding(schema)
    x, _ = embedding.embed(train, OutOfDomainPolicy.CLIP)
    scoring = eval_schema(schema)
    sizes = [c.size for c in scoring]
    real_codes, _ = encode_frame(train, scoring, OutOfDomainPolicy.CLIP)
    rho = rho_from_epsilon(args.epsilon, args.delta)
    print(f"{args.dataset}: epsilon={args.epsilon} delta={args.delta} rho={rho:.5f}")
    print("| config | seed | 1-way TVD | 2-way TVD | sliced W1 | fit s |")
    print("|---|---|---|---|---|---|")
    for config in args.configs:
        options = dict((k, parse_option(v)) for k, v in (item.split("=", 1) for item in config.split(",") if item))
        for seed in args.seeds:
            if options.get("engine") == "independent":
                engine = IndependentEngine()
            else:
                engine = SpliceEngine(**{**options, "fit_seed": seed, "direction_seed": seed})
            measurements = noisy_measurements(engine, schema, codes, train, rho, np.random.default_rng(seed))
            started = time.perf_counter()
            model = engine.fit(schema, measurements)
            seconds = time.perf_counter() - started
            synthetic = decode_codes(model.sample_codes(len(train), np.random.default_rng(seed)), schema, np.random.default_rng(seed))
            syn_codes, _ = encode_frame(synthetic, scoring, OutOfDomainPolicy.CLIP)
            syn_x, _ = embedding.embed(synthetic, OutOfDomainPolicy.CLIP)
            print(f"| `{config}` | {seed} | {tvd(real_codes, syn_codes, sizes, 1):.4f} | {tvd(real_codes, syn_codes, sizes, 2):.4f} | "
                  f"{sliced_w1(x, syn_x):.4f} | {seconds:.1f} |", flush=True)


if __name__ == "__main__":
    main()
