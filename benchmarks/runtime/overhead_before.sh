#!/bin/sh
# "Before" numbers for benchmarks/runtime/overhead_benchmark.cc: builds the same
# benchmark program against the runtime of an older commit (default 7a04f7e,
# before issue 5's call-path work: no function handles, no profiler, no reuse
# of shapes and results) and runs it, so that it can be compared with the
# current build in the same window. The cases the old runtime lacks (by
# handle, profiled) drop out at compile time.
#
# usage: benchmarks/runtime/overhead_before.sh [COMMIT] [benchmark flags...]
# (run from the repository root; the old tree and its build go to
# build-overhead-before/, which .gitignore covers; ccache makes rebuilds cheap)
set -eu
commit=${1:-7a04f7e}
[ $# -gt 0 ] && shift
root=$(pwd)
dir="$root/build-overhead-before"
rm -rf "$dir/src"
mkdir -p "$dir/src"
git archive "$commit" | tar -x -C "$dir/src"
mkdir -p "$dir/src/benchmarks/runtime"
cp "$root/benchmarks/runtime/overhead_benchmark.cc" "$dir/src/benchmarks/runtime/"
cat > "$dir/src/benchmarks/runtime/CMakeLists.txt" <<'CMAKE'
find_package(benchmark REQUIRED)
add_executable(kiln_overhead_benchmark overhead_benchmark.cc)
target_include_directories(kiln_overhead_benchmark PRIVATE ${PROJECT_SOURCE_DIR} ${PROJECT_BINARY_DIR})
target_compile_definitions(kiln_overhead_benchmark PRIVATE KILN_SOURCE_DIR="${PROJECT_SOURCE_DIR}")
target_link_libraries(kiln_overhead_benchmark PRIVATE kiln_c_api kiln_compiler kiln_vm kiln_graph_executor
                      kiln_kernels_all benchmark::benchmark)
CMAKE
grep -q 'benchmarks/runtime' "$dir/src/CMakeLists.txt" || echo 'add_subdirectory(benchmarks/runtime)' >> "$dir/src/CMakeLists.txt"
cmake -S "$dir/src" -B "$dir/src/build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DKILN_BUILD_TESTS=OFF > "$dir/configure.log"
ninja -C "$dir/src/build" -j"${JOBS:-2}" kiln_overhead_benchmark > "$dir/build.log"
# Run from the repository root (the benchmark reads examples/mlp.relax).
exec "$dir/src/build/benchmarks/runtime/kiln_overhead_benchmark" "$@"
