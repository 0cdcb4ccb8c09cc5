"""Census-style check on diabetes_readmission: the error at every ICD-9 hierarchy level, FPT vs independent.

The three diagnosis columns (915 codes each) get the public ICD-9-CM hierarchy
(:mod:`spark_synth.schema.icd9`: code → category → block → chapter). Both engines run end to end
through ``spark-synth run`` at the same ε on the harness's train split; for every diagnosis column
and level the TVD between the synthetic and the real train counts is printed (mean over runs), with
each run's wall seconds and peak RSS (largest single process: the driver's Python or its JVM).

    python benchmarks/fpt_hierarchy.py [--runs 3] [--epsilon 1] [--engine-option KEY=VALUE ...]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("SPARK_SYNTH_SHARED", ROOT.parent / "shared"))
DIAGNOSES = ["diag_1", "diag_2", "diag_3"]
sys.path.insert(0, str(ROOT))

from spark_synth.schema import schema_from_dict  # noqa: E402
from spark_synth.schema.icd9 import with_icd9_hierarchy  # noqa: E402


def level_errors(schema, real: pd.DataFrame, synthetic: pd.DataFrame) -> dict[tuple[str, str], float]:
    """TVD per (column, level) of the 1-way counts summed into the level's groups (null its own group)."""
    out = {}
    for name in DIAGNOSES:
        column = schema[name]
        index = {str(c): i for i, c in enumerate(column.categories)}

        def counts(frame):
            codes = frame[name].map(lambda v: index.get(str(v), column.null_code) if pd.notna(v) else column.null_code)
            return np.bincount(codes.astype(int), minlength=column.size).astype(float)

        real_counts, synthetic_counts = counts(real), counts(synthetic)
        for level, grouping in [("code", tuple(range(column.size)))] + column.hierarchy_groupings():
            p = np.bincount(grouping, weights=real_counts)
            q = np.bincount(grouping, weights=synthetic_counts)
            out[(name, level)] = 0.5 * float(np.abs(p / p.sum() - q / q.sum()).sum())
    return out


def run_engine(engine: str, train: Path, schema_path: Path, rows: int, epsilon: float, options: list[str], out: Path) -> dict:
    cli = str(Path(sys.executable).with_name("spark-synth"))
    command = [cli, "run", "--input", str(train), "--schema", str(schema_path), "--engine", engine, "--epsilon", str(epsilon),
               "--delta", "1e-9", "--rows", str(rows), "--output", str(out), "--no-mlflow", "--seed", "0"]
    for option in options if engine == "fpt" else []:
        command += ["--engine-option", option]
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, cwd=ROOT)
    wall = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{engine} failed: {done.stderr[-2000:]}")
    peak = max(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, before) / 1024
    return {"wall_s": wall, "peak_rss_mb": peak, "summary": json.loads(done.stdout.strip().splitlines()[-1])}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--epsilon", type=float, default=1.0)
    parser.add_argument("--engine-option", action="append", default=[])
    args = parser.parse_args(argv)
    split = json.loads(subprocess.run([sys.executable, str(SHARED / "bench" / "harness.py"), "split", "--dataset",
                                       str(SHARED / "data" / "diabetes_readmission")], capture_output=True, text=True,
                                      check=True).stdout)
    train = Path(split["train_csv"])
    raw = with_icd9_hierarchy(json.loads((SHARED / "data" / "diabetes_readmission.schema.json").read_text()), DIAGNOSES)
    schema = schema_from_dict(raw)
    real = pd.read_csv(train, dtype=str, keep_default_na=False, na_values=[""])
    work = Path(tempfile.mkdtemp(prefix="fpt_hierarchy_"))
    schema_path = work / "diabetes_icd9.schema.json"
    schema_path.write_text(json.dumps(raw))
    errors: dict[str, list[dict]] = {"fpt": [], "independent": []}
    costs: dict[str, list[dict]] = {"fpt": [], "independent": []}
    for run in range(args.runs):
        for engine in errors:
            out = work / f"{engine}_{run}.parquet"
            cost = run_engine(engine, train, schema_path, len(real), args.epsilon, args.engine_option, out)
            errors[engine].append(level_errors(schema, real, pd.read_parquet(out)))
            costs[engine].append(cost)
            print(f"run {run} {engine}: {cost['wall_s']:.0f} s, peak RSS {cost['peak_rss_mb']:.0f} MB", file=sys.stderr, flush=True)
    keys = list(errors["fpt"][0])
    print(f"diabetes_readmission, ε = {args.epsilon:g}, δ = 1e-9, {args.runs} runs each (mean TVD per level)\n")
    print("| column | level | groups | fpt | independent | fpt lower |")
    print("|---|---|---|---|---|---|")
    for name, level in keys:
        groups = schema[name].size if level == "code" else max(dict(schema[name].hierarchy_groupings())[level]) + 1
        f = np.mean([e[(name, level)] for e in errors["fpt"]])
        i = np.mean([e[(name, level)] for e in errors["independent"]])
        print(f"| {name} | {level} | {groups} | {f:.4f} | {i:.4f} | {'yes' if f < i else 'NO'} |")
    for engine in costs:
        wall = [c["wall_s"] for c in costs[engine]]
        print(f"\n{engine}: wall {np.mean(wall):.0f} s (max {max(wall):.0f}), peak RSS max "
              f"{max(c['peak_rss_mb'] for c in costs[engine]):.0f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
