#!/usr/bin/env bash
# One command for a machine with an NVIDIA GPU: what is there, Kiln's CUDA
# runtime tests, cuBLAS and cuDNN kernel tests, every example model's kernels on the GPU against the CPU
# (with GPU times from CUDA events), every example model end to end with
# kiln-run --device=cuda against the CPU .vmfb's outputs and kiln-bench
# --device=cuda's medians, then one summary table. Needs no package
# registry, no compiler and no CUDA toolkit: only the driver the machine has.
#
#   bash scripts/gpu_check.sh [DIR]
#
# DIR is a bundle made by scripts/make_gpu_bundle.sh (bin/, lib/, cases/;
# default: the folder this script is in when that holds bin/, else
# .gpu_bundle), or a build folder (runtime/cuda/kiln_cuda_runtime_test,
# tests/gpu/kiln-gpu-cases, and cases/ beside them or made now with
# tests/gpu/kiln-gpu-cases-make; no end-to-end models: those need the
# bundle). Each step has a time limit; the whole run stays well under 5
# minutes. Exit status: 0 when every step passed (a SKIP counts as failed).
set -u
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
dir="${1:-}"
if [ -z "$dir" ]; then
  if [ -d "$here/bin" ]; then dir="$here"; else dir=".gpu_bundle"; fi
fi
dir="$(cd "$dir" && pwd)" || { echo "gpu_check: no folder $1"; exit 2; }

if [ -x "$dir/bin/kiln-gpu-cases" ]; then
  runtime_test="$dir/bin/kiln_cuda_runtime_test"
  cublas_test="$dir/bin/kiln_cublas_test"
  cudnn_test="$dir/bin/kiln_cudnn_test"
  cases_bin="$dir/bin/kiln-gpu-cases"
  cases_dir="$dir/cases"
  bundle_lib="$dir/lib"
  models_dir="$dir/models"
  run_bin="$dir/bin/kiln-run"
  bench_bin="$dir/bin/kiln-bench"
  device_check="$dir/bin/kiln-gpu-device-check"
  device_io="$dir/device_io.cuda.vmfb"
else
  device_check=
  device_io=
  models_dir=
  runtime_test="$dir/runtime/cuda/kiln_cuda_runtime_test"
  cublas_test="$dir/kernels/cuda/kiln_cublas_test"
  cudnn_test="$dir/kernels/cuda/kiln_cudnn_test"
  cases_bin="$dir/tests/gpu/kiln-gpu-cases"
  cases_dir="$dir/gpu_cases"
  if [ ! -d "$cases_dir" ] && [ -x "$dir/tests/gpu/kiln-gpu-cases-make" ]; then
    src="$(cd "$here/.." && pwd)"
    mkdir -p "$cases_dir"/{mlp_n4,mlp_n256,transformer_s128,resnet_block,row_reductions_n4096,matmuls_n1000}
    "$dir/tests/gpu/kiln-gpu-cases-make" "$src/examples/mlp.relax" "$cases_dir/mlp_n4" n=4 >/dev/null &&
      "$dir/tests/gpu/kiln-gpu-cases-make" "$src/examples/mlp.relax" "$cases_dir/mlp_n256" n=256 >/dev/null &&
      "$dir/tests/gpu/kiln-gpu-cases-make" "$src/examples/transformer_block.relax" "$cases_dir/transformer_s128" s=128 >/dev/null &&
      "$dir/tests/gpu/kiln-gpu-cases-make" "$src/examples/resnet_block.relax" "$cases_dir/resnet_block" >/dev/null &&
      "$dir/tests/gpu/kiln-gpu-cases-make" "$src/tests/gpu/row_reductions.relax" "$cases_dir/row_reductions_n4096" n=4096 >/dev/null &&
      "$dir/tests/gpu/kiln-gpu-cases-make" "$src/tests/gpu/matmuls.relax" "$cases_dir/matmuls_n1000" n=1000 >/dev/null
  fi
fi

