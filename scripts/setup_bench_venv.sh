#!/usr/bin/env bash
# Makes the benchmark venv: the project venv (scripts/setup_venv.sh, same pins)
# plus scripts/bench_venv_requirements.txt (OpenVINO), for
# benchmarks/models_corpus_bench.py and the other peer comparisons.
#
# usage: scripts/setup_bench_venv.sh [VENV]   (default: build/bench-venv)
# Idempotent: does nothing when VENV was made from the same two requirement files.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=${1:-build/bench-venv}
extra=scripts/bench_venv_requirements.txt
stamp=$venv/kiln-bench-requirements.txt

bash scripts/setup_venv.sh "$venv"
if cmp -s "$extra" "$stamp"; then
  exit 0
fi
echo "setup_bench_venv: adding $(tr '\n' ' ' < <(grep -v '^#' "$extra")) to $venv"
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-cache-dir -r "$extra"
cp "$extra" "$stamp"
