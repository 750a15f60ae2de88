#!/bin/sh
# kiln_tools_cli_test: the four tool binaries as a user runs them. Exit
# statuses (0 success, 1 failure, 2 usage error) of every tool, then one pass
# over examples/mlp.relax: compile -> dump (and --dot) -> run, checked against
# expected values (and a mismatch that must fail) -> bench with --dim cases.
#   tools_cli_test.sh KILN-COMPILE KILN-RUN KILN-BENCH KILN-DUMP MLP.relax WORKDIR
set -u
compile=$1 run=$2 bench=$3 dump=$4 mlp=$5 work=$6
rm -rf "$work"
mkdir -p "$work"
failures=0

fail() {
  echo "FAIL: $*"
  failures=$((failures + 1))
}

# expect STATUS COMMAND...: runs it with stdout/stderr in $work/out, $work/err.
expect() {
  want=$1
  shift
  "$@" >"$work/out" 2>"$work/err"
  got=$?
  if [ "$got" -ne "$want" ]; then
    fail "exit $got, expected $want: $*"
    sed 's/^/  stderr: /' "$work/err" | head -5
  fi
}

# contains FILE TEXT
contains() {
  grep -qF -- "$2" "$1" || fail "'$2' not in $1: $(head -c 300 "$1")"
}

for tool in "$compile" "$run" "$bench" "$dump"; do
  expect 0 "$tool" --help
  contains "$work/out" "usage: "
  expect 2 "$tool" --no-such-flag
  contains "$work/err" "'--no-such-flag'"
done
expect 2 "$run"
expect 2 "$bench"
expect 2 "$dump"
expect 2 "$compile"
expect 1 "$run" "$work/missing.vmfb"
expect 1 "$bench" "$work/missing.vmfb"
expect 1 "$dump" "$work/missing.vmfb"
expect 1 "$compile" "$work/missing.relax" -o "$work/x.vmfb"

expect 0 "$compile" "$mlp" -o "$work/mlp.vmfb" -O1 --progress
contains "$work/out" "kiln-compile: wrote $work/mlp.vmfb: "
contains "$work/err" "kiln-compile: compiled $mlp in "

expect 0 "$dump" "$work/mlp.vmfb"
contains "$work/out" "segments (file "
expect 0 "$dump" "$mlp" --dot -o "$work/mlp.dot"
contains "$work/mlp.dot" "digraph \"main\""

# With w1 = 0 the MLP returns b1 exactly.
head -c 5120 /dev/zero >"$work/w1.bin"
inputs="--input=2x784xf32=random:1 --input=128x784xf32=random:2 --input=128xf32=random:3
        --input=10x128xf32=@$work/w1.bin --input=10xf32=1,2,3,4,5,6,7,8,9,10"
# shellcheck disable=SC2086
expect 0 "$run" "$work/mlp.vmfb" $inputs --output "@$work/y.npy" \
  --expected_output=2x10xf32=1,2,3,4,5,6,7,8,9,10,1,2,3,4,5,6,7,8,9,10 --print-statistics
contains "$work/out" "output 0: matches: all 20 elements match"
contains "$work/out" "peak RSS:"
# shellcheck disable=SC2086
expect 0 "$run" "$work/mlp.vmfb" $inputs --expected_output "@$work/y.npy" --atol 0 --rtol 0
# shellcheck disable=SC2086
expect 1 "$run" "$work/mlp.vmfb" $inputs --expected_output=2x10xf32=1,2,3,4,5,6,7,8,9,10,1,2,3,4,5,6,7,8,9,11
contains "$work/err" "the worst at [1, 9]: got 10, expected 11"

expect 0 "$bench" "$work/mlp.vmfb" --dim n=1,4 --runs 2 --min-time 0 --warmup 0 --threads 1 --format csv
lines=$(wc -l <"$work/out")
[ "$lines" -eq 3 ] || fail "kiln-bench --format csv printed $lines lines, expected 3"
contains "$work/out" ",n=4,"

# --profile: each generated kernel's GFLOP/s, GB/s and roof% against a peak
# file given here (not the user's cache, and nothing measured).
cat >"$work/peak.json" <<'EOF_PEAK'
{"cpu": "test", "isa": "avx2+fma", "gflops_per_core": 50.0, "gbs_one_thread": 10.0, "gbs_all_threads": 12.0, "bandwidth_curve": "262144:40.0", "hardware_threads": 2}
EOF_PEAK
KILN_PEAK_CACHE="$work/peak.json" expect 0 "$bench" "$work/mlp.vmfb" --dim n=4 --runs 1 --min-time 0 --warmup 0 \
  --threads 1 --profile --profile_calls 2
contains "$work/out" "GFLOP/s     GB/s  roof%"
contains "$work/out" "roofline at 1 thread: 50.0 GFLOP/s"

if [ "$failures" -ne 0 ]; then
  echo "$failures check(s) failed"
  exit 1
fi
echo "all tool checks passed"
