"""SPLICE Match and the FPT inner loop on the CPU and on CUDA, same seed and same noisy measurements
(prints a table; never asserts on time). Run through ``benchmarks/gpu_check.sh``.

    python benchmarks/gpu_check.py [--quick] [--require-cuda] [--input CSV --schema JSON] [--seed 0]

The noisy measurements are taken once, without Spark, by the in-memory oracle over a pandas frame
(``spark_synth.oracle.oracle_over_frame``: the pipeline's queries, noise and accounting; default
input the bundled adult sample, ε = 1, δ = 1e-9). Then each device fits from the SAME measurements:

* ``splice-match``: ``SpliceEngine.fit_measurements`` (Adam on the sliced-moment loss; raking off,
  so the model is Match's own output). Final loss: the loss recorded at the last step. Moment
  residual: ‖m(model) − m̃‖ / ‖m̃‖ over all directions and degrees, m̃ the noisy target moments,
  m(model) the returned mixture's moments (computed on the CPU for both devices).
* ``fpt-inner-loop`` (the fit's default ``fit_precision``, float32 calibration) and
  ``fpt-inner-loop-float64``: ``FptEngine.fit_measurements`` (mirror descent on the junction tree,
  warm-started from the PMW loop's potentials, ``final_iterations`` steps). Final loss:
  Σ ‖A·N·p − y‖²/σ² after the last step. Moment residual: ‖A·N·p − y‖ / ‖y‖ over every noisy
  marginal (the FPT equivalent).
* ``fpt-rounds``: the whole PMW loop (``FptEngine.measure``: select, measure, refit per round) on
  each device, each with its own oracle — so its own noise: its loss and residual differ between
  devices by the noise, not only by the arithmetic; the time is the comparison.

Mixture components may swap places between devices, so parameters are not compared; the loss and
the residual should agree to a few digits. Without CUDA the CPU rows are printed with a line saying
so (exit 0); ``--require-cuda`` exits 2 instead, before any work. ``--quick`` (CI) takes few steps.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from spark_synth import load_schema  # noqa: E402
from spark_synth.engines import FptEngine, SpliceEngine  # noqa: E402
from spark_synth.oracle import oracle_over_frame  # noqa: E402
from spark_synth.privacy import PrivacyBudget, PrivacyFilter  # noqa: E402

EPSILON, DELTA = 1.0, 1e-9
#: Options of each stage: full (the engines' defaults, except FPT's PMW rounds: the measurement loop
#: runs once, untimed, and one round per column keeps the whole check under 5 minutes) and --quick
#: (CI: seconds on two busy cores).
SPLICE = {"full": {}, "quick": {"steps": 40, "components": 8, "n_dense": 16, "n_sparse": 32}}
FPT = {"full": {"rounds_per_column": 1.0}, "quick": {"rounds_per_column": 0.2, "iterations": 10, "final_iterations": 25}}


def splice_residual(engine: SpliceEngine, schema, measurements, model) -> float:
    """‖m(model) − m̃‖ / ‖m̃‖: the returned mixture's sliced Chebyshev moments against the noisy target."""
    from spark_synth.engines.splice.closed_form import GaussianParameters
    from spark_synth.engines.splice.directions import make_directions
    from spark_synth.engines.splice.engine import MOMENTS, encoding_knots
    from spark_synth.engines.splice.match import moment_operator
    from spark_synth.schema.embedding import Embedding

    o = engine.options
    rows, anchors = engine._anchors(schema, measurements)  # as fit_measurements derives them
    moments = next(m for m in measurements if m.name == MOMENTS)
    target = moments.values * np.sqrt(np.arange(1, o.degree + 1)) / rows
    directions, supports = make_directions(schema, o.n_dense, o.n_sparse, o.direction_seed)
    numeric = model.gaussian.columns if model.gaussian is not None else ()
    embedding = Embedding(schema, encoding_knots(schema, anchors, o.quantile_encoding))
    operator = moment_operator(schema, directions, supports, o.degree, torch.device("cpu"), numeric, embedding)
    t = lambda a: torch.as_tensor(np.asarray(a), dtype=torch.float64)  # noqa: E731
    gaussian = None if model.gaussian is None else GaussianParameters(t(model.gaussian.mean), t(model.gaussian.factor),
                                                                      t(model.gaussian.diag))
    fitted = operator.mixture_moments(t(model.weights), [t(p) for p in model.probabilities], gaussian).numpy()
    return float(np.linalg.norm(fitted - target) / np.linalg.norm(target))


def fpt_residual(measured, model) -> float:
    """‖A·N·p − y‖ / ‖y‖ over every noisy marginal the final fit used."""
    gibbs = model.gibbs()
    squared, norm = 0.0, 0.0
    for ob in measured.observations:
        fitted = ob.project(measured.total * gibbs.marginal(ob.scope).cpu())
        squared += float(((fitted - ob.values) ** 2).sum())
        norm += float((ob.values ** 2).sum())
    return math.sqrt(squared / norm)


