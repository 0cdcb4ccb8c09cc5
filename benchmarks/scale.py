"""End-to-end `spark-synth run` on large generated tables (prints a table; never asserts on time).

    python benchmarks/scale.py [--rows 1000000 10000000] [--shapes adult wide]
                               [--engines independent splice fpt dgm] [--data ../shared/data]

Tables (public and seeded: real rows of a shared dataset resampled with replacement, integer
columns jittered by 1 % of their spread where non-zero and clipped to the schema's bounds):
``adult`` — 15 columns (6 integer, 1 ordinal, 8 categorical), from adult.csv (or the bundled
sample); ``wide`` — 24 columns (14 integer, 6 ordinal, 4 categorical), from credit_default.csv;
``network100`` — 100 columns (61 categorical, some with hundreds of codes, 22 integer, 12 ordinal,
5 continuous) resampled from the 30 k rows that ``benchmarks/wide_network.py`` generates (seed 0).
Each is written once under $SPARK_SYNTH_HOME/bench/scale as Parquet (1 M-row files of 100 k-row row
groups, streamed, so memory does not grow with n) and converted once to a Delta table of files of
about 500 k rows (at least 8), as a parallel job writes it; the Delta table is the runs' input.
(A table stored as one file with a single row group is read by ONE Spark task, whatever the cores.)

Every run is a fresh `spark-synth run` process (profile ``local``, so local[*] = 2 cores here,
MLflow off) reading the Delta table and writing the same number of rows as a Delta table. Stage
columns come from the run's JSON line; peak memory is polled from /proc every 0.2 s: the
spark-synth Python driver, the JVM (driver and, in local mode, the executors too), and the sum of
the Python workers. Spill (memory and disk bytes spilled by every task, not shuffle writes) is read
from the run's Spark event log: the packaged ``local`` profile plus ``spark.eventLog.*``.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parent))
from process_memory import PeakMemory  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
CHUNK = 1_000_000
SHAPES = {"adult": "adult", "wide": "credit_default", "network100": None}


def source(data: Path, shape: str) -> tuple[Path, Path]:
    if SHAPES[shape] is None:  # a generated network (benchmarks/wide_network.py, 30 k rows, seed 0), written once
        from wide_network import write

        folder = bench_folder() / "tables"
        if not (folder / f"{shape}.csv").exists():
            write(folder, columns=int(shape[len("network"):]), rows=30_000, seed=0, name=shape)
        return folder / f"{shape}.csv", folder / f"{shape}.schema.json"
    name = SHAPES[shape]
    csv, schema = data / f"{name}.csv", data / f"{name}.schema.json"
    if csv.is_file():
        return csv, schema
    if shape == "adult":
        return ROOT / "spark_synth/data/adult_sample.csv", ROOT / "spark_synth/data/adult_sample.schema.json"
    raise SystemExit(f"{csv} is missing: pass --data with the shared datasets, or --shapes adult")


def typed_frame(csv: Path, schema_path: Path) -> tuple[pd.DataFrame, list[dict]]:
    columns = json.loads(schema_path.read_text())["columns"]
    frame = pd.read_csv(csv, dtype=str, keep_default_na=False, na_values=[""])
    for c in columns:
        if c["type"] == "integer" or (c["type"] == "ordinal" and all(isinstance(v, int) for v in c.get("categories", []))):
            frame[c["name"]] = pd.to_numeric(frame[c["name"]]).astype("Int64")
        elif c["type"] == "continuous":
            frame[c["name"]] = pd.to_numeric(frame[c["name"]]).astype("float64")
    return frame[[c["name"] for c in columns]], columns


def generate(csv: Path, schema_path: Path, rows: int, folder: Path) -> Path:
    """The Parquet folder of ``rows`` generated rows (written once, 1 M rows per file)."""
    done = folder / "_done"
    if done.exists():
        return folder
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    frame, columns = typed_frame(csv, schema_path)
    rng = np.random.default_rng(rows)
    for part, start in enumerate(range(0, rows, CHUNK)):
        take = frame.iloc[rng.integers(0, len(frame), min(CHUNK, rows - start))].reset_index(drop=True)
        for c in columns:
            if c["type"] == "integer":
                values = take[c["name"]]
                spread = 0.01 * (float(values.max()) - float(values.min()))
                noise = np.rint(rng.normal(0.0, max(spread, 1e-9), len(take)))
                jittered = np.clip(values.astype("float64") + np.where(values.fillna(0) != 0, noise, 0.0), c["min"], c["max"])
                take[c["name"]] = pd.array(np.rint(jittered.to_numpy(dtype=float, na_value=np.nan)), dtype="Float64").astype("Int64")
        pq.write_table(pa.Table.from_pandas(take, preserve_index=False), folder / f"part-{part:05d}.parquet", row_group_size=100_000)
    done.touch()
    return folder


def bench_folder() -> Path:
    from spark_synth.session import spark_synth_home

    return spark_synth_home() / "bench" / "scale"


def to_delta(parquet: Path, delta: Path, spark=None) -> None:
    """The Parquet folder as a Delta table (once)."""
    if (delta / "_delta_log").is_dir():
        return
    if spark is None:
        from spark_synth import get_spark

        spark = get_spark(extra_conf={"spark.master": "local[2]"})
    from spark_synth.io.writers import needs_column_mapping

    rows = sum(pq.ParquetFile(f).metadata.num_rows for f in parquet.glob("*.parquet"))  # no Spark pass to count
    table = spark.read.parquet(str(parquet))
    writer = table.repartition(max(8, rows // 500_000)).write.format("delta").mode("overwrite")
    if needs_column_mapping(table.columns):  # wide: "default payment next month"
        writer = writer.option("delta.columnMapping.mode", "name")
    # as a parallel job would write it: files of about 500 k rows (one Spark task can read each)
    writer.save(str(delta))


def event_logged_profile(folder: Path) -> tuple[Path, Path]:
    """The packaged ``local`` profile plus a Spark event log in ``folder/events`` (spill is read from it)."""
    import yaml
    from importlib.resources import files

    profile = yaml.safe_load((files("spark_synth") / "conf" / "spark" / "local.yaml").read_text())
    events = folder / "events"
    shutil.rmtree(events, ignore_errors=True)
    events.mkdir(parents=True)
    profile["spark"].update({"spark.eventLog.enabled": "true", "spark.eventLog.dir": events.as_uri(),
                             "spark.eventLog.compress": "false"})  # plain JSON lines (Spark 4 compresses by default)
    path = folder / "local_with_event_log.yaml"
    path.write_text(yaml.safe_dump(profile))
    return path, events


def spilled_mib(events: Path) -> dict:
    """Memory and disk bytes spilled (MiB) over every task of the run, from its Spark event log
    (``SparkListenerTaskEnd`` task metrics); shuffle writes are not spill and are not counted."""
    memory = disk = 0
    for log in events.rglob("events_*"):  # Spark 4 writes a folder per run (events_N_<app>, plus status files)
        with open(log, encoding="utf-8") as lines:
            for line in lines:
                if '"SparkListenerTaskEnd"' not in line:
                    continue
                metrics = json.loads(line).get("Task Metrics") or {}
                memory += metrics.get("Memory Bytes Spilled", 0)
                disk += metrics.get("Disk Bytes Spilled", 0)
    return {"spill_memory_mib": memory / 2**20, "spill_disk_mib": disk / 2**20}


def run_once(delta: Path, schema: Path, engine: str, rows: int, out: Path) -> dict:
    profile, events = event_logged_profile(out.parent / "spark_events")
    command = [sys.executable, "-m", "spark_synth.cli", "run", "--input", str(delta), "--schema", str(schema), "--engine", engine,
               "--epsilon", "1", "--delta", "1e-9", "--rows", str(rows), "--output", str(out), "--overwrite", "--seed", "0",
               "--no-mlflow", "--spark-profile", str(profile)]
    started = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    memory = PeakMemory(process.pid)
    memory.start()
    stdout, stderr = process.communicate()
    memory.stop.set()
    memory.join()
    wall = time.perf_counter() - started
    if process.returncode != 0:
        return {"error": stderr.strip().splitlines()[-1] if stderr.strip() else f"exit {process.returncode}", "wall": wall}
    summary = json.loads(stdout.strip().splitlines()[-1])
    return {"wall": wall, **summary.get("timings", {}), "passes": summary.get("measure_passes"), **memory.peak,
            **spilled_mib(events)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, nargs="+", default=[1_000_000, 10_000_000])
    parser.add_argument("--shapes", nargs="+", choices=sorted(SHAPES), default=["adult"])
    parser.add_argument("--engines", nargs="+", default=["independent", "splice"])
    parser.add_argument("--data", default=str(ROOT.parent / "shared" / "data"))
    args = parser.parse_args()
    bench = bench_folder()
    print("| shape | rows | engine | process s | measure s | noise s | fit s | sample+write s | passes | "
          "driver py MiB | JVM MiB | workers py MiB | spilled MiB (memory / disk) |")
    print("|---" * 13 + "|", flush=True)
    for shape in args.shapes:
        csv, schema = source(Path(args.data), shape)
        for rows in args.rows:
            parquet = generate(csv, schema, rows, bench / f"{shape}_{rows}.parquet")
            delta = bench / f"{shape}_{rows}.delta"
            subprocess.run([sys.executable, "-c", f"import sys; sys.path.insert(0, {str(ROOT)!r}); "
                            f"from benchmarks.scale import to_delta; from pathlib import Path; "
                            f"to_delta(Path({str(parquet)!r}), Path({str(delta)!r}))"], check=True, capture_output=True)
            for engine in args.engines:
                out = bench / f"out_{shape}_{rows}_{engine}.delta"
                r = run_once(delta, schema, engine, rows, out)
                shutil.rmtree(out, ignore_errors=True)
                if "error" in r:
                    print(f"| {shape} | {rows:,} | {engine} | {r['wall']:.0f} | failed: {r['error']} |" + " |" * 8, flush=True)
                    continue
                print(f"| {shape} | {rows:,} | {engine} | {r['wall']:.0f} | {r.get('measure', 0):.1f} | {r.get('noise', 0):.1f} | "
                      f"{r.get('fit', 0):.1f} | {r.get('sample_and_write', 0):.1f} | {r['passes']} | {r['driver_py']:.0f} | "
                      f"{r['jvm']:.0f} | {r['workers_py']:.0f} | {r['spill_memory_mib']:.0f} / {r['spill_disk_mib']:.0f} |",
                      flush=True)


if __name__ == "__main__":
    main()
