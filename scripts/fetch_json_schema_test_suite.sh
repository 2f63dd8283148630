#!/usr/bin/env bash
# Fetches the official JSON-Schema-Test-Suite (draft-04, draft-07, 2020-12)
# into .cache/json-schema-test-suite, for tests/test_json_schema_test_suite.py
# and `python -m bench.schema_coverage`. The suite is the copy shipped in the
# jsonschema source distribution (json/tests/<draft>/), downloaded with pip,
# checked against a pinned SHA-256, and only those test directories are kept.
# Idempotent and quick when the stamp matches; never vendored into the repo.
set -euo pipefail
cd "$(dirname "$0")/.."

VERSION="4.26.0"
SHA256="0c26707e2efad8aa1bfc5b7ce170f3fccc2e4918ff85989ba9ffa9facb2be326"
DRAFTS=(draft4 draft7 draft2020-12)
PIP="${PIP:-.venv/bin/pip}"
target=".cache/json-schema-test-suite"
wanted="jsonschema-${VERSION} sha256:${SHA256} ${DRAFTS[*]}"

if [ -f "$target/.source" ] && [ "$(cat "$target/.source")" = "$wanted" ]; then
  exit 0
fi

echo "setup: fetching the JSON-Schema-Test-Suite (jsonschema-${VERSION} sdist)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
"$PIP" download --quiet --disable-pip-version-check --no-deps --no-binary :all: \
  "jsonschema==${VERSION}" -d "$work"
archive="$work/jsonschema-${VERSION}.tar.gz"
echo "${SHA256}  ${archive}" | sha256sum --check --quiet
members=()
for draft in "${DRAFTS[@]}"; do
  members+=("jsonschema-${VERSION}/json/tests/${draft}")
done
tar -xzf "$archive" -C "$work" "${members[@]}"
mkdir -p "$work/suite"
for draft in "${DRAFTS[@]}"; do
  mv "$work/jsonschema-${VERSION}/json/tests/${draft}" "$work/suite/"
done
echo "$wanted" > "$work/suite/.source"
mkdir -p .cache
rm -rf "$target"
mv "$work/suite" "$target"
