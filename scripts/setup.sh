#!/usr/bin/env bash
# Installs the Debian packages Kiln builds against (docs/../ARCHITECTURE.md "Dependencies").
# Idempotent and quiet: prints nothing and touches nothing when everything is present.
set -euo pipefail

packages=(
  cmake ninja-build g++ make ccache pkg-config
  llvm-19-dev liblld-19-dev
  libflatbuffers-dev flatbuffers-compiler
  libdnnl-dev
  libyaml-cpp-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  clang-19 libclang-rt-19-dev  # libFuzzer harnesses (make fuzz)
  gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user  # aarch64 kernels run under qemu (tests/codegen)
  libdlpack-dev
  pybind11-dev python3-dev  # the kiln Python package's bindings (python/)
  libxgboost-dev  # the auto-tuner's cost model (compiler/tune/cost_model.cc); the runtime does not link it
  libxxhash-dev  # segment checksums of .vmfb, used header-only (runtime/checksum.cc)
  libonnx-dev libprotobuf-dev protobuf-compiler
  libonnx-testdata  # the ONNX backend node tests (tests/onnx_conformance)
  python3 python3-numpy python3-onnx python3-torch python3-torchvision  # exports the real networks of tests/onnx_models
  zlib1g-dev libzstd-dev libedit-dev libxml2-dev libcurl4-openssl-dev
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

echo "setup: installing ${missing[*]}"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
