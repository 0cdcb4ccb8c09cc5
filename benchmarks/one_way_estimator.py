"""The 1-way histogram estimator of `independent` and SPLICE's anchors, against one flat histogram per column.

For each shared dataset (80 % sample, seed 0) and ε, fits the `independent` engine ``--runs`` times
through the real oracle (OpenDP noise, pandas answers: no Spark) with the defaults (two stages:
ranges where the noise swamps single codes, James–Stein shares inside them, a null floor) and with
the former estimator (``one_way_fine_share=1, null_floor=0``: one flat histogram per column,
projected onto the simplex), and prints the mean 1-way TVD of the model's distributions against the
real ones, binned as the shared harness bins them (numeric columns: 16 equal-width ranges of the
public bounds + null; others: their codes), plus the mean synthetic null share of the columns that
hold no nulls. ``--share 0.3`` gives the histograms 0.3 of the ρ that ε converts to (SPLICE's
anchors' share). Prints a Markdown table; never asserts.

    python benchmarks/one_way_estimator.py [--datasets ...] [--epsilons 0.3 1] [--runs 5] [--share 1.0]
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
SHARED = Path(os.environ.get("SPARK_SYNTH_SHARED", ROOT.parent / "shared"))
DATASETS = ["german_credit", "mushroom", "california_housing", "credit_default", "adult", "bank_marketing", "diabetes_readmission"]
ESTIMATORS = {"flat (former)": {"one_way_fine_share": 1.0, "null_floor": 0.0}, "two-stage (default)": {}}


def harness_cells(column) -> np.ndarray:
    """Each code's cell in the shared harness's binning (numeric: 16 equal-width ranges + null)."""
    if column.type.is_discrete:
        return np.arange(column.size)
    edges = column.bin_edges
    centres = (edges[:-1] + edges[1:]) / 2
    low, high = float(column.min), float(column.max)
    cells = np.clip(np.floor((np.clip(centres, low, high) - low) / (high - low) * 16), 0, 15).astype(int)
    return np.append(cells, 16) if column.nullable else cells


def tvd(real: np.ndarray, model: np.ndarray, cells: np.ndarray) -> float:
    r, m = np.bincount(cells, weights=real), np.bincount(cells, weights=model)
    return 0.5 * float(np.abs(r / r.sum() - m / m.sum()).sum())


def main(argv=None) -> int:
    from spark_synth.engines import IndependentEngine, LocalTaskRunner
    from spark_synth.oracle import oracle_over_frame
    from spark_synth.privacy import PrivacyBudget, PrivacyFilter
    from spark_synth.privacy.conversions import epsilon_from_rho, rho_from_epsilon
    from spark_synth.schema import OutOfDomainPolicy, load_schema
    from spark_synth.schema.encoding import encode_frame

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--datasets", nargs="+", default=DATASETS)
    parser.add_argument("--epsilons", nargs="+", type=float, default=[0.3, 1.0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--share", type=float, default=1.0, help="share of ε for the histograms (SPLICE's anchors: 0.3)")
    args = parser.parse_args(argv)
    print("| dataset | train rows | ε | estimator | 1-way TVD (mean of runs) | null share in null-free columns |")
    print("|---|---|---|---|---|---|")
    for dataset in args.datasets:
        schema = load_schema(SHARED / "data" / f"{dataset}.schema.json")
        frame = pd.read_csv(SHARED / "data" / f"{dataset}.csv", dtype=str, keep_default_na=False, na_values=[""])
        frame = frame.sample(frac=0.8, random_state=0)[list(schema.names)].reset_index(drop=True)
        codes, _ = encode_frame(frame, schema, OutOfDomainPolicy.CLIP)
        real = [np.bincount(codes[:, j], minlength=c.size).astype(float) for j, c in enumerate(schema)]
        null_free = [j for j, c in enumerate(schema) if c.nullable and real[j][-1] == 0]
        cells = [harness_cells(c) for c in schema]
        for epsilon in args.epsilons:
            histogram_epsilon = epsilon_from_rho(args.share * rho_from_epsilon(epsilon, 1e-9), 1e-9)
            for label, options in ESTIMATORS.items():
                tvds, nulls = [], []
                for _ in range(args.runs):
                    privacy_filter = PrivacyFilter(PrivacyBudget(histogram_epsilon, 1e-9))
                    model = IndependentEngine(**options).fit(schema, oracle_over_frame(frame, schema, privacy_filter), LocalTaskRunner())
                    tvds.append(np.mean([tvd(real[j], model.probabilities[j], cells[j]) for j in range(len(schema))]))
                    nulls.append(np.mean([model.probabilities[j][-1] for j in null_free]) if null_free else 0.0)
                print(f"| {dataset} | {len(frame)} | {epsilon:g}{' (ρ × ' + format(args.share, 'g') + ')' if args.share != 1 else ''} | {label} | "
                      f"{np.mean(tvds):.4f} ± {np.std(tvds) / np.sqrt(len(tvds)):.4f} | {np.mean(nulls):.4f} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
