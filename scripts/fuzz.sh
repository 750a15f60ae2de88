#!/usr/bin/env bash
# `make fuzz`: builds the libFuzzer harnesses (tests/fuzz/) with clang-19 and
# -fsanitize=fuzzer,address,undefined in build-fuzz, makes the seed corpus, and
# runs each harness for FUZZ_SECONDS (default 60).
#
# Seeds: examples/*.relax and tests/data/*.relax for the parser; for the
# loader, the examples compiled to .vmfb by the regular build's kiln-compile
# and the VM tests' programs (written by kiln_fuzz_replay_test), when that
# build ($BUILD, default build/) exists. Checked-in regressions are seeds too.
#
# A crash leaves its input in $BUILD_FUZZ/crashes/<harness>/; copy it to
# tests/fuzz/regressions/<harness>/ with the fix, and kiln_fuzz_replay_test
# replays it under ctest from then on.
set -euo pipefail
cd "$(dirname "$0")/.."

BUILD_FUZZ=${BUILD_FUZZ:-build-fuzz}
BUILD=${BUILD:-build}
JOBS=${JOBS:-2}
FUZZ_SECONDS=${FUZZ_SECONDS:-60}

if ! command -v clang++-19 > /dev/null; then
  echo "fuzz: clang++-19 is missing (scripts/setup.sh installs it)" >&2
  exit 1
fi

flags="-fsanitize=fuzzer-no-link"
cmake -S . -B "$BUILD_FUZZ" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_C_COMPILER=clang-19 -DCMAKE_CXX_COMPILER=clang++-19 \
  -DCMAKE_C_FLAGS="$flags" -DCMAKE_CXX_FLAGS="$flags" \
  -DKILN_SANITIZE=address,undefined -DKILN_BUILD_FUZZERS=ON -DKILN_BUILD_BENCHMARKS=OFF \
  > "$BUILD_FUZZ.configure.log" 2>&1 || { cat "$BUILD_FUZZ.configure.log"; exit 1; }
cmake --build "$BUILD_FUZZ" -j "$JOBS" --target kiln_vmfb_loader_fuzzer kiln_relax_parser_fuzzer

corpus="$BUILD_FUZZ/corpus"
mkdir -p "$corpus/vmfb_loader" "$corpus/relax_parser"
cp examples/*.relax tests/data/*.relax "$corpus/relax_parser/"
cp tests/fuzz/regressions/relax_parser/* "$corpus/relax_parser/" 2> /dev/null || true
cp tests/fuzz/regressions/vmfb_loader/* "$corpus/vmfb_loader/" 2> /dev/null || true
if [ -x "$BUILD/tools/kiln-compile/kiln-compile" ]; then
  for f in examples/*.relax; do
    "$BUILD/tools/kiln-compile/kiln-compile" "$f" -o "$corpus/vmfb_loader/$(basename "$f" .relax).vmfb" \
      || echo "fuzz: could not compile $f for the seed corpus" >&2
  done
fi
if [ -x "$BUILD/tests/fuzz/kiln_fuzz_replay_test" ]; then
  KILN_FUZZ_WRITE_SEEDS="$PWD/$corpus/vmfb_loader" "$BUILD/tests/fuzz/kiln_fuzz_replay_test" \
    --gtest_filter=FuzzReplayTest.WriteLoaderSeeds > /dev/null
fi

# Huge allocations asked for by damaged inputs fail with a Status, as in
# production, instead of aborting the fuzzer.
export ASAN_OPTIONS=${ASAN_OPTIONS:-allocator_may_return_null=1:detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1}
status=0
for harness in vmfb_loader relax_parser; do
  mkdir -p "$BUILD_FUZZ/crashes/$harness"
  echo "fuzz: $harness for ${FUZZ_SECONDS}s ($(ls "$corpus/$harness" | wc -l) seeds)"
  if ! "$BUILD_FUZZ/tests/fuzz/kiln_${harness}_fuzzer" "$corpus/$harness" \
      -max_total_time="$FUZZ_SECONDS" -timeout=10 -rss_limit_mb=4096 -max_len=65536 \
      -artifact_prefix="$BUILD_FUZZ/crashes/$harness/" -print_final_stats=1 > "$BUILD_FUZZ/$harness.log" 2>&1; then
    echo "fuzz: $harness FAILED; input in $BUILD_FUZZ/crashes/$harness/, log $BUILD_FUZZ/$harness.log" >&2
    tail -40 "$BUILD_FUZZ/$harness.log" >&2
    status=1
  else
    grep -E "stat::number_of_executed_units|cov:" "$BUILD_FUZZ/$harness.log" | tail -2
  fi
done
exit $status
