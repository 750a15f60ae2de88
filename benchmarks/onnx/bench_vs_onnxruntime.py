"""Real networks from ONNX files (issue 7 §4, §5): Kiln against ONNX Runtime (and OpenVINO) in the same run.

Not part of `make test`. Run this script with the project's venv (ONNX Runtime, numpy; `scripts/setup_venv.sh`
makes build/venv), and
Debian's /usr/bin/python3 with torch for the export (benchmarks/onnx/export_models.py; run by this
script when the model folder has no manifest.json, or with --export). Build kiln-compile, kiln-run and
kiln-bench first. From the repository root:

    build/venv/bin/python benchmarks/onnx/bench_vs_onnxruntime.py --build build [--models-dir build/onnx-models]
        [--models mlp,mlp_b1,resnet18,mobilenet_v2,squeezenet,encoder] [--threads 1,2]
        [--rounds 5] [--min-time 0.5] [--export] [--no-openvino] [--tuning-db 'DBS/{model}-t{threads}']

With a venv that has `openvino` (build/bench-venv) OpenVINO is timed too, in the same rounds: compiled
for CPU in float32 (INFERENCE_PRECISION_HINT=f32, DYNAMIC_QUANTIZATION_GROUP_SIZE=0, as
benchmarks/models_corpus_bench.py does), INFERENCE_NUM_THREADS = threads, PERFORMANCE_HINT=LATENCY.
The issue 20 §3 torchvision models (efficientnet_b0, mobilenet_v3_large, regnet_y_800mf, densenet121)
are exported with `export_models.py --models torchvision` and timed with --models NAME,...
Besides each side's p50 wall latency the table gives its CPU time per call (kiln-bench's cpu ms;
the Python process's CPU time over the timed calls for the peers), which is what to read on a
loaded machine at 1 thread; at 2 threads it also counts idle workers' spinning.

For each model (as exported, with its saved input and PyTorch's output for it):
  - kiln-compile NAME.onnx -o NAME.vmfb (--dim from the manifest, e.g. batch=64): wall time, .vmfb size;
  - kiln-run --print-statistics: load time, first call, peak tensor memory of a call, peak RSS of the
    process; the output is checked against PyTorch's (max |kiln - torch| / max |torch|, must be
    <= --tolerance, default 1e-4) and against ONNX Runtime's;
  - timing, for each thread count: --rounds rounds, each one `kiln-bench --min-time` measurement (its
    p50 latency of single calls after --warmup calls) and one ONNX Runtime measurement of the same kind
    (p50 of single run_with_iobinding calls timed from Python, after the same warm-up; graph
    optimizations all on, intra_op_num_threads = threads, sequential); the table gives the median over
    rounds of each p50 and the median of the per-round ratios Kiln / ORT (lower is better for Kiln).
With --tuning-db TEMPLATE (e.g. 'dbs/{model}-t{threads}', the databases of `kiln-tune --threads T`),
each model also gets a tuned build per thread count T whose database exists:
`kiln-compile NAME.onnx --threads T --tuning-db DIR -o NAME.tuned-tT.vmfb` (records apply only to builds
with the --threads they were measured at). Its output is checked like the default build's, and it is
timed in the same rounds as the default build and the peers, right after the default build. With
--pinned-default, `kiln-compile --threads T` without the database is timed too (a build without --threads
plans its kernels for the machine's cores, so tuned / pinned is what the records alone change).
The ORT numbers include the Python binding's cost per call; the "ORT floor" line measures it on a
one-element Add, which matters only for the MLP at batch 1.
A model that fails to compile or to match is reported in the table with its error and not timed.
"""
import argparse
import json
import os
import re
import shlex
import statistics
import subprocess
import sys
import time

import numpy as np
import onnxruntime as ort

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from models_vs_onnxruntime import ort_floor_us  # noqa: E402  (benchmarks/models_vs_onnxruntime.py)

DEFAULT_MODELS = "mlp,mlp_b1,resnet18,mobilenet_v2,squeezenet,encoder"
# Issue 7 §5: the largest accepted Kiln / ORT ratio per model (both thread counts).
TARGETS = {"mlp": 0.95, "resnet18": 0.95, "mobilenet_v2": 0.95, "squeezenet": 0.95, "encoder": 0.9}


def tool(build, name):
    return os.path.join(build, "tools", name, name)


def run(args, check=True):
    res = subprocess.run(args, capture_output=True, text=True)
    if check and res.returncode != 0:
        raise RuntimeError("%s failed (%d):\n%s%s" % (" ".join(args), res.returncode, res.stdout, res.stderr))
    return res


