"""Installed as users get it: the wheel, outside the repository.

1. The wheel in a fresh virtualenv whose dependencies are this environment's (a ``.pth`` file; the
   repository is nowhere on the path): ``run``, ``fit``, ``sample`` and ``evaluate`` from an empty
   folder, with the packaged Spark profile, engine defaults and sample data.
2. The wheel WITHOUT the ``local`` extra, next to another pyspark in the supported range (as on a
   Databricks runtime, whose Spark is not ours): it imports, fits and samples on a plain Spark session
   (no Delta jars), and an engine that needs the ``torch`` extra is refused naming the extra. That
   virtualenv is cached under ``~/.cache/spark-synth`` (keyed by the dependency spec and pyspark
   version), so only its first run downloads anything.
3. The same on an older runtime's stack (as a Databricks 15.4/16.4 LTS runtime has: Spark 3.5 and MLflow
   2.x, here ``mlflow-skinny`` at the lowest version pyproject accepts): fit with MLflow tracking on a
   ``file:`` store, release with an alias, load the model through ``pyfunc`` and write a sample of it by alias; and
   the embedded SQLite store, which skinny cannot open, is refused with the fix.
"""

import hashlib
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT

pytestmark = pytest.mark.spark

#: The pyspark the no-``local``-extra check installs (the ``local`` extra pins 4.0.1).
OTHER_PYSPARK = "4.1.4"
SAMPLE = ["adult_sample.csv", "adult_sample.schema.json"]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out, source = tmp_path_factory.mktemp("dist"), tmp_path_factory.mktemp("source") / "spark-synth"
    # built from a copy: setuptools' build/ folder in the clone could carry files deleted since
    shutil.copytree(REPO_ROOT, source, ignore=shutil.ignore_patterns(".git", "build", "*.egg-info", "__pycache__",
                                                                     ".spark-synth"))
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation", "-w", str(out),
                    str(source)], check=True, capture_output=True, timeout=600)
    (found,) = out.glob("spark_synth-*.whl")
    return found


def _clean_env(home: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "SPARK_REMOTE", "PYSPARK_PYTHON",
                                                            "SPARK_SYNTH_CONF", "MLFLOW_TRACKING_URI")}
    return {**env, "SPARK_SYNTH_HOME": str(home)}


def _copy_sample(python: Path, folder: Path, env: dict) -> str:
    """Copy the packaged sample out of the INSTALLED package; return where spark_synth was imported from."""
    code = ("import shutil, spark_synth; from importlib.resources import files; "
            f"[shutil.copy(files('spark_synth') / 'data' / n, n) for n in {SAMPLE!r}]; print(spark_synth.__file__)")
    done = subprocess.run([str(python), "-c", code], cwd=folder, env=env, capture_output=True, text=True, check=True)
    return done.stdout.strip()


