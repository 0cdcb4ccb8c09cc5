"""Output survives SIGKILL: a `spark-synth run` / `sample` killed in the middle of writing (its JVM and
Python workers included) leaves NO readable partial output, and the next run to the same target
succeeds — for every output format: a .csv path, a .parquet path, a Delta path and a catalog table.

"No readable partial output": reading the target with Spark either fails (it does not exist) or
returns exactly the previous complete output, never a subset of rows. What a killed write leaves
behind (hidden staging folders, unreferenced Delta data files, a half-written Delta commit) must be
invisible to readers and must not make the next run fail.

Each kill is a real CLI process, killed (whole process group) as soon as a data file of its write
holds rows — real progress, no sleeps — while millions of rows are still to come. Runs that are not
killed run in-process on the shared session, except for the catalog table, whose Derby metastore
only one JVM can open: that chain is four CLI processes, one after another, with their own
SPARK_SYNTH_HOME, its table read back from its location. The four formats' chains run at once (up
to four CLI processes together, each with one Spark task slot and a C1-only JIT to spare the CPU).

The in-process tests at the end cover the instants a kill cannot be aimed at: every step of
`write_output`'s commit sequence leaves the target absent, old or new (never partial), and a table
whose create was killed between its Delta commit and its registration in the catalog does not
block the next write to that name.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
import uuid
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from urllib.parse import urlparse

import pytest
from pyspark.errors import AnalysisException

from spark_synth.cli import main
from spark_synth.errors import OutputError
from spark_synth.io import check_output, filesystem, write_output
from tests.conftest import BUNDLED, REPO_ROOT

pytestmark = pytest.mark.spark

DATA, SCHEMA = str(BUNDLED / "adult_sample.csv"), str(BUNDLED / "adult_sample.schema.json")
BIG = 4_000_000  # rows of a write that gets killed: 16 partitions, seconds of work past its first file
GOOD, NEW = 2_000, 3_000  # rows of the complete outputs written before and after the kills
PATIENCE = 600  # seconds a CLI process may take to start writing / to finish (a slow, shared machine)
PATH_FORMATS = {"csv": "synthetic.csv", "parquet": "synthetic.parquet", "delta": "synthetic_delta"}

# Local Spark for the CLI processes: the bundled `local` profile, smaller (one task at a time: up to
# four of them run at once on a small machine; the killed writes still have 15 tasks to go).
PROFILE = """\
master: "local[1]"
spark:
  spark.driver.memory: "1g"
  spark.sql.shuffle.partitions: "1"
  spark.default.parallelism: "1"
  spark.ui.enabled: "false"
  spark.ui.showConsoleProgress: "false"
  spark.sql.execution.arrow.pyspark.enabled: "true"
  spark.sql.execution.arrow.maxRecordsPerBatch: "20000"
  spark.sql.session.timeZone: "UTC"
