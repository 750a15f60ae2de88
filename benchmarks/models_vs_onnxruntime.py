"""The three example models compiled by Kiln against ONNX Runtime, end to end, in one run.

Not part of `make test`. Run it with the project's venv, which has ONNX Runtime, onnx and numpy
(`scripts/setup_venv.sh` makes build/venv): `build/venv/bin/python benchmarks/models_vs_onnxruntime.py ...`. Run from the
repository root after building kiln-compile, kiln-run and kiln-bench.

Models (issue 4 §6):
  mlp          examples/mlp.relax               batch n = 1, 64
  transformer  examples/transformer_block.relax sequence length s = 1, 17, 128 (symbolic)
  resnet       examples/resnet_block.relax      1x64x56x56 (static)

For each model the script
  - draws the weights from a seeded numpy generator and writes them as a .npz params file
    (and one .npy per weight for the weights-as-inputs variant);
  - compiles it twice with kiln-compile: `--params` (weights become constants of the .vmfb,
    the production case: "kiln") and without (weights are run-time arguments: "kiln-args");
    `--emit=relax` of each gives the fused module, whose kernels are counted;
  - builds the same math as an ONNX graph with onnx.helper, the weights as initializers;
  - runs Kiln (kiln-run, x from its random:SEED generator, reproduced here in numpy) and
    ONNX Runtime on the same inputs and checks that the outputs agree (exits 1 if not);
  - times both with each thread count: --rounds rounds, each one measurement of kiln, one of
    ONNX Runtime and one of kiln-args (each at least --min-time seconds), so the three see
    the same load; the table gives the median time per call of each and the median of the
    per-round ratios kiln / ORT.

How each side is timed:
  - Kiln: `kiln-bench FILE.vmfb --threads=T --format=json --min-time=S` (one measurement per
    round, its median call; the module is loaded once per process, outside the timing).
    The time is one Context::Invoke / graph run as a C++ caller sees it.
  - ONNX Runtime: an InferenceSession (all graph optimizations, intra_op_num_threads = T,
    inter_op_num_threads = 1, sequential), input and output bound once (IOBinding), each call
    one run_with_iobinding from Python. That includes the Python binding's cost; the
    "ORT floor" line prints that cost for a one-element Add so small cases can be judged.
  - cpu columns (1 thread only): CPU time of the calling thread per call (Google Benchmark's
    cpu_time; time.thread_time() for ORT). With one thread both run every kernel on that
    thread, so on a loaded machine these are less disturbed than wall time.

usage: benchmarks/models_vs_onnxruntime.py [--build build] [--models mlp,transformer,resnet]
           [--threads 1,2] [--rounds 5] [--min-time 0.5] [--keep DIR]
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

X_SEED = 1  # kiln-run's random:SEED for the model input
WEIGHT_SEEDS = {"mlp": 11, "transformer": 12, "resnet": 13}  # numpy generators of the weights


# --- inputs -----------------------------------------------------------------------------------

def splitmix_f32(shape, seed):
    """kiln-run's random:SEED for float32 (tools/common/inline_tensor.h), vectorized."""
    n = int(np.prod(shape))
    with np.errstate(over="ignore"):
        state = np.uint64(seed) + np.arange(1, n + 1, dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15)
        z = state
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        z ^= z >> np.uint64(31)
    return ((z >> np.uint64(40)).astype(np.float64) * 2.0**-24 * 2.0 - 1.0).astype(np.float32).reshape(shape)


def spec(shape):
    return "x".join(map(str, shape)) + "xf32"


# --- the models: weights, input shape, ONNX graph ---------------------------------------------

def normal(rng, shape, scale):
    return (rng.standard_normal(shape) * scale).astype(np.float32)


def mlp_weights(rng):
    return {"w0": normal(rng, (128, 784), 784 ** -0.5), "b0": normal(rng, (128,), 0.1),
            "w1": normal(rng, (10, 128), 128 ** -0.5), "b1": normal(rng, (10,), 0.1)}


def mlp_onnx(w):
    nodes = [
        helper.make_node("Gemm", ["x", "w0", "b0"], ["h"], transB=1),
        helper.make_node("Relu", ["h"], ["r"]),
        helper.make_node("Gemm", ["r", "w1", "b1"], ["y"], transB=1),
    ]
    return nodes, ["n", 784], ["n", 10], w


