#!/usr/bin/env bash
# ctest's kiln_models_test: the corpus of published ONNX models (tests/models/manifests)
# through kiln-compile / kiln-run, compared with ONNX Runtime from the project's venv.
# Skipped (exit 77, saying why) without the venv or without fetched models
# (scripts/fetch_models.sh BUILD/models fetches them; this test downloads nothing).
#
# With `harness` instead of the tools, kiln_models_harness_test: the harness's own checks
# (tests/models/harness_test.py), which need the venv but no fetched model.
#
# usage: run_models_test.sh BUILD_DIR SOURCE_DIR KILN_COMPILE KILN_RUN
#        run_models_test.sh BUILD_DIR SOURCE_DIR harness
set -euo pipefail
build=$(cd "$1" && pwd)
cd "$2"
venv_python=$build/venv/bin/python
if [ ! -x "$venv_python" ]; then
  echo "SKIP: no project venv at $build/venv (make venv, or scripts/setup_venv.sh $build/venv, makes it)"
  exit 77
fi
if ! "$venv_python" -c "import onnxruntime, onnx, numpy" 2> /dev/null; then
  echo "SKIP: the venv at $build/venv lacks onnxruntime, onnx or numpy (rerun scripts/setup_venv.sh $build/venv)"
  exit 77
fi
if [ "$3" = harness ]; then
  exec "$venv_python" tests/models/harness_test.py
fi
exec "$venv_python" tests/models/run_models.py --cache "$build/models" --work "$build/tests/models/work" \
  --kiln-compile "$3" --kiln-run "$4"