"""


# ---------------------------------------------------------------------------------------------
# CLI processes


class Cli:
    """Starts `spark-synth` processes (each its own process group) and makes sure none outlives the test."""

    def __init__(self, spark, workdir: Path, stop: threading.Event):
        self.workdir, self.stop = workdir, stop
        self.profile = workdir / "profile.yaml"
        self.profile.write_text(PROFILE)
        self.env = {k: v for k, v in os.environ.items()
                    if not k.startswith(("PYSPARK_GATEWAY", "_PYSPARK", "SPARK_SYNTH_HOME", "MLFLOW_TRACKING_URI"))}
        self.env["PYSPARK_PYTHON"] = sys.executable
        # Short-lived JVMs: the C1 compiler alone and a serial GC take a third less CPU; no effect on results.
        self.env["JAVA_TOOL_OPTIONS"] = " ".join(
            [os.environ.get("JAVA_TOOL_OPTIONS", ""), "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"]).strip()
        jars = _delta_jars(spark)
        if jars:  # the jars the test session resolved: no Ivy resolution (and no Ivy lock) per process
            self.env["SPARK_SYNTH_DELTA_JARS"] = ",".join(jars)
        script = Path(sys.executable).with_name("spark-synth")
        self.command = [str(script)] if script.exists() else [sys.executable, "-m", "spark_synth.cli"]
        self.processes: list[subprocess.Popen] = []
        self.lock = threading.Lock()
        self.started, self.timeline = time.monotonic(), []

    def mark(self, what: str) -> None:
        """Note when a step ended (printed at the end: where the time goes on a slow machine)."""
        with self.lock:
            self.timeline.append((time.monotonic() - self.started, what))

    def start(self, args: list[str], home: Path) -> tuple[subprocess.Popen, Path]:
        if self.stop.is_set():
            raise RuntimeError("stopped: another part of the test failed")
        log = self.workdir / f"cli-{uuid.uuid4().hex[:8]}"
        env = {**self.env, "SPARK_SYNTH_HOME": str(home)}
        with open(f"{log}.out", "wb") as out, open(f"{log}.err", "wb") as err:
            proc = subprocess.Popen([*self.command, *args, "--spark-profile", str(self.profile)], cwd=REPO_ROOT,
                                    env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=err, start_new_session=True)
        with self.lock:
            self.processes.append(proc)
        return proc, log

    def run(self, args: list[str], home: Path) -> dict:
        """Run a CLI command to its end; returns its JSON summary (fails on a non-zero exit)."""
        proc, log = self.start(args, home)
        try:
            deadline = time.monotonic() + PATIENCE
            while proc.poll() is None:
                if self.stop.is_set() or time.monotonic() > deadline:
                    raise AssertionError(f"`spark-synth {' '.join(args)}` stopped or timed out after {PATIENCE}s")
                time.sleep(0.2)
        finally:
            kill_group(proc)
        self.mark(f"ran {_label(args)}")
        out = Path(f"{log}.out").read_text().strip()
        assert proc.returncode == 0, f"`spark-synth {' '.join(args)}` exited {proc.returncode}: {_tail(log, home)}"
        return json.loads(out.splitlines()[-1])

    def kill_mid_write(self, args: list[str], home: Path, parent: Path, name: str) -> set[Path]:
        """Start a CLI command writing to ``parent/name``; SIGKILL its whole process group as soon as a
        new data file of that write holds data (one task of many has written its rows). Returns the
        data files seen at that moment."""
        before = data_files(parent, name)
        proc, log = self.start(args, home)
        try:
            deadline = time.monotonic() + PATIENCE
            while True:
                started = data_files(parent, name) - before
                if started:
                    break
                if proc.poll() is not None:
                    raise AssertionError(f"`spark-synth {' '.join(args)}` ended (exit {proc.returncode}) before "
                                         f"writing anything: {_tail(log, home)}")
                if self.stop.is_set() or time.monotonic() > deadline:
                    raise AssertionError(f"`spark-synth {' '.join(args)}` stopped, or wrote nothing in {PATIENCE}s")
                time.sleep(0.05)
            os.killpg(proc.pid, signal.SIGKILL)
            assert proc.wait(60) == -signal.SIGKILL, f"the process was not killed but exited {proc.returncode}"
        finally:
            kill_group(proc)
        self.mark(f"killed {_label(args)} ({len(started)} data file(s) written)")
        return started

    def kill_all(self) -> None:
        for proc in self.processes:
            kill_group(proc)


def _label(args: list[str]) -> str:
    output = Path(args[args.index("--output") + 1]).name
    return f"`{args[0]}{' --overwrite' if '--overwrite' in args else ''}` to {output}"


def kill_group(proc: subprocess.Popen) -> None:
    """SIGKILL the process group of ``proc`` and wait until none of its members runs (JVM included)."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait(60)
    deadline = time.monotonic() + 60
    while _group_members(proc.pid):
        assert time.monotonic() < deadline, f"processes {_group_members(proc.pid)} survived SIGKILL"
        time.sleep(0.1)


