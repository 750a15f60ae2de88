#!/bin/bash
# prof_ab.sh ROUNDS INPUT REGEX FILE...: per round, each file's kiln-bench --profile (100 calls), order rotating; prints min us of kernels matching REGEX
B=${KILN_BENCH:-build/tools/kiln-bench/kiln-bench}
rounds=$1; inp=$2; re=$3; shift 3; files=("$@"); n=${#files[@]}
for r in $(seq 0 $((rounds-1))); do
  echo "# round $r $(uptime | sed 's/.*load/load/')"
  for k in $(seq 0 $((n-1))); do
    f=${files[$(( (k + r) % n ))]}
    nice $B $f --input=@$inp --threads=1 --profile --profile_calls=100 --min-time=0.1 2>&1 | awk -v f=$(basename $f) -v re="$re" '$0 ~ re && $9=="kernel" {print f, $10, "min_us", $5}'
  done
done
