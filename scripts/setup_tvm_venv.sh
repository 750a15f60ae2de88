#!/usr/bin/env bash
# Makes the venv of the MetaSchedule comparison
# (benchmarks/tuning/vs_metaschedule.py): apache-tvm and its pins from
# scripts/tvm_venv_requirements.txt, apart from the project venv (TVM brings
# its own numpy and ml_dtypes).
#
# usage: scripts/setup_tvm_venv.sh [VENV]   (default: build/tvm-venv)
# Idempotent: does nothing when VENV was made from the same requirements.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=${1:-build/tvm-venv}
req=scripts/tvm_venv_requirements.txt
stamp=$venv/kiln-tvm-requirements.txt
if [ -x "$venv/bin/python" ] && cmp -s "$req" "$stamp"; then
  exit 0
fi
if [ ! -x /usr/bin/python3 ]; then
  echo "setup_tvm_venv: /usr/bin/python3 is missing (scripts/setup.sh installs Debian's python3)" >&2
  exit 1
fi
# Debian's interpreter, never whatever python3 is first on PATH (as setup_venv.sh).
/usr/bin/python3 -m venv "$venv"
echo "setup_tvm_venv: installing $(grep -v '^#' "$req" | tr '\n' ' ')into $venv"
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-cache-dir -r "$req"
"$venv/bin/python" -m pip freeze --disable-pip-version-check > "$venv/kiln-tvm-freeze.txt"
cp "$req" "$stamp"
