#!/usr/bin/env bash
# Makes the project's Python venv from Debian's interpreter (/usr/bin/python3,
# never whatever python3 is first on PATH) with the pinned packages of
# scripts/venv_requirements.txt. Tests and benchmarks that need ONNX Runtime
# run under VENV/bin/python.
#
# usage: scripts/setup_venv.sh [VENV]   (default: build/venv)
# Idempotent: does nothing when VENV was made from the same requirements.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=${1:-build/venv}
requirements=scripts/venv_requirements.txt
stamp=$venv/kiln-requirements.txt

if [ -x "$venv/bin/python" ] && cmp -s "$requirements" "$stamp"; then
  exit 0
fi
if [ ! -x /usr/bin/python3 ]; then
  echo "setup_venv: /usr/bin/python3 is missing (scripts/setup.sh installs Debian's python3)" >&2
  exit 1
fi
echo "setup_venv: making $venv with $(tr '\n' ' ' < <(grep -v '^#' "$requirements"))"
rm -rf "$venv"
/usr/bin/python3 -m venv "$venv"
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-cache-dir -r "$requirements"
cp "$requirements" "$stamp"
