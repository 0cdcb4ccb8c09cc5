#!/usr/bin/env bash
# Create (once) the project's dependencies virtualenv outside the clone, and this clone's own thin
# virtualenv (.venv) on top of it; print the latter's path.
# The dependencies venv lives under ~/.cache/spark-synth, keyed by a hash of pyproject.toml and the
# Python version, so torch/pyspark/mlflow are downloaded only when the dependency spec changes. It
# holds no copy of the project: this clone's .venv sees its packages through one .pth line and has
# only this clone installed (editable), so two clones on one machine each run their own code.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
python="${PYTHON:-python3}"
key="$( (cat "$root/pyproject.toml"; "$python" --version) | sha256sum | cut -c1-16)"
deps="${SPARK_SYNTH_VENV:-$HOME/.cache/spark-synth/venv-$key}"
clone_venv="$root/.venv"
# setuptools' editable build tells every install, as a warning pip passes on (BuildBackendWarning),
# that a folder named like the package in the working directory could shadow it: information,
# not a problem here (the package is found by an import hook that maps spark_synth to this clone).
# Only that message is filtered, and only for these pip runs.
quiet_editable="ignore:Editable installation:UserWarning"
purelib() { "$1/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])'; }
if [ ! -f "$deps/.complete" ]; then
  echo "spark-synth: creating virtualenv $deps (first run downloads the dependencies)" >&2
  rm -rf "$deps"
  "$python" -m venv "$deps"
  "$deps/bin/python" -m pip install --quiet --upgrade pip >&2
  PYTHONWARNINGS="$quiet_editable" "$deps/bin/python" -m pip install --quiet -e "$root[local,torch,dev]" >&2
  touch "$deps/.complete"
fi
if [ ! -f "$deps/.without-project" ]; then
  # the dependencies only: a clone installed here would be the one every clone's .venv runs
  "$deps/bin/python" -m pip uninstall --quiet --yes spark-synth >/dev/null 2>&1 || true
  touch "$deps/.without-project"
fi
if [ ! -x "$clone_venv/bin/python" ] || [ "$(cat "$clone_venv/.dependencies" 2>/dev/null)" != "$deps" ]; then
  rm -rf "$clone_venv"
  "$deps/bin/python" -m venv --without-pip "$clone_venv"
  # processed as a site folder, so the dependencies' own .pth files work as in their venv
  echo "import site; site.addsitedir('$(purelib "$deps")')" > "$(purelib "$clone_venv")/_spark_synth_dependencies.pth"
  PYTHONWARNINGS="$quiet_editable" "$clone_venv/bin/python" -m pip install --quiet --no-deps --no-build-isolation -e "$root" >&2
  echo "$deps" > "$clone_venv/.dependencies"
fi
touch "$deps/.last-used"
if [ -z "${SPARK_SYNTH_VENV:-}" ]; then
  "$root/scripts/prune_venvs.sh" "$HOME/.cache/spark-synth" "$deps" "${SPARK_SYNTH_VENV_KEEP_DAYS:-3}"
fi
echo "$clone_venv"
