#!/usr/bin/env bash
# Creates .venv with the pinned packages and the project installed (editable),
# then fetches the JSON-Schema-Test-Suite into .cache/ for the tests.
# Idempotent and quick when nothing changed: it reinstalls only when
# the requirement files or pyproject.toml differ from the last successful run.
# It installs requirements-test.txt: the serving pins plus the local
# tritonserver (nvidia-pytriton) and the test and benchmark tools.
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON="${PYTHON:-python3}"
XGRAMMAR_VERSION="0.2.8"
stamp=".venv/.setup-stamp"
wanted="$(cat requirements.txt requirements-test.txt pyproject.toml | sha256sum | cut -d' ' -f1) xgrammar==${XGRAMMAR_VERSION}"

# The integration tests judge /v1/completion/typed outputs with the real
# TypeScript compiler, pinned in tests/integration/typescript_judge.
judge="tests/integration/typescript_judge"
if [ ! -x "$judge/node_modules/.bin/tsc" ]; then
  if ! command -v npm >/dev/null; then  # Debian's node, on a machine without one
    apt-get update -qq && apt-get install -y -qq nodejs npm
  fi
  echo "setup: installing the TypeScript compiler for the tests (npm ci in $judge)"
  npm ci --prefix "$judge" --no-audit --no-fund --silent
fi

# tritonserver and its Python stubs run on jemalloc where it is installed
# (triton_runtime/allocator.py: glibc's malloc holds on to freed memory).
if ! ldconfig -p 2>/dev/null | grep -q libjemalloc.so.2 && command -v apt-get >/dev/null; then
  echo "setup: installing jemalloc for tritonserver (apt-get install libjemalloc2)"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libjemalloc2 \
    || echo "setup: could not install libjemalloc2; tritonserver will use glibc's malloc"
fi

if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$wanted" ] && [ -x .venv/bin/python ]; then
  exec bash scripts/fetch_json_schema_test_suite.sh
fi

[ -x .venv/bin/python ] || "$PYTHON" -m venv .venv
echo "setup: installing pinned packages into .venv (torch==2.13.0 CPU build, tritonserver via nvidia-pytriton)"
.venv/bin/pip install --quiet --disable-pip-version-check -r requirements-test.txt
# xgrammar's wheel requires the ~1 GB `triton` GPU kernel compiler on Linux
# x86_64; nothing here uses it, so its other dependencies are pinned in
# requirements.txt and xgrammar itself goes in without them.
.venv/bin/pip install --quiet --disable-pip-version-check --no-deps "xgrammar==${XGRAMMAR_VERSION}"
.venv/bin/pip install --quiet --disable-pip-version-check --no-deps --no-build-isolation -e .
echo "$wanted" > "$stamp"
bash scripts/fetch_json_schema_test_suite.sh
echo "setup: done"
