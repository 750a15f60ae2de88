#!/usr/bin/env bash
# Installs the kiln Python package into a project venv as a user gets it:
# `pip install ./python`, with the compiler and tuner (LLVM 19 is there after
# scripts/setup.sh), never into a machine interpreter. `make python-package`
# runs it before the tests; kiln_python_installed_test then tests that package.
#
# usage: scripts/install_python_package.sh VENV BUILD_DIR [PIP_ARGS...]
#   VENV       a venv made by scripts/setup_venv.sh (it holds the pinned build
#              backend, so nothing is downloaded: --no-build-isolation)
#   BUILD_DIR  scikit-build-core's build-dir, kept between runs so that a
#              second install only rebuilds what changed. The first one
#              compiles through ccache (the project's CMakeLists.txt sets it as
#              the compiler launcher); make it a sibling of the project's build
#              folder (build-python beside build), not a folder inside it:
#              ccache rewrites paths relative to the build folder, so only at
#              the same depth are the compile commands, and the cache entries,
#              the project build's
#   PIP_ARGS   passed on, e.g. --config-settings=cmake.define.KILN_WITH_LLVM=OFF
# JOBS (default 2) bounds the build's parallelism, as the Makefile's JOBS does.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=$(realpath -m "$1")
build_dir=$(realpath -m "$2")
shift 2

if [ ! -x "$venv/bin/python" ]; then
  echo "install_python_package: no venv at $venv (scripts/setup_venv.sh makes it); kiln_python_installed_test will be skipped"
  exit 0
fi
if ! "$venv/bin/python" -c "import scikit_build_core" 2> /dev/null; then
  echo "install_python_package: $venv lacks scikit-build-core (scripts/venv_requirements.txt pins it)" >&2
  exit 1
fi

start=$(date +%s)
log=$build_dir/pip-install.log
mkdir -p "$build_dir"
# --force-reinstall: the version number does not change between commits.
if ! CMAKE_BUILD_PARALLEL_LEVEL=${JOBS:-2} "$venv/bin/python" -m pip install --no-build-isolation --no-deps \
     --force-reinstall --disable-pip-version-check -v ./python "--config-settings=build-dir=$build_dir" "$@" \
     > "$log" 2>&1; then
  tail -n 60 "$log" >&2
  echo "install_python_package: pip install ./python failed (whole log: $log)" >&2
  exit 1
fi
# From another folder than python/, so the import finds the installed package.
(cd / && "$venv/bin/python" -c "import kiln, kiln.compiler as c; print('install_python_package: kiln', kiln.__version__, 'in', kiln.__file__.rsplit('/', 2)[0], '(compiler: ' + ('yes' if c._compiler else 'no') + ')')")
echo "install_python_package: $(( $(date +%s) - start )) s (log: $log)"