def _group_members(pgid: int) -> list[int]:
    """Live (not zombie) processes of process group ``pgid``."""
    members = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[2]) == pgid and fields[0] not in "ZX":
            members.append(int(stat.parent.name))
    return members


def _delta_jars(spark) -> list[str]:
    jars = []
    for uri in spark.sparkContext.getConf().get("spark.jars", "").split(","):
        path = urlparse(uri).path if uri.startswith("file:") else uri
        if path and Path(path).is_file():
            jars.append(path)
    jars = [j for j in jars if Path(j).name.startswith(("io.delta_", "delta-"))]
    return jars if any("delta-spark" in Path(j).name for j in jars) else []


def _tail(log: Path, home: Path) -> str:
    text = Path(f"{log}.out").read_text(errors="replace") + Path(f"{log}.err").read_text(errors="replace")
    driver = home / "logs" / "spark-driver.log"  # where the CLI sends the JVM's console
    if driver.is_file():
        text += "\n[spark-driver.log] " + driver.read_text(errors="replace")[-1500:]
    return text.strip()[-3000:]


# ---------------------------------------------------------------------------------------------
# What is on disk, and what a reader sees


def data_files(parent: Path, name: str) -> set[Path]:
    """Data files (``part-*``) holding data under ``parent/name`` or a hidden staging sibling of it, at any
    depth (a task's file is created empty; a Parquet file gets its bytes when the task has written it all)."""
    roots = [parent / name, *parent.glob(f".{name}.staging-*")]
    found = set()
    for root in roots:
        for folder, _, files in os.walk(root):
            for f in files:
                path = Path(folder) / f
                try:
                    if f.startswith("part-") and path.stat().st_size > 0:
                        found.add(path)
                except OSError:  # moved by its task's commit meanwhile
                    pass
    return found


def staging_dirs(parent: Path, name: str) -> set[Path]:
    return set(parent.glob(f".{name}.staging-*"))


def commits(table: Path) -> list[str]:
    """Committed versions of the Delta table at ``table`` (``NNN.json`` files of its log)."""
    return sorted(p.name for p in (table / "_delta_log").glob("[0-9]*.json"))


def read(spark, fmt: str, path: Path):
    reader = spark.read.option("header", True) if fmt == "csv" else spark.read
    return reader.format(fmt).load(str(path))


def rows(spark, fmt: str, path: Path) -> list[tuple]:
    """Every row at ``path`` (sorted; values as text, so nulls compare too)."""
    return sorted(tuple(repr(v) for v in row) for row in read(spark, fmt, path).collect())


def assert_not_readable(spark, fmt: str, path: Path, what: str) -> None:
    try:
        n = read(spark, fmt, path).count()
    except AnalysisException:
        return
    raise AssertionError(f"{what}: a killed write left a readable output with {n} rows at {path}")


def plant_half_written_commit(table: Path) -> Path:
    """What a process killed while committing an overwrite leaves in ``_delta_log``: the next version's
    commit half written to the hidden temporary file it is renamed from (removing every live file)."""
    log = table / "_delta_log"
    last = commits(table)[-1]
    actions = [json.loads(line) for line in (log / last).read_text().splitlines() if line.strip()]
    adds = [action["add"]["path"] for action in actions if "add" in action]
    lines = [json.dumps({"commitInfo": {"timestamp": int(time.time() * 1000), "operation": "WRITE"}})]
    lines += [json.dumps({"remove": {"path": p, "deletionTimestamp": 0, "dataChange": True}}) for p in adds]
    text = "\n".join(lines) + '\n{"add":{"path":"part-00000-'
    version = int(last.split(".")[0]) + 1
    planted = log / f".{version:020d}.json.{uuid.uuid4()}.tmp"
    planted.write_text(text)
    return planted