results=()
step() {  # step NAME LIMIT_S COMMAND...: runs it, prints its output, records the outcome
  local name="$1" limit="$2"
  shift 2
  echo
  echo "=== $name"
  local t0=$SECONDS
  timeout --kill-after=5 "$limit" "$@"
  local rc=$?
  local verdict=PASS
  [ $rc -eq 124 ] || [ $rc -eq 137 ] && verdict="TIMEOUT(${limit}s)"
  [ $rc -ne 0 ] && [ "$verdict" = PASS ] && verdict="FAIL(rc=$rc)"
  results+=("$(printf '%-34s %-14s %5ss' "$name" "$verdict" "$((SECONDS - t0))")")
}

echo "=== what this machine has"
date -u
uname -srm
command -v nvidia-smi >/dev/null && timeout 30 nvidia-smi --query-gpu=index,name,driver_version,memory.total,compute_cap --format=csv ||
  echo "nvidia-smi: not found"
(ldconfig -p 2>/dev/null | grep -E "libcuda\.so|libcublas|libcudnn" | head -8) || true
ls -d /usr/local/cuda* 2>/dev/null | head -3
timeout 30 python3 -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'available', torch.cuda.is_available())" 2>/dev/null ||
  echo "torch: not importable"
echo "kiln bundle: $dir"
# The bundle's C++ runtime libraries only when the machine's own are too old
# for the binaries (and only for them, after the probes above).
if [ -n "${bundle_lib:-}" ] && ! "$runtime_test" --gtest_list_tests >/dev/null 2>&1; then
  echo "using the bundle's libstdc++ (the machine's is older than the build's)"
  export LD_LIBRARY_PATH="$bundle_lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi

# cuBLASLt (kiln.cublas.*) is the machine's own, dlopen'ed: the loader's
# path, else the copy PyTorch's wheels bring (nvidia/cublas/lib).
if ! ldconfig -p 2>/dev/null | grep -q "libcublasLt\.so\.13 " && [ -z "${KILN_CUBLASLT:-}" ]; then
  lt="$(timeout 30 python3 -c 'import nvidia.cublas, os; print(os.path.join(list(nvidia.cublas.__path__)[0], "lib", "libcublasLt.so.13"))' 2>/dev/null || true)"
  [ -n "$lt" ] && [ -f "$lt" ] && export KILN_CUBLASLT="$lt"
fi
echo "cuBLASLt: ${KILN_CUBLASLT:-libcublasLt.so.13 (the loader path)}"
# cuDNN 9 (kiln.cudnn.*) likewise, or PyTorch's nvidia-cudnn wheel.
if ! ldconfig -p 2>/dev/null | grep -q "libcudnn\.so\.9 " && [ -z "${KILN_CUDNN:-}" ]; then
  dn="$(timeout 30 python3 -c 'import nvidia.cudnn, os; print(os.path.join(list(nvidia.cudnn.__path__)[0], "lib", "libcudnn.so.9"))' 2>/dev/null || true)"
  [ -n "$dn" ] && [ -f "$dn" ] && export KILN_CUDNN="$dn"
fi
echo "cuDNN: ${KILN_CUDNN:-libcudnn.so.9 (the loader path)}"

step "cuda runtime tests" 120 env KILN_REQUIRE_GPU=1 "$runtime_test" --gtest_brief=1
# kiln.cublas.matmul and its epilogues (bias, relu, gelu), batched and
# unaligned, through the device-function path a loaded module uses, against
# a float64 matmul on the host.
step "cublas matmul tests" 120 env KILN_REQUIRE_GPU=1 "$cublas_test" --gtest_brief=1
# kiln.cudnn.conv2d, _bias and _bias_relu (strided, padded, dilated,
# grouped, depthwise) against a float64 convolution on the host.
step "cudnn conv tests" 120 env KILN_REQUIRE_GPU=1 "$cudnn_test" --gtest_brief=1
step "no-driver error path" 30 env KILN_CUDA_DRIVER=libkiln-no-such-driver.so.1 "$runtime_test" --gtest_filter='NoDriver.*' --gtest_brief=1
step "no-cublas error path" 30 env KILN_CUBLASLT=libkiln-no-such-cublaslt.so "$cublas_test" --gtest_filter='NoCublas.*' --gtest_brief=1
step "no-cudnn error path" 30 env KILN_CUDNN=libkiln-no-such-cudnn.so "$cudnn_test" --gtest_filter='NoCudnn.*' --gtest_brief=1
# Device tensors at the API and CUDA graphs: host inputs -> device output
# (C API, KILN_DEVICE_CUDA), that output back in as a kDLCUDA DLPack input,
# and a static call replayed as a CUDA graph (bit-identical to plain
# launches), with the wall time per call of both; the runtime test above
# printed one empty kernel's launch time beside ten launches and their graph.
if [ -n "$device_check" ] && [ -f "$device_io" ]; then
  step "device I/O + CUDA graph" 60 "$device_check" "$device_io"
