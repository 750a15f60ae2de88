#!/bin/bash
# ab.sh ROUNDS INPUT REGEX FILE...: per round, order rotating, each file's whole-model cpu ms per call
# (kiln-bench --threads=1) and min/mean us of kernels matching REGEX over 100 profiled calls
B=${KILN_BENCH:-/work/wt-wgpool/build/tools/kiln-bench/kiln-bench}
rounds=$1; inp=$2; re=$3; shift 3; files=("$@"); n=${#files[@]}
for r in $(seq 0 $((rounds-1))); do
  echo "# round $r $(uptime | sed 's/.*load/load/')"
  for k in $(seq 0 $((n-1))); do
    f=${files[$(( (k + r) % n ))]}
    nice $B $f --input=@$inp --threads=1 --min-time=1 --profile --profile_calls=100 2>&1 | awk -v f=$(basename $f) -v re="$re" '
      /graph|vm/ && $1 ~ /vmfb$/ {print f, "model_cpu_ms", $11, "p50_ms", $6}
      $0 ~ re && $9=="kernel" {print f, $10, "min_us", $5, "mean_us", $4}'
  done
done