# ---------------------------------------------------------------------------------------------
# The kill tests


def _run_args(output: str, rows: int, *extra: str) -> list[str]:
    return ["run", "--input", DATA, "--schema", SCHEMA, "--engine", "independent", "--epsilon", "1", "--delta", "1e-9",
            "--rows", str(rows), "--output", output, "--no-mlflow", *extra]


def _sample_args(model: str, output: str, rows: int, *extra: str) -> list[str]:
    return ["sample", "--model", model, "--rows", str(rows), "--output", output, *extra]


def _cli_in_process(capsys, cli: Cli, args: list[str]) -> dict:
    capsys.readouterr()
    code = main(args)
    out, err = capsys.readouterr()
    assert code == 0, f"`spark-synth {' '.join(args)}` exited {code}: {err.strip()[-2000:]}"
    cli.mark(f"ran {_label(args) if '--output' in args else args[0]} in-process")
    return json.loads(out.strip().splitlines()[-1])


def _table_chain(spark, cli: Cli, home: Path, model: Future) -> None:
    """The catalog-table output: CLI processes sharing ``home`` (their catalog), one after another."""
    name = "synthetic_killed"
    warehouse = home / "warehouse"
    location = warehouse / name

    # 1. `run` to a new table, killed mid-write: no table, nothing readable, no commit
    cli.kill_mid_write(_run_args(name, BIG), home, warehouse, name)
    assert commits(location) == [], "table: the killed create committed"
    assert_not_readable(spark, "delta", location, "table (new)")
    # 2. the next write (no --overwrite) succeeds over the debris. `sample` from here on: this chain
    #    is the test's critical path, and `run` would only measure first.
    model_dir = model.result(timeout=PATIENCE)
    summary = cli.run(_sample_args(model_dir, name, GOOD, "--seed", "1"), home)
    assert summary["output"] == name and summary["rows"] == GOOD
    assert commits(location) == [f"{0:020d}.json"]
    previous = rows(spark, "delta", location)
    assert len(previous) == GOOD

    # 3. `sample --overwrite` over it, killed mid-write: the table still holds exactly its previous rows
    started = cli.kill_mid_write(_sample_args(model_dir, name, BIG, "--overwrite"), home, warehouse, name)
    assert started, "table: the overwrite wrote no data file before the kill"
    assert commits(location) == [f"{0:020d}.json"], "table: the killed overwrite committed"
    assert rows(spark, "delta", location) == previous, "table: a killed overwrite changed what readers see"
    # ... and so does a half-written commit of that overwrite
    plant_half_written_commit(location)
    assert rows(spark, "delta", location) == previous, "table: a half-written Delta commit is visible"
    # 4. the next `sample --overwrite` succeeds, as the next version
    summary = cli.run(_sample_args(model_dir, name, NEW, "--seed", "2", "--overwrite"), home)
    assert summary["output"] == name
    assert commits(location)[-1] == f"{1:020d}.json"
    assert len(rows(spark, "delta", location)) == NEW


