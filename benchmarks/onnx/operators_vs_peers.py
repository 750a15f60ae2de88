"""One-operator ONNX models (issue 20 §3's operator classes): Kiln against ONNX Runtime and OpenVINO, one thread.

Not part of `make test`. Run with the benchmark venv (numpy, onnx, onnxruntime, openvino) after building
kiln-compile, kiln-run and kiln-bench, from the repository root:

    /work/main/build/bench-venv/bin/python benchmarks/onnx/operators_vs_peers.py --build build \
        [--only convT_k4s2,resize_linear_2x] [--rounds 5] [--min-time 0.3] [--keep DIR] [--no-openvino]
        [--base BASE_BUILD]

Each case is one operator at a realistic shape (ConvTranspose of decoders and upsampling heads, Resize in
every mode, GridSample, the Gather / Scatter family on embedding and detection shapes, Einsum, Transpose, CumSum, TopK,
pooling with large windows), built with onnx.helper (opset 17 unless the case needs another; weights and
index tensors as initializers where a model would have them constant, the data as graph inputs, drawn from
a seeded generator). For each case the script
  - compiles it with kiln-compile (a failure, e.g. an operator Kiln does not convert, is a row of its own);
  - runs it once with kiln-run and compares every output with ONNX Runtime's: max |kiln - ort| /
    max(|ort|, 1) must be <= --tolerance (default 1e-4; integer outputs exactly; TopK's values exactly
    and its indices where the values are unique);
  - times it: --rounds rounds, each one kiln-bench process (`--threads=1 --format=json`, p50 of single
    calls after its warm-up, and its CPU time per call), one ONNX Runtime measurement (all graph
    optimizations, intra_op_num_threads 1, sequential, p50 of single `run_with_iobinding` calls from
    Python) and one OpenVINO measurement (CPU plugin, INFERENCE_PRECISION_HINT f32, 1 thread, LATENCY,
    p50 of single infer() calls), alternating, 50 ms apart.
With --base, a second Kiln build (e.g. of the main branch) compiles and runs each case too and is timed in
the same rounds (its kiln-bench right before this build's): the before / after columns of a change.
The table gives medians over rounds of each side's p50 (us), and Kiln / the faster peer (median of the
per-round ratios, wall and CPU time). The peers' times include their Python binding's cost per call (a few
us; the "ORT floor" line measures it), which matters only for the smallest cases.
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_vs_onnxruntime  # noqa: E402  (its single-call timer)
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

F32 = TensorProto.FLOAT
I64 = TensorProto.INT64
NP_TO_ONNX = {np.dtype(np.float32): F32, np.dtype(np.int64): I64}


# --- the cases ---------------------------------------------------------------------------------

class Case:
    """One operator: its node, graph inputs (name -> array), initializers (name -> array)."""

    def __init__(self, name, op, inputs, consts, attrs=None, outputs=1, opset=17, order=None, check="close"):
        self.name, self.op, self.inputs, self.consts = name, op, inputs, consts
        self.attrs, self.n_out, self.opset = attrs or {}, outputs, opset
        self.order = order  # the node's operands in order (names of inputs or consts; "" for a missing one)
        self.check = check

    def model(self):
        order = self.order or (list(self.inputs) + list(self.consts))
        outs = ["y%d" % i for i in range(self.n_out)]
        node = helper.make_node(self.op, order, outs, **self.attrs)
        g_inputs = [helper.make_tensor_value_info(k, NP_TO_ONNX[v.dtype], list(v.shape)) for k, v in self.inputs.items()]
        inits = [numpy_helper.from_array(v, k) for k, v in self.consts.items()]
        # Every case's outputs are float32 but TopK's indices.
        g_outputs = [helper.make_tensor_value_info(o, I64 if (self.op == "TopK" and i == 1) else F32, None)
                     for i, o in enumerate(outs)]
        graph = helper.make_graph([node], self.name, g_inputs, g_outputs, inits)
        m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", self.opset)])
        m.ir_version = 8
        return m


def cases():
    rng = np.random.default_rng(20)

    def f(*shape, scale=1.0):
        return (rng.standard_normal(shape) * scale).astype(np.float32)

    def i64(a):
        return np.asarray(a, dtype=np.int64)

    out = []
    # ConvTranspose: decoder / FPN upsampling (k4 s2 p1, k2 s2, k3 s2 with output_padding), a strided
    # head (k8 s4), stride 1, grouped and depthwise (learned bilinear upsampling).
    def convt(name, x, w, bias=True, **attrs):
        consts = {"w": w}
        if bias:
            consts["b"] = f(w.shape[1] * attrs.get("group", 1), scale=0.1)
        out.append(Case(name, "ConvTranspose", {"x": x}, consts, attrs))
    convt("convT_64to32_k4s2p1_80", f(1, 64, 80, 80), f(64, 32, 4, 4, scale=0.05), strides=[2, 2], pads=[1, 1, 1, 1])
    convt("convT_128to64_k2s2_40", f(1, 128, 40, 40), f(128, 64, 2, 2, scale=0.05), strides=[2, 2])
    convt("convT_64to64_k3s2_op1_40", f(1, 64, 40, 40), f(64, 64, 3, 3, scale=0.05), strides=[2, 2],
          pads=[1, 1, 1, 1], output_padding=[1, 1])
    convt("convT_32to16_k8s4p2_40", f(1, 32, 40, 40), f(32, 16, 8, 8, scale=0.05), strides=[4, 4], pads=[2, 2, 2, 2])
    convt("convT_64to32_k3s1p1_80", f(1, 64, 80, 80), f(64, 32, 3, 3, scale=0.05), pads=[1, 1, 1, 1])
    convt("convT_g4_64to32_k4s2p1_40", f(1, 64, 40, 40), f(64, 8, 4, 4, scale=0.05), strides=[2, 2],
          pads=[1, 1, 1, 1], group=4)
    convt("convT_dw64_k4s2p1_80", f(1, 64, 80, 80), f(64, 1, 4, 4, scale=0.2), bias=False, strides=[2, 2],
          pads=[1, 1, 1, 1], group=64)
    convt("convT1d_256to128_k4s2p1_1000", f(1, 256, 1000), f(256, 128, 4, scale=0.05), strides=[2], pads=[1, 1])

    # Resize on 1x64x80x80: every mode and coordinate transformation, 2x and non-integer scales.
    x = f(1, 64, 80, 80)

    def resize(name, scales=None, sizes=None, **attrs):
        consts = {"roi": np.zeros(0, np.float32)}
        order = ["x", "roi"]
        if scales is not None:
            consts["scales"] = np.asarray(scales, np.float32)
            order.append("scales")
        else:
            consts["scales"] = np.zeros(0, np.float32)
            consts["sizes"] = i64(sizes)
            order += ["scales", "sizes"]
        out.append(Case(name, "Resize", {"x": x}, consts, attrs, order=order))
    resize("resize_nearest_2x_asym", [1, 1, 2, 2], mode="nearest", coordinate_transformation_mode="asymmetric",
           nearest_mode="floor")
    resize("resize_nearest_2x_halfpx", [1, 1, 2, 2], mode="nearest")
    resize("resize_nearest_1.5x_halfpx", [1, 1, 1.5, 1.5], mode="nearest")
    resize("resize_linear_2x_halfpx", [1, 1, 2, 2], mode="linear")
    resize("resize_linear_2x_align", sizes=[1, 64, 160, 160], mode="linear",
           coordinate_transformation_mode="align_corners")
    resize("resize_linear_2x_asym", [1, 1, 2, 2], mode="linear", coordinate_transformation_mode="asymmetric")
    resize("resize_linear_1.5x_halfpx", [1, 1, 1.5, 1.5], mode="linear")
    resize("resize_linear_to52x60_pt", sizes=[1, 64, 52, 60], mode="linear",
           coordinate_transformation_mode="pytorch_half_pixel")
    resize("resize_cubic_2x_halfpx", [1, 1, 2, 2], mode="cubic")
    resize("resize_cubic_2x_align", sizes=[1, 64, 160, 160], mode="cubic",
           coordinate_transformation_mode="align_corners")
    resize("resize_cubic_1.5x_asym", [1, 1, 1.5, 1.5], mode="cubic", coordinate_transformation_mode="asymmetric")

    # GridSample: 1x64x80x80 sampled at a 80x80 grid, a smooth warp that leaves the image near the borders.
    gy, gx = np.meshgrid(np.linspace(-1.1, 1.1, 80), np.linspace(-1.1, 1.1, 80), indexing="ij")
    grid = np.stack([gx + 0.05 * np.sin(3 * gy), gy + 0.05 * np.cos(3 * gx)], -1)[None].astype(np.float32)
    for mode, pad, ac in [("bilinear", "zeros", 0), ("bilinear", "border", 0), ("bilinear", "zeros", 1),
                          ("nearest", "zeros", 0), ("bicubic", "zeros", 0)]:
        out.append(Case("gridsample_%s_%s%s" % (mode, pad, "_align" if ac else ""), "GridSample",
                        {"x": x, "grid": grid}, {}, dict(mode=mode, padding_mode=pad, align_corners=ac), opset=16))

    # Gather family: an embedding lookup, detection boxes by index, after-TopK gathers.
    out.append(Case("gather_embed_32000x512_idx512", "Gather", {"idx": i64(rng.integers(0, 32000, (1, 512)))},
                    {"table": f(32000, 512)}, dict(axis=0), order=["table", "idx"], check="exact"))
    det = f(1, 25200, 85)
    out.append(Case("gather_axis1_25200x85_idx1000", "Gather", {"det": det},
                    {"idx": i64(rng.integers(0, 25200, 1000))}, dict(axis=1), check="exact"))
    out.append(Case("gather_lastaxis_64x80x80_idx40", "Gather", {"x": x}, {"idx": i64(rng.integers(0, 80, 40))},
                    dict(axis=3), check="exact"))
    out.append(Case("gatherelements_1x80x8400_k100", "GatherElements", {"s": f(1, 80, 8400)},
                    {"idx": i64(rng.integers(0, 8400, (1, 80, 100)))}, dict(axis=2), check="exact"))
    out.append(Case("gatherelements_1x8400x85_rows100", "GatherElements", {"d": f(1, 8400, 85)},
                    {"idx": np.broadcast_to(i64(rng.integers(0, 8400, (1, 100, 1))), (1, 100, 85)).copy()},
                    dict(axis=1), check="exact"))
    out.append(Case("gathernd_25200x85_idx1000x1", "GatherND", {"d": f(25200, 85)},
                    {"idx": i64(rng.integers(0, 25200, (1000, 1)))}, check="exact"))
    out.append(Case("gathernd_b1_80x80x64_idx1000x2", "GatherND", {"d": f(1, 80, 80, 64)},
                    {"idx": i64(rng.integers(0, 80, (1, 1000, 2)))}, dict(batch_dims=1), check="exact"))
    perm = rng.permutation(25200)[:1000]
    out.append(Case("scatternd_25200x85_rows1000", "ScatterND", {"d": f(25200, 85), "u": f(1000, 85)},
                    {"idx": i64(perm[:, None])}, order=["d", "idx", "u"], check="exact"))
    out.append(Case("scatternd_kvcache_1x8x512x64", "ScatterND", {"cache": f(1, 8, 512, 64), "u": f(1, 8, 1, 64)},
                    {"idx": i64([[[[0, h, 37]] for h in range(8)]])}, order=["cache", "idx", "u"], check="exact"))
    idx100 = np.stack([rng.permutation(8400)[:100] for _ in range(80)])[None].astype(np.int64)
    out.append(Case("scatterelements_1x80x8400_k100", "ScatterElements", {"s": f(1, 80, 8400), "u": f(1, 80, 100)},
                    {"idx": idx100}, dict(axis=2), order=["s", "idx", "u"], check="exact"))
    out.append(Case("scatterelements_add_1x80x8400", "ScatterElements", {"s": f(1, 80, 8400), "u": f(1, 80, 100)},
                    {"idx": i64(rng.integers(0, 8400, (1, 80, 100)))}, dict(axis=2, reduction="add"),
                    order=["s", "idx", "u"]))

    # Einsum: attention scores and values, batched matmul, a transpose, a reduction.
    out.append(Case("einsum_bhqd_bhkd_8x128x64", "Einsum", {"q": f(1, 8, 128, 64), "k": f(1, 8, 128, 64)}, {},
                    dict(equation="bhqd,bhkd->bhqk")))
    out.append(Case("einsum_bhqk_bhkd_8x128x64", "Einsum", {"p": f(1, 8, 128, 128), "v": f(1, 8, 128, 64)}, {},
                    dict(equation="bhqk,bhkd->bhqd")))
    out.append(Case("einsum_bij_bjk_8x128x64x128", "Einsum", {"a": f(8, 128, 64), "b": f(8, 64, 128)}, {},
                    dict(equation="bij,bjk->bik")))
    out.append(Case("einsum_nchw_nhwc_64x80x80", "Einsum", {"x": x}, {}, dict(equation="nchw->nhwc"),
                    check="exact"))
    # Transpose: NCHW <-> NHWC at a model's edges, attention heads ([b, s, h, d] -> [b, h, s, d]) and K^T.
    out.append(Case("transpose_nchw_nhwc_1x64x80x80", "Transpose", {"x": x}, {}, dict(perm=[0, 2, 3, 1]),
                    check="exact"))
    out.append(Case("transpose_nhwc_nchw_1x80x80x64", "Transpose", {"x": f(1, 80, 80, 64)}, {},
                    dict(perm=[0, 3, 1, 2]), check="exact"))
    out.append(Case("transpose_heads_1x128x8x64", "Transpose", {"x": f(1, 128, 8, 64)}, {}, dict(perm=[0, 2, 1, 3]),
                    check="exact"))
    out.append(Case("transpose_kt_1x8x128x64", "Transpose", {"x": f(1, 8, 128, 64)}, {}, dict(perm=[0, 1, 3, 2]),
                    check="exact"))
    out.append(Case("einsum_bnd_d_reduce_64x6400", "Einsum", {"a": f(64, 6400, 8), "v": f(8)}, {},
                    dict(equation="bnd,d->bn")))

    # CumSum over long axes.
    long = f(4, 16384)
    for ex, rev in [(0, 0), (1, 0), (0, 1), (1, 1)]:
        out.append(Case("cumsum_4x16384_axis1%s%s" % ("_excl" if ex else "", "_rev" if rev else ""), "CumSum",
                        {"x": long}, {"axis": i64(1)}, dict(exclusive=ex, reverse=rev)))
    out.append(Case("cumsum_1x64x6400_axis2", "CumSum", {"x": f(1, 64, 6400)}, {"axis": i64(2)}))
    out.append(Case("cumsum_1x8192x64_axis1", "CumSum", {"x": f(1, 8192, 64)}, {"axis": i64(1)}))

    # TopK k = 100: detection scores.
    out.append(Case("topk100_1x25200", "TopK", {"s": f(1, 25200)}, {"k": i64([100])}, dict(axis=-1),
                    outputs=2, check="topk"))
    out.append(Case("topk100_1x80x8400", "TopK", {"s": f(1, 80, 8400)}, {"k": i64([100])}, dict(axis=-1),
                    outputs=2, check="topk"))
    out.append(Case("topk100_1x8400x80_axis1", "TopK", {"s": f(1, 8400, 80)}, {"k": i64([100])}, dict(axis=1),
                    outputs=2, check="topk"))

    # Pooling with large windows: SPP / SPPF max pools, stride-1 averages, global averages.
    spp = f(1, 256, 20, 20)
    for k in (5, 9, 13):
        out.append(Case("maxpool_k%d_s1_256x20x20" % k, "MaxPool", {"x": spp}, {},
                        dict(kernel_shape=[k, k], strides=[1, 1], pads=[k // 2] * 4), check="exact"))
    out.append(Case("maxpool_k5_s1_128x40x40", "MaxPool", {"x": f(1, 128, 40, 40)}, {},
                    dict(kernel_shape=[5, 5], strides=[1, 1], pads=[2] * 4), check="exact"))
    out.append(Case("avgpool_k7_s1_excl_64x56x56", "AveragePool", {"x": f(1, 64, 56, 56)}, {},
                    dict(kernel_shape=[7, 7], strides=[1, 1], pads=[3] * 4)))
    out.append(Case("avgpool_k5_s1_incl_256x20x20", "AveragePool", {"x": spp}, {},
                    dict(kernel_shape=[5, 5], strides=[1, 1], pads=[2] * 4, count_include_pad=1)))
    out.append(Case("avgpool_k13_s1_excl_256x20x20", "AveragePool", {"x": spp}, {},
                    dict(kernel_shape=[13, 13], strides=[1, 1], pads=[6] * 4)))
    out.append(Case("avgpool_k7_s7_512x28x28", "AveragePool", {"x": f(1, 512, 28, 28)}, {},
                    dict(kernel_shape=[7, 7], strides=[7, 7])))
    out.append(Case("globalavgpool_1280x7x7", "GlobalAveragePool", {"x": f(1, 1280, 7, 7)}, {}))
    out.append(Case("globalavgpool_256x80x80", "GlobalAveragePool", {"x": f(1, 256, 80, 80)}, {}))
    out.append(Case("globalmaxpool_256x40x40", "GlobalMaxPool", {"x": f(1, 256, 40, 40)}, {}, check="exact"))
    return out


# --- the three runtimes --------------------------------------------------------------------------

def tool(build, name):
    return os.path.join(build, "tools", name, name)


def run(args):
    res = subprocess.run(args, capture_output=True, text=True)
    if res.returncode != 0:
        raise RuntimeError((res.stdout + res.stderr).strip())
    return res


def first_line(text):
    """The problem itself: the last non-empty line (kiln-compile prints a header, then each problem)."""
    lines = [l.strip() for l in text.splitlines() if l.strip()]
    return (lines[-1] if lines else text)[:150]


def time_single_calls(fn, min_time, warmup):
    """(p50 wall us, CPU us per call): bench_vs_onnxruntime's single-call timer, in microseconds."""
    p50_ms, cpu_ms = bench_vs_onnxruntime.time_single_calls(fn, min_time, warmup)
    return p50_ms * 1e3, cpu_ms * 1e3