def transformer_weights(rng):
    w = {"ln1_g": 1 + normal(rng, (64,), 0.1), "ln1_b": normal(rng, (64,), 0.1)}
    for name in ["wq", "wk", "wv", "wo"]:
        w[name] = normal(rng, (64, 64), 64 ** -0.5)
    w.update({"bo": normal(rng, (64,), 0.1), "ln2_g": 1 + normal(rng, (64,), 0.1),
              "ln2_b": normal(rng, (64,), 0.1), "w1": normal(rng, (64, 256), 64 ** -0.5),
              "b1": normal(rng, (256,), 0.1), "w2": normal(rng, (256, 64), 256 ** -0.5),
              "b2": normal(rng, (64,), 0.1)})
    return w


def transformer_onnx(w):
    # The .relax program step by step: 4 heads of 16, scores scaled by 0.25 = 1/sqrt(16),
    # softmax over keys, exact (erf) GELU, layer norms over the last axis with epsilon 1e-5.
    consts = {
        "heads_shape": np.array([-1, 4, 16], np.int64),
        "model_shape": np.array([-1, 64], np.int64),
        "scale": np.array(0.25, np.float32),
        "half": np.array(0.5, np.float32),
        "one": np.array(1.0, np.float32),
        "sqrt2": np.array(1.4142135623730951, np.float32),
    }
    n = helper.make_node
    nodes = [
        n("LayerNormalization", ["x", "ln1_g", "ln1_b"], ["h"], axis=-1, epsilon=1e-5),
        n("MatMul", ["h", "wq"], ["q"]),
        n("MatMul", ["h", "wk"], ["k"]),
        n("MatMul", ["h", "wv"], ["v"]),
        n("Reshape", ["q", "heads_shape"], ["q_r"]),
        n("Transpose", ["q_r"], ["q3"], perm=[1, 0, 2]),
        n("Reshape", ["k", "heads_shape"], ["k_r"]),
        n("Transpose", ["k_r"], ["kt"], perm=[1, 2, 0]),
        n("Reshape", ["v", "heads_shape"], ["v_r"]),
        n("Transpose", ["v_r"], ["v3"], perm=[1, 0, 2]),
        n("MatMul", ["q3", "kt"], ["qk"]),
        n("Mul", ["qk", "scale"], ["scores"]),
        n("Softmax", ["scores"], ["p"], axis=-1),
        n("MatMul", ["p", "v3"], ["ctx"]),
        n("Transpose", ["ctx"], ["ctx_t"], perm=[1, 0, 2]),
        n("Reshape", ["ctx_t", "model_shape"], ["ctx2"]),
        n("MatMul", ["ctx2", "wo"], ["attn_m"]),
        n("Add", ["attn_m", "bo"], ["attn"]),
        n("Add", ["x", "attn"], ["r1"]),
        n("LayerNormalization", ["r1", "ln2_g", "ln2_b"], ["h2"], axis=-1, epsilon=1e-5),
        n("MatMul", ["h2", "w1"], ["f1_m"]),
        n("Add", ["f1_m", "b1"], ["f1_pre"]),
        # gelu(t) = 0.5 t (1 + erf(t / sqrt 2)), written with Div as exporters write it: ORT's
        # optimizer fuses this form into its Gelu kernel (with Mul by 1/sqrt 2 it does not).
        n("Div", ["f1_pre", "sqrt2"], ["g_a"]),
        n("Erf", ["g_a"], ["g_b"]),
        n("Add", ["g_b", "one"], ["g_c"]),
        n("Mul", ["f1_pre", "g_c"], ["g_d"]),
        n("Mul", ["g_d", "half"], ["f1"]),
        n("MatMul", ["f1", "w2"], ["f2_m"]),
        n("Add", ["f2_m", "b2"], ["f2"]),
        n("Add", ["r1", "f2"], ["y"]),
    ]
    return nodes, ["s", 64], ["s", 64], dict(w, **consts)