def first_error_line(text):
    lines = [l for l in text.splitlines() if l.strip() and "failed (" not in l]
    return (lines[0] if lines else text.strip())[:160]


def rel_err(got, ref):
    if got.shape != ref.shape:
        return float("inf")
    ref = ref.astype(np.float64)
    return float(np.max(np.abs(got.astype(np.float64) - ref))) / max(float(np.max(np.abs(ref))), 1e-30)


class Kiln:
    def __init__(self, build, models_dir, name, entry, out_dir, compile_args=(), suffix=""):
        self.build, self.name = build, name + suffix
        self.x = os.path.join(models_dir, entry["input"])
        onnx_path = os.path.join(models_dir, entry["onnx"])
        self.vmfb = os.path.join(out_dir, self.name + ".vmfb")
        dims = ",".join("%s=%d" % kv for kv in sorted(entry.get("dims", {}).items()))
        t0 = time.perf_counter()
        run([tool(build, "kiln-compile"), onnx_path, "-o", self.vmfb] + (["--dim", dims] if dims else []) +
            list(compile_args))
        self.compile_s = time.perf_counter() - t0
        self.size = os.path.getsize(self.vmfb)

    def output_and_stats(self, out_dir):
        y = os.path.join(out_dir, self.name + ".kiln_y.npy")
        res = run([tool(self.build, "kiln-run"), self.vmfb, "--input=@" + self.x, "--output=@" + y,
                   "--threads=1", "--print-statistics"])
        text = res.stdout + res.stderr

        def stat(label):
            m = re.search(r"%s:\s+([0-9.]+) (ms|KiB|MiB|GiB|B)\b" % re.escape(label), text)
            if not m:
                return float("nan")
            v, unit = float(m.group(1)), m.group(2)
            return v * {"ms": 1, "B": 1 / 2**20, "KiB": 1 / 1024, "MiB": 1, "GiB": 1024}[unit]
        stats = {"load_ms": stat("load"), "first_call_ms": stat("first call"),
                 "peak_tensor_mib": stat("peak tensor memory (last call)"), "peak_rss_mib": stat("peak RSS")}
        return np.load(y), stats

    def measure_ms(self, threads, min_time, warmup):
        """p50 latency (ms) of single calls over one kiln-bench measurement."""
        res = run([tool(self.build, "kiln-bench"), self.vmfb, "--input=@" + self.x, "--threads=%d" % threads,
                   "--format=json", "--min-time=%g" % min_time, "--warmup=%d" % warmup])
        r = json.loads(res.stdout)["results"][0]
        return r["latency_ms"]["p50"], r.get("executor", "?"), r.get("cpu_ms_per_call", float("nan"))


class Ort:
    def __init__(self, onnx_path, x, y_shape, threads):
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = threads
        opts.inter_op_num_threads = 1
        opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        self.sess = ort.InferenceSession(onnx_path, opts, providers=["CPUExecutionProvider"])
        in_name, out_name = self.sess.get_inputs()[0].name, self.sess.get_outputs()[0].name
        self.binding = self.sess.io_binding()
        self.binding.bind_ortvalue_input(in_name, ort.OrtValue.ortvalue_from_numpy(x))
        self.y = ort.OrtValue.ortvalue_from_shape_and_type(list(y_shape), np.float32)
        self.binding.bind_ortvalue_output(out_name, self.y)

    def output(self):
        self.sess.run_with_iobinding(self.binding)
        return self.y.numpy().copy()

    def measure_ms(self, min_time, warmup):
        """(p50 latency, CPU time per call) in ms of single calls, at least 10 and at least min_time seconds."""
        return time_single_calls(lambda: self.sess.run_with_iobinding(self.binding), min_time, warmup)


def time_single_calls(fn, min_time, warmup):
    """(p50 wall ms, process CPU ms per call) of fn() called at least 10 times for at least min_time s."""
    clock = time.perf_counter
    for _ in range(warmup):
        fn()
    times, start, cpu0 = [], clock(), time.process_time()
    while len(times) < 10 or clock() - start < min_time:
        t0 = clock()
        fn()
        times.append(clock() - t0)
    cpu = (time.process_time() - cpu0) / len(times)
    return statistics.median(times) * 1e3, cpu * 1e3


