#!/usr/bin/env bash
# README command 2: install what is needed, then run the whole test suite (extra args go to pytest).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="$("$root/scripts/bootstrap.sh")"
cd "$root"
exec "$venv/bin/python" -m pytest "$@"