class Kiln:
    def __init__(self, build, case, work, tag=""):
        self.build = build
        self.dir = os.path.join(work, case.name + tag)
        os.makedirs(self.dir, exist_ok=True)
        self.onnx = os.path.join(self.dir, "model.onnx")
        onnx.save(case.model(), self.onnx)
        self.inputs = []
        for k, v in case.inputs.items():
            p = os.path.join(self.dir, k + ".npy")
            np.save(p, v)
            self.inputs.append("--input=@" + p)
        self.vmfb = os.path.join(self.dir, "model.vmfb")
        t0 = time.perf_counter()
        run([tool(build, "kiln-compile"), self.onnx, "-o", self.vmfb])
        self.compile_s = time.perf_counter() - t0
        self.n_out = case.n_out

    def outputs(self):
        ys = [os.path.join(self.dir, "y%d.npy" % i) for i in range(self.n_out)]
        run([tool(self.build, "kiln-run"), self.vmfb, "--threads=1"] + self.inputs + ["--output=@" + y for y in ys])
        return [np.load(y) for y in ys]

    def measure(self, min_time, warmup):
        res = run([tool(self.build, "kiln-bench"), self.vmfb, "--threads=1", "--format=json",
                   "--min-time=%g" % min_time, "--warmup=%d" % warmup] + self.inputs)
        r = json.loads(res.stdout)["results"][0]
        return r["latency_ms"]["p50"] * 1e3, r.get("cpu_ms_per_call", float("nan")) * 1e3


