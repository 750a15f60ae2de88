"""Latency of the corpus's published models (tests/models/manifests): ONNX Runtime, Kiln, OpenVINO.

Not part of `make test`. Run with the project venv's python after scripts/fetch_models.sh:

    build/venv/bin/python benchmarks/models_corpus_bench.py [--cache build/models] [--build build]
        [--threads 1,2] [--rounds 3] [--min-time 0.5] [--only ID,ID] [--no-kiln] [--no-openvino]
        [--no-kiln-symbolic ID,ID]

For each fetched model, at its manifest's benchmark shape (`bench_shape`, an index into
`shapes`), with the manifest's inputs (the harness's own, seed 1000 + the shape's index):
  - ONNX Runtime: an InferenceSession (all graph optimizations, intra_op_num_threads = T,
    inter_op_num_threads = 1), one sess.run per call from Python after two warm-up calls,
    calls repeated for at least --min-time seconds; a round's figure is its median call.
  - Kiln, for the models whose manifest says `expect = "pass"`: kiln-compile once with the
    symbolic dimensions (as the test does), then `kiln-bench FILE --input=@x.npy ...
    --threads=T --min-time=S --format=json`, a round's figure being its p50.
  - Kiln pinned: the same, compiled with every named symbolic dimension fixed by --dim to the
    benchmark shape's value (a model compiled once is to run within 10 % of this, issue 20 §3).
  - OpenVINO, when the venv has `openvino` (the benchmark venv, build/bench-venv, that
    scripts/setup_bench_venv.sh makes, has it): the ONNX model reshaped to the benchmark shape,
    compiled for CPU with INFERENCE_PRECISION_HINT=f32, DYNAMIC_QUANTIZATION_GROUP_SIZE=0 (no
    int8 activations behind int8-stored weights: float32 as the graph says) and
    INFERENCE_NUM_THREADS=T, timed as ONNX Runtime.
  - Memory: the peak resident set (RSS) of kiln-compile, of kiln-bench running the symbolic file
    at 1 thread (not for --no-kiln-symbolic models), and of a
    child process per peer that makes its session and runs 3 calls at 1 thread (so each figure
    includes that runtime's Python, libraries and weights).
Each cell is the median of --rounds rounds (one round where a call takes over --slow
seconds, marked with *); the rounds interleave the runtimes so that they
see the same load. The load average at the start and the end is printed: on a busy machine
the numbers are noisy. Output: a Markdown table on stdout.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "models"))
import corpus  # noqa: E402


def save_inputs(m, feeds, d, prefix):
    """Writes each input of model m from feeds to d/PREFIXinJ.npy; returns the paths in input order."""
    npys = []
    for j, i in enumerate(m.inputs):
        npys.append(os.path.join(d, f"{prefix}in{j}.npy"))
        np.save(npys[-1], feeds[i["name"]])
    return npys


def named_dims(m, case):
    """{symbolic dimension name: its value in case} over model m's inputs (what --dim pins)."""
    dims = {}
    for i in m.inputs:
        for dim, v in zip(i["dims"], m.shape_of(i, case)):
            if isinstance(dim, str) and dim != "?":
                dims[dim] = v
    return dims


def time_calls(fn, min_time):
    """Median seconds per call of fn() over calls made for at least min_time seconds, after 2 warm-ups."""
    fn()
    fn()
    times, start = [], time.perf_counter()
    while len(times) < 3 or time.perf_counter() - start < min_time:
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def ort_runner(path, feeds, threads):
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    return lambda: sess.run(None, feeds)


def openvino_runner(path, feeds, threads):
    import openvino as ov
    core = ov.Core()
    model = core.read_model(path)
    model.reshape({name: ov.PartialShape(list(a.shape)) for name, a in feeds.items()})
    # DYNAMIC_QUANTIZATION_GROUP_SIZE=0: without it OpenVINO quantizes the activations of layers
    # whose weights the graph stores as int8 (minilm_l6_int8) and is 1.2e-2 off (see
    # benchmarks/openvino_exactness_bench.py), which the f32 hint alone does not prevent.
    compiled = core.compile_model(model, "CPU", {"INFERENCE_PRECISION_HINT": "f32",
                                                 "DYNAMIC_QUANTIZATION_GROUP_SIZE": 0,
                                                 "INFERENCE_NUM_THREADS": threads,
                                                 "PERFORMANCE_HINT": "LATENCY"})
    request = compiled.create_infer_request()
    ordered = [feeds[i.get_any_name()] for i in compiled.inputs]
    return lambda: request.infer(ordered)


