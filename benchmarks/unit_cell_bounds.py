"""Per-cell contribution bounds under a privacy unit (issue 49, item 2): is PipelineDP-style
``max_contributions_per_partition`` worth building? Prints Markdown tables; never asserts.

Under a unit of at most K rows a histogram's ℓ2 sensitivity is K (one person's rows all in one
cell). Capping each person's rows *per cell* at c as well lowers it to √(K·c) (≤ K/c cells of c
rows), so the noise σ drops by √(K/c) — but each cell then counts Σ_person min(rows in the cell, c),
no longer the rows: a heavy customer's repeated rows are cut to c in every cell, which shifts the
2-way shares towards light customers (bias). This measures both on the many-rows-per-person table
of ``benchmarks/privacy_unit.py`` (its builder; adult-based, units of 1–500 rows, skewed), at the
marginal level, without an engine: for every 2-way marginal of the harness's coding (numeric columns
in the harness's bins), the TVD between the true row-level shares of the whole table and the
released shares (counts + Gaussian noise of σ = ℓ2 / √(2ρ), negatives clipped, normalised), with
ρ = the fit's ρ split evenly over the 2-way marginals (a measure-everything plan, as MST's first
pass; FPT spends less per marginal and would see larger noise). Each cell: the mean over the pairs,
averaged over ``--draws`` noise draws; "bias" is the same TVD without noise.

    python benchmarks/unit_cell_bounds.py --rows 200000 --epsilons 1 3 --ks 5 20 100 --caps 1 2 5
"""

from __future__ import annotations

import argparse
import itertools
import shlex
import sys
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness_runs import SHARED  # noqa: E402
from in_process import harness  # noqa: E402
from privacy_unit import UNIT, Source, coded, unit_chunks  # noqa: E402


def cell_counts(units: np.ndarray, key: np.ndarray, size: int, cap: int | None) -> np.ndarray:
    """Counts per cell of ``key``; with ``cap``, each unit's rows in one cell count at most ``cap``."""
    if cap is None:
        return np.bincount(key, minlength=size).astype(np.float64)
    pair, count = np.unique(units.astype(np.int64) * size + key, return_counts=True)
    return np.bincount(pair % size, weights=np.minimum(count, cap), minlength=size)


def released_tvd(true_shares: np.ndarray, counts: np.ndarray, sigma: float, rng: np.random.Generator | None) -> float:
    noisy = counts if rng is None else counts + rng.normal(0.0, sigma, counts.size)
    noisy = np.clip(noisy, 0.0, None)
    total = noisy.sum()
    shares = noisy / total if total > 0 else np.full(counts.size, 1.0 / counts.size)
    return 0.5 * float(np.abs(shares - true_shares).sum())


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--alpha", type=float, default=1.7)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--epsilons", type=float, nargs="+", default=[1.0, 3.0])
    parser.add_argument("--delta", type=float, default=1e-9)
    parser.add_argument("--ks", type=int, nargs="+", default=[5, 20, 100])
    parser.add_argument("--caps", type=int, nargs="+", default=[1, 2, 5])
    parser.add_argument("--draws", type=int, default=5)
    parser.add_argument("--data", default=str(SHARED / "data"))
    args = parser.parse_args(argv)
    print("command: python benchmarks/unit_cell_bounds.py " + " ".join(shlex.quote(a) for a in (argv or sys.argv[1:])))

    from spark_synth.measure.bounding import bound_contributions_frame
    from spark_synth.privacy import rho_from_epsilon
    from spark_synth.privacy.unit import PrivacyUnit

    data = Path(args.data)
    source = Source(data / "adult.csv", data / "adult.schema.json")
    schema = harness.Schema(data / "adult.schema.json")
    table = pd.concat(list(unit_chunks(source, args.rows, args.alpha, args.seed)), ignore_index=True)
    whole = coded(table.drop(columns=UNIT), schema)
    pairs = list(itertools.combinations(schema.names, 2))
    truth = {}
    for a, b in pairs:
        key, size = harness._joint(whole, schema, (a, b))
        truth[a, b] = np.bincount(key, minlength=size) / whole.n
    print(f"\n{len(table):,} rows, {table[UNIT].nunique():,} units (α = {args.alpha:g}, seed {args.seed}); {len(pairs)} 2-way "
          f"marginals; {args.draws} noise draws per cell\n")
    print("| ε | K | per-cell cap c | ℓ2 sensitivity | σ per cell | rows counted | bias (no noise) | 2-way TVD, released |")
    print("|---|---|---|---|---|---|---|---|")
    rng = np.random.default_rng(args.seed)
    for k in args.ks:
        bounded = bound_contributions_frame(table, PrivacyUnit(UNIT, k), args.seed)
        units = bounded[UNIT].to_numpy()
        codes = coded(bounded.drop(columns=UNIT), schema)
        keys = {(a, b): harness._joint(codes, schema, (a, b)) for a, b in pairs}
        for cap in [None, *[c for c in args.caps if c < k]]:
            counts = {p: cell_counts(units, key, size, cap) for p, (key, size) in keys.items()}
            l2 = float(k) if cap is None else float(np.sqrt(k * cap))
            bias = np.mean([released_tvd(truth[p], counts[p], 0.0, None) for p in pairs])
            counted = int(round(np.mean([c.sum() for c in counts.values()])))
            for epsilon in args.epsilons:
                rho = rho_from_epsilon(epsilon, args.delta) / len(pairs)
                sigma = l2 / np.sqrt(2.0 * rho)
                released = np.mean([np.mean([released_tvd(truth[p], counts[p], sigma, rng) for p in pairs])
                                    for _ in range(args.draws)])
                print(f"| {epsilon:g} | {k} | {'none (K rows)' if cap is None else cap} | {l2:.2f} | {sigma:,.0f} | "
                      f"{counted:,} | {bias:.4f} | {released:.4f} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