class Ort:
    def __init__(self, path, case):
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = 1
        opts.inter_op_num_threads = 1
        opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        self.sess = ort.InferenceSession(path, opts, providers=["CPUExecutionProvider"])
        self.binding = self.sess.io_binding()
        for k, v in case.inputs.items():
            self.binding.bind_ortvalue_input(k, ort.OrtValue.ortvalue_from_numpy(v))
        for o in self.sess.get_outputs():
            self.binding.bind_output(o.name)

    def outputs(self):
        self.sess.run_with_iobinding(self.binding)
        return [np.array(v) for v in self.binding.copy_outputs_to_cpu()]

    def measure(self, min_time, warmup):
        return time_single_calls(lambda: self.sess.run_with_iobinding(self.binding), min_time, warmup)


class OpenVino:
    def __init__(self, path, case):
        import openvino as ov
        core = ov.Core()
        compiled = core.compile_model(core.read_model(path), "CPU", {
            "INFERENCE_PRECISION_HINT": "f32", "DYNAMIC_QUANTIZATION_GROUP_SIZE": 0,
            "INFERENCE_NUM_THREADS": 1, "PERFORMANCE_HINT": "LATENCY"})
        self.request = compiled.create_infer_request()
        for k, v in case.inputs.items():
            self.request.set_tensor(k, ov.Tensor(np.ascontiguousarray(v)))
        self.n_out = case.n_out

    def outputs(self):
        self.request.infer()
        return [np.array(self.request.get_output_tensor(i).data, copy=True) for i in range(self.n_out)]

    def measure(self, min_time, warmup):
        return time_single_calls(self.request.infer, min_time, warmup)


