"""Quiet output (issue 46): what a new user sees besides spark-synth's own lines.

The target: ``spark-synth run --evaluate`` on the bundled sample, run as a user runs it (a fresh
store, a new process), prints at most 5 stderr lines besides its ``spark-synth:`` progress lines,
and one JSON line on stdout. The other tests pin the sources of noise one by one: setuptools'
notice in ``scripts/bootstrap.sh``, MLflow creating its store, a JVM started by ``get_spark()`` in a
script (Ivy's report, the loopback-address warning, log4j's INFO), SPLICE's pair-anchor line.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
BUNDLED = REPO / "spark_synth" / "data"
#: At most this many stderr lines of a run that are not spark-synth's own (issue 46's target).
MAX_FOREIGN_LINES = 5


def _clean_env(tmp_path: Path) -> dict:
    """A new user's environment: a fresh spark-synth home (so a fresh MLflow store), nothing of
    the test session's Spark or MLflow settings."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("MLFLOW_TRACKING_URI", "SPARK_REMOTE", "PYSPARK_GATEWAY_PORT", "SPARK_LOCAL_IP", "PYTHONWARNINGS")}
    env["SPARK_SYNTH_HOME"] = str(tmp_path / "home")
    return env


def _foreign(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.strip() and not line.startswith("spark-synth: ")]


# ---- the sources of noise, one by one (no Spark) -------------------------------------------------
def test_bootstrap_filters_setuptools_editable_notice(tmp_path):
    """scripts/bootstrap.sh runs pip with a warning filter that drops setuptools' "Editable
    installation" notice (re-emitted by pip as a BuildBackendWarning), and nothing else."""
    script = (REPO / "scripts" / "bootstrap.sh").read_text()
    match = re.search(r'^quiet_editable="([^"]+)"', script, re.M)
    assert match, "bootstrap.sh no longer sets quiet_editable"
    assert script.count('PYTHONWARNINGS="$quiet_editable"') == 2  # both pip installs of the package
    setuptools_warnings = pytest.importorskip("setuptools.warnings")
    with warnings.catch_warnings(record=True) as caught:  # the notice as setuptools words it
        warnings.simplefilter("always")
        setuptools_warnings.InformationOnly.emit("Editable installation.", "Please be careful with folders ...")
    notice = str(caught[0].message)
    emit = ("import sys, warnings\n"
            "from pip._vendor.pyproject_hooks import BuildBackendWarning\n"
            "warnings.warn_explicit(message=sys.argv[1], category=BuildBackendWarning, filename='editable_wheel.py', lineno=1)\n"
            "warnings.warn('another warning')\n")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONWARNINGS"}
    loud = subprocess.run([sys.executable, "-c", emit, notice], capture_output=True, text=True, env=env)
    assert "Editable installation" in loud.stderr  # as pip shows it without the filter
    quiet = subprocess.run([sys.executable, "-c", emit, notice], capture_output=True, text=True,
                           env={**env, "PYTHONWARNINGS": match.group(1)})
    assert "Editable installation" not in quiet.stderr and "another warning" in quiet.stderr


def test_the_first_mlflow_store_is_created_quietly(tmp_path):
    code = ("import pathlib, sys, mlflow\n"
            "from spark_synth.track import use_store\n"
            "use_store(pathlib.Path(sys.argv[1]))\n"
            "mlflow.search_experiments()\n")
    done = subprocess.run([sys.executable, "-c", code, str(tmp_path / "store")], capture_output=True, text=True,
                          env=_clean_env(tmp_path), cwd=tmp_path, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert (tmp_path / "store" / "mlflow.db").is_file()  # the store was created here, now
    assert "Creating initial MLflow database tables" not in done.stderr and "Updating database tables" not in done.stderr
    assert _foreign(done.stderr) == [], done.stderr


def test_the_splice_pair_anchor_line_is_a_short_summary():
    from spark_synth.engines.splice.pairs import anchors_line

    names = [f"marginal[column_{i}/10, another_column_{i}/7]" for i in range(70)]
    line = anchors_line(names)
    assert len(line) <= 250 and line.startswith("splice: pair anchors: 70 chosen (")
    assert names[0] in line and names[3] not in line and "and 67 more" in line
    assert anchors_line(names[:2]) == f"splice: pair anchors: 2 chosen ({names[0]}, {names[1]}; all in the privacy report)"


# ---- Spark started by spark-synth in a new process ------------------------------------------------
@pytest.mark.spark
def test_get_spark_in_a_script_is_quiet(tmp_path):
    """A script's ``get_spark()``: what the JVM prints while it starts (Ivy's report, JVM notices) goes
    to the log file, log4j says WARN and above only, a local master binds to 127.0.0.1 — and what the
    JVM says once it is up still reaches stderr."""
    code = ("from spark_synth.session import get_spark\n"
            "spark = get_spark()\n"
            "assert spark.range(3).count() == 3\n"
            "spark.sparkContext._jvm.java.lang.System.err.println('marker: said by the JVM once it is up')\n"
            "import time; time.sleep(1)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=_clean_env(tmp_path),
                          cwd=tmp_path, timeout=400)
    assert done.returncode == 0, done.stderr[-3000:]
    assert _foreign(done.stderr) == ["marker: said by the JVM once it is up"], done.stderr
    log = (tmp_path / "home" / "logs" / "spark-driver.log").read_text(errors="replace")
    assert "marker: said by the JVM once it is up" in log
    for noise in ("Using Spark's default log4j profile", "resolves to a loopback address", " INFO "):
        assert noise not in log, noise


@pytest.mark.spark
@pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="the demo's engine (fpt) needs spark-synth[torch]")
def test_run_evaluate_on_the_bundled_sample_is_quiet(tmp_path):
    """README's first command with --evaluate, as a new user runs it: the console script, a fresh store."""
    script = Path(sys.executable).parent / "spark-synth"
    command = [str(script)] if script.exists() else [sys.executable, "-m", "spark_synth.cli"]
    command += ["run", "--input", str(BUNDLED / "adult_sample.csv"), "--schema", str(BUNDLED / "adult_sample.schema.json"),
                "--engine", "fpt", "--epsilon", "1", "--delta", "1e-9", "--rows", "10000",
                "--output", str(tmp_path / "synthetic" / "adult_sample"), "--seed", "0", "--overwrite", "--evaluate"]
    done = subprocess.run(command, capture_output=True, text=True, env=_clean_env(tmp_path), cwd=tmp_path, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    lines = done.stdout.strip().splitlines()
    assert len(lines) == 1 and json.loads(lines[0])["evaluation"], done.stdout[-2000:]
    foreign = _foreign(done.stderr)
    assert len(foreign) <= MAX_FOREIGN_LINES, "\n".join(foreign)
    assert not any("MLflow database tables" in line for line in foreign), foreign
    assert (tmp_path / "home" / "mlflow.db").is_file()  # MLflow was on, and its store new
