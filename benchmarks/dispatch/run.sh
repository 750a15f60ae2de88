#!/usr/bin/env bash
# Which library dispatch is fastest per model: compiles each ONNX model with Kiln's
# generated kernels and with each rule file here, then times them side by side in one
# kiln-bench run (p50 ratio against the generated-kernel build), with 1 and 2 threads.
#   benchmarks/dispatch/run.sh BUILD MODELS_DIR [model ...]
# MODELS_DIR comes from benchmarks/onnx/export_models.py (NAME.onnx, NAME.x.npy).
set -euo pipefail
BUILD=${1:?build dir}; MODELS=${2:?models dir}; shift 2
HERE=$(cd "$(dirname "$0")" && pwd)
K=$BUILD/tools/kiln-compile/kiln-compile
B=$BUILD/tools/kiln-bench/kiln-bench
OUT=$(mktemp -d)
[ $# -gt 0 ] || set -- resnet18 mobilenet_v2 squeezenet encoder
for m1 in "$@"; do
  {
    files=("$OUT/$m1.vmfb")
    $K "$MODELS/$m1.onnx" -o "$OUT/$m1.vmfb" > /dev/null
    for rules in "$HERE"/*.yaml; do
      r=$(basename "$rules" .yaml)
      $K "$MODELS/$m1.onnx" -o "$OUT/$m1.$r.vmfb" --dispatch="$rules" > /dev/null
      files+=("$OUT/$m1.$r.vmfb")
    done
    for t in 1 2; do
      echo "== $m1, $t thread(s), load $(cut -d' ' -f1-3 /proc/loadavg)"
      $B "${files[@]}" --threads=$t --min-time=2 --runs=20 --input=@"$MODELS/$m1.x.npy"
    done
  }
done
rm -rf "$OUT"