def test_wheel_ships_what_the_package_reads(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    expected = {"spark_synth/conf/spark/local.yaml", "spark_synth/conf/spark/cluster.yaml",
                *(f"spark_synth/conf/engines/{e}.yaml" for e in ("independent", "splice", "fpt", "dgm")),
                *(f"spark_synth/data/{n}" for n in SAMPLE)}
    assert expected <= names, expected - names
    assert not any(n.startswith(("tests/", "conf/", "benchmarks/")) for n in names)


def test_wheel_runs_every_command_from_an_empty_folder(wheel, tmp_path):
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    site = Path(subprocess.run([str(venv / "bin" / "python"), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               capture_output=True, text=True, check=True).stdout.strip())
    # the test run's dependencies, as plain path lines (their .pth files unprocessed, so no editable
    # clone): with scripts/bootstrap.sh they sit in the dependencies venv beside this clone's .venv
    dependencies = [p for p in dict.fromkeys(sys.path) if p.endswith("-packages") and p != sysconfig.get_paths()["purelib"]]
    (site / "reuse_test_dependencies.pth").write_text("".join(f"{p}\n" for p in dependencies or [sysconfig.get_paths()["purelib"]]))
    subprocess.run([sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), "install", "--quiet", "--no-deps",
                    "--force-reinstall", str(wheel)], check=True, capture_output=True, timeout=600)
    work = tmp_path / "empty"
    work.mkdir()
    env = _clean_env(work / ".spark-synth")
    assert _copy_sample(venv / "bin" / "python", work, env).startswith(str(site))

    cli = str(venv / "bin" / "spark-synth")
    common = ["--input", SAMPLE[0], "--schema", SAMPLE[1], "--engine", "independent", "--epsilon", "1", "--delta", "1e-9"]
    done = subprocess.run([cli, "run", *common, "--rows", "500", "--output", "out.parquet", "--seed", "0"], cwd=work,
                          env=env, capture_output=True, text=True, timeout=900)  # the console script itself
    assert done.returncode == 0, done.stderr[-2000:]
    run = json.loads(done.stdout.strip().splitlines()[-1])
    # fit, sample and evaluate through the CLI's entry point in ONE process (one JVM start, not three)
    steps = [["fit", *common, "--model", "model"],
             ["sample", "--model", "model", "--rows", "400", "--output", "tables/sampled", "--seed", "1"],
             ["evaluate", "--real", SAMPLE[0], "--synthetic", "out.parquet", "--schema", SAMPLE[1], "--out", "report",
              "--no-mlflow"]]
    code = f"import sys; from spark_synth.cli import main; sys.exit(max(main(a) for a in {steps!r}))"
    done = subprocess.run([str(venv / "bin" / "python"), "-c", code], cwd=work, env=env, capture_output=True, text=True,
                          timeout=900)
    assert done.returncode == 0, done.stderr[-2000:]
    fit, sample, _ = (json.loads(line) for line in done.stdout.strip().splitlines() if line.startswith("{"))
    assert run["rows"] == 500 and run["mlflow_run_id"] and fit["mlflow_run_id"] and sample["rows"] == 400
    assert (work / ".spark-synth" / "mlflow.db").is_file()  # the embedded default MLflow store, in the empty folder
    assert (work / "tables" / "sampled" / "_delta_log").is_dir()  # a folder output is a Delta table by default
    assert (work / "report" / "metrics.json").is_file()


def _runtime_venv(wheel: Path, pyspark: str = OTHER_PYSPARK, *pins: str) -> Path:
    """A cached venv holding the base dependencies (no extras), ``pyspark`` and ``pins``; the wheel reinstalled."""
    spec = (REPO_ROOT / "pyproject.toml").read_bytes() + f"{pyspark} {pins} {sys.version}".encode()
    venv = Path.home() / ".cache" / "spark-synth" / f"runtime-pyspark-{pyspark}-{hashlib.sha256(spec).hexdigest()[:12]}"
    python = venv / "bin" / "python"
    if not (venv / ".complete").is_file():
        subprocess.run([sys.executable, "-m", "venv", "--clear", "--without-pip", str(venv)], check=True, timeout=120)
        subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet", str(wheel),
                        f"pyspark=={pyspark}", *pins], check=True, capture_output=True, timeout=1800)
        (venv / ".complete").touch()
    subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet", "--no-deps",
                    "--force-reinstall", str(wheel)], check=True, capture_output=True, timeout=600)
    (venv / ".last-used").touch()  # scripts/prune_venvs.sh removes runtimes unused for three days
    return venv


#: A runtime's own Spark session (on a cluster the runtime sets its workers' Python).
PLAIN_SESSION = """
import json, os, sys, pyspark
from pyspark.sql import SparkSession
os.environ["PYSPARK_PYTHON"] = sys.executable
spark = (SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false")
         .config("spark.sql.shuffle.partitions", "2").getOrCreate())
"""

FIT_ON_A_PLAIN_SESSION = PLAIN_SESSION + """
from spark_synth import RunConfig
from spark_synth.commands import run
summary = run(RunConfig(input="adult_sample.csv", schema="adult_sample.schema.json", engine="independent", epsilon=1.0,
                        delta=1e-9, rows=300, output="out.parquet", seed=0, mlflow=False))
print(json.dumps({"pyspark": pyspark.__version__, "rows": spark.read.parquet("out.parquet").count(), **summary}))
"""


