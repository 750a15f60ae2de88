"""Kiln vs ONNX Runtime vs OpenVINO on one corpus model, with OpenVINO both as it runs by default
and with its dynamic quantization of activations turned off, and each peer's error against ONNX
Runtime: is a peer's speed bought with numbers that the ONNX graph does not define?

Not part of `make test`. Run with the benchmark venv (it has OpenVINO) after scripts/fetch_models.sh:

    build/bench-venv/bin/python benchmarks/openvino_exactness_bench.py --only minilm_l6_int8 \
        --dims batch=2,sequence=128 --dims batch=1,sequence=7 [--threads 1,2] [--calls 30]
        [--cache build/models] [--build build] [--model OTHER.onnx]

Why: OpenVINO's CPU plugin quantizes the activations of a fully connected layer to int8 at run
time (DYNAMIC_QUANTIZATION_GROUP_SIZE, 32 by default in 2026.4) when the layer's weights are
stored as integers and scaled in the graph (Cast + Mul of an int8 constant), even under
INFERENCE_PRECISION_HINT=f32. The ONNX graph says float32 matmuls of float activations, so that
is an approximation; this script measures what it buys and what it costs in accuracy.

For each --dims case (values of the manifest's named symbolic dimensions) and thread count:
  - ONNX Runtime (intra_op_num_threads = T), OpenVINO f32 as compiled by default ("ov"), OpenVINO
    f32 with DYNAMIC_QUANTIZATION_GROUP_SIZE=0 ("ov-exact");
  - Kiln compiled with symbolic dimensions ("kiln") and with --dim pinning them ("kiln-pinned"),
    timed by kiln-bench.
Each runtime's figure is the median over --calls calls of the wall time and of the CPU time of
the calling process (Python peers: getrusage of this process; Kiln: kiln-bench's cpu ms per call).
On a loaded machine read the CPU column: wall times include waiting for a core. Errors are
max |y - y_ort| / max |y_ort| over the outputs (the corpus test's measure, rtol in the manifest).
Output: a Markdown table on stdout.
"""
import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "models"))
import corpus  # noqa: E402


def cpu_s():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def time_calls(fn, calls):
    """(median wall ms, median CPU ms) per call of fn() after 2 warm-up calls."""
    fn()
    fn()
    wall, cpu = [], []
    for _ in range(calls):
        c, t = cpu_s(), time.perf_counter()
        fn()
        wall.append(time.perf_counter() - t)
        cpu.append(cpu_s() - c)
    return 1e3 * statistics.median(wall), 1e3 * statistics.median(cpu)


def ort_session(path, threads):
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    return lambda feeds: sess.run(None, feeds)


def ov_session(path, feeds, threads, dynamic_quantization):
    import openvino as ov
    core = ov.Core()
    model = core.read_model(path)
    model.reshape({name: ov.PartialShape(list(a.shape)) for name, a in feeds.items()})
    config = {"INFERENCE_PRECISION_HINT": "f32", "INFERENCE_NUM_THREADS": threads, "PERFORMANCE_HINT": "LATENCY"}
    if not dynamic_quantization:
        config["DYNAMIC_QUANTIZATION_GROUP_SIZE"] = 0
    compiled = core.compile_model(model, "CPU", config)
    request = compiled.create_infer_request()
    ordered = [feeds[i.get_any_name()] for i in compiled.inputs]

    def run(_):
        out = request.infer(ordered)
        return [out[o] for o in compiled.outputs]
    return run


def rel_err(got, ref):
    return max(float(np.abs(g.astype(np.float64) - r).max() / max(np.abs(r).max(), 1e-30)) for g, r in zip(got, ref))


