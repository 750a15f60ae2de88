#!/bin/bash
# ab.sh ROUNDS MINTIME INPUT FILE... : each file in its own kiln-bench process per round, order rotating; prints CPU ms per call
B=${KILN_BENCH:-build/tools/kiln-bench/kiln-bench}
rounds=$1; mt=$2; inp=$3; shift 3; files=("$@"); n=${#files[@]}
for r in $(seq 0 $((rounds-1))); do
  echo "# round $r $(uptime | sed 's/.*load/load/')"
  for k in $(seq 0 $((n-1))); do
    f=${files[$(( (k + r) % n ))]}
    cpu=$(nice $B $f --input=@$inp --threads=1 --min-time=$mt 2>&1 | awk -v f=$f '$1==f {print "cpu_ms", $11, "p50_ms", $6}')
    echo "$(basename $f) $cpu"
  done
done
