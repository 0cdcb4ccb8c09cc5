"""Ctrl-C ends a command cleanly: one line (``spark-synth: interrupted; nothing was written``), exit
130, no staging folder or partial output left, and the table's budget ledger right — the fit counted
once noise was drawn, not counted before.

Each CLI case is a real ``spark-synth run`` process in its own process group, sent SIGINT the way a
terminal sends Ctrl-C to the whole foreground group (the JVM and Python workers included) at a moment
seen from outside: a data file of the write holding rows; the measure pass under way on a table big
enough that it cannot end first. The in-process case shows why it works: with PySpark's own handler,
SIGINT during a Spark job broke the py4j connection the job's call was reading from (``RuntimeError:
reentrant call``), so nothing could clean up; under :func:`spark_synth.interrupt.interrupts` the job
is cancelled and the same session answers the next call.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
import time
from pathlib import Path

import pytest

from spark_synth.interrupt import EXIT_INTERRUPTED, interrupts
from tests.conftest import BUNDLED
from tests.integration.test_kill_mid_write import PATIENCE, Cli, data_files, kill_group, staging_dirs

pytestmark = pytest.mark.spark

DATA, SCHEMA = str(BUNDLED / "adult_sample.csv"), str(BUNDLED / "adult_sample.schema.json")
BIG_WRITE = 4_000_000  # rows of the interrupted write: 16 tasks, seconds of work past its first file
BIG_INPUT = 600  # copies of the bundled 5,000-row sample in the table whose measure pass is interrupted


@pytest.fixture()
def cli(spark, tmp_path):
    stop = threading.Event()
    runner = Cli(spark, tmp_path, stop)
    yield runner
    stop.set()
    runner.kill_all()


def _interrupt_when(cli: Cli, args: list[str], home: Path, ready) -> tuple[int, list[str], str]:
    """Start ``spark-synth ARGS``; send SIGINT to its process group once ``ready(stderr_text)`` holds.
    Returns its exit code, its stderr lines and its stdout."""
    proc, log = cli.start(args, home)
    err = Path(f"{log}.err")
    try:
        deadline = time.monotonic() + PATIENCE
        while not ready(err.read_text(errors="replace")):
            assert proc.poll() is None, f"ended (exit {proc.returncode}) before the moment to interrupt: {err.read_text()}"
            assert time.monotonic() < deadline, f"no moment to interrupt in {PATIENCE}s: {err.read_text()}"
            time.sleep(0.05)
        os.killpg(proc.pid, signal.SIGINT)  # what a terminal's Ctrl-C does: the whole foreground group
        code = proc.wait(180)
    finally:
        kill_group(proc)
    return code, err.read_text(errors="replace").splitlines(), Path(f"{log}.out").read_text()


def _budget(home: Path, source: str) -> dict:
    """`spark-synth budget` of ``source`` in the store under ``home`` (a CLI process of its own)."""
    import sys

    env = {k: v for k, v in os.environ.items() if not k.startswith(("SPARK_SYNTH_HOME", "MLFLOW_TRACKING_URI"))}
    out = subprocess.run([sys.executable, "-m", "spark_synth.cli", "budget", "--source-table", source],
                         env={**env, "SPARK_SYNTH_HOME": str(home)}, capture_output=True, text=True, timeout=PATIENCE)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def _assert_one_clean_line(code: int, stderr: list[str], stdout: str) -> None:
    assert code == EXIT_INTERRUPTED == 130, (code, stderr[-20:])
    assert stdout == "", stdout
    assert stderr[-1] == "spark-synth: interrupted; nothing was written", stderr[-20:]
    own = [line for line in stderr if "mlflow.store.db.utils" not in line]  # MLflow creating a new store
    assert all(line.startswith("spark-synth: ") for line in own), own  # progress lines + the one line
    assert not any("error" in line.lower() or "Traceback" in line or "Py4J" in line for line in stderr), stderr


def test_ctrl_c_during_the_write_leaves_nothing_and_keeps_the_charge(cli, tmp_path):
    home, out = tmp_path / "home", tmp_path / "out"
    out.mkdir()
    args = ["run", "--input", DATA, "--schema", SCHEMA, "--engine", "independent", "--epsilon", "1", "--delta", "1e-9",
            "--rows", str(BIG_WRITE), "--output", str(out / "synthetic.parquet")]
    code, stderr, stdout = _interrupt_when(cli, args, home, lambda _: bool(data_files(out, "synthetic.parquet")))
    _assert_one_clean_line(code, stderr, stdout)
    assert not staging_dirs(out, "synthetic.parquet") and not (out / "synthetic.parquet").exists(), list(out.iterdir())
    ledger = _budget(home, DATA)
    # the fit ended (settled) before the write began: it counts, once, whatever became of its rows
    assert ledger["cumulative"]["fits"] == 1 and ledger["cumulative"]["epsilon"] == pytest.approx(1.0), ledger
    assert [entry["status"] for entry in ledger["releases"]] == ["FINISHED"], ledger


def test_ctrl_c_during_the_measure_pass_charges_nothing(cli, spark, tmp_path):
    home, out = tmp_path / "home", tmp_path / "out"
    out.mkdir()
    table = str(tmp_path / "big.parquet")  # 3 M rows: its measure pass takes seconds on one task slot
    sample = spark.read.option("header", True).csv(DATA)
    sample.crossJoin(spark.range(BIG_INPUT).withColumnRenamed("id", "_copy")).drop("_copy").write.parquet(table)
    args = ["run", "--input", table, "--schema", SCHEMA, "--engine", "independent", "--epsilon", "1", "--delta", "1e-9",
            "--rows", "1000", "--output", str(out / "synthetic.parquet")]
    code, stderr, stdout = _interrupt_when(cli, args, home, lambda text: "measure: pass 1 over the table" in text)
    _assert_one_clean_line(code, stderr, stdout)
    assert not any("fit: done" in line for line in stderr), stderr  # it was stopped before any noise
    assert not staging_dirs(out, "synthetic.parquet") and not (out / "synthetic.parquet").exists()
    ledger = _budget(home, table)
    assert ledger["cumulative"]["fits"] == 0 and ledger["cumulative"]["rho"] == 0, ledger


def test_sigint_during_a_spark_job_cancels_it_and_keeps_the_session(spark):
    """In process: SIGINT while the main thread waits on a Spark job. The job is cancelled, the call
    raises, and the session's JVM connection still works (PySpark's own handler broke it)."""
    timer = threading.Timer(1.0, os.kill, (os.getpid(), signal.SIGINT))
    caught = None
    started = time.monotonic()
    with interrupts() as guard:
        timer.start()
        try:
            spark.range(0, 10**13, numPartitions=2).selectExpr("sum(id * 7 % 13)").collect()
        except BaseException as exc:  # noqa: BLE001 (what Ctrl-C turns into is the point of the test)
            caught = exc
    timer.cancel()
    assert guard.requested and caught is not None, "the job was not interrupted"
    assert time.monotonic() - started < 60, "the job was not cancelled promptly"
    assert spark.range(5).count() == 5  # the same session, the same connection: still answering
    assert signal.getsignal(signal.SIGINT) is not guard.handle  # the previous handler is back


def test_sigint_between_the_arrow_server_and_its_connection_does_not_hang(spark, monkeypatch):
    """In process, at the one instant that hung a CLI run in CI: SIGINT after the JVM opened the
    one-shot socket server of ``toArrow`` and before PySpark connected to it. A KeyboardInterrupt
    raised there skips the connection, and PySpark's ``finally`` (``getResult()``, no timeout) waits
    for ever; it must be left to PySpark (the job is cancelled) and the call must end. Should it be
    raised there again, this test takes the connection itself so that it fails instead of hanging."""
    import pyspark.sql.pandas.conversion as conversion
    from pyspark.util import _create_local_socket

    original, raised_before_connecting = conversion._load_from_socket, []

    def sigint_first(sock_info, serializer):
        try:
            os.kill(os.getpid(), signal.SIGINT)  # the handler runs at the next step, still in this frame
            time.sleep(0.2)
        except KeyboardInterrupt:  # the hang: take the connection PySpark's finally waits for, cancel its job
            raised_before_connecting.append(True)
            stream, stop = _create_local_socket(sock_info), threading.Event()

            def cancel_until_read():
                while not stop.wait(0.2):
                    spark.sparkContext.cancelAllJobs()

            threading.Thread(target=cancel_until_read, daemon=True).start()
            stream.read()
            stop.set()
            raise
        return original(sock_info, serializer)

    monkeypatch.setattr(conversion, "_load_from_socket", sigint_first)
    started, caught = time.monotonic(), None
    with interrupts() as guard:
        try:
            spark.range(0, 10**13, numPartitions=2).selectExpr("sum(id * 7 % 13)").toArrow()
        except BaseException as exc:  # noqa: BLE001 (what Ctrl-C turns into is the point of the test)
            caught = exc
    assert not raised_before_connecting, "KeyboardInterrupt raised inside PySpark, before its connection"
    assert guard.requested and caught is not None, "the job was not interrupted"
    assert time.monotonic() - started < 60, "the job was not cancelled promptly"
    assert spark.range(5).count() == 5
