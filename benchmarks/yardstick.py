"""Issue 50's table: our engine per (table, ε) against the better of AIM and MST, from saved runs.

Reads the per-run JSON records that ``quality.py --json`` writes (our engine's runs and the peers'),
adds the peers' ε = 1 rows of ../shared/bench/README.md and any ``--quote`` rows, and prints one
Markdown row per (dataset, ε): our mean ± standard error over its runs of 2-way TVD, 3-way TVD and
TSTR, the better peer's value of each (lowest TVD, highest TSTR over the peers' runs, each peer's
runs averaged first; "k runs" where that peer's mean is over k > 1 runs), and whether the cell meets issue 50's bar — TVD at or below the better
peer's, TSTR at or above it within one standard error of our mean. Never runs anything, never asserts.

    python benchmarks/yardstick.py --engine fpt --ours /tmp/fpt03.json /tmp/fpt1.json ... \\
        --peers /tmp/aim.json /tmp/mst.json --quote diabetes_readmission:MST:1:0.0415:0.0676:0.308
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness_runs import peer_scores  # noqa: E402

METRICS = ("tvd_2way", "tvd_3way", "tstr_best")
PEERS = ("AIM", "MST")


def records(paths: list[Path], keep) -> list[dict]:
    """Every successful measured record in the files whose synthesizer ``keep`` accepts (quoted rows
    of the files are skipped: the README is read once, below)."""
    out = []
    for path in paths:
        for record in json.loads(Path(path).read_text(encoding="utf-8")):
            if record.get("status") == "ok" and record.get("source", "measured") == "measured" and keep(record["synthesizer"]):
                out.append(record)
    return out


def readme_rows() -> list[dict]:
    """The peers' ε = 1 rows of ../shared/bench/README.md as records."""
    return [{"dataset": dataset, "synthesizer": peer, "epsilon": 1.0, "source": "README", **values}
            for (dataset, peer), values in peer_scores().items() if peer in PEERS]


def quoted(text: str) -> dict:
    """``DATASET:PEER:EPS:TVD2:TVD3:TSTR`` as a record."""
    dataset, peer, epsilon, *values = text.split(":")
    if peer not in PEERS or len(values) != 3:
        raise SystemExit(f"--quote {text}: DATASET:PEER:EPS:TVD2:TVD3:TSTR with PEER one of {PEERS}")
    return {"dataset": dataset, "synthesizer": peer, "epsilon": float(epsilon), "source": "quoted",
            **dict(zip(METRICS, map(float, values)))}


def cells(rows: list[dict], engine: str) -> dict:
    """(dataset, ε) → {"ours": {metric: values}, peer: {metric: values}}."""
    table = defaultdict(lambda: defaultdict(lambda: defaultdict(list)))
    for row in rows:
        who = "ours" if row["synthesizer"] == engine else row["synthesizer"]
        if who != "ours" and who not in PEERS:
            continue
        for metric in METRICS:
            if row.get(metric) is not None:
                table[(row["dataset"], float(row["epsilon"]))][who][metric].append(float(row[metric]))
    return table


def verdict(cell: dict) -> tuple[str, bool | None]:
    """One Markdown row's cells after the dataset and ε, and whether the bar is met (None: no peer or no runs)."""
    ours = cell.get("ours")
    peers = {p: {m: float(np.mean(v)) for m, v in cell[p].items()} for p in PEERS if p in cell}
    if not ours:
        return " | ".join("–" for _ in range(5)), None
    n = len(ours["tstr_best"])
    mean = {m: float(np.mean(ours[m])) for m in METRICS}
    se = {m: float(np.std(ours[m], ddof=1) / math.sqrt(len(ours[m]))) if len(ours[m]) > 1 else float("nan") for m in METRICS}
    best = {}
    for m in METRICS:
        values = [(v[m], p) for p, v in peers.items() if m in v]
        if values:
            best[m] = (min(values) if m.startswith("tvd") else max(values))
    ours_text = " / ".join(f"{mean[m]:.4f} ± {se[m]:.4f}" if not math.isnan(se[m]) else f"{mean[m]:.4f}" for m in METRICS)
    runs = {m: len(cell[best[m][1]][m]) for m in best}  # the better peer's runs behind each value
    peer_text = " / ".join(f"{best[m][0]:.4f} ({best[m][1]}{f', {runs[m]} runs' if runs[m] > 1 else ''})" if m in best else "–"
                           for m in METRICS)
    if len(best) < len(METRICS):
        return f"{n} | {ours_text} | {peer_text} | peers incomplete | –", None
    short = []
    if mean["tvd_2way"] > best["tvd_2way"][0]:
        short.append("2-way")
    if mean["tvd_3way"] > best["tvd_3way"][0]:
        short.append("3-way")
    margin = se["tstr_best"] if not math.isnan(se["tstr_best"]) else 0.0
    if mean["tstr_best"] < best["tstr_best"][0] - margin:
        short.append(f"TSTR ({mean['tstr_best'] - best['tstr_best'][0]:+.3f})")
    missing = ", ".join(p for p in PEERS if p not in peers)
    note = "met" if not short else "behind on " + ", ".join(short)
    return f"{n} | {ours_text} | {peer_text} | {note}{f' (no {missing})' if missing else ''} | {'yes' if not short else 'no'}", not short


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--engine", default="fpt", help="our engine's name in the records (default fpt)")
    parser.add_argument("--ours", nargs="+", type=Path, required=True, help="quality.py --json files: our engine's runs are read from these")
    parser.add_argument("--peers", nargs="*", type=Path, default=[], help="quality.py --json files: AIM's and MST's runs are read from these")
    parser.add_argument("--quote", action="append", default=[], help="DATASET:PEER:EPS:TVD2:TVD3:TSTR, a peer row measured elsewhere")
    parser.add_argument("--no-readme", action="store_true", help="leave out the peers' ε = 1 rows of ../shared/bench/README.md")
    args = parser.parse_args(argv)
    rows = (records(args.ours, lambda who: who == args.engine) + records(args.peers, lambda who: who in PEERS)
            + ([] if args.no_readme else readme_rows()) + [quoted(q) for q in args.quote])
    table = cells(rows, args.engine)
    print(f"| dataset | ε | runs | {args.engine}: 2-way / 3-way / TSTR (mean ± SE) | better of AIM and MST | | bar met |")
    print("|---|---|---|---|---|---|---|")
    met = judged = 0
    for dataset, epsilon in sorted(table, key=lambda k: (k[0], k[1])):
        text, ok = verdict(table[(dataset, epsilon)])
        judged += ok is not None
        met += bool(ok)
        print(f"| {dataset} | {epsilon:g} | {text} |")
    print(f"\nBar met in {met} of {judged} judged cells ({len(table)} cells in all).")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
