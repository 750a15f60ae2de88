"""Per-call overhead of Kiln (kiln_overhead_benchmark) against ONNX Runtime, in one run.

Not part of `make test`. Run it with the project's venv, which has ONNX Runtime, onnx and numpy
(`scripts/setup_venv.sh` makes build/venv): `build/venv/bin/python benchmarks/runtime/overhead_vs_onnxruntime.py ...`.

The two programs of benchmarks/runtime/overhead_benchmark.cc, on one thread:
  add: two 1-element float32 tensors added (ONNX: one Add node);
  mlp: the 784-128-10 MLP at batch 1 with its weights as constants
       (ONNX: Gemm, Relu, Gemm with the weights as initializers).
ONNX Runtime runs with intra_op_num_threads=1 and inputs and outputs bound
once (IOBinding), so each timed call is one run_with_iobinding from Python:
its time includes the Python binding's overhead, so the ORT figure is an
upper bound of what its C API takes. Kiln and ORT alternate (--rounds), and
the table gives medians and the ratio Kiln / ORT of the same round.

usage: benchmarks/runtime/overhead_vs_onnxruntime.py [--build build] [--rounds 3] [--min-time 0.5]
(run from the repository root)
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import time

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper


def add_model():
    a = helper.make_tensor_value_info("a", TensorProto.FLOAT, [1])
    b = helper.make_tensor_value_info("b", TensorProto.FLOAT, [1])
    c = helper.make_tensor_value_info("c", TensorProto.FLOAT, [1])
    graph = helper.make_graph([helper.make_node("Add", ["a", "b"], ["c"])], "add", [a, b], [c])
    return finish(graph), {"a": np.ones(1, np.float32), "b": np.ones(1, np.float32)}


def mlp_model():
    rng = np.random.default_rng(0)
    inits = [
        numpy_helper.from_array(rng.uniform(-0.5, 0.5, (128, 784)).astype(np.float32), "w0"),
        numpy_helper.from_array(rng.uniform(-0.5, 0.5, (128,)).astype(np.float32), "b0"),
        numpy_helper.from_array(rng.uniform(-0.5, 0.5, (10, 128)).astype(np.float32), "w1"),
        numpy_helper.from_array(rng.uniform(-0.5, 0.5, (10,)).astype(np.float32), "b1"),
    ]
    nodes = [
        helper.make_node("Gemm", ["x", "w0", "b0"], ["h"], transB=1),
        helper.make_node("Relu", ["h"], ["r"]),
        helper.make_node("Gemm", ["r", "w1", "b1"], ["y"], transB=1),
    ]
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 784])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 10])
    graph = helper.make_graph(nodes, "mlp", [x], [y], initializer=inits)
    return finish(graph), {"x": rng.uniform(-0.5, 0.5, (1, 784)).astype(np.float32)}


def finish(graph):
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model.SerializeToString()


def ort_us_per_call(model, feeds, min_time):
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    opts.inter_op_num_threads = 1
    opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    sess = ort.InferenceSession(model, opts, providers=["CPUExecutionProvider"])
    binding = sess.io_binding()
    for name, value in feeds.items():
        binding.bind_ortvalue_input(name, ort.OrtValue.ortvalue_from_numpy(value))
    out = sess.get_outputs()[0]
    shape = [d if isinstance(d, int) else 1 for d in out.shape]
    binding.bind_ortvalue_output(out.name, ort.OrtValue.ortvalue_from_shape_and_type(shape, np.float32))
    run = sess.run_with_iobinding
    for _ in range(1000):
        run(binding)
    n, batch = 0, 1000
    start = time.process_time()
    while time.process_time() - start < min_time:
        for _ in range(batch):
            run(binding)
        n += batch
    return (time.process_time() - start) * 1e6 / n  # CPU time, as the Kiln benchmark reports


def kiln_medians(binary, min_time):
    out = subprocess.run([binary, f"--benchmark_min_time={min_time}", "--benchmark_repetitions=3"],
                         check=True, capture_output=True, text=True).stdout
    medians = {}
    table = out.split("median time per call")[1].split("ratios")[0]
    for line in table.splitlines():
        m = re.match(r"^(\S+)\s+([0-9.]+)\s+([0-9.]+)$", line.strip())
        if m:
            medians[m.group(1)] = float(m.group(2))
    return medians


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--min-time", type=float, default=0.5)
    args = ap.parse_args()
    binary = os.path.join(args.build, "benchmarks/runtime/kiln_overhead_benchmark")
    if not os.path.exists(binary):
        sys.exit(f"{binary} not found: build it with -DKILN_BUILD_BENCHMARKS=ON")
    models = {"add": add_model(), "mlp": mlp_model()}
    kiln_cases = {
        "add": ["add/capi/vm/by_handle", "add/capi/graph/by_handle", "add/cpp/vm/by_handle", "add/cpp/graph"],
        "mlp": ["mlp/capi/vm/by_handle", "mlp/capi/graph/by_handle", "mlp/cpp/vm/by_handle", "mlp/cpp/graph"],
    }
    rows = {}  # case -> [(kiln, ort)] per round
    for r in range(args.rounds):
        kiln = kiln_medians(binary, args.min_time)
        for prog, (model, feeds) in models.items():
            t_ort = ort_us_per_call(model, feeds, args.min_time)
            rows.setdefault(f"{prog}/onnxruntime", []).append((t_ort, t_ort))
            for case in kiln_cases[prog]:
                if case in kiln:
                    rows.setdefault(case, []).append((kiln[case], t_ort))
        print(f"round {r + 1}/{args.rounds} done", file=sys.stderr)
    try:
        load = os.getloadavg()[0]
    except OSError:
        load = float("nan")
    print(f"per-call CPU time, one thread, medians of {args.rounds} rounds (load average {load:.2f})")
    print(f"{'case':34s} {'us':>9s} {'/ ORT':>8s}")
    for case, vals in rows.items():
        t = statistics.median(v[0] for v in vals)
        ratio = statistics.median(v[0] / v[1] for v in vals)
        print(f"{case:34s} {t:9.3f} {ratio:8.3f}")


if __name__ == "__main__":
    main()
