"""``benchmarks/gpu_check.sh`` (SPLICE Match and the FPT inner loop, CPU vs CUDA): its CPU half in
quick mode, as CI can run it (CUDA hidden, so the result is the same with or without a GPU), and
``--require-cuda`` refusing to run without CUDA."""

import math
import os
import re
import subprocess
import sys

from tests.conftest import REPO_ROOT

SCRIPT = REPO_ROOT / "benchmarks" / "gpu_check.sh"
STAGES = ("splice-match", "fpt-inner-loop", "fpt-inner-loop-float64", "fpt-rounds")
ROW = re.compile(rf"^\| ({'|'.join(STAGES)}) \| (cpu|cuda) \| (\S+) \| (\d+) \| (\S+) \| (\S+) \|$")


def _run(*flags: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHON": sys.executable, "CUDA_VISIBLE_DEVICES": ""}
    return subprocess.run(["bash", str(SCRIPT), *flags], env=env, capture_output=True, text=True, timeout=600)


def test_cpu_half_prints_finite_times_losses_and_residuals():
    done = _run("--quick")
    assert done.returncode == 0, done.stderr[-3000:]
    rows = {(m[1], m[2]): m.groups()[2:] for m in map(ROW.match, done.stdout.splitlines()) if m}
    assert set(rows) == {(stage, "cpu") for stage in STAGES}, done.stdout
    for (stage, _), (seconds, steps, loss, residual) in rows.items():
        seconds, steps, loss, residual = float(seconds), int(steps), float(loss), float(residual)
        assert math.isfinite(seconds) and seconds > 0
        assert 1 <= steps <= (40 if stage == "splice-match" else 25)  # --quick's step caps
        assert math.isfinite(loss) and loss >= 0
        assert 0 < residual < 1, f"{stage}: the fit explains less than the zero model ({residual})"
    assert "CUDA is absent" in done.stdout.splitlines()[-1]
    single, double = (float(rows[stage, "cpu"][2]) for stage in ("fpt-inner-loop", "fpt-inner-loop-float64"))
    assert abs(single - double) <= 0.01 * double, "the float32 calibration fits the same measurements as well as float64"



def test_require_cuda_fails_without_cuda():
    done = _run("--quick", "--require-cuda")
    assert done.returncode == 2 and "CUDA is not available" in done.stderr
    assert "| splice-match |" not in done.stdout
