"""Which of a network's kernels lose to ONNX Runtime: per-kernel minimum times, Kiln against ORT.

Not part of `make test`. Run with a venv that has ONNX Runtime and numpy (build/venv), on a model
exported by export_models.py and compiled with kiln-compile:

    build/venv/bin/python benchmarks/onnx/kernels_vs_onnxruntime.py --build build \
        --model build/onnx-models/mobilenet_v3_large.onnx --input build/onnx-models/mobilenet_v3_large.x.npy \
        --vmfb build/onnx-models/kiln/mobilenet_v3_large.vmfb [--threads 1] [--calls 30] [--top 25]

Kiln: `kiln-bench --trace` over --calls calls, each kernel's minimum duration. ORT: its profiler
(enable_profiling) over the same number of sess.run calls after 5 unprofiled ones, each node's
minimum duration. Minima, because on a loaded machine a call's time is mostly other processes';
the fastest of many calls is what the kernel costs. Prints both sums, ORT's other nodes by op type,
Kiln's other kernels by name, and, when both have the same number of convolutions (Kiln kernels
named `conv2d`, ORT Conv / FusedConv nodes; both keep the ONNX graph's order), the convolutions
paired in order, those Kiln loses most on first. ORT's NCHWc layout pads channels to 16, so its
shapes may read 80 where Kiln's read 72. Kiln fuses activations into convolutions where ORT may run
them as nodes of their own (QuickGelu for x * sigmoid(x)): compare sums, not only pairs.
"""
import argparse
import collections
import json
import os
import re
import subprocess
import sys
import tempfile

import numpy as np
import onnxruntime as ort


def kiln_minima(build, vmfb, x_path, threads, calls):
    """{node: [kernel name, shapes, minimum us]} in graph order."""
    with tempfile.TemporaryDirectory() as tmp:
        trace = os.path.join(tmp, "trace.json")
        subprocess.run([os.path.join(build, "tools", "kiln-bench", "kiln-bench"), vmfb, "--input=@" + x_path,
                        "--threads=%d" % threads, "--min-time=0.1", "--runs=3", "--profile_calls=%d" % calls,
                        "--trace=" + trace], check=True, capture_output=True)
        with open(trace) as f:
            events = json.load(f)
    events = events["traceEvents"] if isinstance(events, dict) else events
    out = collections.OrderedDict()
    for e in events:
        if e.get("cat") != "kernel":
            continue
        at = e["args"]["at"]
        if at not in out:
            out[at] = [e["name"], e["args"]["shapes"], e["dur"]]
        else:
            out[at][2] = min(out[at][2], e["dur"])
    return out


def ort_minima(model, x, threads, calls):
    """{node: [op type, input shapes, minimum us]} in graph order."""
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.enable_profiling = True
    with tempfile.TemporaryDirectory() as tmp:
        so.profile_file_prefix = os.path.join(tmp, "ort")
        sess = ort.InferenceSession(model, so, providers=["CPUExecutionProvider"])
        feeds = {sess.get_inputs()[0].name: x}
        for _ in range(5):
            sess.run(None, feeds)
        os.remove(sess.end_profiling())  # the warm-up calls' profile
        sess = ort.InferenceSession(model, so, providers=["CPUExecutionProvider"])
        for _ in range(calls):
            sess.run(None, feeds)
        path = sess.end_profiling()
        with open(path) as f:
            events = json.load(f)
    out = collections.OrderedDict()
    for e in events:
        if e.get("cat") != "Node" or not e["name"].endswith("_kernel_time"):
            continue
        a = e["args"]
        if e["name"] not in out:
            out[e["name"]] = [a.get("op_name"), a.get("input_type_shape"), e["dur"]]
        else:
            out[e["name"]][2] = min(out[e["name"]][2], e["dur"])
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default="build")
    ap.add_argument("--model", required=True, help="the .onnx file")
    ap.add_argument("--input", required=True, help="its input, a .npy file")
    ap.add_argument("--vmfb", required=True, help="the model compiled by kiln-compile")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--calls", type=int, default=30)
    ap.add_argument("--top", type=int, default=25)
    a = ap.parse_args()
    x = np.load(a.input)
    kmin = kiln_minima(a.build, a.vmfb, a.input, a.threads, a.calls)
    omin = ort_minima(a.model, x, a.threads, a.calls)
    conv_ops = ("Conv", "FusedConv")
    ktot = sum(v[2] for v in kmin.values())
    otot = sum(v[2] for v in omin.values())
    print("%s, %d thread(s), %d calls: sum of per-kernel minima: Kiln %.0f us, ORT %.0f us, Kiln / ORT %.3f" % (
        os.path.basename(a.model), a.threads, a.calls, ktot, otot, ktot / otot))
    kconv = [v for v in kmin.values() if "conv2d" in v[0]]
    oconv = [v for v in omin.values() if v[0] in conv_ops]
    print("convolutions: Kiln %d kernels %.0f us, ORT %d nodes %.0f us" % (
        len(kconv), sum(v[2] for v in kconv), len(oconv), sum(v[2] for v in oconv)))
    oother = collections.Counter()
    for v in omin.values():
        if v[0] not in conv_ops:
            oother[v[0]] += v[2]
    kother = collections.Counter()
    for v in kmin.values():
        if "conv2d" not in v[0]:
            kother[re.sub(r"\d+", "", v[0])] += v[2]
    print("ORT's other nodes, us: %s" % {k: round(v) for k, v in oother.most_common()})
    print("Kiln's other kernels, us: %s" % {k: round(v) for k, v in kother.most_common(12)})
    if len(kconv) != len(oconv):
        print("(the convolutions differ in number, %d against %d: not paired)" % (len(kconv), len(oconv)))
        return 0
    rows = []
    for kv, ov in zip(kconv, oconv):
        shapes = [list(s.values())[0] for s in ov[1]]
        rows.append((kv[2] - ov[2], kv[2], ov[2], kv[0], shapes[0], shapes[1] if len(shapes) > 1 else None,
                     kv[1].split("], ")[-1]))
    rows.sort(key=lambda r: -r[0])
    print("convolutions, Kiln's loss first: Kiln - ORT us, Kiln us, ORT us, kernel, ORT's x and w -> Kiln's output")
    for r in rows[:a.top]:
        print("  %+8.1f %8.1f %8.1f  %-45s %s %s -> %s" % r)
    print("  Kiln slower by %.0f us in all where it loses, faster by %.0f us where it wins" % (
        sum(r[0] for r in rows if r[0] > 0), -sum(r[0] for r in rows if r[0] < 0)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
