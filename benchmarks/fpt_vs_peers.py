"""FPT beside the reference AIM and MST on the shared yardstick (../shared/bench), ε = 1, δ = 1e-9.

Each dataset is run ``--runs`` times end to end through ``spark-synth run --engine fpt`` by the
harness (its split, its metrics, its wall clock and peak RSS); the noise cannot be seeded, so the
table gives the mean and a 90 % t-interval of the mean per metric. The peers' scores are read from
the table in ../shared/bench/README.md (same harness, same machine class). The harness plumbing is
shared with benchmarks/quality.py (benchmarks/harness_runs.py).

    python benchmarks/fpt_vs_peers.py [--datasets adult bank_marketing credit_default] [--runs 5]
        [--engine-option KEY=VALUE ...] [--engine fpt] [--out-dir /tmp/fpt_bench]

Prints a Markdown table (paste it into benchmarks/RESULTS.md with the command line).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness_runs import interval, peer_scores, run_once  # noqa: E402

METRICS = [("tvd_2way", "2-way TVD", min), ("tvd_3way", "3-way TVD", min), ("sw1", "SW1", min),
           ("assoc_diff", "assoc Δ", min), ("tstr_best", "TSTR best", max), ("wall_s", "wall s", min)]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--datasets", nargs="+", default=["adult", "bank_marketing", "credit_default"])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--engine-option", action="append", default=[])
    parser.add_argument("--engine", default="fpt", help="any spark-synth engine (the script was written for fpt)")
    parser.add_argument("--out-dir", default="/tmp/fpt_bench")
    args = parser.parse_args(argv)
    out_dir = Path(args.out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    peers = peer_scores()
    print("| dataset | engine | " + " | ".join(title for _, title, _ in METRICS) + " | peak RSS MB |")
    print("|---|---|" + "---|" * (len(METRICS) + 1))
    for dataset in args.datasets:
        runs = [run_once(dataset, i, out_dir, args.engine_option, args.engine) for i in range(args.runs)]
        cells = []
        for key, _, _ in METRICS:
            mean, low, high = interval([r[key] for r in runs if r.get(key) is not None])
            cells.append(f"{mean:.4g} [{low:.4g}, {high:.4g}]")
        print(f"| {dataset} | {args.engine} ({args.runs} runs) | " + " | ".join(cells) + f" | {max(r['peak_rss_mb'] for r in runs):.0f} |")
        for peer in ("AIM", "MST"):
            scores = peers.get((dataset, peer), {})
            print(f"| {dataset} | {peer} (README) | " + " | ".join(
                f"{scores[key]:.4g}" if key in scores else "–" for key, _, _ in METRICS) + " | – |")
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