class OpenVino:
    """OpenVINO's CPU plugin in float32, one infer request with its input set once."""

    def __init__(self, onnx_path, x, threads):
        import openvino as ov
        core = ov.Core()
        model = core.read_model(onnx_path)
        model.reshape({model.inputs[0].get_any_name(): ov.PartialShape(list(x.shape))})
        # The same float32 settings as benchmarks/models_corpus_bench.py (see its comment).
        compiled = core.compile_model(model, "CPU", {"INFERENCE_PRECISION_HINT": "f32",
                                                     "DYNAMIC_QUANTIZATION_GROUP_SIZE": 0,
                                                     "INFERENCE_NUM_THREADS": threads,
                                                     "PERFORMANCE_HINT": "LATENCY"})
        self.request = compiled.create_infer_request()
        self.request.set_input_tensor(ov.Tensor(np.ascontiguousarray(x)))

    def output(self):
        self.request.infer()
        return np.array(self.request.get_output_tensor().data, copy=True)

    def measure_ms(self, min_time, warmup):
        return time_single_calls(self.request.infer, min_time, warmup)


def export_models(models_dir):
    cmd = ["/usr/bin/python3", os.path.join(HERE, "export_models.py"), "--out", models_dir]
    print("exporting: " + " ".join(cmd), flush=True)
    subprocess.run(cmd, check=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default="build")
    ap.add_argument("--models-dir", default=None, help="default: BUILD/onnx-models")
    ap.add_argument("--models", default=DEFAULT_MODELS)
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--min-time", type=float, default=0.5)
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--tolerance", type=float, default=1e-4)
    ap.add_argument("--export", action="store_true", help="export the models again first")
    ap.add_argument("--no-openvino", action="store_true", help="leave OpenVINO out even when installed")
    ap.add_argument("--kiln-compile-args", default="",
                    help="more kiln-compile flags, e.g. \"--threads 1 --tuning-db DIR\" (a tuned build)")
    ap.add_argument("--tuning-db", default="",
                    help="database path with {model} and {threads}: a tuned build per thread count whose "
                         "database exists, timed beside the default build in the same rounds")
    ap.add_argument("--pinned-default", action="store_true",
                    help="with --tuning-db: also time kiln-compile --threads T without the database")
    a = ap.parse_args()
    use_ov = not a.no_openvino
    if use_ov:
        try:
            import openvino  # noqa: F401
        except ImportError:
            use_ov = False
            print("(no openvino in this venv: its columns are left out)", file=sys.stderr)
    models_dir = a.models_dir or os.path.join(a.build, "onnx-models")
    if a.export or not os.path.exists(os.path.join(models_dir, "manifest.json")):
        export_models(models_dir)
    with open(os.path.join(models_dir, "manifest.json")) as f:
        manifest = json.load(f)
    out_dir = os.path.join(models_dir, "kiln")
    os.makedirs(out_dir, exist_ok=True)
    threads_list = [int(t) for t in a.threads.split(",")]

    print("ONNX Runtime %s, Kiln build %s%s, %s UTC, load average %.1f %.1f %.1f" % (
        ort.__version__, a.build, " (kiln-compile %s)" % a.kiln_compile_args if a.kiln_compile_args else "",
        time.strftime("%Y-%m-%d %H:%M", time.gmtime()), *os.getloadavg()))
    print("ORT floor (one-element Add through run_with_iobinding): %.1f us" % ort_floor_us(min(a.min_time, 0.5)),
          flush=True)
    facts, timings = [], []
    for name in a.models.split(","):
        entry = manifest.get(name)
        if entry is None:
            sys.exit("model %s is not in %s/manifest.json (export it with export_models.py)" % (name, models_dir))
        x = np.load(os.path.join(models_dir, entry["input"]))
        ref = np.load(os.path.join(models_dir, entry["output"]))
        onnx_path = os.path.join(models_dir, entry["onnx"])
        label = "%s %s" % (name, "x".join(map(str, x.shape)))
        try:
            kiln = Kiln(a.build, models_dir, name, entry, out_dir, shlex.split(a.kiln_compile_args))
            got, stats = kiln.output_and_stats(out_dir)
        except RuntimeError as e:
            print("%s: %s" % (label, e), flush=True)
            facts.append((label, None, first_error_line(str(e).split("\n", 1)[-1])))
            continue
        sessions = {t: Ort(onnx_path, x, ref.shape, t) for t in threads_list}
        ov_sessions = {t: OpenVino(onnx_path, x, t) for t in threads_list} if use_ov else {}
        ort_y = sessions[threads_list[0]].output()
        err_torch, err_ort = rel_err(got, ref), rel_err(got, ort_y)
        if use_ov:
            print("%s: OpenVINO max rel err vs torch %.2g" % (
                label, rel_err(ov_sessions[threads_list[0]].output(), ref)), flush=True)
        ok = err_torch <= a.tolerance
        facts.append((label, dict(stats, compile_s=kiln.compile_s, size_mib=kiln.size / 2**20,
                                  err_torch=err_torch, err_ort=err_ort, ort_vs_torch=rel_err(ort_y, ref)),
                      "" if ok else "MISMATCH vs PyTorch"))
        print("%s: compiled in %.1f s, %.2f MiB; max rel err vs torch %.2g, vs ORT %.2g%s" % (
            label, kiln.compile_s, kiln.size / 2**20, err_torch, err_ort, "" if ok else "  MISMATCH"), flush=True)
        if not ok:  # timing a program that computes something else would mislead
            continue
        tuned = {}  # threads -> Kiln build with that thread count's database
        pinned = {}  # threads -> Kiln build with --threads T, no database
        for t in threads_list if a.tuning_db else []:
            db = a.tuning_db.format(model=name, threads=t)
            if not os.path.isdir(db):
                continue
            try:
                tk = Kiln(a.build, models_dir, name, entry, out_dir,
                          shlex.split(a.kiln_compile_args) + ["--threads", str(t), "--tuning-db", db],
                          suffix=".tuned-t%d" % t)
                tk_got, _ = tk.output_and_stats(out_dir)
            except RuntimeError as e:
                print("%s tuned (%s), not timed: %s" % (label, db, first_error_line(str(e).split("\n", 1)[-1])),
                      flush=True)
                continue
            tk_err = rel_err(tk_got, ref)
            print("%s: tuned at %d thread(s) with %s: compiled in %.1f s; max rel err vs torch %.2g%s" % (
                label, t, db, tk.compile_s, tk_err, "" if tk_err <= a.tolerance else "  MISMATCH (not timed)"),
                flush=True)
            if tk_err <= a.tolerance:  # a mismatching tuned build is reported, not timed
                tuned[t] = tk
                if a.pinned_default:
                    pinned[t] = Kiln(a.build, models_dir, name, entry, out_dir,
                                     shlex.split(a.kiln_compile_args) + ["--threads", str(t)], suffix=".t%d" % t)
        for t in threads_list:
            rounds = []
            for _ in range(a.rounds):
                # A pause before each side: ONNX Runtime's workers spin after
                # each run and Kiln's pool for 200 us; neither may hold the
                # other core while the other side is timed.
                time.sleep(0.05)
                k, executor, k_cpu = kiln.measure_ms(t, a.min_time, a.warmup)
                time.sleep(0.05)
                o, o_cpu = sessions[t].measure_ms(a.min_time, a.warmup)
                v, v_cpu = float("nan"), float("nan")
                if use_ov:
                    time.sleep(0.05)
                    v, v_cpu = ov_sessions[t].measure_ms(a.min_time, a.warmup)
                tu, tu_cpu = float("nan"), float("nan")
                if t in tuned:
                    time.sleep(0.05)
                    tu, _, tu_cpu = tuned[t].measure_ms(t, a.min_time, a.warmup)
                pi, pi_cpu = float("nan"), float("nan")
                if t in pinned:
                    time.sleep(0.05)
                    pi, _, pi_cpu = pinned[t].measure_ms(t, a.min_time, a.warmup)
                rounds.append((k, o, v, k_cpu, o_cpu, v_cpu, tu, tu_cpu, pi, pi_cpu))

            def med(i):
                return statistics.median(r[i] for r in rounds)

            def med_ratio(i, j):
                return statistics.median(r[i] / r[j] for r in rounds)
            ratio = med_ratio(0, 1)
            base = name.split("_b")[0] if name.startswith("mlp") else name
            target = TARGETS.get(base) if name != "mlp_b1" else None
            ov = dict(ms=med(2), cpu=med(5), ratio=med_ratio(0, 2), cpu_ratio=med_ratio(3, 5)) if use_ov else None
            tu = dict(ms=med(6), cpu=med(7), vs_default=med_ratio(6, 0), vs_ort=med_ratio(6, 1),
                      vs_ov=med_ratio(6, 2) if use_ov else float("nan"),
                      cpu_vs_default=med_ratio(7, 3), cpu_vs_ort=med_ratio(7, 4),
                      cpu_vs_ov=med_ratio(7, 5) if use_ov else float("nan"),
                      pinned_cpu=med(9) if t in pinned else float("nan"),
                      cpu_vs_pinned=med_ratio(7, 9) if t in pinned else float("nan")) if t in tuned else None
            timings.append((label, t, executor, med(0), med(1), ratio, target,
                            dict(k_cpu=med(3), o_cpu=med(4), cpu_ratio=med_ratio(3, 4)), ov, tu))
            print("  threads %d: kiln %.3f ms (cpu %.3f), ort %.3f ms (cpu %.3f), kiln/ort %.2f (cpu %.2f)%s" % (
                t, med(0), med(3), med(1), med(4), ratio, med_ratio(3, 4),
                "" if ov is None else ", ov %.3f ms (cpu %.3f), kiln/ov %.2f (cpu %.2f)" % (
                    ov["ms"], ov["cpu"], ov["ratio"], ov["cpu_ratio"])), flush=True)
            if tu is not None:
                print("  threads %d: tuned kiln %.3f ms (cpu %.3f), tuned/default %.2f (cpu %.2f), tuned/ort %.2f, "
                      "tuned/ov %.2f, pinned cpu %.3f, tuned/pinned cpu %.2f" % (
                          t, tu["ms"], tu["cpu"], tu["vs_default"], tu["cpu_vs_default"], tu["vs_ort"], tu["vs_ov"],
                          tu["pinned_cpu"], tu["cpu_vs_pinned"]), flush=True)

    print("\nModels (kiln-run --threads=1 --print-statistics; errors are max |diff| / max |reference|):\n")
    print("| model | compile s | .vmfb MiB | load ms | first call ms | peak tensor MiB | peak RSS MiB | "
          "err vs PyTorch | err vs ORT | ORT err vs PyTorch |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for label, f, err in facts:
        if f is None:
            print("| %s | failed: %s | | | | | | | | |" % (label, err.replace("|", "\\|")))
            continue
        print("| %s | %.1f | %.2f | %.2f | %.2f | %.2f | %.1f | %.2g | %.2g | %.2g |%s" % (
            label, f["compile_s"], f["size_mib"], f["load_ms"], f["first_call_ms"], f["peak_tensor_mib"],
            f["peak_rss_mib"], f["err_torch"], f["err_ort"], f["ort_vs_torch"], (" " + err) if err else ""))
    print("\nLatency: median over %d rounds of each side's p50 per call (ms); ratio = median of per-round "
          "Kiln / ORT; load average at the end %.1f %.1f %.1f\n" % (a.rounds, *os.getloadavg()))
    print("| model | threads | Kiln executor | Kiln ms | ORT ms | Kiln / ORT | issue 7 target | "
          "Kiln cpu ms | ORT cpu ms | Kiln / ORT cpu |" + (" OV ms | Kiln / OV | OV cpu ms | Kiln / OV cpu |"
                                                         if use_ov else ""))
    print("|---|---|---|---|---|---|---|---|---|---|" + ("---|---|---|---|" if use_ov else ""))
    for label, t, executor, k, o, ratio, target, cpu, ov, _ in timings:
        verdict = "–" if target is None else ("<= %.2f %s" % (target, "met" if ratio <= target else "not met"))
        line = "| %s | %d | %s | %.3f | %.3f | %.2f | %s | %.3f | %.3f | %.2f |" % (
            label, t, executor, k, o, ratio, verdict, cpu["k_cpu"], cpu["o_cpu"], cpu["cpu_ratio"])
        if ov is not None:
            line += " %.3f | %.2f | %.3f | %.2f |" % (ov["ms"], ov["ratio"], ov["cpu"], ov["cpu_ratio"])
        print(line)
    if any(tu is not None for *_, tu in timings):
        print("\nTuned builds (--tuning-db %s; same rounds; ratios are medians of per-round ratios):\n" % a.tuning_db)
        print("| model | threads | default ms | tuned ms | tuned / default | tuned / default cpu | ORT ms | "
              "tuned / ORT | tuned / ORT cpu |" + (" OV ms | tuned / OV | tuned / OV cpu |" if use_ov else "") +
              (" tuned / pinned default cpu |" if a.pinned_default else ""))
        print("|---|---|---|---|---|---|---|---|---|" + ("---|---|---|" if use_ov else "") +
              ("---|" if a.pinned_default else ""))
        for label, t, _, k, o, _, _, _, ov, tu in timings:
            if tu is None:
                continue
            line = "| %s | %d | %.3f | %.3f | %.2f | %.2f | %.3f | %.2f | %.2f |" % (
                label, t, k, tu["ms"], tu["vs_default"], tu["cpu_vs_default"], o, tu["vs_ort"], tu["cpu_vs_ort"])
            if ov is not None:
                line += " %.3f | %.2f | %.2f |" % (ov["ms"], tu["vs_ov"], tu["cpu_vs_ov"])
            if a.pinned_default:
                line += " %.2f |" % tu["cpu_vs_pinned"]
            print(line)
    return 0 if all(f is not None and not err for _, f, err in facts) else 1


if __name__ == "__main__":
    sys.exit(main())