def resnet_weights(rng):
    w = {}
    for i in ("1", "2"):
        w["w" + i] = normal(rng, (64, 64, 3, 3), 576 ** -0.5)
        w["g" + i] = 1 + normal(rng, (64,), 0.1)
        w["be" + i] = normal(rng, (64,), 0.1)
        w["m" + i] = normal(rng, (64,), 0.1)
        w["v" + i] = rng.uniform(0.5, 1.5, (64,)).astype(np.float32)
    return w


def resnet_onnx(w):
    # relu(bn2(conv2(relu(bn1(conv1(x))))) + x); 3x3, stride 1, padding 1, inference batch norm
    # with epsilon 1e-5 (ORT folds it into the convolution, as Kiln fuses it into the epilogue).
    n = helper.make_node
    conv = dict(kernel_shape=[3, 3], pads=[1, 1, 1, 1], strides=[1, 1])
    nodes = [
        n("Conv", ["x", "w1"], ["c1"], **conv),
        n("BatchNormalization", ["c1", "g1", "be1", "m1", "v1"], ["n1"], epsilon=1e-5),
        n("Relu", ["n1"], ["a1"]),
        n("Conv", ["a1", "w2"], ["c2"], **conv),
        n("BatchNormalization", ["c2", "g2", "be2", "m2", "v2"], ["n2"], epsilon=1e-5),
        n("Add", ["n2", "x"], ["s"]),
        n("Relu", ["s"], ["y"]),
    ]
    return nodes, [1, 64, 56, 56], [1, 64, 56, 56], w


MODELS = {
    # name: (relax file, weights, onnx graph, sizes, input shape of a size, output shape of a size)
    "mlp": ("examples/mlp.relax", mlp_weights, mlp_onnx, [1, 64],
            lambda n: (n, 784), lambda n: (n, 10), "n"),
    "transformer": ("examples/transformer_block.relax", transformer_weights, transformer_onnx,
                    [1, 17, 128], lambda s: (s, 64), lambda s: (s, 64), "s"),
    "resnet": ("examples/resnet_block.relax", resnet_weights, resnet_onnx, [1],
               lambda _: (1, 64, 56, 56), lambda _: (1, 64, 56, 56), "n"),
}


