"""Times examples/mlp.relax compiled by Kiln against ONNX Runtime, in one run.

Not part of `make test`. Run it with the project's venv, which has ONNX Runtime, onnx and numpy
(`scripts/setup_venv.sh` makes build/venv): `build/venv/bin/python benchmarks/mlp_vs_onnxruntime.py ...`.

For each batch size and thread count it measures, as medians of repeated
measurements on this machine:
  - kiln (generated kernels):  kiln-bench on the .vmfb from kiln-compile
  - kiln (matmul on oneDNN):   the same with --matmul=dnnl
  - onnxruntime:               the same MLP as an ONNX graph (Gemm, Relu, Gemm)
with the weights passed as inputs in all three (the program Kiln compiles takes
them as arguments). It also checks that Kiln and ONNX Runtime agree on the
outputs, using inputs from kiln-run's documented random:SEED generator.

usage: benchmarks/mlp_vs_onnxruntime.py [--build build] [--batches 1,64] [--threads 1,2]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper

SHAPES = {"x": None, "w0": (128, 784), "b0": (128,), "w1": (10, 128), "b1": (10,)}
SEEDS = {"x": 1, "w0": 2, "b0": 3, "w1": 4, "b1": 5}


def splitmix_f32(shape, seed):
    """kiln-run's random:SEED for float32 (tools/common/inline_tensor.h)."""
    n = int(np.prod(shape))
    mask = (1 << 64) - 1
    state = seed & mask
    out = np.empty(n, dtype=np.float32)
    for i in range(n):
        state = (state + 0x9E3779B97F4A7C15) & mask
        z = state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & mask
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & mask
        z ^= z >> 31
        out[i] = np.float32((z >> 40) * 2.0**-24 * 2.0 - 1.0)
    return out.reshape(shape)


def onnx_mlp():
    inputs = [
        helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 784]),
        helper.make_tensor_value_info("w0", TensorProto.FLOAT, [128, 784]),
        helper.make_tensor_value_info("b0", TensorProto.FLOAT, [128]),
        helper.make_tensor_value_info("w1", TensorProto.FLOAT, [10, 128]),
        helper.make_tensor_value_info("b1", TensorProto.FLOAT, [10]),
    ]
    nodes = [
        helper.make_node("Gemm", ["x", "w0", "b0"], ["h"], transB=1),
        helper.make_node("Relu", ["h"], ["r"]),
        helper.make_node("Gemm", ["r", "w1", "b1"], ["y"], transB=1),
    ]
    out = [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n", 10])]
    model = helper.make_model(helper.make_graph(nodes, "mlp", inputs, out),
                              opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8  # what every recent ONNX Runtime reads
    onnx.checker.check_model(model)
    return model.SerializeToString()


def ort_median_us(model, feeds, threads, repetitions=5, min_time=0.5):
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads
    opts.inter_op_num_threads = 1
    sess = ort.InferenceSession(model, opts, providers=["CPUExecutionProvider"])
    sess.run(None, feeds)
    reps = []
    for _ in range(repetitions):
        n, start = 0, time.perf_counter()
        while True:
            sess.run(None, feeds)
            n += 1
            elapsed = time.perf_counter() - start
            if elapsed >= min_time:
                break
        reps.append(elapsed / n * 1e6)
    return float(np.median(reps)), sess.run(None, feeds)[0]


def kiln_median_us(build, vmfb, batch, threads):
    args = [os.path.join(build, "tools/kiln-bench/kiln-bench"), vmfb, "--threads=%d" % threads,
            "--format=json", "--min-time=0.5", "--runs=20"]
    for name in ["x", "w0", "b0", "w1", "b1"]:
        shape = (batch, 784) if name == "x" else SHAPES[name]
        args.append("--input=%sxf32=random:%d" % ("x".join(map(str, shape)), SEEDS[name]))
    res = subprocess.run(args, check=True, capture_output=True, text=True)
    return json.loads(res.stdout)["results"][0]["latency_ms"]["p50"] * 1e3


def kiln_output(build, vmfb, batch, tmp):
    path = os.path.join(tmp, "y.npy")
    args = [os.path.join(build, "tools/kiln-run/kiln-run"), vmfb, "--output=@" + path]
    for name in ["x", "w0", "b0", "w1", "b1"]:
        shape = (batch, 784) if name == "x" else SHAPES[name]
        args.append("--input=%sxf32=random:%d" % ("x".join(map(str, shape)), SEEDS[name]))
    subprocess.run(args, check=True, capture_output=True)
    return np.load(path)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--batches", default="1,64")
    ap.add_argument("--threads", default="1,2")
    a = ap.parse_args()
    tmp = tempfile.mkdtemp()
    compile_bin = os.path.join(a.build, "tools/kiln-compile/kiln-compile")
    variants = {}
    for name, flags in [("kiln-tir", []), ("kiln-dnnl", ["--matmul=dnnl"])]:
        out = os.path.join(tmp, name + ".vmfb")
        subprocess.run([compile_bin, "examples/mlp.relax", "-o", out] + flags, check=True)
        variants[name] = out
    model = onnx_mlp()
    weights = {k: splitmix_f32(SHAPES[k], SEEDS[k]) for k in ["w0", "b0", "w1", "b1"]}
    print("ONNX Runtime %s, median time per call (us); ratio = kiln / onnxruntime (lower is better)" % ort.__version__)
    print("%-6s %-8s %12s %12s %12s %10s %10s" % ("batch", "threads", "kiln-tir", "kiln-dnnl", "onnxruntime",
                                                 "tir/ort", "dnnl/ort"))
    for batch in map(int, a.batches.split(",")):
        feeds = dict(weights, x=splitmix_f32((batch, 784), SEEDS["x"]))
        for threads in map(int, a.threads.split(",")):
            t_ort, y_ort = ort_median_us(model, feeds, threads)
            t = {k: kiln_median_us(a.build, v, batch, threads) for k, v in variants.items()}
            print("%-6d %-8d %12.1f %12.1f %12.1f %10.2f %10.2f" % (
                batch, threads, t["kiln-tir"], t["kiln-dnnl"], t_ort, t["kiln-tir"] / t_ort, t["kiln-dnnl"] / t_ort))
        for k, v in variants.items():
            err = float(np.max(np.abs(kiln_output(a.build, v, batch, tmp) - y_ort)))
            if err > 1e-3:
                print("MISMATCH: %s vs onnxruntime at batch %d: max abs diff %g" % (k, batch, err))
                return 1
    print("outputs of both Kiln variants match ONNX Runtime (max abs diff <= 1e-3)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
