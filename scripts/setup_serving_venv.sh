#!/usr/bin/env bash
# Makes the serving venv from Debian's interpreter (/usr/bin/python3) with the
# pinned packages of scripts/serving_venv_requirements.txt, then puts the
# Python backend's stub for this interpreter's version where Triton looks for
# it (backends/python/triton_python_backend_stub of the wheel's server tree;
# same depth as the stub's own folder, so its relative RPATH still finds the
# wheel's libraries). With --with-kiln the kiln package is installed from
# python/ too (a CMake build of the runtime alone, which is what serving needs;
# the tests use the build tree's package instead, PYTHONPATH=build/python).
#
# usage: scripts/setup_serving_venv.sh [VENV] [--with-kiln]   (default: build/serving-venv)
# Idempotent: does nothing when VENV was made from the same requirements.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=build/serving-venv
with_kiln=0
for arg in "$@"; do
  case $arg in
    --with-kiln) with_kiln=1 ;;
    *) venv=$arg ;;
  esac
done
requirements=scripts/serving_venv_requirements.txt
stamp=$venv/kiln-requirements.txt

if ! { [ -x "$venv/bin/python" ] && cmp -s "$requirements" "$stamp"; }; then
  if [ ! -x /usr/bin/python3 ]; then
    echo "setup_serving_venv: /usr/bin/python3 is missing (scripts/setup.sh installs Debian's python3)" >&2
    exit 1
  fi
  echo "setup_serving_venv: making $venv with $(grep -v '^#' "$requirements" | tr '\n' ' ')"
  rm -rf "$venv"
  /usr/bin/python3 -m venv "$venv"
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-cache-dir -r "$requirements"
  server=$("$venv/bin/python" -c 'import pathlib, pytriton; print(pathlib.Path(pytriton.__file__).parent / "tritonserver")')
  version=$("$venv/bin/python" -c 'import sys; print(f"{sys.version_info[0]}.{sys.version_info[1]}")')
  stub=$server/python_backend_stubs/$version/triton_python_backend_stub
  if [ ! -x "$stub" ]; then
    echo "setup_serving_venv: nvidia-pytriton has no Python backend stub for Python $version ($stub)" >&2
    exit 1
  fi
  cp "$stub" "$server/backends/python/triton_python_backend_stub"
  cp "$requirements" "$stamp"
fi
if [ $with_kiln -eq 1 ]; then
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-build-isolation ./python \
    --config-settings=cmake.define.KILN_WITH_LLVM=OFF
fi