def timed(fit, device: str):
    if device == "cuda":
        torch.cuda.synchronize()
    started = time.perf_counter()
    model = fit()
    if device == "cuda":
        torch.cuda.synchronize()
    return model, time.perf_counter() - started


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--input", default=str(ROOT / "spark_synth" / "data" / "adult_sample.csv"), help="CSV table")
    parser.add_argument("--schema", default=str(ROOT / "spark_synth" / "data" / "adult_sample.schema.json"))
    parser.add_argument("--seed", type=int, default=0, help="modelling seed (SPLICE's fit_seed), the same on every device")
    parser.add_argument("--quick", action="store_true", help="few steps and a small SPLICE model (CI)")
    parser.add_argument("--require-cuda", action="store_true", help="exit 2 when CUDA is absent (GPU sessions)")
    args = parser.parse_args(argv)

    cuda = torch.cuda.is_available()
    if args.require_cuda and not cuda:
        print("gpu_check: CUDA is not available (torch.cuda.is_available() is False) and --require-cuda was given",
              file=sys.stderr)
        return 2
    size = "quick" if args.quick else "full"
    schema = load_schema(args.schema)
    frame = pd.read_csv(args.input, dtype=str, keep_default_na=False, na_values=[""])
    devices = ["cpu", "cuda"] if cuda else ["cpu"]
    print(f"gpu_check: {Path(args.input).name} ({len(frame)} rows, {len(schema)} columns), epsilon {EPSILON:g}, "
          f"delta {DELTA:g}, seed {args.seed}, {size} options, torch {torch.__version__}, "
          f"cuda {torch.cuda.get_device_name(0) if cuda else 'absent'}")

    # the noisy measurements: once, on the CPU, shared by both devices
    started = time.perf_counter()
    splice_options = {**SPLICE[size], "fit_seed": args.seed, "rake_sweeps": 0}
    splice = SpliceEngine(**splice_options, device="cpu")
    splice_measured = splice.measure(schema, oracle_over_frame(frame, schema, PrivacyFilter(PrivacyBudget(EPSILON, DELTA))))
    fpt_options = FPT[size]
    fpt_measured = FptEngine(**fpt_options, device="cpu").measure(
        schema, oracle_over_frame(frame, schema, PrivacyFilter(PrivacyBudget(EPSILON, DELTA))))
    print(f"gpu_check: measurements taken in {time.perf_counter() - started:.1f} s (CPU, untimed below): SPLICE "
          f"{len(splice_measured)} releases, FPT {len(fpt_measured.observations)} noisy marginals")
    if cuda:  # CUDA context and kernels load once, outside the timings
        torch.ones(1, device="cuda").sum().item()

    print("| stage | device | seconds | steps | final loss | moment residual |")
    print("|---|---|---|---|---|---|")
    results = {}
    for device in devices:
        engine = SpliceEngine(**splice_options, device=device)
        model, seconds = timed(lambda: engine.fit_measurements(schema, splice_measured), device)
        history = model.loss_curves()["match_loss"]
        results["splice-match", device] = (seconds, len(history), history[-1], splice_residual(engine, schema, splice_measured, model))
        for stage, precision in (("fpt-inner-loop", "float32"), ("fpt-inner-loop-float64", "float64")):
            engine = FptEngine(**fpt_options, device=device, fit_precision=precision)
            model, seconds = timed(lambda: engine.fit_measurements(schema, fpt_measured), device)
            history = model.loss_curves()["final_loss"]
            results[stage, device] = (seconds, len(history) - 1, history[-1], fpt_residual(fpt_measured, model))
        engine = FptEngine(**fpt_options, device=device)
        oracle = oracle_over_frame(frame, schema, PrivacyFilter(PrivacyBudget(EPSILON, DELTA)))
        measured, seconds = timed(lambda: engine.measure(schema, oracle), device)
        model = engine.fit_measurements(schema, measured)
        results["fpt-rounds", device] = (seconds, len(measured.round_losses) - 1, measured.round_losses[-1],
                                         fpt_residual(measured, model))
    for (stage, device), (seconds, steps, loss, residual) in results.items():
        print(f"| {stage} | {device} | {seconds:.2f} | {steps} | {loss:.6g} | {residual:.6g} |")
    if cuda:
        for stage in ("splice-match", "fpt-inner-loop", "fpt-inner-loop-float64", "fpt-rounds"):
            cpu, gpu = results[stage, "cpu"], results[stage, "cuda"]
            print(f"gpu_check: {stage}: cuda/cpu time {gpu[0] / cpu[0]:.3g}, final loss {gpu[2] / cpu[2]:.6g}, "
                  f"residual {gpu[3] / cpu[3]:.6g} (ratios)")
    else:
        print("gpu_check: CUDA is absent (torch.cuda.is_available() is False): only the CPU rows ran")
    return 0


if __name__ == "__main__":
    sys.exit(main())
