"""Kiln's latency at 1 and 2 threads, two builds side by side, with and without a co-located load.

Not part of `make test`. Run with the project venv's python from the repository root:

    build/venv/bin/python benchmarks/thread_scaling_bench.py --before DIR --after DIR
        [--cache build/models] [--only ID,ID] [--threads 1,2] [--rounds 3] [--min-time 0.5]
        [--loads none,yes] [--no-symbolic ID,ID]

DIR holds a `kiln-compile` and a `kiln-bench` (e.g. copies made from a build before a change,
and build/tools/... after it). For each model, at its manifest's benchmark shape with the
harness's inputs (as benchmarks/models_corpus_bench.py makes them), each build compiles the
model twice (symbolic, and pinned with --dim to the benchmark shape). Each round then runs,
for every load and thread count: ONNX Runtime (intra-op threads = T, from Python, the median
call of at least --min-time seconds) and `kiln-bench --threads=T --min-time=S` on each file
of each build. A load "yes" is one `yes > /dev/null` process at nice 0 running for the whole
cell (started before it, killed after); "none" is the machine as it is. The rounds interleave
everything, so before and after see the same background load.

Reported per cell, each the median over the rounds: the p50 wall latency, and the CPU time
per call of the whole kiln-bench process (user + system of all its threads, from getrusage(RUSAGE_CHILDREN) once it is reaped,
divided by its timed calls: it includes loading the file and the warm-up call, a few percent
at --min-time 0.5). Output: a Markdown table on stdout, progress on stderr.
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


sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "models"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import corpus  # noqa: E402
from models_corpus_bench import named_dims, ort_runner, save_inputs, time_calls  # noqa: E402


def kiln_bench(kb, vmfb, npys, threads, min_time):
    """(p50 seconds, process CPU seconds per timed call)."""
    cmd = [kb, vmfb] + [f"--input=@{p}" for p in npys] + \
          [f"--threads={threads}", f"--min-time={min_time}", "--warmup=1", "--runs=3", "--format=json"]
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out, err = p.communicate()
    if p.returncode != 0:
        raise RuntimeError(f"kiln-bench failed: {err.decode()[-300:]}")
    return json.loads(out)["results"][0]


class ChildCpu:
    """CPU seconds used by reaped children between enter and exit."""
    def __enter__(self):
        r = resource.getrusage(resource.RUSAGE_CHILDREN)
        self.start = r.ru_utime + r.ru_stime
        return self

    def __exit__(self, *a):
        r = resource.getrusage(resource.RUSAGE_CHILDREN)
        self.seconds = r.ru_utime + r.ru_stime - self.start


def start_load(kind):
    if kind == "none":
        return None
    if kind == "yes":
        return subprocess.Popen(["yes"], stdout=subprocess.DEVNULL)
    raise ValueError(kind)


def stop_load(p):
    if p is not None:
        p.kill()
        p.wait()


def compile_model(kc, path, out, args):
    p = subprocess.run([kc, path, "-o", out] + args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    if p.returncode != 0:
        print(f"{out}: kiln-compile failed: {p.stdout.decode()[-400:]}", file=sys.stderr)
        return None
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--before", required=True)
    ap.add_argument("--after", required=True)
    ap.add_argument("--cache", default="build/models")
    ap.add_argument("--only", default="")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--min-time", type=float, default=0.5)
    ap.add_argument("--loads", default="none,yes")
    ap.add_argument("--no-symbolic", default="", help="ID,ID: models timed pinned only")
    ap.add_argument("--work", default=None)
    args = ap.parse_args()
    threads = [int(t) for t in args.threads.split(",")]
    loads = args.loads.split(",")
    builds = {"before": args.before, "after": args.after}
    work = args.work or tempfile.mkdtemp(prefix="kiln-thread-bench-")
    no_sym = set(s for s in args.no_symbolic.split(",") if s)
    load0 = open("/proc/loadavg").read().split()[:3]
    t0 = time.strftime("%H:%M", time.gmtime())

    rows = []
    for m in corpus.load_all([s for s in args.only.split(",") if s]):
        path = m.cache_path(args.cache)
        state, why = corpus.cache_state(m, args.cache)
        if state != "ok":
            print(f"{m.id}: skipped, {why}", file=sys.stderr)
            continue
        case = m.shapes[m.bench_shape]
        feeds = m.make_inputs(case, seed=1000 + m.bench_shape)
        d = os.path.join(work, m.id)
        os.makedirs(d, exist_ok=True)
        npys = save_inputs(m, feeds, d, "")
        dims = named_dims(m, case)
        files = {}
        for b, bdir in builds.items():
            kc = os.path.join(bdir, "kiln-compile")
            if m.id not in no_sym:
                files[(b, "sym")] = compile_model(kc, path, os.path.join(d, f"{b}.vmfb"), m.compile_args)
            files[(b, "pinned")] = compile_model(kc, path, os.path.join(d, f"{b}.pinned.vmfb"),
                                                 m.compile_args + [f"--dim={k}={v}" for k, v in dims.items()])
        ort = {t: ort_runner(path, feeds, t) for t in threads}
        res = {}
        for r in range(args.rounds):
            for load in loads:
                for t in threads:
                    lp = start_load(load)
                    try:
                        res.setdefault(("ort", load, t), []).append((time_calls(ort[t], args.min_time), None))
                        for (b, kind), f in files.items():
                            if not f:
                                continue
                            with ChildCpu() as cpu:
                                j = kiln_bench(os.path.join(builds[b], "kiln-bench"), f, npys, t, args.min_time)
                            res.setdefault((f"{b}-{kind}", load, t), []).append(
                                (j["latency_ms"]["p50"] / 1e3, cpu.seconds / max(1, j["calls"])))
                    finally:
                        stop_load(lp)
        med = {}
        for k, v in res.items():
            wall = statistics.median(x[0] for x in v)
            cpus = [x[1] for x in v if x[1] is not None]
            med[k] = (wall, statistics.median(cpus) if cpus else None)
        rows.append((m, med))
        print(f"{m.id}: " + ", ".join(f"{k[0]}/{k[1]}/{k[2]}t {v[0]*1e3:.3g} ms" for k, v in sorted(med.items())),
              file=sys.stderr, flush=True)
    load1 = open("/proc/loadavg").read().split()[:3]

    def ms(x):
        return "—" if x is None else (f"{x*1e3:.3g}" if x < 0.1 else f"{x*1e3:.0f}")

    print(f"Run {t0}-{time.strftime('%H:%M', time.gmtime())} UTC, load average {' '.join(load0)} at the start, "
          f"{' '.join(load1)} at the end; {args.rounds} rounds of at least {args.min_time} s per cell.\n")
    kinds = ["ort"] + [f"{b}-{k}" for b in builds for k in ("sym", "pinned")]
    head = ["model", "load", "runtime"] + [f"{t}t wall (ms)" for t in threads] + \
        [f"{t}t CPU/call (ms)" for t in threads] + [f"wall {threads[0]}t/{t}t" for t in threads[1:]]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for m, med in rows:
        for load in loads:
            for k in kinds:
                if (k, load, threads[0]) not in med:
                    continue
                walls = [med.get((k, load, t), (None, None))[0] for t in threads]
                cpus = [med.get((k, load, t), (None, None))[1] for t in threads]
                speed = [f"{walls[0] / w:.2f}" if w and walls[0] else "—" for w in walls[1:]]
                print("| " + " | ".join([m.id, load, k] + [ms(w) for w in walls] + [ms(c) for c in cpus] + speed) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
