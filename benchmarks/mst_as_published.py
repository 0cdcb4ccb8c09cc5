#!/usr/bin/env python3
"""The shared yardstick's MST with the published mechanism's noise scale restored (run in the peers' venv).

``../shared/bench/peers/mbi_mechanisms.py`` ports MST from the reference repository
(github.com/ryan112358/mbi, ``mechanisms/mst.py``). The reference measures each of its k cliques
(first every 1-way marginal, then the k = d − 1 selected pairs) as ``x + N(0, (σ/w)²)`` with
weights w = 1/√k (``weights /= norm(weights)``), so one phase costs Σ w²/(2σ²) = 1/(2σ²) = ρ/3 in
zCDP. The port's ``measure`` drops the weights: every clique gets N(0, σ²), each phase costs
k·ρ/3, and a run spends (2d − 1)/3 · ρ + ρ/3 = 2d/3 · ρ instead of ρ — 14 × the stated budget on a
21-column table. (Its AIM charges every measurement and is not affected.)

This script runs that same file unchanged except for its ``measure``, replaced by one with the
reference's weights, so MST spends exactly ρ = cdp_rho(ε, δ) again; the compression threshold
(3 × the 1-way measurements' σ) follows, as in the reference. Same arguments as the shared script
(``--mech mst`` is implied). ``--check`` prints, instead, the ρ that the shared ``measure`` and this
one spend on one phase of k cliques (from the noise they actually draw on a zero table).

    ~/.cache/peers/bin/python benchmarks/mst_as_published.py --train T.csv --schema S.json --epsilon 1 --rows N --out O.csv
    ~/.cache/peers/bin/python benchmarks/mst_as_published.py --check
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np

SHARED = Path(os.environ.get("SPARK_SYNTH_SHARED", Path(__file__).resolve().parents[2] / "shared"))
sys.path.insert(0, str(SHARED / "bench" / "peers"))
import mbi_mechanisms as shared_peers  # noqa: E402

PORTED_MEASURE = shared_peers.measure


def measure_as_published(data, cliques, sigma, prng):
    """The reference's ``measure``: clique i gets N(0, (σ/w_i)²) with unit-norm weights w (all equal)."""
    weight = 1.0 / np.sqrt(len(cliques))
    out = []
    for proj in cliques:
        x = data.project(proj).datavector()
        y = x + prng.normal(loc=0, scale=sigma / weight, size=x.size)
        out.append(shared_peers.LinearMeasurement(y, proj, sigma / weight))
    return out


def spent_rho(measure, k: int, sigma: float, cells: int = 20_000) -> float:
    """zCDP cost of one phase of ``k`` one-column cliques as ``measure`` draws it: Σ 1/(2 s_i²), with
    s_i the standard deviation of the noise it added to clique i (sensitivity 1 each)."""
    domain = shared_peers.Domain.fromdict({f"c{i}": cells for i in range(k)})
    zeros = shared_peers.Dataset({f"c{i}": np.zeros(1, dtype=np.int64) for i in range(k)}, domain)
    rng = np.random.RandomState(0)
    measured = measure(zeros, [(f"c{i}",) for i in range(k)], sigma, rng)
    return float(sum(1.0 / (2.0 * np.std(np.asarray(m.noisy_measurement) - (np.arange(cells) == 0)) ** 2) for m in measured))


def check() -> int:
    rho = shared_peers.cdp_rho(1.0, 1e-9)
    sigma = np.sqrt(3 / (2 * rho))  # MST's σ for each phase (one third of ρ)
    print(f"ε = 1, δ = 1e-9: ρ = {rho:.5f}; one MST phase should spend ρ/3 = {rho / 3:.5f}")
    print("| cliques k | shared port's measure | as published |")
    print("|---|---|---|")
    for k in (1, 5, 21):
        print(f"| {k} | {spent_rho(PORTED_MEASURE, k, sigma):.5f} | {spent_rho(measure_as_published, k, sigma):.5f} |")
    return 0


def main() -> int:
    if "--check" in sys.argv[1:]:
        return check()
    shared_peers.measure = measure_as_published  # mst() looks ``measure`` up in its module at call time
    if "--mech" not in sys.argv:
        sys.argv[1:1] = ["--mech", "mst"]
    shared_peers.main()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
