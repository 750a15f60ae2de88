#!/usr/bin/env bash
# Builds both comparison extensions against BUILD's libkiln and times a call of the
# 1-element add through each (CPU time per call, medians of 5 rounds, alternating).
# Needs nanobind in the interpreter's environment: a venv of its own, so the project's venv
# stays as scripts/setup_venv.sh made it:
#   /usr/bin/python3 -m venv build/nanobind-venv && build/nanobind-venv/bin/pip install nanobind==3.1.0
#
# usage: [PYTHON=build/nanobind-venv/bin/python] benchmarks/python/binding_overhead/run.sh [BUILD]
#        (from the repository root; default BUILD build, PYTHON BUILD/venv/bin/python)
set -euo pipefail
build=$(cd "${1:-build}" && pwd)
python=${PYTHON:-$build/venv/bin/python}
python=$(cd "$(dirname "$python")" && pwd)/$(basename "$python")  # absolute, the venv's own link kept
here=$(cd "$(dirname "$0")" && pwd)
out=$build/binding_overhead
cmake -S "$here" -B "$out" -G Ninja -DCMAKE_BUILD_TYPE=Release -DPython_EXECUTABLE="$python" \
  -DKILN_BUILD="$build" > /dev/null
ninja -C "$out" > /dev/null
PYTHONPATH=$out "$python" - "$build/python/tests/add.vmfb" <<'PY'
import statistics, sys, time
import overhead_nanobind, overhead_pybind11

def us_per_call(call, a, b, seconds=0.5):
    for _ in range(2000):
        call(a, b)
    n, start = 0, time.process_time()
    while time.process_time() - start < seconds:
        for _ in range(1000):
            call(a, b)
        n += 1000
    return (time.process_time() - start) * 1e6 / n

rows = {}
for _ in range(5):
    for mod in (overhead_pybind11, overhead_nanobind):
        call = mod.Call(sys.argv[1])
        a, b = mod.make_tensor([1]), mod.make_tensor([1])
        rows.setdefault(mod.__name__, []).append(us_per_call(call, a, b))
for name, values in rows.items():
    print(f"{name:20s} {statistics.median(values):7.3f} us per call (median of {len(values)})")
PY
