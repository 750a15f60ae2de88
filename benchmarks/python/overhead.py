"""Per-call overhead of the kiln Python package against the C API and ONNX Runtime, in one run.

Not part of `make test`. Run from the repository root with the project's venv, the package
built with the compiler in the build tree (target kiln_python) and the C side of this
benchmark (target kiln_python_capi_call, -DKILN_BUILD_BENCHMARKS=ON):

    PYTHONPATH=build/python build/venv/bin/python benchmarks/python/overhead.py [--build build]

Two models, each as an ONNX file and as a .vmfb compiled by kiln.compile, with the same
weights (the ONNX file's initializers, bound into the .vmfb with --params):
  add: two 1-element float32 tensors added (python/tests/add.relax; ONNX: one Add node);
  mlp: examples/mlp.relax at batch 1 with its weights as constants (ONNX: Gemm, Relu, Gemm),
       784-128-10.
Kiln's and ONNX Runtime's outputs are checked to agree before anything is timed.

Cases, all on one thread, CPU time per call of the process:
  capi/{vm,graph}: kiln_python_capi_call (capi_call.c) on the same .vmfb through libkiln.so,
      the library the package calls: kiln_context_invoke_function + kiln_outputs_release;
  python/{vm,graph}/kiln.Tensor: a function bound to a context
      (m.context(threads=1, executor=...)["main"]) called with kiln.Tensor inputs (aligned:
      passed as they are);
  python/{vm,graph}/numpy: the same with numpy arrays (wrapped through the buffer protocol,
      copied into aligned storage when not 64-byte aligned, as numpy's usually are);
  python/module/{kiln.Tensor,numpy}: m["main"] (a context borrowed from the module per call);
  onnxruntime/run_with_iobinding: ONNX Runtime's Python API on the ONNX file with inputs and
      outputs bound once (benchmarks/runtime/overhead_vs_onnxruntime.py's session settings).
Each Python call includes making the output's kiln.Tensor. Rounds run every case in turn;
the table gives each case's median over the rounds and, for the Python cases, the median over
the rounds of (Python - C API) measured in the same round, with the load average before and
after the run.
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..", "..")
sys.path.insert(0, os.path.join(HERE, "..", "runtime"))
import overhead_vs_onnxruntime as ortbench  # noqa: E402  (add_model, mlp_model, ort_us_per_call)

import kiln  # noqa: E402
import onnx  # noqa: E402
import onnxruntime as ort  # noqa: E402
from onnx import numpy_helper  # noqa: E402


def make_models(work):
    """{name: (vmfb path, onnx path, numpy inputs)} for add and mlp."""
    models = {}
    for name, (model_bytes, feeds) in {"add": ortbench.add_model(), "mlp": ortbench.mlp_model()}.items():
        onnx_path = os.path.join(work, f"{name}.onnx")
        with open(onnx_path, "wb") as f:
            f.write(model_bytes)
        vmfb_path = os.path.join(work, f"{name}.vmfb")
        if name == "add":
            exe = kiln.compile(os.path.join(ROOT, "python", "tests", "add.relax"))
        else:
            # examples/mlp.relax at batch 1, its weights the ONNX file's initializers.
            with open(os.path.join(ROOT, "examples", "mlp.relax")) as f:
                lines = [line for line in f if line.strip() != "n = T.int64()"]
            source = "".join(lines).replace('"n"', "1")
            weights = {init.name: numpy_helper.to_array(init) for init in onnx.load_from_string(model_bytes).graph.initializer}
            npz = os.path.join(work, "mlp_weights.npz")
            np.savez(npz, **weights)
            exe = kiln.compile(source, options={"params": npz})
        exe.save(vmfb_path)
        models[name] = (vmfb_path, onnx_path, [feeds[k] for k in sorted(feeds)])
    return models


def check_same_outputs(models):
    for name, (vmfb, onnx_path, inputs) in models.items():
        ours = np.asarray(kiln.load(vmfb)["main"](*inputs))
        session = ort.InferenceSession(onnx_path, providers=["CPUExecutionProvider"])
        names = sorted(i.name for i in session.get_inputs())
        theirs = session.run(None, dict(zip(names, inputs)))[0]
        np.testing.assert_allclose(ours, theirs, rtol=1e-4, atol=1e-4, err_msg=f"{name}: Kiln and ORT disagree")


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


def capi_us_per_call(binary, vmfb, executor, min_time):
    out = subprocess.run([binary, vmfb, executor, str(min_time)], check=True, capture_output=True, text=True).stdout
    return float(out.split()[1])


def python_cases(models):
    """(case, function, args) for every Python case."""
    cases = []
    for prog, (vmfb, _, numpy_inputs) in models.items():
        m = kiln.load(vmfb)
        tensors = []
        for array in numpy_inputs:
            t = kiln.empty(array.shape, "float32")
            np.asarray(t)[...] = array
            tensors.append(t)
        for executor in ("vm", "graph"):
            f = m.context(threads=1, executor=executor)["main"]
            cases.append((f"{prog}/python/{executor}/kiln.Tensor", f, tensors))
            cases.append((f"{prog}/python/{executor}/numpy", f, numpy_inputs))
        cases.append((f"{prog}/python/module/kiln.Tensor", m["main"], tensors))
        cases.append((f"{prog}/python/module/numpy", m["main"], numpy_inputs))
    return cases


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--min-time", type=float, default=0.5)
    args = ap.parse_args()
    binary = os.path.join(args.build, "benchmarks/python/kiln_python_capi_call")
    if not os.path.exists(binary):
        sys.exit(f"{binary} not found: build the target kiln_python_capi_call (-DKILN_BUILD_BENCHMARKS=ON)")
    load_before = os.getloadavg()
    rows = {}
    with tempfile.TemporaryDirectory() as work:
        models = make_models(work)
        check_same_outputs(models)
        cases = python_cases(models)
        for r in range(args.rounds):
            for prog, (vmfb, onnx_path, inputs) in models.items():
                for executor in ("vm", "graph"):
                    rows.setdefault(f"{prog}/capi/{executor}", []).append(
                        capi_us_per_call(binary, vmfb, executor, args.min_time))
            for name, fn, fn_args in cases:
                rows.setdefault(name, []).append(us_per_call(fn, fn_args, args.min_time))
            for prog, (vmfb, onnx_path, inputs) in models.items():
                with open(onnx_path, "rb") as f:
                    model_bytes = f.read()
                session = ort.InferenceSession(model_bytes, providers=["CPUExecutionProvider"])
                feeds = dict(zip(sorted(i.name for i in session.get_inputs()), inputs))
                rows.setdefault(f"{prog}/onnxruntime/run_with_iobinding", []).append(
                    ortbench.ort_us_per_call(model_bytes, feeds, args.min_time))
            print(f"round {r + 1}/{args.rounds} done", file=sys.stderr)
    load_after = os.getloadavg()
    print(f"per-call CPU time, one thread, medians of {args.rounds} rounds "
          f"(load average {load_before[0]:.2f} before, {load_after[0]:.2f} after; {os.cpu_count()} CPUs)")
    print(f"{'case':40s} {'us':>9s} {'- C API':>9s}")
    for case in sorted(rows, key=lambda c: (c.split("/")[0], c)):
        prog = case.split("/")[0]
        # m["main"] runs on an "auto" context: the static graph, which both programs have.
        executor = "vm" if "/vm/" in case else "graph"
        base = rows.get(f"{prog}/capi/{executor}")
        delta = f"{'':9s}"
        if "/python/" in case and base is not None:
            delta = f"{statistics.median(t - b for t, b in zip(rows[case], base)):9.3f}"
        print(f"{case:40s} {statistics.median(rows[case]):9.3f} {delta}")


if __name__ == "__main__":
    main()
