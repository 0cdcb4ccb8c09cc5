"""Stage timings of a full `spark-synth run` on adult (prints a table; never asserts on time).

    python benchmarks/stage_timings.py [--data ../shared/data] [--engine independent] [--repeats 2]

Each repeat is a fresh `spark-synth run` process (JVM start, Delta, MLflow included), so the
"process" column is what a user waits for; the first repeat may include the one-off Delta jar
download. Stage columns come from the run's own JSON summary.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", default=str(ROOT.parent / "shared" / "data"), help="folder with adult.csv")
    parser.add_argument("--engine", default="independent")
    parser.add_argument("--rows", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args()
    data = Path(args.data)
    if (data / "adult.csv").is_file():
        csv, schema = data / "adult.csv", data / "adult.schema.json"
    else:
        csv, schema = ROOT / "spark_synth/data/adult_sample.csv", ROOT / "spark_synth/data/adult_sample.schema.json"
    print(f"input: {csv} | engine: {args.engine} | rows: {args.rows}")
    stages = ["measure", "noise", "fit", "sample_and_write", "total"]
    print("| repeat | process s | " + " | ".join(f"{s} s" for s in stages) + " |")
    print("|---" * (len(stages) + 2) + "|")
    for repeat in range(1, args.repeats + 1):
        with tempfile.TemporaryDirectory() as tmp:
            cmd = [sys.executable, "-m", "spark_synth.cli", "run", "--input", str(csv), "--schema", str(schema),
                   "--engine", args.engine, "--epsilon", "1", "--delta", "1e-9", "--rows", str(args.rows),
                   "--output", f"{tmp}/out", "--seed", "0"]
            started = time.perf_counter()
            done = subprocess.run(cmd, capture_output=True, text=True, cwd=tmp, env={**os.environ, "SPARK_SYNTH_HOME": f"{tmp}/home"})
            wall = time.perf_counter() - started
        if done.returncode != 0:
            sys.exit(f"run failed: {done.stderr.strip().splitlines()[-1]}")
        timings = json.loads(done.stdout.strip().splitlines()[-1])["timings"]
        print(f"| {repeat} | {wall:.1f} | " + " | ".join(f"{timings[s]:.2f}" for s in stages) + " |")


if __name__ == "__main__":
    main()
