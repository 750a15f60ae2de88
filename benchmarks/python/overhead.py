"""Per-call overhead of the kiln Python package against the C API and ONNX Runtime, in one run.

Not part of `make test`. Run from the repository root with the project's venv and the package
built in the build tree (target kiln_python) and the C API benchmark (kiln_overhead_benchmark,
-DKILN_BUILD_BENCHMARKS=ON):

    PYTHONPATH=build/python build/venv/bin/python benchmarks/python/overhead.py [--build build]

The programs are those of benchmarks/runtime/overhead_benchmark.cc, on one thread:
  add: two 1-element float32 tensors added;
  mlp: examples/mlp.relax at batch 1 with its weights compiled in as constants (--params).
Python cases call a function bound to a context (m.context(threads=1, executor=...)["main"])
with inputs that are kiln.Tensor (aligned: passed as they are) or numpy arrays (wrapped
through the buffer protocol, and copied when not 64-byte aligned, as numpy's usually are);
"module" calls m["main"] (a context borrowed per call). Each timed call includes turning the
output into a kiln.Tensor. The C API figures come from kiln_overhead_benchmark
(kiln_context_invoke_function); ONNX Runtime's from run_with_iobinding with bound inputs and
outputs (benchmarks/runtime/overhead_vs_onnxruntime.py). All are CPU time per call; rounds
alternate the three, and the table gives medians over the rounds.
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "runtime"))
import overhead_vs_onnxruntime as ortbench  # noqa: E402  (add_model, mlp_model, ort_us_per_call, kiln_medians)

import kiln  # noqa: E402

ADD_SOURCE = """@I.ir_module
class Module:
    @R.function
    def main(a: R.Tensor((1,), dtype="float32"), b: R.Tensor((1,), dtype="float32")) -> R.Tensor((1,), dtype="float32"):
        with R.dataflow():
            c = R.add(a, b)
            R.output(c)
        return c
"""


def compile_models(build, work):
    """add.vmfb and mlp.vmfb (batch 1, weights as constants), as overhead_benchmark.cc compiles them."""
    compile_tool = os.path.join(build, "tools/kiln-compile/kiln-compile")
    with open(os.path.join(work, "add.relax"), "w") as f:
        f.write(ADD_SOURCE)
    with open("examples/mlp.relax") as f:
        lines = [line for line in f if line.strip() != "n = T.int64()"]
    mlp = "".join(lines).replace('"n"', "1")
    with open(os.path.join(work, "mlp.relax"), "w") as f:
        f.write(mlp)
    rng = np.random.default_rng(0)
    np.savez(os.path.join(work, "weights.npz"),
             w0=rng.uniform(-0.5, 0.5, (128, 784)).astype(np.float32),
             b0=rng.uniform(-0.5, 0.5, (128,)).astype(np.float32),
             w1=rng.uniform(-0.5, 0.5, (10, 128)).astype(np.float32),
             b1=rng.uniform(-0.5, 0.5, (10,)).astype(np.float32))
    subprocess.run([compile_tool, os.path.join(work, "add.relax"), "-o", os.path.join(work, "add.vmfb")],
                   check=True, capture_output=True)
    subprocess.run([compile_tool, os.path.join(work, "mlp.relax"), "--params", os.path.join(work, "weights.npz"),
                    "-o", os.path.join(work, "mlp.vmfb")], check=True, capture_output=True)
    return {"add": os.path.join(work, "add.vmfb"), "mlp": os.path.join(work, "mlp.vmfb")}


def us_per_call(fn, args, min_time):
    for _ in range(1000):
        fn(*args)
    n, batch = 0, 1000
    start = time.process_time()
    while time.process_time() - start < min_time:
        for _ in range(batch):
            fn(*args)
        n += batch
    return (time.process_time() - start) * 1e6 / n


def python_cases(paths):
    """(case name, function, args) for every Python case."""
    rng = np.random.default_rng(1)
    numpy_inputs = {
        "add": [np.ones(1, np.float32), np.ones(1, np.float32)],
        "mlp": [rng.uniform(-0.5, 0.5, (1, 784)).astype(np.float32)],
    }
    cases = []
    for prog, path in paths.items():
        m = kiln.load(path)
        tensors = []
        for array in numpy_inputs[prog]:
            t = kiln.empty(array.shape, "float32")
            np.asarray(t)[...] = array
            tensors.append(t)
        for executor in ("vm", "graph"):
            f = m.context(threads=1, executor=executor)["main"]
            cases.append((f"{prog}/python/{executor}/kiln.Tensor", f, tensors))
            cases.append((f"{prog}/python/{executor}/numpy", f, numpy_inputs[prog]))
        cases.append((f"{prog}/python/module/kiln.Tensor", m["main"], tensors))
    return cases


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--min-time", type=float, default=0.5)
    args = ap.parse_args()
    binary = os.path.join(args.build, "benchmarks/runtime/kiln_overhead_benchmark")
    if not os.path.exists(binary):
        sys.exit(f"{binary} not found: build it with -DKILN_BUILD_BENCHMARKS=ON")
    capi_cases = ["add/capi/vm/by_handle", "add/capi/graph/by_handle",
                  "mlp/capi/vm/by_handle", "mlp/capi/graph/by_handle"]
    ort_models = {"add": ortbench.add_model(), "mlp": ortbench.mlp_model()}
    rows = {}
    with tempfile.TemporaryDirectory() as work:
        cases = python_cases(compile_models(args.build, work))
        for r in range(args.rounds):
            capi = ortbench.kiln_medians(binary, args.min_time)
            for case in capi_cases:
                if case in capi:
                    rows.setdefault(case, []).append(capi[case])
            for name, fn, fn_args in cases:
                rows.setdefault(name, []).append(us_per_call(fn, fn_args, args.min_time))
            for prog, (model, feeds) in ort_models.items():
                rows.setdefault(f"{prog}/onnxruntime/run_with_iobinding", []).append(
                    ortbench.ort_us_per_call(model, feeds, args.min_time))
            print(f"round {r + 1}/{args.rounds} done", file=sys.stderr)
    try:
        load = os.getloadavg()[0]
    except OSError:
        load = float("nan")
    medians = {case: statistics.median(v) for case, v in rows.items()}
    print(f"per-call CPU time, one thread, medians of {args.rounds} rounds (load average {load:.2f})")
    print(f"{'case':40s} {'us':>9s} {'- C API':>9s}")
    for case in sorted(medians, key=lambda c: (c.split("/")[0], c)):
        prog = case.split("/")[0]
        executor = "graph" if "/graph" in case else "vm"
        base = medians.get(f"{prog}/capi/{executor}/by_handle")
        delta = f"{medians[case] - base:9.3f}" if base is not None else f"{'':9s}"
        print(f"{case:40s} {medians[case]:9.3f} {delta}")


if __name__ == "__main__":
    main()
