#!/usr/bin/env bash
# README command 1: install what is needed, then run the main job (the fpt engine, the best on adult in
# benchmarks/RESULTS.md) on the bundled sample data with the embedded default (local Spark, a local Delta table under ./.spark-synth,
# a local MLflow store with the budget ledgers under ~/.spark-synth).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="$("$root/scripts/bootstrap.sh")"
cd "$root"
"$venv/bin/spark-synth" run \
  --input spark_synth/data/adult_sample.csv \
  --schema spark_synth/data/adult_sample.schema.json \
  --engine fpt --epsilon 1 --delta 1e-9 --rows 10000 \
  --output .spark-synth/synthetic/adult_sample --seed 0 --overwrite "$@"