else
  results+=("$(printf '%-34s %-14s' "device I/O + CUDA graph" "SKIP(run from a bundle)")")
fi
if [ -d "$cases_dir" ]; then
  step "example kernels: GPU vs CPU" 150 "$cases_bin" --iters=20 "$cases_dir"/*/
else
  results+=("$(printf '%-34s %-14s' "example kernels: GPU vs CPU" "SKIP(no cases)")")
fi

# Each example model end to end on the GPU (the *_cublas ones with their
# matmuls on cuBLAS, *_cudnn with convolutions on cuDNN): the VM runs the GPU .vmfb,
# launching its kernels (kiln-run --device=cuda), and the output must match
# the CPU .vmfb's (|gpu - cpu| <= 1e-2 + 1e-3 |cpu|: outputs reach ~200, and the
# GPU sums in another order; kiln-run prints the largest difference; *_fp16 models,
# compiled with --precision=fp16, against the same float32 outputs within the bound
# in their folder's `tolerance` file); then kiln-bench's
# median wall time per call (each call waits for its kernels).
if [ -n "$models_dir" ] && [ -d "$models_dir" ]; then
  for m in "$models_dir"/*/; do
    name="$(basename "$m")"
    inputs=()
    i=0
    while [ -f "$m/in$i.npy" ]; do inputs+=("--input=@$m/in$i.npy"); i=$((i + 1)); done
    # A half-precision model (*_fp16) brings its own, wider bound.
    tol=(--atol=1e-2 --rtol=1e-3)
    [ -f "$m/tolerance" ] && read -r -a tol < "$m/tolerance"
    step "e2e $name: GPU vs CPU" 30 "$run_bin" "$m/model.cuda.vmfb" --device=cuda "${inputs[@]}" \
      --expected_output="@$m/ref0.npy" "${tol[@]}" --repeat=20
    step "bench $name (cuda)" 30 "$bench_bin" "$m/model.cuda.vmfb" --device=cuda "${inputs[@]}" \
      --warmup=3 --runs=30 --min-time=0
    # Static models are replayed as a CUDA graph above ("CUDA graph: ..."
    # under kiln-bench's table); the same with plain launches, to compare.
    case "$name" in
      matmul_512* | resnet_block*)
        step "bench $name (cuda, no graph)" 30 "$bench_bin" "$m/model.cuda.vmfb" --device=cuda "${inputs[@]}" \
          --warmup=3 --runs=30 --min-time=0 --cuda_graph=off ;;
    esac
  done
else
  results+=("$(printf '%-34s %-14s' "e2e models: GPU vs CPU" "SKIP(no models/: run from a bundle)")")
fi

# PyTorch on the same GPU, where the machine has it: the same 512^3 float32
# matmul as the matmul_512 case (TF32 off, as Kiln's kernels are plain fp32),
# median of CUDA-event times, to put Kiln's GPU times in proportion.
if python3 -c "import torch; assert torch.cuda.is_available()" >/dev/null 2>&1; then
  step "pytorch reference (matmul 512^3)" 60 python3 -c '
import torch
torch.backends.cuda.matmul.allow_tf32 = False
a = torch.rand(512, 512, device="cuda"); b = torch.rand(512, 512, device="cuda")
for _ in range(10): a @ b
times = []
for _ in range(50):
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    s.record(); a @ b; e.record(); torch.cuda.synchronize(); times.append(s.elapsed_time(e) * 1000)
times.sort()
print("torch %s matmul 512x512x512 fp32: median %.2f us over 50" % (torch.__version__, times[25]))
'
fi

echo
echo "=== summary"
printf '%-34s %-14s %6s\n' step result time
failed=0
for r in "${results[@]}"; do
  echo "$r"
  case "$r" in *PASS*) ;; *) failed=1 ;; esac
done
exit $failed
