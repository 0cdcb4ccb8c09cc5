"""FPT beside the reference AIM and MST on the shared yardstick (../shared/bench), ε = 1, δ = 1e-9.

Each dataset is run ``--runs`` times end to end through ``spark-synth run --engine fpt`` by the
harness (its split, its metrics, its wall clock and peak RSS); the noise cannot be seeded, so the
table gives the mean and a 90 % t-interval of the mean per metric. The peers' scores are read from
the table in ../shared/bench/README.md (same harness, same machine class, one run each: noise seed
0). With ``--peers-python`` (a Python with ``mbi`` 2.0.0, see that README) and ``--peer-runs N``,
the peers named by ``--peers`` are run here instead, N times each with noise seeds 0 … N−1, and
shown like the engine (mean and interval); the README's rows are printed beside them. The harness
plumbing is shared with benchmarks/quality.py (benchmarks/harness_runs.py).

    python benchmarks/fpt_vs_peers.py [--datasets adult bank_marketing credit_default] [--runs 5]
        [--engine-option KEY=VALUE ...] [--engine fpt] [--out-dir /tmp/fpt_bench]
        [--peers-python PATH --peer-runs N [--peers mst,aim]] [--skip-engine]

Prints a Markdown table (paste it into benchmarks/RESULTS.md with the command line).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness_runs import (PEER_NAMES, harness_run, interval, mbi_problem, peer_scores, peer_template,  # noqa: E402
                          read_run, run_once)

METRICS = [("tvd_2way", "2-way TVD", min), ("tvd_3way", "3-way TVD", min), ("sw1", "SW1", min),
           ("assoc_diff", "assoc Δ", min), ("tstr_best", "TSTR best", max), ("wall_s", "wall s", min)]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--datasets", nargs="+", default=["adult", "bank_marketing", "credit_default"])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--engine-option", action="append", default=[])
    parser.add_argument("--engine", default="fpt", help="any spark-synth engine (the script was written for fpt)")
    parser.add_argument("--out-dir", default="/tmp/fpt_bench")
    parser.add_argument("--peers-python", help="a Python with mbi 2.0.0: run the peers here (needs --peer-runs)")
    parser.add_argument("--peer-runs", type=int, default=0, help="runs per measured peer, noise seeds 0..N-1 (0: quote the README)")
    parser.add_argument("--peers", default="mst", help="peers to run with --peer-runs: mst, aim or mst,aim")
    parser.add_argument("--skip-engine", action="store_true", help="run only the peers")
    args = parser.parse_args(argv)
    measured = peers_to_run(args)
    out_dir = Path(args.out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    quoted = peer_scores()
    print("| dataset | engine | " + " | ".join(title for _, title, _ in METRICS) + " | peak RSS MB |")
    print("|---|---|" + "---|" * (len(METRICS) + 1))
    for dataset in args.datasets:
        if not args.skip_engine:
            runs = [run_once(dataset, i, out_dir, args.engine_option, args.engine) for i in range(args.runs)]
            print(row(dataset, f"{args.engine} ({args.runs} runs)", runs))
        for peer in measured:
            runs = [read_run(harness_run(dataset, peer_template(args.peers_python, peer, seed),
                                         out_dir / f"{dataset}_{peer}_seed{seed}.json", label=f"{peer} seed {seed}"))
                    for seed in range(args.peer_runs)]
            print(row(dataset, f"{PEER_NAMES[peer]} ({args.peer_runs} runs, seeds 0–{args.peer_runs - 1})", runs))
        for peer in PEER_NAMES.values():
            scores = quoted.get((dataset, peer), {})
            print(f"| {dataset} | {peer} (README) | " + " | ".join(
                f"{scores[key]:.4g}" if key in scores else "–" for key, _, _ in METRICS) + " | – |")
        sys.stdout.flush()
    return 0


def peers_to_run(args) -> list[str]:
    """The peers to run here (empty: quote the README); exits when they cannot run."""
    if not args.peer_runs:
        return []
    wanted = [p.strip().lower() for p in args.peers.split(",") if p.strip()]
    unknown = sorted(set(wanted) - set(PEER_NAMES))
    if unknown:
        raise SystemExit(f"--peers: unknown {unknown}; known: {sorted(PEER_NAMES)}")
    problem = mbi_problem(args.peers_python) if args.peers_python else "--peer-runs needs --peers-python"
    if problem:
        raise SystemExit(problem)
    return wanted


def row(dataset: str, label: str, runs: list[dict]) -> str:
    """One Markdown row: each metric's mean and 90 % interval over RUNS, and the largest peak RSS."""
    cells = []
    for key, _, _ in METRICS:
        mean, low, high = interval([r[key] for r in runs if r.get(key) is not None])
        cells.append(f"{mean:.4g} [{low:.4g}, {high:.4g}]")
    return f"| {dataset} | {label} | " + " | ".join(cells) + f" | {max(r['peak_rss_mb'] for r in runs):.0f} |"


if __name__ == "__main__":
    sys.exit(main())
