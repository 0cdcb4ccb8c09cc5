#!/usr/bin/env bash
# Create (once) the benchmark-only virtualenv for the peer DP synthesizers and print its path.
#
# Peers are never a runtime dependency of spark-synth, and their pins conflict with ours (pyspark 4.0.1
# needs pandas<3; smartnoise-synth needs mbi<2 and an old opacus/torch), so they live in their own venv:
#   ~/.cache/spark-synth/peers-venv-<hash of this script + Python version>   ($SPARK_SYNTH_PEERS_VENV wins)
# Installed: smartnoise-synth (OpenDP's AIM and MST, built on private-pgm's `mbi` 1.x) without its
# deep-learning extras (opacus/torch and pac-synth are only needed by its GAN and QUAIL synthesizers),
# plus the libraries its AIM/MST code imports. benchmarks/quality.py runs peers in this interpreter.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
python="${PYTHON:-python3.11}"
key="$( (cat "$here/setup_peers.sh"; "$python" --version) | sha256sum | cut -c1-16)"
venv="${SPARK_SYNTH_PEERS_VENV:-$HOME/.cache/spark-synth/peers-venv-$key}"
if [ ! -f "$venv/.complete" ]; then
  echo "spark-synth: creating peers virtualenv $venv" >&2
  rm -rf "$venv"
  "$python" -m venv "$venv"
  "$venv/bin/python" -m pip install --quiet --upgrade pip >&2
  "$venv/bin/python" -m pip install --quiet "mbi>=1.1,<2" "disjoint-set>=0.9,<0.10" networkx "pandas>=2.2,<3" \
      "numpy<3" scipy "smartnoise-sql>=1.0.10" Faker >&2
  "$venv/bin/python" -m pip install --quiet --no-deps "smartnoise-synth==1.0.8" >&2
  "$venv/bin/python" -c "from snsynth.aim import AIMSynthesizer; from snsynth.mst import MSTSynthesizer" >&2
  touch "$venv/.complete"
fi
echo "$venv"
