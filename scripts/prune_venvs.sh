#!/usr/bin/env bash
# Remove the project's cached virtualenvs (venv-*, runtime-*) under CACHE that were last used more
# than DAYS days ago, except KEEP (the one in use). A venv's last use is its .last-used stamp (its
# .complete stamp when it has none). Without pruning, every change of pyproject.toml leaves a
# multi-GB venv behind.
#   scripts/prune_venvs.sh CACHE KEEP [DAYS]
set -euo pipefail
cache="$1"
keep="$2"
days="${3:-3}"
for dir in "$cache"/venv-* "$cache"/runtime-*; do
  [ -d "$dir" ] || continue
  [ "$dir" -ef "$keep" ] && continue
  stamp="$dir/.last-used"
  [ -f "$stamp" ] || stamp="$dir/.complete"
  [ -f "$stamp" ] || continue  # being built (or abandoned mid-build): not ours to judge
  if [ -n "$(find "$stamp" -maxdepth 0 -mtime +"$days")" ]; then
    echo "spark-synth: removing $dir (unused for more than $days days)" >&2
    rm -rf "$dir"
  fi
done
