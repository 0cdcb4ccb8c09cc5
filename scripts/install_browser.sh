#!/usr/bin/env bash
# The headless browser tests/integration/test_report_browser.py opens the HTML report in: Debian's
# chromium (Playwright drives it through its executable path; Playwright's own browser download
# needs a CDN that CI machines may not reach). Installs it when absent; quiet and idempotent.
# Prints the browser's path on stdout. Skipped when SPARK_SYNTH_SKIP_BROWSER=1 (the test then skips too).
set -euo pipefail

if [ "${SPARK_SYNTH_SKIP_BROWSER:-}" = "1" ]; then
  echo "spark-synth: SPARK_SYNTH_SKIP_BROWSER=1: not installing a browser (the report's browser test is skipped)" >&2
  exit 0
fi

find_browser() {
  if [ -n "${SPARK_SYNTH_BROWSER:-}" ] && [ -x "${SPARK_SYNTH_BROWSER}" ]; then
    echo "$SPARK_SYNTH_BROWSER"
    return 0
  fi
  local name
  for name in chromium chromium-browser google-chrome-stable google-chrome; do
    if command -v "$name" >/dev/null 2>&1; then
      command -v "$name"
      return 0
    fi
  done
  return 1
}

if find_browser; then
  exit 0
fi

how="install Debian's chromium as root (apt-get install -y chromium), or point SPARK_SYNTH_BROWSER at a Chromium or Chrome executable, or set SPARK_SYNTH_SKIP_BROWSER=1 to skip the report's browser test"
if ! command -v apt-get >/dev/null 2>&1; then
  echo "spark-synth: no Chromium found and no apt-get here to install one: $how" >&2
  exit 1
fi
if [ "$(id -u)" -eq 0 ]; then
  as_root=()
elif command -v sudo >/dev/null 2>&1 && sudo -n true >/dev/null 2>&1; then
  as_root=(sudo -n)
else
  echo "spark-synth: no Chromium found, and installing one needs root (this is $(id -un), without password-less sudo): $how" >&2
  exit 1
fi

echo "spark-synth: installing Debian's chromium for the report's browser test (apt-get)" >&2
export DEBIAN_FRONTEND=noninteractive
log="$(mktemp)"
if ! { ${as_root[@]+"${as_root[@]}"} apt-get update -qq && ${as_root[@]+"${as_root[@]}"} apt-get install -y -qq --no-install-recommends chromium; } >"$log" 2>&1; then
  tail -n 20 "$log" >&2
  rm -f "$log"
  echo "spark-synth: installing chromium failed (above): $how" >&2
  exit 1
fi
rm -f "$log"
if ! find_browser; then
  echo "spark-synth: apt-get installed chromium but no chromium executable is on PATH: $how" >&2
  exit 1
fi
