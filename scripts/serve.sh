#!/usr/bin/env bash
# Sets up .venv, builds the demo model once (cached in .cache/models/demo), and
# serves: tritonserver on the model repository plus the HTTP frontend.
# Flags are passed to scripts/serve.py (see --help).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec .venv/bin/python scripts/serve.py "$@"