def test_wheel_without_the_local_extra_next_to_another_pyspark(wheel, tmp_path):
    venv = _runtime_venv(wheel)
    python = venv / "bin" / "python"
    work = tmp_path / "empty"
    work.mkdir()
    env = _clean_env(work / ".spark-synth")
    _copy_sample(python, work, env)
    missing = subprocess.run([str(python), "-c", "import importlib.util as u; print([m for m in ('delta', 'torch') "
                                                 "if u.find_spec(m)])"], capture_output=True, text=True, check=True)
    assert missing.stdout.strip() == "[]"  # neither extra came with the base install

    done = subprocess.run([str(python), "-c", FIT_ON_A_PLAIN_SESSION], cwd=work, env=env, capture_output=True, text=True,
                          timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    summary = json.loads(done.stdout.strip().splitlines()[-1])
    assert summary["pyspark"] == OTHER_PYSPARK and summary["rows"] == 300 and summary["dp_guarantee"] is True

    refused = subprocess.run([str(venv / "bin" / "spark-synth"), "run", "--input", SAMPLE[0], "--schema", SAMPLE[1],
                              "--engine", "splice", "--epsilon", "1", "--delta", "1e-9", "--rows", "10", "--output", "o.parquet",
                              "--no-mlflow"], cwd=work, env=env, capture_output=True, text=True, timeout=900)
    assert refused.returncode == 2
    assert "needs torch" in refused.stderr and "spark-synth[torch]" in refused.stderr
    assert not (work / "o.parquet").exists()


#: An older runtime's stack: Spark 3.5 and the lowest MLflow pyproject accepts, as mlflow-skinny.
OLD_PYSPARK, OLD_MLFLOW = "3.5.7", "2.16.2"

RELEASE_ON_AN_OLD_RUNTIME = PLAIN_SESSION + """
import mlflow
from spark_synth.commands import fit_and_save
from spark_synth.track import release, write_model_sample
fit = fit_and_save(input="adult_sample.csv", schema="adult_sample.schema.json", engine="independent", epsilon=1.0,
                   delta=1e-9, model="model", mlflow=True)
released = release(fit["mlflow_run_id"], "adult_synth", alias="champion")
model = mlflow.pyfunc.load_model("models:/adult_synth@champion")
rows = model.predict({"rows": 7, "seed": 0})
written = write_model_sample("models:/adult_synth@champion", 300, "sampled.parquet", seed=1)
sampled = spark.read.parquet(written)
print(json.dumps({"pyspark": pyspark.__version__, "mlflow": mlflow.__version__, "fit_id": fit["fit_id"],
                  "version": released["version"], "alias_uri": released["alias_uri"],
                  "privacy": model.metadata.metadata["spark_synth"]["privacy"]["fit_id"],
                  "predicted": list(rows.shape), "columns": list(rows.columns),
                  "sampled": sampled.count(), "sampled_columns": sampled.columns}))
"""


def test_wheel_on_spark_3_5_with_mlflow_skinny_2(wheel, tmp_path):
    venv = _runtime_venv(wheel, OLD_PYSPARK, f"mlflow-skinny=={OLD_MLFLOW}")
    python = venv / "bin" / "python"
    work = tmp_path / "empty"
    work.mkdir()
    env = _clean_env(work / ".spark-synth")
    _copy_sample(python, work, env)
    tracked = {**env, "MLFLOW_TRACKING_URI": (work / "mlruns").as_uri()}  # a tracking server's stand-in
    done = subprocess.run([str(python), "-c", RELEASE_ON_AN_OLD_RUNTIME], cwd=work, env=tracked, capture_output=True,
                          text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["pyspark"] == OLD_PYSPARK and out["mlflow"] == OLD_MLFLOW
    assert out["version"] == "1" and out["alias_uri"] == "models:/adult_synth@champion"
    assert out["privacy"] == out["fit_id"]  # the registered model carries this fit's privacy metadata
    schema = json.loads((work / SAMPLE[1]).read_text())
    names = [c["name"] for c in schema["columns"]]
    assert out["predicted"] == [7, len(names)] and out["columns"] == names
    assert out["sampled"] == 300 and out["sampled_columns"] == names

    # skinny has no SQL store: the embedded default is refused before anything is read or spent
    fit = ["fit", "--input", SAMPLE[0], "--schema", SAMPLE[1], "--engine", "independent", "--epsilon", "1", "--delta",
           "1e-9", "--model", "m2"]
    code = (f"{PLAIN_SESSION}\nfrom spark_synth.cli import main\nsys.exit(main({fit!r}))")
    refused = subprocess.run([str(python), "-c", code], cwd=work, env=env, capture_output=True, text=True, timeout=900)
    assert refused.returncode == 2, refused.stderr[-2000:]
    last = refused.stderr.strip().splitlines()[-1]  # the runtime's own Spark logs come before it
    assert last.startswith("spark-synth: error: ") and "needs the full mlflow package" in last and "--no-mlflow" in last
    assert not (work / "m2").exists()
