"""FPT beside the reference AIM and MST on the shared yardstick (../shared/bench), ε = 1, δ = 1e-9.

Each dataset is run ``--runs`` times end to end through ``spark-synth run --engine fpt`` by the
harness (its split, its metrics, its wall clock and peak RSS); the noise cannot be seeded, so the
table gives the mean and a 90 % t-interval of the mean per metric. The peers' scores are read from
the table in ../shared/bench/README.md (same harness, same machine class).

    python benchmarks/fpt_vs_peers.py [--datasets adult bank_marketing credit_default] [--runs 5]
        [--engine-option KEY=VALUE ...] [--engine fpt] [--out-dir /tmp/fpt_bench]

Prints a Markdown table (paste it into benchmarks/RESULTS.md with the command line).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
from scipy import stats

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("SPARK_SYNTH_SHARED", ROOT.parent / "shared"))
METRICS = [("tvd_2way", "2-way TVD", min), ("tvd_3way", "3-way TVD", min), ("sw1", "SW1", min),
           ("assoc_diff", "assoc Δ", min), ("tstr_best", "TSTR best", max), ("wall_s", "wall s", min)]
README_COLUMNS = {"2-way TVD": "tvd_2way", "3-way TVD": "tvd_3way", "SW1": "sw1", "assoc Δ": "assoc_diff",
                  "TSTR best": "tstr_best", "wall s": "wall_s"}


def peer_scores(readme: Path) -> dict[tuple[str, str], dict[str, float]]:
    """(dataset, peer) → metrics, from the Markdown table of ../shared/bench/README.md."""
    out, header = {}, None
    for line in readme.read_text(encoding="utf-8").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("| dataset"):
            header = cells
        elif header and line.startswith("|") and not set(line) <= set("|-: "):
            row = dict(zip(header, cells))
            values = {}
            for title, key in README_COLUMNS.items():
                match = re.search(r"[-+]?\d*\.?\d+", row.get(title, "").replace("*", ""))
                if match:
                    values[key] = float(match.group())
            out[(row["dataset"], row["peer"])] = values
    return out


def run_once(dataset: str, index: int, out_dir: Path, options: list[str], engine: str = "fpt", label: str | None = None) -> dict:
    """One harness run of ``spark-synth run --engine ENGINE``; its summary plus wall seconds, peak RSS
    and the synthetic file's path."""
    cli = shlex.quote(str(Path(sys.executable).with_name("spark-synth")))
    extra = " ".join(f"--engine-option {shlex.quote(o)}" for o in options)
    template = (f"{cli} run --input {{train_csv}} --schema {{schema}} --engine {engine} --epsilon {{epsilon}} "
                f"--delta {{delta}} --rows {{rows}} --output {{output}} --no-mlflow {extra}")
    out = out_dir / f"{dataset}_{label or engine}_{index}.json"
    for stale in (out, out.with_suffix(".synthetic.csv")):  # never read an earlier run's result (Spark writes a folder)
        shutil.rmtree(stale) if stale.is_dir() else stale.unlink(missing_ok=True)
    subprocess.run([sys.executable, str(SHARED / "bench" / "harness.py"), "run", "--dataset", str(SHARED / "data" / dataset),
                    "--epsilon", "1", "--delta", "1e-9", "--out", str(out), "--cmd", template], check=False, cwd=ROOT,
                   stdout=subprocess.DEVNULL)
    return read_run(out)


def read_run(out: Path) -> dict:
    """A harness run's summary plus wall seconds, peak RSS and the synthetic file's path."""
    if not out.exists():
        raise SystemExit(f"{out.name}: the harness wrote no result (see {out.with_suffix('.log')})")
    result = json.loads(out.read_text())
    if result["run"]["status"] != "ok":
        raise SystemExit(f"{out.name} failed: {result['run']}")
    return {**result["summary"], "wall_s": result["run"]["wall_s"], "peak_rss_mb": result["run"]["peak_rss_mb"],
            "synthetic": result["synthetic"]["path"]}


def interval(values: list[float]) -> tuple[float, float, float]:
    """Mean and its 90 % t-interval."""
    x = np.asarray(values, dtype=float)
    if len(x) < 2:
        return float(x.mean()), float("nan"), float("nan")
    half = stats.t.ppf(0.95, len(x) - 1) * x.std(ddof=1) / math.sqrt(len(x))
    return float(x.mean()), float(x.mean() - half), float(x.mean() + half)


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
    peers = peer_scores(SHARED / "bench" / "README.md")
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
