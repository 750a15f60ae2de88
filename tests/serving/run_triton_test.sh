#!/usr/bin/env bash
# Runs test_triton.py under the serving venv (scripts/setup_serving_venv.sh) with the build
# tree's kiln package. Skips (exit 77), saying why, when the serving venv or the package is
# missing. ResNet-18 joins the models when benchmarks/onnx/export_models.py can export it
# (Debian's python3-torch); the ONNX file is cached in the work folder.
#
# usage: run_triton_test.sh SERVING_PYTHON PACKAGE_PARENT KILN_RUN SOURCE_DIR WORK_DIR [TESTS...]
# TESTS: unittest names (default: all of test_triton). The native backend's tests skip
# (77) when libtriton_kiln.so is not built.
set -euo pipefail
python=$1
package_parent=$2
export KILN_RUN=$3
export KILN_SOURCE_DIR=$4
export KILN_TRITON_WORK=$5
shift 5
tests=("$@")
[ ${#tests[@]} -gt 0 ] || tests=(test_triton)

if [ ! -x "$python" ]; then
  echo "SKIP: no serving venv python at $python (make serving-venv, or scripts/setup_serving_venv.sh; it needs PyPI)"
  exit 77
fi
if ! "$python" -c "import tritonclient.http, tritonclient.grpc, pytriton" 2>/dev/null; then
  echo "SKIP: the serving venv at $python lacks nvidia-pytriton or tritonclient (scripts/setup_serving_venv.sh)"
  exit 77
fi
if ! compgen -G "$package_parent/kiln/_compiler*.so" > /dev/null; then
  echo "SKIP: the kiln package with its compiler is not built in $package_parent (ninja kiln_python)"
  exit 77
fi
if [[ " ${tests[*]}" == *NativeBackend* ]] && [ ! -f "$package_parent/kiln/triton/backends/kiln/libtriton_kiln.so" ]; then
  echo "SKIP: no native backend at $package_parent/kiln/triton/backends/kiln/libtriton_kiln.so (ninja kiln_triton_backend)"
  exit 77
fi
if [[ " ${tests[*]}" == *test_nginx* ]] && [ ! -x "${KILN_NGINX:-}" ]; then
  echo "SKIP: no nginx at ${KILN_NGINX:-(KILN_NGINX unset)} (make serving-venv, or scripts/setup_nginx.sh; it needs Debian's package mirror)"
  exit 77
fi
mkdir -p "$KILN_TRITON_WORK"
# The previous run's folders (kept until now for a look after a failure).
rm -rf "$KILN_TRITON_WORK"/triton.* "$KILN_TRITON_WORK"/export.* "$KILN_TRITON_WORK"/replicas.* "$KILN_TRITON_WORK"/nginx.*
onnx=$KILN_TRITON_WORK/onnx
export KILN_TRITON_ONNX=""
if [ -f "$onnx/resnet18.onnx" ] || \
   /usr/bin/python3 "$KILN_SOURCE_DIR/benchmarks/onnx/export_models.py" --out "$onnx" --models resnet18 > "$KILN_TRITON_WORK/export_models.log" 2>&1; then
  export KILN_TRITON_ONNX=$onnx
fi
export PYTHONPATH=$package_parent:$KILN_SOURCE_DIR/tests/serving
cd "$KILN_SOURCE_DIR/tests/serving"
exec timeout --kill-after=30 900 "$python" -m unittest -v "${tests[@]}"
