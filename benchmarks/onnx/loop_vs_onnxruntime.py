"""Per-iteration cost of an ONNX Loop on Kiln's VM (vm.builtin.loop) against ONNX Runtime, in one run.

Not part of `make test`. Run from the repository root with the project's venv and a build tree:

    build/venv/bin/python benchmarks/onnx/loop_vs_onnxruntime.py [--build build] [--rounds 3]

The model: Loop(M, "", x) over a float32[16] state, the body s + 1 with the state also scanned out,
so each iteration is one small kernel and the loop's own work (calling the body, collecting the scan
output, stacking it at the end) dominates. M is a graph input (a run-time trip count). Kiln's time is
kiln-run's median over --repeat calls (one thread); ONNX Runtime's the median of as many
InferenceSession.run calls (intra_op_num_threads=1). Rounds alternate the two; the table gives the
medians over rounds, per call and per iteration, and Kiln's time as a ratio of ONNX Runtime's.
"""
import argparse
import os
import re
import statistics
import subprocess
import tempfile
import time

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto as T
from onnx import helper as h


def loop_model(path):
    body = h.make_graph(
        [h.make_node("Add", ["s", "one"], ["s_out"]), h.make_node("Identity", ["c"], ["c_out"])], "body",
        [h.make_tensor_value_info("i", T.INT64, []), h.make_tensor_value_info("c", T.BOOL, []),
         h.make_tensor_value_info("s", T.FLOAT, [16])],
        [h.make_tensor_value_info("c_out", T.BOOL, []), h.make_tensor_value_info("s_out", T.FLOAT, [16]),
         h.make_tensor_value_info("s_out", T.FLOAT, [16])])
    graph = h.make_graph(
        [h.make_node("Loop", ["M", "", "x"], ["y", "ys"], body=body)], "g",
        [h.make_tensor_value_info("M", T.INT64, []), h.make_tensor_value_info("x", T.FLOAT, [16])],
        [h.make_tensor_value_info("y", T.FLOAT, [16]), h.make_tensor_value_info("ys", T.FLOAT, None)],
        initializer=[onnx.numpy_helper.from_array(np.ones(16, np.float32), "one")])
    model = h.make_model(graph, opset_imports=[h.make_opsetid("", 16)])
    model.ir_version = 8
    onnx.save(model, path)


def kiln_median_ms(run, vmfb, m_npy, x_npy, repeat):
    out = subprocess.run([run, vmfb, "--input=@" + m_npy, "--input=@" + x_npy, "--threads=1",
                          "--repeat=%d" % repeat], check=True, capture_output=True, text=True).stdout
    return float(re.search(r"median ([0-9.]+) ms", out).group(1))


def ort_median_ms(session, feeds, repeat):
    for _ in range(3):
        session.run(None, feeds)
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        session.run(None, feeds)
        times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--build", default="build")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--repeat", type=int, default=51)
    args = parser.parse_args()
    compile_tool = os.path.join(args.build, "tools/kiln-compile/kiln-compile")
    run_tool = os.path.join(args.build, "tools/kiln-run/kiln-run")
    with tempfile.TemporaryDirectory() as tmp:
        model = os.path.join(tmp, "loop.onnx")
        vmfb = os.path.join(tmp, "loop.vmfb")
        loop_model(model)
        subprocess.run([compile_tool, model, "-o", vmfb], check=True, capture_output=True)
        options = ort.SessionOptions()
        options.intra_op_num_threads = 1
        session = ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])
        x = np.zeros(16, np.float32)
        x_npy = os.path.join(tmp, "x.npy")
        np.save(x_npy, x)
        print("| M | Kiln ms/call | ONNX Runtime ms/call | Kiln us/iteration | ORT us/iteration | Kiln / ORT |")
        print("|---|---|---|---|---|---|")
        for trips in (100, 1000, 10000):
            m = np.array(trips, np.int64)
            m_npy = os.path.join(tmp, "m%d.npy" % trips)
            np.save(m_npy, m)
            kiln, ref = [], []
            for _ in range(args.rounds):
                kiln.append(kiln_median_ms(run_tool, vmfb, m_npy, x_npy, args.repeat))
                ref.append(ort_median_ms(session, {"M": m, "x": x}, args.repeat))
            k, r = statistics.median(kiln), statistics.median(ref)
            print("| %d | %.3f | %.3f | %.2f | %.2f | %.2f |" % (trips, k, r, k * 1e3 / trips, r * 1e3 / trips, k / r))


if __name__ == "__main__":
    main()