def kiln_run(kiln_bench, vmfb, npys, threads, calls):
    cmd = [kiln_bench, vmfb] + [f"--input=@{p}" for p in npys] + \
          [f"--threads={threads}", "--min-time=0", "--warmup=2", f"--runs={calls}", "--format=json"]
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, check=True)
    r = json.loads(p.stdout)["results"][0]
    return r["latency_ms"]["p50"], r["cpu_ms_per_call"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", required=True, help="the corpus model's id")
    ap.add_argument("--dims", action="append", required=True, help="NAME=V,NAME=V: one case (repeatable)")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--calls", type=int, default=30)
    ap.add_argument("--cache", default="build/models")
    ap.add_argument("--build", default="build")
    ap.add_argument("--model", default=None,
                    help="another .onnx file with the manifest's inputs (a quantize_dynamic copy of the model)")
    args = ap.parse_args()
    (m,) = corpus.load_all([args.only])
    path = args.model or m.cache_path(args.cache)
    kc = os.path.join(args.build, "tools", "kiln-compile", "kiln-compile")
    kb = os.path.join(args.build, "tools", "kiln-bench", "kiln-bench")
    work = tempfile.mkdtemp(prefix="kiln-ov-exactness-")
    threads = [int(t) for t in args.threads.split(",")]
    symbolic = os.path.join(work, "symbolic.vmfb")
    subprocess.run([kc, path, "-o", symbolic] + m.compile_args, check=True, stdout=subprocess.DEVNULL)
    print(f"load average at start: {' '.join(open('/proc/loadavg').read().split()[:3])}", file=sys.stderr)
    kinds = ["ort", "ov", "ov-exact", "kiln", "kiln-pinned"]
    rows = []
    for spec in args.dims:
        dims = {k: int(v) for k, v in (kv.split("=") for kv in spec.split(","))}
        case = {i["name"]: [dims[d] if isinstance(d, str) else d for d in i["dims"]] for i in m.inputs}
        feeds = m.make_inputs(case, seed=1000)
        npys = []
        for j, i in enumerate(m.inputs):
            npys.append(os.path.join(work, f"{spec}.in{j}.npy"))
            np.save(npys[-1], feeds[i["name"]])
        pinned = os.path.join(work, f"pinned.{spec}.vmfb")
        subprocess.run([kc, path, "-o", pinned] + m.compile_args + [f"--dim={k}={v}" for k, v in dims.items()],
                       check=True, stdout=subprocess.DEVNULL)
        ref = ort_session(path, 1)(feeds)
        err = {"ort": 0.0}
        kiln_out = os.path.join(work, "out.npy")
        for kind, f in (("kiln", symbolic), ("kiln-pinned", pinned)):
            subprocess.run([os.path.join(args.build, "tools", "kiln-run", "kiln-run"), f] +
                           [f"--input=@{p}" for p in npys] + [f"--output=@{kiln_out}"],
                           check=True, stdout=subprocess.DEVNULL)
            err[kind] = rel_err([np.load(kiln_out)], ref[:1])
        for t in threads:
            sessions = {"ort": ort_session(path, t), "ov": ov_session(path, feeds, t, True),
                        "ov-exact": ov_session(path, feeds, t, False)}
            for kind in ("ov", "ov-exact"):
                err.setdefault(kind, rel_err(sessions[kind](feeds), ref))
            res = {}
            for kind in kinds:  # one after the other in the same run, so that they see the same load
                if kind.startswith("kiln"):
                    res[kind] = kiln_run(kb, symbolic if kind == "kiln" else pinned, npys, t, args.calls)
                else:
                    res[kind] = time_calls(lambda: sessions[kind](feeds), args.calls)
            rows.append((spec, t, res, dict(err)))
            print(f"{spec} {t}t: " + ", ".join(f"{k} {w:.1f}/{c:.1f} ms" for k, (w, c) in res.items()),
                  file=sys.stderr, flush=True)
    print(f"load average at end: {' '.join(open('/proc/loadavg').read().split()[:3])}", file=sys.stderr)
    print("| dims | threads | " + " | ".join(f"{k} wall / cpu ms" for k in kinds) + " | " +
          " | ".join(f"{k} err" for k in kinds[1:]) + " |")
    print("|" + "---|" * (2 + 2 * len(kinds) - 1))
    for spec, t, res, err in rows:
        print(f"| {spec} | {t} | " + " | ".join(f"{res[k][0]:.1f} / {res[k][1]:.1f}" for k in kinds) + " | " +
              " | ".join(f"{err[k]:.1e}" for k in kinds[1:]) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