def test_killed_writes_leave_no_partial_output_and_the_next_run_succeeds(spark, tmp_path, capsys):
    stop = threading.Event()
    cli = Cli(spark, tmp_path, stop)
    out = tmp_path / "out"
    out.mkdir()
    model: Future = Future()
    try:
        with ThreadPoolExecutor(max_workers=1 + len(PATH_FORMATS)) as pool:
            table = pool.submit(_table_chain, spark, cli, tmp_path / "home-table", model)
            try:
                # 1. `run` to a new path, killed mid-write (the three formats at once)
                kills = {fmt: pool.submit(cli.kill_mid_write, _run_args(str(out / name), BIG), tmp_path / f"home-{fmt}",
                                          out, name) for fmt, name in PATH_FORMATS.items()}
                model_dir = str(tmp_path / "model")  # meanwhile, fit the model the `sample` commands use
                _cli_in_process(capsys, cli, ["fit", "--engine", "independent", "--input", DATA, "--schema", SCHEMA, "--epsilon", "1", "--delta",
                                         "1e-9", "--model", model_dir, "--no-mlflow"])
                model.set_result(model_dir)
                previous = {}
                for fmt, name in PATH_FORMATS.items():
                    kills[fmt].result()
                    target = out / name
                    assert staging_dirs(out, name), f"{fmt}: killed before its write began (no staging folder)"
                    assert not target.exists(), f"{fmt}: a killed write created the target"
                    assert_not_readable(spark, fmt, target, f"{fmt} (new)")
                    # 2. the next `run` to the same path (no --overwrite) succeeds; the debris stays invisible
                    summary = _cli_in_process(capsys, cli, _run_args(str(target), GOOD, "--seed", "1"))
                    assert summary["rows"] == GOOD
                    previous[fmt] = rows(spark, fmt, target)
                    assert len(previous[fmt]) == GOOD, fmt

                # 3. `sample --overwrite` over the complete outputs, killed mid-write (at once)
                before = {fmt: (staging_dirs(out, name), commits(out / name)) for fmt, name in PATH_FORMATS.items()}
                kills = {fmt: pool.submit(cli.kill_mid_write, _sample_args(model_dir, str(out / name), BIG,
                                                                           "--overwrite"),
                                          tmp_path / f"home-{fmt}", out, name) for fmt, name in PATH_FORMATS.items()}
                for fmt, name in PATH_FORMATS.items():
                    started = kills[fmt].result()
                    target = out / name
                    if fmt == "delta":  # a Delta overwrite is one transaction, written in place
                        assert any(target in f.parents for f in started), "delta: the overwrite wrote no data file"
                        assert commits(target) == before[fmt][1], "delta: the killed overwrite committed"
                    else:
                        assert staging_dirs(out, name) - before[fmt][0], f"{fmt}: killed before its write began"
                    assert rows(spark, fmt, target) == previous[fmt], f"{fmt}: a killed overwrite changed the output"
                    if fmt == "delta":
                        plant_half_written_commit(target)
                        assert rows(spark, fmt, target) == previous[fmt], "delta: a half-written commit is visible"
                    # 4. the next `sample --overwrite` succeeds
                    summary = _cli_in_process(capsys, cli, _sample_args(model_dir, str(target), NEW, "--seed", "2",
                                                                        "--overwrite"))
                    assert summary["rows"] == NEW
                    assert len(rows(spark, fmt, target)) == NEW, fmt
                    if fmt == "delta":
                        assert commits(target)[-1] == f"{1:020d}.json"
                    assert not list(out.glob(f".{name}.replaced-*")), f"{fmt}: the replaced output was not cleaned up"
            except BaseException:
                stop.set()
                raise
            finally:
                if not model.done():
                    model.set_exception(RuntimeError("no model: the test failed before fitting it"))
            table.result()
    finally:
        stop.set()
        cli.kill_all()
    print("\n".join(f"{at:6.0f}s  {what}" for at, what in cli.timeline))


# ---------------------------------------------------------------------------------------------
# The commit sequence, step by step (in-process)