def ort_floor_us(min_time):
    x = np.ones(1, np.float32)
    node = helper.make_node("Add", ["x", "x"], ["y"])
    g = helper.make_graph([node], "floor", [helper.make_tensor_value_info("x", F32, [1])],
                          [helper.make_tensor_value_info("y", F32, [1])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    case = Case("floor", "Add", {"x": x}, {})
    with tempfile.TemporaryDirectory() as tmp:
        p = os.path.join(tmp, "floor.onnx")
        onnx.save(m, p)
        return Ort(p, case).measure(min_time, 100)[0]


def compare(case, got, ref, tol):
    """'' when got matches ref, else what differs."""
    if len(got) != len(ref):
        return "%d outputs, ORT %d" % (len(got), len(ref))
    if case.check == "topk":
        (kv, ki), (ov, oi) = got, ref
        if kv.shape != ov.shape or not np.array_equal(kv, ov):
            return "TopK values differ"
        # With float inputs from a normal draw the values are unique, so the indices must agree.
        return "" if np.array_equal(ki.astype(np.int64), oi.astype(np.int64)) else "TopK indices differ"
    worst = 0.0
    for g, r in zip(got, ref):
        if g.shape != r.shape:
            return "shape %s, ORT %s" % (g.shape, r.shape)
        if case.check == "exact":
            if not np.array_equal(g, r):
                return "not bitwise equal (max diff %.3g)" % float(np.max(np.abs(g.astype(np.float64) - r)))
            continue
        d = float(np.max(np.abs(g.astype(np.float64) - r))) / max(float(np.max(np.abs(r))), 1.0)
        worst = max(worst, d)
    return "" if worst <= tol else "max rel diff %.3g > %g" % (worst, tol)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default="build")
    ap.add_argument("--only", default="", help="comma-separated case names or prefixes")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--min-time", type=float, default=0.3)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--tolerance", type=float, default=1e-4)
    ap.add_argument("--keep", default=None, help="keep the models and .vmfb files in this folder")
    ap.add_argument("--no-openvino", action="store_true")
    ap.add_argument("--list", action="store_true", help="print the case names and exit")
    ap.add_argument("--base", default=None, help="another Kiln build to time in the same rounds (before / after)")
    a = ap.parse_args()
    all_cases = cases()
    if a.list:
        print("\n".join(c.name for c in all_cases))
        return 0
    if a.only:
        wanted = a.only.split(",")
        all_cases = [c for c in all_cases if any(c.name == w or c.name.startswith(w) for w in wanted)]
    use_ov = not a.no_openvino
    if use_ov:
        try:
            import openvino  # noqa: F401
        except ImportError:
            use_ov = False
            print("(no openvino in this venv: its columns are left out)", file=sys.stderr)
    work = a.keep or tempfile.mkdtemp(prefix="kiln-ops-")
    print("Kiln build %s, ONNX Runtime %s, %s UTC, load average %.1f %.1f %.1f, 1 thread, %d rounds of %.2f s" % (
        a.build, ort.__version__, time.strftime("%Y-%m-%d %H:%M", time.gmtime()), *os.getloadavg(), a.rounds,
        a.min_time))
    print("ORT floor (one-element Add through run_with_iobinding): %.1f us" % ort_floor_us(0.2), flush=True)
    rows = []
    for case in all_cases:
        try:
            kiln = Kiln(a.build, case, work)
        except RuntimeError as e:
            rows.append((case.name, "kiln-compile: " + first_line(str(e))))
            print("%s: kiln-compile failed: %s" % (case.name, first_line(str(e))), flush=True)
            continue
        base, base_err = None, ""
        if a.base:
            try:
                base = Kiln(a.base, case, work, "-base")
                base_err = compare(case, base.outputs(), Ort(kiln.onnx, case).outputs(), a.tolerance)
            except RuntimeError as e:
                base_err = first_line(str(e))
            if base_err:
                print("%s: base build: %s" % (case.name, base_err), flush=True)
                base = None
        try:
            o = Ort(kiln.onnx, case)
            ref = o.outputs()
        except Exception as e:  # noqa: BLE001  (a peer that refuses the model is a row, not an abort)
            rows.append((case.name, "ORT: " + first_line(str(e))))
            continue
        v = None
        if use_ov:
            try:
                v = OpenVino(kiln.onnx, case)
                verr = compare(case, v.outputs(), ref, a.tolerance)
                if verr:
                    print("%s: OpenVINO differs from ORT: %s" % (case.name, verr), flush=True)
            except Exception as e:  # noqa: BLE001
                print("%s: OpenVINO failed: %s" % (case.name, first_line(str(e))), flush=True)
                v = None
        try:
            err = compare(case, kiln.outputs(), ref, a.tolerance)
        except RuntimeError as e:
            err = "kiln-run: " + first_line(str(e))
        if err:
            rows.append((case.name, "MISMATCH: " + err))
            print("%s: %s" % (case.name, err), flush=True)
            continue
        rounds = []
        for _ in range(a.rounds):
            b, b_cpu = float("nan"), float("nan")
            if base is not None:
                time.sleep(0.05)
                b, b_cpu = base.measure(a.min_time, a.warmup)
            time.sleep(0.05)
            k, k_cpu = kiln.measure(a.min_time, a.warmup)
            time.sleep(0.05)
            r, r_cpu = o.measure(a.min_time, a.warmup)
            w, w_cpu = float("nan"), float("nan")
            if v is not None:
                time.sleep(0.05)
                w, w_cpu = v.measure(a.min_time, a.warmup)
            best = min(r, w) if v is not None else r
            best_cpu = min(r_cpu, w_cpu) if v is not None else r_cpu
            rounds.append((k, r, w, k_cpu, r_cpu, w_cpu, k / best, k_cpu / best_cpu, b, b / best, b_cpu / best_cpu))
        med = [statistics.median(x[i] for x in rounds) for i in range(11)]
        rows.append((case.name, med))
        print("%s: kiln %.1f us, ort %.1f us, ov %.1f us, kiln / faster peer %.2f (cpu %.2f)%s" % (
            case.name, med[0], med[1], med[2], med[6], med[7],
            "" if base is None else "; base %.1f us, base / faster peer %.2f (cpu %.2f)" % (med[8], med[9], med[10])),
            flush=True)
        if not a.keep:
            shutil.rmtree(kiln.dir, ignore_errors=True)
            if base is not None:
                shutil.rmtree(base.dir, ignore_errors=True)
    print("\nMedians over %d rounds of each side's p50 per call (us), 1 thread; ratio = median of per-round "
          "Kiln / faster peer (wall, and CPU time per call); outputs checked against ORT (rel. tolerance %g, "
          "integer-valued and copying operators bitwise); load average at the end %.1f %.1f %.1f\n" % (
              a.rounds, a.tolerance, *os.getloadavg()))
    with_base = a.base is not None
    print("| case |%s Kiln us | ORT us | OV us |%s Kiln / faster | cpu ratio | |" % (
        " base us |" if with_base else "", " base / faster | base cpu ratio |" if with_base else ""))
    ncols = 10 if with_base else 7
    print("|---|" + ("---|" * (ncols - 1)))
    for name, m in rows:
        if isinstance(m, str):
            print("| " + " | ".join([name] + [""] * (ncols - 2) + [m.replace("|", "\\|")]) + " |")
            continue
        flag = "**>= 1.5**" if m[6] >= 1.5 else ""
        if with_base:
            print("| %s | %.1f | %.1f | %.1f | %.1f | %.2f | %.2f | %.2f | %.2f | %s |" % (
                name, m[8], m[0], m[1], m[2], m[9], m[10], m[6], m[7], flag))
        else:
            print("| %s | %.1f | %.1f | %.1f | %.2f | %.2f | %s |" % (name, m[0], m[1], m[2], m[6], m[7], flag))
    if not a.keep:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