def run_measured(cmd):
    """Runs cmd; (return code, stdout bytes, wall seconds, peak RSS in MB). The RSS comes from
    /usr/bin/time: a child forked from this (large) Python process would report this process's
    resident set from before its exec as its own peak."""
    if not os.path.exists("/usr/bin/time"):  # Debian's `time` package
        t0 = time.perf_counter()
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        return p.returncode, p.stdout, time.perf_counter() - t0, None
    with tempfile.NamedTemporaryFile(mode="r", suffix=".rss") as rss:
        t0 = time.perf_counter()
        p = subprocess.run(["/usr/bin/time", "-f", "%M", "-o", rss.name] + cmd, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT)
        wall = time.perf_counter() - t0
        text = rss.read().split()
        kb = float(text[-1]) if text and text[-1].isdigit() else None
        return p.returncode, p.stdout, wall, kb / 1024.0 if kb is not None else None


def kiln_bench(kiln_bench_path, vmfb, npys, threads, min_time):
    """(seconds per call (p50), peak RSS MB of the kiln-bench process)."""
    cmd = [kiln_bench_path, vmfb] + [f"--input=@{p}" for p in npys] + \
          [f"--threads={threads}", f"--min-time={min_time}", "--warmup=1", "--runs=3", "--format=json"]
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, check=True)
    return json.loads(p.stdout)["results"][0]["latency_ms"]["p50"] / 1e3


def kiln_bench_rss(kiln_bench_path, vmfb, npys):
    """Peak RSS (MB) of kiln-bench running the model a few times at 1 thread."""
    cmd = [kiln_bench_path, vmfb] + [f"--input=@{p}" for p in npys] + \
          ["--threads=1", "--min-time=0", "--warmup=1", "--runs=2", "--format=json"]
    rc, out, _, rss = run_measured(cmd)
    return rss if rc == 0 else None


def peer_rss(kind, path, named_npys):
    """Peak RSS (MB) of a child process that makes a `kind` session and runs it 3 times at 1 thread."""
    cmd = [sys.executable, os.path.abspath(__file__), "--rss-child", kind, path] + \
          [f"{n}={f}" for n, f in named_npys]
    rc, out, _, rss = run_measured(cmd)
    return rss if rc == 0 else None


def rss_child(argv):
    kind, path = argv[0], argv[1]
    feeds = {}
    for a in argv[2:]:
        name, f = a.rsplit("=", 1)
        feeds[name] = np.load(f)
    run = ort_runner(path, feeds, 1) if kind == "ort" else openvino_runner(path, feeds, 1)
    for _ in range(3):
        run()
    return 0


