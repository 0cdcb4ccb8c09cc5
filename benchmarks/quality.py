"""Side-by-side quality of spark-synth's engines and public DP synthesizers (prints one table per dataset).

    python benchmarks/quality.py [--datasets adult california_housing] [--epsilons 0.5 1 3 10] \
        [--seeds 0 1 2] [--delta 1e-9] [--synthesizers ENGINE,...,mst,aim] [--aim-rounds R] [--json OUT]

Protocol (fair to everyone): each real table is split once with the deterministic
`train_holdout_split` (80/20, seed 0); every synthesizer sees only the train part, writes as many
rows as the train part has, and is evaluated with `spark_synth.evaluate.evaluate` against train
(fidelity) and hold-out (TSTR, privacy proxies). Every synthesizer works on the same public domain:
the peers get spark-synth's public codes (categories, public bins, null code) and their output is
decoded the same way as spark-synth's own.

* spark-synth engines: every engine in `spark_synth.engines.ENGINES` (new engines join
  automatically), each as a fresh `spark-synth run` process (JVM start included in "wall s";
  "fit s" is measure + noise + fit from its own summary).
* peers: AIM and MST from OpenDP's smartnoise-synth (on private-pgm's `mbi`), run in their own
  venv (benchmarks/setup_peers.sh) through benchmarks/peers_runner.py. Never a runtime dependency.

"peak MiB" is the peak resident memory of the synthesizer's whole process tree (sampled every 0.1 s).
Never asserts; prints markdown tables (mean over seeds, ± one standard deviation where > 1 seed).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
PEERS = ("mst", "aim")


class PeakMemory:
    """Peak summed RSS of a process and all its descendants, sampled in a thread."""

    def __init__(self, pid: int):
        self.pid, self.peak, self._stop = pid, 0, threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._thread.start()

    def _tree_rss(self) -> int:
        parents, rss = {}, {}
        for proc in Path("/proc").iterdir():
            if not proc.name.isdigit():
                continue
            try:
                stat = (proc / "stat").read_text()
                fields = stat[stat.rfind(")") + 2:].split()
                parents[int(proc.name)] = int(fields[1])
                rss[int(proc.name)] = int(fields[21]) * os.sysconf("SC_PAGE_SIZE")
            except (OSError, ValueError, IndexError):
                continue
        tree, frontier = {self.pid}, [self.pid]
        while frontier:
            parent = frontier.pop()
            for child, p in parents.items():
                if p == parent and child not in tree:
                    tree.add(child)
                    frontier.append(child)
        return sum(rss.get(p, 0) for p in tree)

    def _loop(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, self._tree_rss())
            self._stop.wait(0.1)

    def stop(self) -> float:
        self._stop.set()
        self._thread.join()
        return self.peak / 2**20


def run_measured(cmd: list[str], env: dict | None = None, cwd: str | None = None) -> tuple[subprocess.CompletedProcess, float, float]:
    started = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=cwd)
    meter = PeakMemory(proc.pid)
    out, err = proc.communicate()
    wall = time.perf_counter() - started
    peak = meter.stop()
    return subprocess.CompletedProcess(cmd, proc.returncode, out, err), wall, peak


def peers_python() -> str:
    venv = subprocess.run(["bash", str(ROOT / "benchmarks" / "setup_peers.sh")], check=True, capture_output=True, text=True).stdout.strip()
    return str(Path(venv) / "bin" / "python")


def main() -> None:
    from spark_synth.engines import ENGINES

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", default=str(ROOT.parent / "shared" / "data"))
    parser.add_argument("--datasets", nargs="+", default=["adult", "california_housing"])
    parser.add_argument("--epsilons", nargs="+", type=float, default=[0.5, 1.0, 3.0, 10.0])
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--delta", type=float, default=1e-9)
    parser.add_argument("--synthesizers", default=",".join([*ENGINES, *PEERS]),
                        help=f"comma-separated; default every engine ({', '.join(ENGINES)}) and the peers {PEERS}")
    parser.add_argument("--aim-rounds", type=int, default=None, help="AIM rounds (default: smartnoise's 16 × columns)")
    parser.add_argument("--utility-rows", type=int, default=30_000)
    parser.add_argument("--json", default=None, help="also write every measured row to this JSON file")
    args = parser.parse_args()
    synthesizers = [s.strip() for s in args.synthesizers.split(",") if s.strip()]
    unknown = [s for s in synthesizers if s not in ENGINES and s not in PEERS]
    if unknown:
        sys.exit(f"unknown synthesizers {unknown}; known: {[*ENGINES, *PEERS]}")

    work = Path(tempfile.mkdtemp(prefix="spark-synth-quality-"))
    os.environ.setdefault("SPARK_SYNTH_HOME", str(work / "home"))
    from spark_synth.evaluate import evaluate, train_holdout_split
    from spark_synth.io import read_input
    from spark_synth.schema import OutOfDomainPolicy, decode_codes, encode_frame, load_schema
    from spark_synth.session import get_spark

    spark = get_spark("local", extra_conf={"spark.master": "local[2]", "spark.sql.shuffle.partitions": "4"})
    peer_python = peers_python() if any(s in PEERS for s in synthesizers) else None
    print(f"command: {' '.join(sys.argv)}")
    print(f"grid: datasets {args.datasets}; ε {args.epsilons}; δ {args.delta}; seeds {args.seeds}; synthesizers {synthesizers}")
    records = []
    for name in args.datasets:
        schema = load_schema(Path(args.data) / f"{name}.schema.json")
        real = read_input(spark, str(Path(args.data) / f"{name}.csv"))
        train, holdout = train_holdout_split(real, 0.2, seed=0)
        train_pd = train.toPandas()
        train, holdout = spark.createDataFrame(train_pd, schema=real.schema).cache(), holdout.cache()
        n_train = len(train_pd)
        train_csv = work / f"{name}_train.csv"
        train_pd.to_csv(train_csv, index=False, na_rep="")
        codes, _ = encode_frame(train_pd[list(schema.names)], schema, OutOfDomainPolicy.CLIP)
        codes_csv, sizes_json = work / f"{name}_codes.csv", work / f"{name}_sizes.json"
        pd.DataFrame(codes, columns=list(schema.names)).to_csv(codes_csv, index=False)
        sizes_json.write_text(json.dumps({c.name: c.size for c in schema}))
        for epsilon in args.epsilons:
            for seed in args.seeds:
                for synth in synthesizers:
                    out = work / f"{name}_{synth}_{epsilon}_{seed}"
                    record = {"dataset": name, "synthesizer": synth, "epsilon": epsilon, "seed": seed}
                    if synth in ENGINES:
                        cmd = [sys.executable, "-m", "spark_synth.cli", "run", "--input", str(train_csv), "--schema",
                               str(Path(args.data) / f"{name}.schema.json"), "--engine", synth, "--epsilon", str(epsilon),
                               "--delta", str(args.delta), "--rows", str(n_train), "--output", f"{out}.parquet",
                               "--seed", str(seed), "--no-mlflow"]
                        done, wall, peak = run_measured(cmd, env={**os.environ, "SPARK_SYNTH_HOME": str(work / "home")})
                        if done.returncode == 0:
                            summary = json.loads(done.stdout.strip().splitlines()[-1])
                            t = summary["timings"]
                            record.update(fit_s=t.get("measure", 0) + t.get("noise", 0) + t.get("fit", 0),
                                          epsilon_spent=summary["epsilon_spent"])
                            synthetic = read_input(spark, f"{out}.parquet")
                    else:
                        cmd = [peer_python, str(ROOT / "benchmarks" / "peers_runner.py"), "--codes", str(codes_csv),
                               "--sizes", str(sizes_json), "--synth", synth, "--epsilon", str(epsilon), "--delta",
                               str(args.delta), "--rows", str(n_train), "--seed", str(seed), "--out", f"{out}.csv"]
                        if synth == "aim" and args.aim_rounds:
                            cmd += ["--aim-rounds", str(args.aim_rounds)]
                        done, wall, peak = run_measured(cmd)
                        if done.returncode == 0:
                            record.update(fit_s=json.loads(done.stdout.strip().splitlines()[-1])["fit_seconds"])
                            peer_codes = pd.read_csv(f"{out}.csv")[list(schema.names)].to_numpy(dtype=np.int64)
                            decoded = decode_codes(peer_codes, schema, np.random.default_rng(seed))
                            decoded.to_parquet(f"{out}.parquet", index=False)
                            synthetic = read_input(spark, f"{out}.parquet")
                    record.update(wall_s=wall, peak_mib=peak)
                    if done.returncode != 0:
                        record["error"] = (done.stderr.strip().splitlines() or ["failed"])[-1][:200]
                        print(f"  {name} {synth} ε={epsilon} seed={seed}: FAILED {record['error']}", flush=True)
                        records.append(record)
                        continue
                    ev = evaluate(train, synthetic, schema, holdout=holdout, seed=0, progress=False,
                                  utility_rows=args.utility_rows)
                    m = ev.metrics
                    util = m["utility"]
                    p = util.get("primary_metric")
                    record.update(
                        tvd1=m["marginals"]["1way"]["tvd_mean"], tvd2=m["marginals"]["2way"]["tvd_mean"],
                        tvd3=m["marginals"]["3way"]["tvd_mean"], sw1=m["distance"]["sliced_w1"], mmd=m["distance"]["mmd"],
                        assoc=m["association"]["abs_diff_mean"], metric=p,
                        tstr=util["best"]["tstr"][p] if p else None, trtr=util["best"]["trtr"][p] if p else None,
                        closer=m["privacy_proxies"]["share_closer_to_train"], mia=m["privacy_proxies"]["membership_auc"],
                        dcr=m["privacy_proxies"]["dcr_train_median"])
                    records.append(record)
                    print(f"  {name} {synth} ε={epsilon} seed={seed}: wall {wall:.1f}s, 1-way {record['tvd1']:.4f}, "
                          f"2-way {record['tvd2']:.4f}, TSTR {record['tstr']:.3f}", flush=True)
        print_table(name, [r for r in records if r["dataset"] == name])
    if args.json:
        Path(args.json).write_text(json.dumps(records, indent=1))


COLUMNS = [("wall_s", "wall s", 1), ("fit_s", "fit s", 1), ("peak_mib", "peak MiB", 0), ("tvd1", "1-way TVD", 4),
           ("tvd2", "2-way TVD", 4), ("tvd3", "3-way TVD", 4), ("sw1", "sliced W1", 4), ("mmd", "MMD", 4),
           ("assoc", "assoc. Δ", 3), ("tstr", "TSTR best", 3), ("trtr", "TRTR best", 3), ("closer", "closer-to-train", 3),
           ("mia", "MIA AUC", 3), ("dcr", "DCR median", 3)]


def print_table(name: str, rows: list[dict]) -> None:
    metric = next((r.get("metric") for r in rows if r.get("metric")), "")
    print(f"\n### {name} (TSTR/TRTR: best {metric} over logistic/ridge, random forest, XGBoost)\n")
    print("| synthesizer | ε | seeds | " + " | ".join(label for _, label, _ in COLUMNS) + " |")
    print("|---|---|---|" + "---|" * len(COLUMNS))
    keys = sorted({(r["synthesizer"], r["epsilon"]) for r in rows}, key=lambda k: (k[1], k[0]))
    for synth, epsilon in keys:
        group = [r for r in rows if r["synthesizer"] == synth and r["epsilon"] == epsilon]
        ok = [r for r in group if "error" not in r]
        if not ok:
            print(f"| {synth} | {epsilon:g} | 0 | failed: {group[0].get('error', '')} |")
            continue
        cells = []
        for key, _, digits in COLUMNS:
            values = [r[key] for r in ok if r.get(key) is not None]
            if not values:
                cells.append("–")
            elif len(values) > 1:
                cells.append(f"{np.mean(values):.{digits}f} ± {np.std(values, ddof=1):.{digits}f}")
            else:
                cells.append(f"{values[0]:.{digits}f}")
        print(f"| {synth} | {epsilon:g} | {len(ok)} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
