#!/usr/bin/env bash
# Create (once) the project's virtualenv outside the clone and print its path.
# The venv lives under ~/.cache/spark-synth, keyed by a hash of pyproject.toml and the Python
# version, so torch/pyspark/mlflow are downloaded only when the dependency spec changes.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
python="${PYTHON:-python3}"
key="$( (cat "$root/pyproject.toml"; "$python" --version) | sha256sum | cut -c1-16)"
venv="${SPARK_SYNTH_VENV:-$HOME/.cache/spark-synth/venv-$key}"
# setuptools' editable build tells every install, as a warning pip passes on (BuildBackendWarning),
# that a folder named like the package in the working directory could shadow it: information,
# not a problem here (the package is found by an import hook that maps spark_synth to this clone).
# Only that message is filtered, and only for these pip runs.
quiet_editable="ignore:Editable installation:UserWarning"
if [ ! -f "$venv/.complete" ]; then
  echo "spark-synth: creating virtualenv $venv (first run downloads the dependencies)" >&2
  rm -rf "$venv"
  "$python" -m venv "$venv"
  "$venv/bin/python" -m pip install --quiet --upgrade pip >&2
  PYTHONWARNINGS="$quiet_editable" "$venv/bin/python" -m pip install --quiet -e "$root[local,torch,dev]" >&2
  touch "$venv/.complete"
else
  # The cached venv may point at another clone: re-link the package (fast, no dependencies).
  PYTHONWARNINGS="$quiet_editable" "$venv/bin/python" -m pip install --quiet --no-deps --no-build-isolation -e "$root" >&2
fi
touch "$venv/.last-used"
if [ -z "${SPARK_SYNTH_VENV:-}" ]; then
  "$root/scripts/prune_venvs.sh" "$HOME/.cache/spark-synth" "$venv" "${SPARK_SYNTH_VENV_KEEP_DAYS:-3}"
fi
echo "$venv"
