#!/usr/bin/env bash
# Configures the project with the compiler on but LLVM hidden from find_package, as on a
# machine without llvm-19-dev: the configure must fail at once with the message of
# cmake/KilnCheckCompilerDeps.cmake (what to install, how to build the runtime alone).
#
# usage: llvm_missing_test.sh CMAKE SOURCE_DIR WORK_DIR
set -uo pipefail
cmake=$1
source_dir=$2
work=$3
rm -rf "$work"
output=$("$cmake" -S "$source_dir" -B "$work" -DCMAKE_BUILD_TYPE=Release -DKILN_WITH_LLVM=ON \
         -DCMAKE_DISABLE_FIND_PACKAGE_LLVM=ON -DKILN_BUILD_TESTS=OFF -DKILN_BUILD_BENCHMARKS=OFF 2>&1)
status=$?
rm -rf "$work"
echo "$output"
if [ $status -eq 0 ]; then
  echo "FAIL: the configure succeeded without LLVM" >&2
  exit 1
fi
for expected in "needs LLVM 19 (llvm-19-dev)" "scripts/setup.sh" "-DKILN_WITH_LLVM=OFF" \
                "pip install ./python --config-settings=cmake.define.KILN_WITH_LLVM=OFF"; do
  # The message is wrapped by CMake: compare with whitespace runs folded.
  if ! tr -s ' \n' '  ' <<< "$output" | grep -qF -- "$expected"; then
    echo "FAIL: the configure's error does not say '$expected'" >&2
    exit 1
  fi
done
# It stops before any target: the compiler's folders were never reached.
if grep -q "compiler/codegen" <<< "$output"; then
  echo "FAIL: the configure went on into compiler/codegen" >&2
  exit 1
fi
echo "PASS"
