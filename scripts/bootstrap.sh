#!/usr/bin/env bash
# Create (once) the project's virtualenv outside the clone and print its path.
# The venv lives under ~/.cache/spark-synth, keyed by a hash of pyproject.toml and the Python
# version, so torch/pyspark/mlflow are downloaded only when the dependency spec changes.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
python="${PYTHON:-python3}"
key="$( (cat "$root/pyproject.toml"; "$python" --version) | sha256sum | cut -c1-16)"
venv="${SPARK_SYNTH_VENV:-$HOME/.cache/spark-synth/venv-$key}"
if [ ! -f "$venv/.complete" ]; then
  echo "spark-synth: creating virtualenv $venv (first run downloads the dependencies)" >&2
  rm -rf "$venv"
  "$python" -m venv "$venv"
  "$venv/bin/python" -m pip install --quiet --upgrade pip >&2
  "$venv/bin/python" -m pip install --quiet -e "$root[local,torch,dev]" >&2
  touch "$venv/.complete"
else
  # The cached venv may point at another clone: re-link the package (fast, no dependencies).
  "$venv/bin/python" -m pip install --quiet --no-deps --no-build-isolation -e "$root" >&2
fi
touch "$venv/.last-used"
if [ -z "${SPARK_SYNTH_VENV:-}" ]; then
  "$root/scripts/prune_venvs.sh" "$HOME/.cache/spark-synth" "$venv" "${SPARK_SYNTH_VENV_KEEP_DAYS:-3}"
fi
echo "$venv"
