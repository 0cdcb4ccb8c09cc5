"""What FPT's within-group refinement rules change: the same fitted models, rows drawn with the
former fixed 2σ floor and with the current rule (``engines/fpt/code_shares.py``, ``within_group_shares``),
and — with ``--target-priors`` — with the target factors r(code, t) shrunk by other priors (in noise
deviations of rows; the default is ``TARGET_PRIOR_SIGMAS``) or left out (``none``).

Fits ``--fits`` FPT models on the shared harness's train split of ``--dataset`` (ε = 1, δ = 1e-9,
real OpenDP noise through the in-process pandas oracle: no Spark), recording the noisy 1-way counts
each refinement was built from; then, for each model, rebuilds the refinements with each rule, draws
as many rows as the split has (seed 0) and prints the harness's 1-, 2- and 3-way TVD against the
train split and TSTR (best learner, and logistic regression alone) on its test split. The models
are the same for both rules, so the differences are the rule's alone. Needs ``../shared`` (data and
harness). Prints a Markdown table; never asserts.

    python benchmarks/fpt_refinement.py [--dataset bank_marketing] [--fits 3] [--target-priors none 10 30]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from in_process import coded_rows, fit, harness, load_split  # noqa: E402


def fixed_floor_shares(values, sigma, grouping, ordered=0):
    """The former rule: codes below 2σ get no rows where another code of their group passes 2σ."""
    values = np.clip(np.asarray(values, dtype=np.float64), 0.0, None)
    groups = np.asarray(grouping, dtype=np.int64)
    passed = values >= 2.0 * sigma
    group_passes = np.bincount(groups, weights=passed, minlength=int(groups.max()) + 1) > 0
    weights = np.where(passed | ~group_passes[groups], values, 0.0)
    return weights / max(weights.sum(), 1e-12)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataset", default="bank_marketing")
    parser.add_argument("--fits", type=int, default=3)
    parser.add_argument("--target-priors", nargs="*", default=[],
                        help="also draw with the target factors' prior at these values (σ of rows), or 'none': no factors")
    args = parser.parse_args(argv)

    from spark_synth.engines.fpt import engine as fpt_engine
    from spark_synth.engines.fpt.model import FptModel
    from spark_synth.engines.groupings import ordered_codes

    split = load_split(args.dataset)
    schema, real = split.schema, split.real
    current = fpt_engine.within_group_shares
    rules = {"fixed 2σ floor (former)": fixed_floor_shares, "current": current}
    current_ratios = fpt_engine.target_ratios

    print(f"{args.dataset}: {len(split.frame)} train rows, epsilon 1, {args.fits} FPT fits, rows drawn with seed 0\n")
    print("| fit | rule | 1-way TVD | 2-way TVD | 3-way TVD | TSTR best | TSTR logreg |")
    print("|---|---|---|---|---|---|---|")
    for run in range(args.fits):
        recorded = []

        def recording(values, sigma, grouping, ordered=0):
            recorded.append((np.asarray(values, dtype=np.float64).copy(), sigma, grouping))
            return current(values, sigma, grouping, ordered)

        pairs = {}

        def recording_ratios(scope, measurement, target, total, grouping):
            pairs[scope[1] if scope[0] == target else scope[0]] = (scope, measurement, target, total, grouping)
            return current_ratios(scope, measurement, target, total, grouping)

        fpt_engine.within_group_shares, fpt_engine.target_ratios = recording, recording_ratios
        try:
            state = fit("fpt", split, cpu_threads=1).to_state()
        finally:
            fpt_engine.within_group_shares, fpt_engine.target_ratios = current, current_ratios
        drawn = [(name, [[j, grouping, rule(values, sigma, grouping, ordered_codes(schema.columns[j])).tolist(), by_target]
                         for (j, grouping, _, by_target), (values, sigma, _) in zip(state["refinements"], recorded)])
                 for name, rule in rules.items()]
        with_current = dict(drawn)["current"]
        for prior in args.target_priors:
            factors = {j: None if prior == "none" else fpt_engine.target_ratios(*pair, prior_sigmas=float(prior)).tolist()
                       for j, pair in pairs.items()}
            drawn.append((f"current, target prior {prior}", [[j, grouping, shares, None if by_target is None else factors[j]]
                                                              for j, grouping, shares, by_target in with_current]))
        for name, refinements in drawn:
            model = FptModel.from_state({**state, "refinements": refinements}, schema)
            rng = np.random.default_rng(0)
            coded = coded_rows(model.sample_codes(real.train.n, rng), split, rng)
            tvds = harness.marginal_tvds(real.train, coded, split.bench_schema)
            ml = harness.ml_scores(coded, real.test, split.bench_schema)
            logreg = next(iter(ml["learners"].values())).get(ml["metric"])
            print(f"| {run + 1} | {name} | {tvds['tvd_1way']:.4f} | {tvds['tvd_2way']:.4f} | {tvds['tvd_3way']:.4f} | "
                  f"{ml['best']:.4f} | {logreg:.4f} |", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
