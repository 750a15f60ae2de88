#!/usr/bin/env bash
# Nothing that make test runs may depend on the python3 first on PATH (issue 19
# §1): on a fresh machine that is often a pyenv or conda interpreter without
# numpy. With such a python3 first on PATH, the MLP benchmark script runs
# against ONNX Runtime from the project's venv and its outputs must match.
#
# usage: python_path_test.sh NO_NUMPY_DIR BUILD_DIR SOURCE_DIR
set -euo pipefail
no_numpy_dir=$1
build=$(cd "$2" && pwd)
cd "$3"
export PATH="$no_numpy_dir:$PATH"

if [ "$(command -v python3)" != "$no_numpy_dir/python3" ]; then
  echo "FAIL: python3 on PATH is $(command -v python3), not the shim in $no_numpy_dir"
  exit 1
fi
if python3 -c "import numpy" 2> /dev/null; then
  echo "FAIL: the shim python3 imports numpy, so this test would prove nothing"
  exit 1
fi

venv_python=$build/venv/bin/python
if [ ! -x "$venv_python" ]; then
  echo "SKIP: no project venv at $build/venv (make venv, or scripts/setup_venv.sh $build/venv, makes it)"
  exit 77
fi
"$venv_python" benchmarks/mlp_vs_onnxruntime.py --build "$build" --batches 1 --threads 1
