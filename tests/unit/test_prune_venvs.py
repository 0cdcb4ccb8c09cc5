"""scripts/prune_venvs.sh: cached virtualenvs unused for longer than a limit go; the one in use, recent ones and
half-built ones stay."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "prune_venvs.sh"
DAY = 86_400


def _venv(cache: Path, name: str, **stamps_age_days: float) -> Path:
    path = cache / name
    (path / "bin").mkdir(parents=True)
    for stamp, age in stamps_age_days.items():
        marker = path / f".{stamp.replace('_', '-')}"
        marker.touch()
        then = time.time() - age * DAY
        os.utime(marker, (then, then))
    return path


def test_only_venvs_unused_for_longer_than_the_limit_are_removed(tmp_path):
    cache = tmp_path / "spark-synth"
    old = _venv(cache, "venv-aaaa", complete=30)                         # built long ago, never stamped since
    recent = _venv(cache, "venv-bbbb", complete=30, last_used=1)         # built long ago, used yesterday
    stale_runtime = _venv(cache, "runtime-pyspark-3.5.7-cccc", complete=1, last_used=10)
    building = _venv(cache, "venv-dddd")                                 # no stamp yet: a build in progress
    kept = _venv(cache, "venv-eeee", complete=30, last_used=30)          # the one in use now
    other = _venv(cache, "next-venv", complete=30)                       # not a project-managed name
    done = subprocess.run(["bash", str(SCRIPT), str(cache), str(kept), "7"], capture_output=True, text=True, check=True)
    assert not old.exists() and not stale_runtime.exists()
    assert recent.exists() and building.exists() and kept.exists() and other.exists()
    assert "venv-aaaa" in done.stderr and "runtime-pyspark-3.5.7-cccc" in done.stderr


def test_an_empty_or_missing_cache_is_fine(tmp_path):
    subprocess.run(["bash", str(SCRIPT), str(tmp_path / "none"), str(tmp_path / "none" / "venv-x")], check=True)
