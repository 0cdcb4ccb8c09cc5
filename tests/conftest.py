"""Shared fixtures: ONE local Spark session per test run (local[2], few partitions, UI off)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
BUNDLED = REPO_ROOT / "spark_synth" / "data"
SHARED_DATA = Path(os.environ.get("SPARK_SYNTH_SHARED_DATA", REPO_ROOT.parent / "shared" / "data"))


@pytest.fixture(scope="session")
def spark_home(tmp_path_factory) -> Path:
    home = tmp_path_factory.mktemp("spark-synth-home")
    os.environ["SPARK_SYNTH_HOME"] = str(home)
    os.environ.pop("MLFLOW_TRACKING_URI", None)
    return home


@pytest.fixture(scope="session")
def spark(spark_home):
    from spark_synth.session import get_spark

    session = get_spark(
        "local",
        extra_conf={
            "spark.master": "local[2]",
            "spark.sql.shuffle.partitions": "2",
            "spark.default.parallelism": "2",
            "spark.driver.memory": "2g",
            # a user's own JVM option: it must reach the JVM beside the session's (test_session_jvm.py)
            "spark.driver.extraJavaOptions": "-Dspark_synth.test.marker=1",
        },
    )
    yield session
    session.stop()


@pytest.fixture(scope="session")
def shared_data() -> Path:
    if not (SHARED_DATA / "adult.csv").is_file():
        pytest.skip(f"shared datasets not found at {SHARED_DATA} (set SPARK_SYNTH_SHARED_DATA); CI has them")
    return SHARED_DATA


@pytest.fixture(scope="session")
def adult_sample_paths() -> tuple[str, str]:
    return str(BUNDLED / "adult_sample.csv"), str(BUNDLED / "adult_sample.schema.json")