def onnx_model(builder, weights):
    nodes, x_dims, y_dims, inits = builder(weights)
    graph = helper.make_graph(
        nodes, "model",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, x_dims)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, y_dims)],
        initializer=[numpy_helper.from_array(v, k) for k, v in inits.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8  # what every recent ONNX Runtime reads
    onnx.checker.check_model(model)
    return model.SerializeToString()


# --- running and timing -------------------------------------------------------------------------

def tool(build, name):
    return os.path.join(build, "tools", name, name)


def run(args):
    res = subprocess.run(args, capture_output=True, text=True)
    if res.returncode != 0:
        sys.exit("FAILED (%d): %s\n%s%s" % (res.returncode, " ".join(args), res.stdout, res.stderr))
    return res.stdout


class KilnVariant:
    def __init__(self, build, relax, tmp, label, params, weight_files):
        self.build, self.label = build, label
        self.vmfb = os.path.join(tmp, label + ".vmfb")
        extra = ["--params", params] if params else []
        run([tool(build, "kiln-compile"), relax, "-o", self.vmfb] + extra)
        text = run([tool(build, "kiln-compile"), relax, "--emit=relax"] + extra)
        self.kernels = len(re.findall(r"@T\.prim_func", text))
        self.calls = len(re.findall(r"R\.call_tir\(|R\.call_dps_packed\(|R\.call_packed\(", text))
        self.weight_inputs = ["--input=@" + f for f in weight_files]

    def inputs(self, x_shape):
        return ["--input=%s=random:%d" % (spec(x_shape), X_SEED)] + self.weight_inputs

    def output(self, x_shape, path):
        run([tool(self.build, "kiln-run"), self.vmfb, "--output=@" + path] + self.inputs(x_shape))
        return np.load(path)

    def measure(self, x_shape, threads, min_time):
        """One kiln-bench measurement: (median wall us, calling thread's CPU us per call, executor)."""
        out = run([tool(self.build, "kiln-bench"), self.vmfb, "--threads=%d" % threads, "--format=json",
                   "--runs=10", "--min-time=%g" % min_time] + self.inputs(x_shape))
        r = json.loads(out)["results"][0]
        cpu = r.get("cpu_ms_per_call")
        return r["latency_ms"]["p50"] * 1e3, (cpu * 1e3 if cpu is not None else float("nan")), r["executor"]


class OrtSession:
    def __init__(self, model, x, y_shape, threads, spin=True):
        opts = ort.SessionOptions()
        if not spin:  # ORT's workers spin between calls by default
            opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
        opts.intra_op_num_threads = threads
        opts.inter_op_num_threads = 1
        opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        self.sess = ort.InferenceSession(model, opts, providers=["CPUExecutionProvider"])
        self.binding = self.sess.io_binding()
        self.binding.bind_ortvalue_input("x", ort.OrtValue.ortvalue_from_numpy(x))
        self.y = ort.OrtValue.ortvalue_from_shape_and_type(list(y_shape), np.float32)
        self.binding.bind_ortvalue_output("y", self.y)
        for _ in range(3):
            self.sess.run_with_iobinding(self.binding)

    def output(self):
        self.sess.run_with_iobinding(self.binding)
        return self.y.numpy().copy()

    def measure(self, min_time):
        """One measurement like Google Benchmark's: (wall us, calling thread's CPU us)."""
        run_once, binding = self.sess.run_with_iobinding, self.binding
        iters = 1
        while True:  # grow the batch of calls until one batch lasts min_time
            c0, t0 = time.thread_time(), time.perf_counter()
            for _ in range(iters):
                run_once(binding)
            wall, cpu = time.perf_counter() - t0, time.thread_time() - c0
            if wall >= min_time:
                return wall / iters * 1e6, cpu / iters * 1e6
            iters = max(iters * 2, int(iters * min_time * 1.4 / max(wall, 1e-9)))


def ort_floor_us(min_time):
    """The cost of one run_with_iobinding of a one-element Add (the Python binding's share)."""
    graph = helper.make_graph([helper.make_node("Add", ["x", "x"], ["y"])], "floor",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    s = OrtSession(model.SerializeToString(), np.ones(1, np.float32), (1,), 1)
    return statistics.median(s.measure(min_time)[0] for _ in range(3))


def check(name, got, ref, tol):
    abs_err = float(np.max(np.abs(got.astype(np.float64) - ref)))
    rel_err = abs_err / max(float(np.max(np.abs(ref))), 1e-30)
    ok = got.shape == ref.shape and rel_err <= tol
    print("  %-36s max abs err %.3g, max abs err / max |ref| %.3g %s" %
          (name, abs_err, rel_err, "ok" if ok else "MISMATCH (tolerance %g)" % tol))
    return ok


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default="build")
    ap.add_argument("--models", default="mlp,transformer,resnet")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--min-time", type=float, default=0.5)
    ap.add_argument("--tolerance", type=float, default=1e-5,
                    help="largest accepted max|kiln - ort| / max|ort| (default 1e-5)")
    ap.add_argument("--keep", help="write the .npz, .onnx and .vmfb files here instead of a temp dir")
    ap.add_argument("--ort-spin", choices=["on", "off"], default="on",
                    help="ONNX Runtime's session.intra_op.allow_spinning (default on, ORT's default)")
    ap.add_argument("--no-args-variant", action="store_true", help="skip the weights-as-inputs variant")
    a = ap.parse_args()
    threads_list = [int(t) for t in a.threads.split(",")]
    tmp = a.keep or tempfile.mkdtemp(prefix="kiln_models_")
    os.makedirs(tmp, exist_ok=True)
    load = os.getloadavg()
    print("ONNX Runtime %s, Kiln build %s, %s UTC, load average %.1f %.1f %.1f" % (
        ort.__version__, a.build, time.strftime("%Y-%m-%d %H:%M", time.gmtime()), *load))
    print("ORT floor (one-element Add through run_with_iobinding): %.1f us" % ort_floor_us(a.min_time))

    rows, ok = [], True  # ok: every check so far passed
    for name in a.models.split(","):
        relax, make_weights, make_onnx, sizes, x_shape_of, y_shape_of, _ = MODELS[name]
        weights = make_weights(np.random.default_rng(WEIGHT_SEEDS[name]))
        params = os.path.join(tmp, name + "_params.npz")
        np.savez(params, **weights)  # uncompressed: what the compiler's npz reader takes
        weight_files = []
        for k, v in weights.items():
            weight_files.append(os.path.join(tmp, "%s_%s.npy" % (name, k)))
            np.save(weight_files[-1], v)
        kiln = KilnVariant(a.build, relax, tmp, name, params, [])
        variants = [kiln]
        if not a.no_args_variant:
            # Parameter order of main: x first, then the weights in the order written above,
            # which is the order of each .relax file's signature.
            variants.append(KilnVariant(a.build, relax, tmp, name + "-args", None, weight_files))
        model = onnx_model(make_onnx, weights)
        with open(os.path.join(tmp, name + ".onnx"), "wb") as f:
            f.write(model)
        print("\n%s (%s): kiln %d kernels / %d calls with --params%s" % (
            name, relax, kiln.kernels, kiln.calls,
            "" if len(variants) == 1 else ", kiln-args %d kernels / %d calls" % (
                variants[1].kernels, variants[1].calls)))
        for size in sizes:
            x_shape, y_shape = x_shape_of(size), y_shape_of(size)
            x = splitmix_f32(x_shape, X_SEED)
            sessions = {t: OrtSession(model, x, y_shape, t, a.ort_spin == "on") for t in threads_list}
            ref = sessions[threads_list[0]].output().astype(np.float64)
            for v in variants:
                got = v.output(x_shape, os.path.join(tmp, "y.npy"))
                ok &= check("%s %s vs onnxruntime" % (v.label, spec(x_shape)), got, ref, a.tolerance)
            for t in threads_list[1:]:
                ok &= check("onnxruntime %d vs %d threads" % (t, threads_list[0]),
                            sessions[t].output(), ref, a.tolerance)
            if not ok:  # timing a program that computes something else would mislead
                print("\nMISMATCH: Kiln and ONNX Runtime disagree on %s %s (see above)" % (name, spec(x_shape)))
                return 1
            for t in threads_list:
                rounds = []
                for _ in range(a.rounds):
                    k_wall, k_cpu, executor = kiln.measure(x_shape, t, a.min_time)
                    o_wall, o_cpu = sessions[t].measure(a.min_time)
                    r = {"kiln": k_wall, "kiln_cpu": k_cpu, "ort": o_wall, "ort_cpu": o_cpu}
                    if len(variants) > 1:
                        r["args"] = variants[1].measure(x_shape, t, a.min_time)[0]
                    rounds.append(r)
                med = {k: statistics.median(r[k] for r in rounds) for k in rounds[0]}
                ratio = statistics.median(r["kiln"] / r["ort"] for r in rounds)
                cpu_ratio = statistics.median(r["kiln_cpu"] / r["ort_cpu"] for r in rounds)
                args_ratio = (statistics.median(r["args"] / r["ort"] for r in rounds)
                              if "args" in med else float("nan"))
                rows.append((name, spec(x_shape), t, executor, med, ratio, cpu_ratio, args_ratio))
                print("  %-14s threads %d: kiln %9.1f us, ort %9.1f us, kiln/ort %.2f" % (
                    spec(x_shape), t, med["kiln"], med["ort"], ratio), flush=True)

    print("\nmedian us per call over %d rounds (ratios: median of per-round ratios; lower is better "
          "for Kiln); load average at the end %.1f %.1f %.1f" % (a.rounds, *os.getloadavg()))
    print("| model | input | threads | executor | Kiln us | ORT us | Kiln / ORT | Kiln-args us | "
          "args / ORT | Kiln cpu us | ORT cpu us | cpu Kiln / ORT |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for name, shape, t, executor, med, ratio, cpu_ratio, args_ratio in rows:
        cpu = ("%.1f | %.1f | %.2f" % (med["kiln_cpu"], med["ort_cpu"], cpu_ratio)) if t == 1 else "– | – | –"
        args = ("%.1f | %.2f" % (med["args"], args_ratio)) if "args" in med else "– | –"
        print("| %s | %s | %d | %s | %.1f | %.1f | %.2f | %s | %s |" % (
            name, shape, t, executor, med["kiln"], med["ort"], ratio, args, cpu))
    print("\nall outputs of Kiln match ONNX Runtime (max abs err / max |ref| <= %g)" % a.tolerance)
    return 0


if __name__ == "__main__":
    sys.exit(main())
