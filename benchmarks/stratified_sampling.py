"""What stratified sampling removes: one fitted model, its rows drawn i.i.d. and stratified.

For each engine, fits one model on the shared harness's train split of ``--dataset`` (ε = 1,
δ = 1e-9) through the real oracle (OpenDP noise, pandas answers: no Spark), then draws as many rows
as the split has ``--trials`` times with each sampler from the same seeds — the engines' own
stratified uniforms (``spark_synth/engines/stratified.py``) and plain i.i.d. uniforms put in their
place — and prints the harness's mean 1-, 2- and 3-way TVD against the train split, and the seconds
``sample_codes`` took (one process; compare the two samplers within a run). The model is the same
for both samplers, so the difference in TVD is sampling noise only. Needs ``../shared`` (data
and harness); the split is the harness's own (``prepare_split``, cached). Prints a Markdown table; never asserts.

    python benchmarks/stratified_sampling.py [--dataset adult] [--engines independent splice fpt] [--trials 2]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from in_process import coded_rows, fit, harness, load_split  # noqa: E402


def iid_uniforms(n, rng, groups=None):
    """The i.i.d. baseline: what every engine drew before stratification."""
    return rng.random(n)


def sampling_modules():
    """Every module that draws through ``stratified_uniforms`` (the baseline replaces it in each)."""
    from spark_synth.engines import independent, stratified
    from spark_synth.engines.fpt import draws, graphical, model as fpt_model
    from spark_synth.engines.splice import model as splice_model

    return [stratified, independent, graphical, draws, fpt_model, splice_model]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataset", default="adult")
    parser.add_argument("--engines", nargs="+", default=["independent", "splice", "fpt"])
    parser.add_argument("--trials", type=int, default=2)
    args = parser.parse_args(argv)

    split = load_split(args.dataset)
    rows = len(split.frame)
    modules = sampling_modules()
    stratified = modules[0].stratified_uniforms

    print(f"{args.dataset}: {rows} train rows, epsilon 1, one fit per engine, {args.trials} sampling seeds\n")
    print("| engine | sampler | 1-way TVD | 2-way TVD | 3-way TVD | draw s |")
    print("|---|---|---|---|---|---|")
    for name in args.engines:
        options = {} if name == "independent" else {"cpu_threads": 1}
        started = time.perf_counter()
        model = fit(name, split, **options)
        print(f"<!-- {name}: fitted in {time.perf_counter() - started:.0f} s -->", file=sys.stderr)
        for sampler, uniforms in (("i.i.d.", iid_uniforms), ("stratified", stratified)):
            for module in modules:
                module.stratified_uniforms = uniforms
            scores = []
            for trial in range(args.trials):
                rng = np.random.default_rng(trial)
                started = time.perf_counter()
                codes = model.sample_codes(rows, rng)
                seconds = time.perf_counter() - started
                tvds = harness.marginal_tvds(split.real.train, coded_rows(codes, split, rng), split.bench_schema)
                scores.append([tvds["tvd_1way"], tvds["tvd_2way"], tvds["tvd_3way"], seconds])
            mean = np.mean(scores, axis=0)
            print(f"| {name} | {sampler} | {mean[0]:.5f} | {mean[1]:.5f} | {mean[2]:.5f} | {mean[3]:.2f} |", flush=True)
        for module in modules:
            module.stratified_uniforms = stratified
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