def fmt(seconds):
    if seconds is None:
        return "—"
    ms = seconds * 1e3
    return f"{ms:.3g}" if ms < 100 else f"{ms:.0f}"


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--rss-child":
        return rss_child(sys.argv[2:])
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cache", default="build/models")
    ap.add_argument("--build", default="build")
    ap.add_argument("--kiln-compile", default=None, help="default: BUILD/tools/kiln-compile/kiln-compile")
    ap.add_argument("--kiln-bench", default=None, help="default: BUILD/tools/kiln-bench/kiln-bench")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--min-time", type=float, default=0.5)
    ap.add_argument("--only", default="")
    ap.add_argument("--slow", type=float, default=2.0,
                    help="a runtime whose first round takes longer than this many seconds per call runs one round")
    ap.add_argument("--no-kiln", action="store_true")
    ap.add_argument("--no-openvino", action="store_true")
    ap.add_argument("--no-kiln-symbolic", default="",
                    help="ID,ID: models whose symbolic Kiln file is compiled but not timed (calls of many seconds)")
    ap.add_argument("--work", default=None, help="where the .vmfb and inputs go (default: a temporary folder)")
    args = ap.parse_args()
    kc = args.kiln_compile or os.path.join(args.build, "tools", "kiln-compile", "kiln-compile")
    kb = args.kiln_bench or os.path.join(args.build, "tools", "kiln-bench", "kiln-bench")
    threads = [int(t) for t in args.threads.split(",")]
    use_ov = not args.no_openvino
    if use_ov:
        try:
            import openvino  # noqa: F401
        except ImportError:
            use_ov = False
            print("(no openvino in this venv: its columns are left out)", file=sys.stderr)
    work = args.work or tempfile.mkdtemp(prefix="kiln-corpus-bench-")
    load0 = open("/proc/loadavg").read().split()[:3]

    rows = []
    for m in corpus.load_all([s for s in args.only.split(",") if s]):
        path = m.cache_path(args.cache)
        state, why = corpus.cache_state(m, args.cache)
        if state != "ok":
            print(f"{m.id}: skipped, {why}", file=sys.stderr)
            continue
        case = m.shapes[m.bench_shape]
        feeds = m.make_inputs(case, seed=1000 + m.bench_shape)
        runners = {}
        for t in threads:
            runners[("ort", t)] = ort_runner(path, feeds, t)
            if use_ov:
                try:
                    runners[("ov", t)] = openvino_runner(path, feeds, t)
                except Exception as e:  # a model OpenVINO cannot read: its cells stay empty
                    print(f"{m.id}: OpenVINO failed: {str(e).splitlines()[0][:200]}", file=sys.stderr)
        vmfb, npys = None, []
        d = os.path.join(work, m.id)
        os.makedirs(d, exist_ok=True)
        for j, i in enumerate(m.inputs):
            npys.append(os.path.join(d, f"in{j}.npy"))
            np.save(npys[-1], feeds[i["name"]])
        memory = {"ort": peer_rss("ort", path, [(i["name"], f) for i, f in zip(m.inputs, npys)])}
        if ("ov", threads[0]) in runners:
            memory["ov"] = peer_rss("ov", path, [(i["name"], f) for i, f in zip(m.inputs, npys)])
        if m.expect == "pass" and not args.no_kiln:
            vmfb = os.path.join(d, m.id + ".vmfb")
            rc, out, compile_s, memory["compile"] = run_measured([kc, path, "-o", vmfb] + m.compile_args)
            if rc != 0:
                print(f"{m.id}: kiln-compile failed: {out.decode()[-500:]}", file=sys.stderr)
                vmfb = None
            elif m.id not in args.no_kiln_symbolic.split(","):
                memory["kiln"] = kiln_bench_rss(kb, vmfb, npys)
        pinned = None
        if vmfb:
            # The same model with every named symbolic dimension pinned to the benchmark shape's
            # value (--dim): what the symbolic compile is to be within 10 % of (issue 20 §3).
            dims = named_dims(m, case)
            if dims:
                pinned = os.path.join(d, m.id + ".pinned.vmfb")
                p = subprocess.run([kc, path, "-o", pinned] + m.compile_args +
                                   [f"--dim={k}={v}" for k, v in dims.items()],
                                   stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
                if p.returncode != 0:
                    print(f"{m.id}: kiln-compile with --dim failed: {p.stdout.decode()[-500:]}", file=sys.stderr)
                    pinned = None
        results = {}
        for r in range(args.rounds):
            for t in threads:
                for kind in ("ort", "kiln", "kiln-pinned", "ov"):
                    if r > 0 and results.get((kind, t)) and results[(kind, t)][0] > args.slow:
                        continue  # one round is enough to see a call of seconds
                    if kind == "kiln" and m.id in args.no_kiln_symbolic.split(","):
                        continue
                    if kind.startswith("kiln"):
                        f = vmfb if kind == "kiln" else pinned
                        if f:
                            results.setdefault((kind, t), []).append(kiln_bench(kb, f, npys, t, args.min_time))
                    elif (kind, t) in runners:
                        results.setdefault((kind, t), []).append(time_calls(runners[(kind, t)], args.min_time))
        med = {k: statistics.median(v) for k, v in results.items()}
        one_round = {k for k, v in results.items() if len(v) == 1 and args.rounds > 1}
        rows.append((m, case, med, compile_s if vmfb else None, one_round, memory))
        print(f"{m.id}: " + ", ".join(f"{k[0]}@{k[1]}t {fmt(v)} ms" for k, v in sorted(med.items())) +
              (f", compile {compile_s:.1f} s" if vmfb else "") +
              ", peak RSS " + ", ".join(f"{k} {v:.0f} MB" for k, v in memory.items() if v is not None),
              file=sys.stderr, flush=True)
    load1 = open("/proc/loadavg").read().split()[:3]

    kinds = [("ort", "ONNX Runtime"), ("kiln", "Kiln"), ("kiln-pinned", "Kiln pinned")] + ([("ov", "OpenVINO")] if use_ov else [])
    head = ["model", "shape"] + [f"{name} {t}t (ms)" for _, name in kinds for t in threads] + ["Kiln compile (s)"]
    mem_kinds = [("compile", "kiln-compile"), ("kiln", "Kiln"), ("ort", "ONNX Runtime")] + \
        ([("ov", "OpenVINO")] if use_ov else [])
    head += [f"{name} peak RSS (MB)" for _, name in mem_kinds]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for m, case, med, cs, one_round, memory in rows:
        cells = [m.id, m.shape_label(case)] + [fmt(med.get((k, t))) + ("*" if (k, t) in one_round else "")
                                               for k, _ in kinds for t in threads]
        cells.append(f"{cs:.1f}" if cs is not None else "—")
        cells += [f"{memory[k]:.0f}" if memory.get(k) is not None else "—" for k, _ in mem_kinds]
        print("| " + " | ".join(cells) + " |")
    print(f"\nmedian of {args.rounds} rounds, each at least {args.min_time} s per runtime; "
          f"load average {' '.join(load0)} at the start, {' '.join(load1)} at the end; {os.cpu_count()} CPUs")


if __name__ == "__main__":
    sys.exit(main())