@pytest.mark.parametrize("fmt, name", [("csv", "out.csv"), ("parquet", "out.parquet")])
def test_every_step_of_an_overwrite_leaves_the_target_absent_old_or_new(spark, tmp_path, monkeypatch, fmt, name):
    """A kill can land between any two file-system operations of `write_output`: at each of those
    points the target must be absent or complete, and each operation on it must be atomic (a rename;
    never a recursive delete, which a kill can interrupt half way through, leaving a subset of rows)."""
    target = tmp_path / name
    write_output(spark, spark.range(0, 300, numPartitions=3).selectExpr("id", "id * 2 AS twice"),
                 check_output(spark, str(target)))
    old = rows(spark, fmt, target)
    new_df = spark.range(1000, 1400, numPartitions=4).selectExpr("id", "id * 3 AS twice")
    new = sorted(tuple(repr(v) for v in r) for r in (
        new_df.toPandas().astype(str).itertuples(index=False, name=None) if fmt == "csv" else new_df.collect()))
    seen = []

    def state() -> str:
        if not target.exists():
            return "absent"
        content = rows(spark, fmt, target)
        return "old" if content == old else "new" if content == new else f"PARTIAL ({len(content)} rows)"

    real_rename, real_delete = filesystem.rename, filesystem.delete

    def rename(spark_, source, destination):
        seen.append(state())
        done = real_rename(spark_, source, destination)
        seen.append(state())
        return done

    def delete(spark_, path):
        assert Path(path).resolve() != target.resolve(), "the target itself is deleted (not atomic)"
        seen.append(state())
        real_delete(spark_, path)
        seen.append(state())

    monkeypatch.setattr(filesystem, "rename", rename)
    monkeypatch.setattr(filesystem, "delete", delete)
    write_output(spark, new_df, check_output(spark, str(target), True), True)
    assert seen and set(seen) <= {"absent", "old", "new"}, seen
    assert seen[-1] == "new" and rows(spark, fmt, target) == new
    assert sorted(p.name for p in tmp_path.iterdir()) == [name], "hidden staging or replaced folders left behind"


def test_a_failed_move_into_place_puts_the_previous_output_back(spark, tmp_path, monkeypatch):
    target = tmp_path / "out.parquet"
    write_output(spark, spark.range(0, 100, numPartitions=2), check_output(spark, str(target)))
    real_rename = filesystem.rename

    def rename(spark_, source, destination):
        if ".staging-" in source:
            return False
        return real_rename(spark_, source, destination)

    monkeypatch.setattr(filesystem, "rename", rename)
    with pytest.raises(OutputError, match="could not move the finished output into place"):
        write_output(spark, spark.range(0, 7), check_output(spark, str(target), True), True)
    assert spark.read.parquet(str(target)).count() == 100
    assert [p.name for p in tmp_path.iterdir()] == ["out.parquet"]


def test_a_table_committed_but_never_registered_does_not_block_the_next_write(spark):
    """A kill between a new table's Delta commit and its registration in the catalog (Delta commits
    first, then registers) leaves a committed managed table at the name's default location that the
    catalog does not know. The next write to that name, without --overwrite, must still succeed; the
    debris is set aside, not deleted. Files that are not such debris are left alone."""
    tag = uuid.uuid4().hex[:8]
    created, debris, foreign = f"created_{tag}", f"killed_before_registration_{tag}", f"foreign_files_{tag}"
    root = Path(urlparse(spark.catalog.getDatabase(spark.catalog.currentDatabase()).locationUri).path)
    try:
        # what the killed create leaves: its committed managed table (here a copy of one), unregistered
        write_output(spark, spark.range(5), check_output(spark, created))
        shutil.copytree(root / created, root / debris)
        assert not spark.catalog.tableExists(debris)
        write_output(spark, spark.range(10, 17), check_output(spark, debris))
        assert sorted(r.id for r in spark.table(debris).collect()) == list(range(10, 17))
        assert len(list(root.glob(f".{debris}.unregistered-*"))) == 1  # set aside, not deleted

        # a Delta table written by path where a table's files would go is not debris: still refused
        spark.range(3).write.format("delta").save(str(root / foreign))
        with pytest.raises(AnalysisException, match="DELTA_CREATE_TABLE_WITH_NON_EMPTY_LOCATION"):
            write_output(spark, spark.range(10, 17), check_output(spark, foreign))
        assert spark.read.format("delta").load(str(root / foreign)).count() == 3
    finally:
        for table in (created, debris, foreign):
            spark.sql(f"DROP TABLE IF EXISTS {table}")
        for leftover in root.glob(f"*{tag}*"):
            shutil.rmtree(leftover, ignore_errors=True)
