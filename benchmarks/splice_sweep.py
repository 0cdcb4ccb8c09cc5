"""Fast SPLICE option sweeps without Spark (prints a table).

    python benchmarks/splice_sweep.py --dataset california_housing \
        "numeric_model=gaussian,rank=1" "numeric_model=gaussian,rank=0,components=64" "engine=independent"

Each argument is one configuration (comma-separated SpliceConfig options; ``engine=independent``
for the baseline). Same 80/20 split and metrics as ``benchmarks/splice_quality.py``, but the
statistics are computed in numpy on the train split and perturbed with continuous Gaussian noise of
the σ the pipeline would use (ρ from ε, δ by the tight conversion, split by the queries' weights),
so a configuration takes seconds to set up instead of a Spark run. For choosing options only; the
figures in docs come from ``splice_quality.py``, which runs the real pipeline.

The last two columns check issue 15's first bar in the model's own bins (the schema's): the
synthetic table's mean 1-way TVD to the train split, and that of SPLICE's released 1-way anchors
(the DP distributions it is raked to; "–" for ``independent``).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import pandas as pd
from splice_quality import ROOT, eval_schema, parse_option, sliced_w1, split, tvd

from spark_synth import load_schema
from spark_synth.engines import IndependentEngine, LocalTaskRunner, MeasurementOracle, SpliceEngine
from spark_synth.evaluate import fidelity
from spark_synth.measure import answer_frame
from spark_synth.privacy import NoisyMeasurement
from spark_synth.privacy.conversions import rho_from_epsilon
from spark_synth.schema import OutOfDomainPolicy, decode_codes, encode_frame
from spark_synth.schema.embedding import Embedding


class SweepOracle(MeasurementOracle):
    """Option sweeps only: the pipeline's budget split and σ, but continuous Gaussian noise from a
    seeded numpy generator over exact pandas answers (reproducible; NOT a DP release)."""

    def __init__(self, frame, schema, rho, rng):
        self.frame, self.schema, self.rng, self._total, self._spent = frame, schema, rng, rho, 0.0

    rho_total = property(lambda self: self._total)
    rho_remaining = property(lambda self: self._total - self._spent)

    def measure(self, query, rho):
        return self.measure_many([(query, rho)])[0]

    def measure_many(self, requests):
        out = []
        for (query, rho), exact in zip(requests, answer_frame(self.frame, self.schema, [q for q, _ in requests])):
            sigma = query.integer_l2_sensitivity / query.unit / np.sqrt(2.0 * rho)
            self._spent += rho
            out.append(NoisyMeasurement(query=query, values=exact / query.unit + sigma * self.rng.standard_normal(exact.shape),
                                        sigma=sigma, rho=rho))
        return out

    def prepare(self, queries):
        pass

    def select(self, candidates, score_kind, model_answers, rho, *, weights=None, offsets=None):
        """The exponential mechanism at the pipeline's scale Δ/√(2ρ) (Gumbel noisy max, numpy)."""
        if score_kind != "weighted_l1" or weights is not None:
            raise NotImplementedError("the sweep selects by unweighted l1 error only")
        exact = answer_frame(self.frame, self.schema, list(candidates))
        offsets = np.zeros(len(candidates)) if offsets is None else np.asarray(offsets, dtype=np.float64)
        scores = np.array([np.abs(a / q.unit - m).sum() for q, a, m in zip(candidates, exact, model_answers)]) - offsets
        self._spent += rho
        return candidates[int(np.argmax(scores / (1.0 / np.sqrt(2.0 * rho)) + self.rng.gumbel(size=len(scores))))]

    def child(self, rho, label):
        raise NotImplementedError("the sweep measures fixed plans only")


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
    embedding = Embedding(schema)
    x, _ = embedding.embed(train, OutOfDomainPolicy.CLIP)
    scoring = eval_schema(schema)
    sizes = [c.size for c in scoring]
    real_codes, _ = encode_frame(train, scoring, OutOfDomainPolicy.CLIP)
    real_model_codes, _ = encode_frame(train, schema, OutOfDomainPolicy.CLIP)
    model_bins = [c.size for c in schema]
    rho = rho_from_epsilon(args.epsilon, args.delta)
    print(f"{args.dataset}: epsilon={args.epsilon} delta={args.delta} rho={rho:.5f}")
    print("| config | seed | 1-way TVD | 2-way TVD | 3-way TVD | sliced W1 | fit s | 1-way TVD, model bins | anchors' 1-way TVD |")
    print("|---|---|---|---|---|---|---|---|---|")
    for config in args.configs:
        options = dict((k, parse_option(v)) for k, v in (item.split("=", 1) for item in config.split(",") if item))
        for seed in args.seeds:
            if options.get("engine") == "independent":
                engine = IndependentEngine()
            else:
                engine = SpliceEngine(**{**options, "fit_seed": seed, "direction_seed": seed})
            oracle = SweepOracle(train, schema, rho, np.random.default_rng(seed))
            anchors = None
            if isinstance(engine, SpliceEngine):
                measurements = engine.measure(schema, oracle)
                _, anchors = engine._anchors(schema, measurements)  # the DP distributions it is raked to
                started = time.perf_counter()
                model = engine.fit_measurements(schema, measurements)
            else:
                started = time.perf_counter()
                model = engine.fit(schema, oracle, LocalTaskRunner())
            seconds = time.perf_counter() - started
            synthetic = decode_codes(model.sample_codes(len(train), np.random.default_rng(seed)), schema, np.random.default_rng(seed))
            syn_codes, _ = encode_frame(synthetic, scoring, OutOfDomainPolicy.CLIP)
            syn_x, _ = embedding.embed(synthetic, OutOfDomainPolicy.CLIP)
            syn_model_codes, _ = encode_frame(synthetic, schema, OutOfDomainPolicy.CLIP)
            anchor_error = "–" if anchors is None else f"{one_way_tvd(real_model_codes, anchors):.4f}"
            print(f"| `{config}` | {seed} | {tvd(real_codes, syn_codes, sizes, 1):.4f} | {tvd(real_codes, syn_codes, sizes, 2):.4f} | "
                  f"{tvd(real_codes, syn_codes, sizes, 3):.4f} | "
                  f"{sliced_w1(x, syn_x):.4f} | {seconds:.1f} | {tvd(real_model_codes, syn_model_codes, model_bins, 1):.4f} | "
                  f"{anchor_error} |", flush=True)


def one_way_tvd(real_codes, distributions) -> float:
    """Mean over columns of the TVD between the real codes' 1-way distribution and ``distributions``."""
    return float(np.mean([fidelity.tvd(np.bincount(real_codes[:, j], minlength=len(q)), np.asarray(q, dtype=np.float64))
                          for j, q in enumerate(distributions)]))


if __name__ == "__main__":
    main()
