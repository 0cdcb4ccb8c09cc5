"""Run one peer DP synthesizer on an integer-coded table (executed in the peers venv, see setup_peers.sh).

    PEERS_PYTHON benchmarks/peers_runner.py --codes TRAIN_CODES.csv --sizes SIZES.json --synth mst|aim \
        --epsilon 1 --delta 1e-9 --rows N --out SYNTH_CODES.csv

The input holds spark-synth's public-domain codes (categories / public bins / null code), so every
synthesizer works on the same public domain; benchmarks/quality.py encodes and decodes. This file
imports only the peer libraries (no spark_synth), and prints one JSON line with the fit seconds.
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np
import pandas as pd


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--codes", required=True)
    parser.add_argument("--sizes", required=True)
    parser.add_argument("--synth", required=True, choices=["mst", "aim"])
    parser.add_argument("--epsilon", type=float, required=True)
    parser.add_argument("--delta", type=float, required=True)
    parser.add_argument("--rows", type=int, required=True)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", required=True)
    parser.add_argument("--aim-rounds", type=int, default=None)
    parser.add_argument("--aim-max-model-size", type=float, default=80)
    args = parser.parse_args()

    np.random.seed(args.seed)  # the peers draw their noise and samples from numpy's global generator
    frame = pd.read_csv(args.codes)
    sizes = json.loads(open(args.sizes).read())
    columns = list(frame.columns)
    started = time.perf_counter()
    if args.synth == "mst":
        from snsynth.mst import MSTSynthesizer

        synth = MSTSynthesizer(epsilon=args.epsilon, delta=args.delta)
    else:
        from snsynth.aim import AIMSynthesizer

        synth = AIMSynthesizer(epsilon=args.epsilon, delta=args.delta, rounds=args.aim_rounds,
                               max_model_size=args.aim_max_model_size)
    # Public domain: pass each column's full code range through the transformer's fixed cardinality.
    from snsynth.transform import LabelTransformer, TableTransformer

    transformer = TableTransformer([LabelTransformer(nullable=False) for _ in columns])
    # Add one row per missing code to fit the label encoders on the public domain only (not the data),
    # then hand the synthesizer the original rows.
    domain_rows = pd.DataFrame({c: np.resize(np.arange(sizes[c]), max(sizes.values())) for c in columns})
    transformer.fit(domain_rows)
    synth.fit(frame, transformer=transformer, categorical_columns=columns, preprocessor_eps=0.0)
    fit_seconds = time.perf_counter() - started
    started = time.perf_counter()
    out = synth.sample(args.rows)
    out = out[columns].astype("int64")
    out.to_csv(args.out, index=False)
    print(json.dumps({"fit_seconds": fit_seconds, "sample_seconds": time.perf_counter() - started, "rows": len(out)}))


if __name__ == "__main__":
    main()
