#!/usr/bin/env bash
# Makes the folder scripts/gpu_check.sh runs from on a GPU machine without a
# compiler or a package registry: the runtime-only GPU binaries, the C++
# runtime libraries they link (for an older distribution), the example
# models' kernel cases (PTX + CPU reference buffers), the example models as
# GPU .vmfb files with their inputs and the CPU .vmfb's outputs (for
# kiln-run --device=cuda end to end), and the script itself.
#
#   bash scripts/make_gpu_bundle.sh [BUILD_DIR] [OUT_DIR]   (default: build .gpu_bundle)
#
# Needs a build with KILN_WITH_CUDA=ON and the compiler (targets
# kiln_cuda_runtime_test, kiln_cublas_test, kiln_cudnn_test, kiln-gpu-cases, kiln-gpu-cases-make, kiln-compile,
# kiln-run, kiln-run-gpu, kiln-bench-gpu, kiln-gpu-device-check) and Python with NumPy (the
# project venv, build/venv, when there is one).
set -eu
src="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="$(cd "${1:-$src/build}" && pwd)"
out="${2:-$src/.gpu_bundle}"
arch="${KILN_GPU_ARCH:-sm_80}"  # PTX for sm_80 JITs on A100, H100 and H200 alike
rm -rf "$out"
mkdir -p "$out/bin" "$out/lib" "$out/cases" "$out/models"
cp "$build/runtime/cuda/kiln_cuda_runtime_test" "$build/kernels/cuda/kiln_cublas_test" "$build/kernels/cuda/kiln_cudnn_test" \
  "$build/tests/gpu/kiln-gpu-cases" "$build/tests/gpu/kiln-gpu-device-check" "$out/bin/"
# kiln-run and kiln-bench without oneDNN (GPU modules call no CPU library
# kernel), under their usual names.
cp "$build/tests/gpu/kiln-run-gpu" "$out/bin/kiln-run"
cp "$build/tests/gpu/kiln-bench-gpu" "$out/bin/kiln-bench"
for b in "$out"/bin/*; do
  # Anything beyond libc and the C++ runtime would have to be carried too.
  extra="$(ldd "$b" | awk '{ print $1 }' | grep -v -E '^(linux-vdso|/lib64/ld-linux|libc\.so|libm\.so|libstdc\+\+|libgcc_s|libdl|libpthread|librt)' || true)"
  [ -z "$extra" ] || { echo "make_gpu_bundle: $b needs libraries the bundle does not carry: $extra" >&2; exit 1; }
done
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
make_cases row_reductions_n4096 tests/gpu/row_reductions.relax n=4096
make_cases matmuls_n1000 tests/gpu/matmuls.relax n=1000
# The same kernels as PTX for sm_90 (Hopper's own ISA level), JIT-compiled as well.
arch=sm_90
make_cases mlp_n256_sm90 examples/mlp.relax n=256
# The example models end to end: the GPU .vmfb (PTX for sm_80, which every
# H100/H200 JIT-compiles; with ARCH=sm_90 also ptxas's cubin, which they load
# as it is), its inputs, and the outputs of the CPU .vmfb of the same model
# on the same inputs.
python="$build/venv/bin/python"
[ -x "$python" ] || python=python3
make_model_dir() {  # DIR CASE MODEL ARCH [more kiln-compile flags for the GPU file]
  local dir="$out/models/$1" name="$2" model="$3" arch="$4"
  shift 4
  mkdir -p "$dir"
  "$python" "$src/tests/gpu/make_model_inputs.py" "$name" "$dir"
  "$build/tools/kiln-compile/kiln-compile" "$src/$model" --target=cuda --arch="$arch" "$@" -o "$dir/model.cuda.vmfb" >/dev/null
  local cpu="$(mktemp -d)"
  "$build/tools/kiln-compile/kiln-compile" "$src/$model" -o "$cpu/model.vmfb" >/dev/null
  local inputs=() i=0
  while [ -f "$dir/in$i.npy" ]; do inputs+=("--input=@$dir/in$i.npy"); i=$((i + 1)); done
  "$build/tools/kiln-run/kiln-run" "$cpu/model.vmfb" "${inputs[@]}" --output="@$dir/ref0.npy" >/dev/null
  rm -rf "$cpu"
  # gpu_check.sh's comparison flags for this model, when not the float32 ones.
  if [ -n "${TOLERANCE:-}" ]; then echo "$TOLERANCE" > "$dir/tolerance"; fi
}
make_model() { make_model_dir "$1${3:+_$3}" "$1" "$2" "${3:-sm_80}"; }
make_model mlp_n4 examples/mlp.relax
make_model mlp_n256 examples/mlp.relax
make_model transformer_s128 examples/transformer_block.relax
make_model resnet_block examples/resnet_block.relax
make_model transformer_s128 examples/transformer_block.relax sm_90
# Their matmuls on cuBLAS (kiln.cublas.matmul* with bias / relu epilogues;
# cuBLASLt is the GPU machine's own, not carried), and the 512^3 matmul both
# ways, for kiln-bench's GPU times beside PyTorch's.
cublas=(--dispatch="$src/tests/gpu/cublas.yaml")
make_model_dir mlp_n256_cublas mlp_n256 examples/mlp.relax sm_80 "${cublas[@]}"
make_model_dir transformer_s128_cublas transformer_s128 examples/transformer_block.relax sm_80 "${cublas[@]}"
make_model_dir matmul_512 matmul_512 tests/gpu/matmul_512.relax sm_80
make_model_dir matmul_512_cublas matmul_512 tests/gpu/matmul_512.relax sm_80 "${cublas[@]}"
# The ResNet block's convolutions on cuDNN (the machine's own libcudnn).
make_model_dir resnet_block_cudnn resnet_block examples/resnet_block.relax sm_80 --dispatch="$src/tests/gpu/cudnn.yaml"
# Device-resident inputs and outputs through the C API and CUDA graph replay
# (kiln-gpu-device-check): a static elementwise function.
"$build/tools/kiln-compile/kiln-compile" "$src/tests/gpu/device_io.relax" --target=cuda --arch=sm_80 \
  -o "$out/device_io.cuda.vmfb" >/dev/null
# --precision=fp16 (docs/precision.md): half weights and activations, float32
# sums, against the same float32 CPU outputs. The bounds are twice the
# largest |fp16 - fp32| the CPU build of each model gives on these inputs
# (docs/precision.md, "Accuracy"), as atol, beside the float32 rtol.
TOLERANCE="--atol=0.13 --rtol=1e-3" make_model_dir mlp_n256_fp16 mlp_n256 examples/mlp.relax sm_80 --precision=fp16
TOLERANCE="--atol=0.44 --rtol=1e-3" make_model_dir transformer_s128_fp16 transformer_s128 examples/transformer_block.relax sm_80 --precision=fp16
TOLERANCE="--atol=0.17 --rtol=1e-3" make_model_dir resnet_block_fp16 resnet_block examples/resnet_block.relax sm_80 --precision=fp16
cp "$src/scripts/gpu_check.sh" "$out/gpu_check.sh"
du -sh "$out"
