#!/usr/bin/env bash
# SPLICE Match and FPT's fit (float32 and float64 calibration, and its PMW rounds) on CUDA and on the CPU, same seed and same noisy measurements:
# prints each stage's seconds, steps, final loss and moment residual per device (a table), in under
# 5 minutes (the whole run is capped at $GPU_CHECK_TIMEOUT seconds, default 300).
#
#   bash benchmarks/gpu_check.sh                  # CPU rows, plus CUDA rows when a GPU is present
#   bash benchmarks/gpu_check.sh --require-cuda   # on a GPU machine: fail (exit 2) when CUDA is absent
#   bash benchmarks/gpu_check.sh --quick          # few steps (what CI runs: tests/integration/test_gpu_check.py)
#
# Python: $PYTHON, else `python` (e.g. the activated venv of scripts/bootstrap.sh, with the torch extra).
# Without CUDA it prints the CPU rows and a line saying CUDA is absent, and exits 0.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
python="${PYTHON:-python}"
export PYTHONPATH="$root${PYTHONPATH:+:$PYTHONPATH}"
exec timeout "${GPU_CHECK_TIMEOUT:-300}" "$python" "$root/benchmarks/gpu_check.py" "$@"
