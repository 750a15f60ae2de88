#!/usr/bin/env bash
# Every benchmark program of issues 4 and 5, one after another, with the
# load average logged before each; outputs go to benchmarks/results/<UTC time>/.
# Needs a build with -DKILN_BUILD_BENCHMARKS=ON in build/; ONNX Runtime comes from the
# project's venv (scripts/setup_venv.sh makes build/venv), never from PATH's python3.
# Run it when the machine is otherwise idle.
set -u
cd "$(dirname "$0")/.."
bash scripts/setup_venv.sh build/venv || exit 1
PY=build/venv/bin/python
OUT=benchmarks/results/$(date -u +%Y-%m-%dT%H%M)
mkdir -p $OUT
log() { echo "== $(date -u +%H:%M:%S) load $(cut -d' ' -f1-3 /proc/loadavg) $*" | tee -a $OUT/summary.txt; }
log start $(git rev-parse --short HEAD)
log matmul;    build/benchmarks/kernels/kiln_matmul_kernels_benchmark --benchmark_min_time=0.3 --pairs=5 > $OUT/matmul.txt 2>&1
log conv;      build/benchmarks/kernels/kiln_conv_kernels_benchmark --benchmark_min_time=0.2 --benchmark_repetitions=5 > $OUT/conv.txt 2>&1
log streaming; build/benchmarks/kernels/kiln_streaming_kernels_benchmark --benchmark_min_time=0.2 --pairs=7 > $OUT/streaming.txt 2>&1
log overhead;  build/benchmarks/runtime/kiln_overhead_benchmark --benchmark_min_time=0.5 --benchmark_enable_random_interleaving=true > $OUT/overhead.txt 2>&1
log load;      build/benchmarks/runtime/kiln_load_benchmark > $OUT/load.txt 2>&1
log models1;   $PY benchmarks/models_vs_onnxruntime.py --build build --threads 1 --rounds 5 --min-time 0.5 > $OUT/models1.txt 2>&1
log models2;   $PY benchmarks/models_vs_onnxruntime.py --build build --threads 2 --ort-spin off --no-args-variant --rounds 5 --min-time 0.5 > $OUT/models2.txt 2>&1
log overhead_ort; $PY benchmarks/runtime/overhead_vs_onnxruntime.py --build build --rounds 3 > $OUT/overhead_ort.txt 2>&1
log soak;      build/benchmarks/runtime/kiln_soak_benchmark > $OUT/soak.txt 2>&1
log done
