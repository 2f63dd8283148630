#!/usr/bin/env bash
# Sets up .venv and runs the whole test suite (unit and integration: a real
# tritonserver and the real frontend on free loopback ports).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
# The browser tests (/docs offline, the playground) drive a real headless
# Chromium: Debian's package, on a machine without one.
if ! command -v chromium >/dev/null; then
  echo "test: installing chromium for the headless-browser tests"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium
fi
exec .venv/bin/python -m pytest "$@"
