#!/usr/bin/env bash
# Makes the folder scripts/gpu_check.sh runs from on a GPU machine without a
# compiler or a package registry: the runtime-only GPU binaries, the C++
# runtime libraries they link (for an older distribution), the example
# models' kernel cases (PTX + CPU reference buffers) and the script itself.
#
#   bash scripts/make_gpu_bundle.sh [BUILD_DIR] [OUT_DIR]   (default: build .gpu_bundle)
#
# Needs a build with KILN_WITH_CUDA=ON and the compiler (targets
# kiln_cuda_runtime_test, kiln-gpu-cases, kiln-gpu-cases-make).
set -eu
src="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="$(cd "${1:-$src/build}" && pwd)"
out="${2:-$src/.gpu_bundle}"
arch="${KILN_GPU_ARCH:-sm_80}"  # PTX for sm_80 JITs on A100, H100 and H200 alike
rm -rf "$out"
mkdir -p "$out/bin" "$out/lib" "$out/cases"
cp "$build/runtime/cuda/kiln_cuda_runtime_test" "$build/tests/gpu/kiln-gpu-cases" "$out/bin/"
for lib in libstdc++.so.6 libgcc_s.so.1; do
  path="$(ldd "$out/bin/kiln-gpu-cases" | awk -v l="$lib" '$1 == l { print $3 }')"
  [ -n "$path" ] && cp -L "$path" "$out/lib/"
done
make_cases() {
  local name="$1" model="$2"
  shift 2
  mkdir -p "$out/cases/$name"
  "$build/tests/gpu/kiln-gpu-cases-make" "$src/$model" "$out/cases/$name" --arch="$arch" "$@"
}
make_cases mlp_n4 examples/mlp.relax n=4
make_cases mlp_n256 examples/mlp.relax n=256
make_cases transformer_s128 examples/transformer_block.relax s=128
make_cases resnet_block examples/resnet_block.relax
make_cases matmul_512 tests/gpu/matmul_512.relax
# The same kernels as PTX for sm_90 (Hopper's own ISA level), JIT-compiled as well.
arch=sm_90
make_cases mlp_n256_sm90 examples/mlp.relax n=256
cp "$src/scripts/gpu_check.sh" "$out/gpu_check.sh"
du -sh "$out"
