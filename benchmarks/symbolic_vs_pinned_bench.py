"""A model compiled once with symbolic dimensions against the same model compiled per shape with them pinned.

Issue 20 §3: the symbolic compile is to run within 10 % of the pinned one at every shape. Not part
of `make test`. Run with the project venv's python after scripts/fetch_models.sh:

    build/venv/bin/python benchmarks/symbolic_vs_pinned_bench.py [--cache build/models] [--build build]
        [--only ppocrv4_det] [--shapes 1x3x640x640,1x3x480x640,1x3x320x320] [--threads 1]
        [--rounds 3] [--min-time 0.5]

For each model (default: ppocrv4_det; models with one input take --shapes, others their
manifest's `shapes`): kiln-compile once as the corpus test does (symbolic), and once per shape
with every named symbolic dimension fixed by --dim to that shape's value (pinned). Then rounds
that interleave the two at each shape, each a `kiln-bench FILE --input=@x.npy --threads=T
--min-time=S --format=json` call on the same inputs. A round's figures are the p50 latency and
the CPU time per call (kiln-bench's cpu_ms_per_call: steadier than wall time on a busy machine,
but with several threads it adds the threads' time up). Printed: the medians over rounds and the
symbolic / pinned ratios of both, as a Markdown table, and the load average at the start and end.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile


sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "models"))
import corpus  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from models_corpus_bench import named_dims, save_inputs  # noqa: E402


def kiln_bench(kb, vmfb, npys, threads, min_time):
    """(p50 seconds, CPU seconds per call) of one kiln-bench run."""
    cmd = [kb, vmfb] + [f"--input=@{p}" for p in npys] + \
          [f"--threads={threads}", f"--min-time={min_time}", "--warmup=1", "--runs=3", "--format=json"]
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, check=True)
    r = json.loads(p.stdout)["results"][0]
    return r["latency_ms"]["p50"] / 1e3, r["cpu_ms_per_call"] / 1e3


def compile_model(kc, path, out, args):
    p = subprocess.run([kc, path, "-o", out] + args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    if p.returncode != 0:
        raise RuntimeError(f"kiln-compile {' '.join(args)} failed: {p.stdout.decode()[-500:]}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cache", default="build/models")
    ap.add_argument("--build", default="build")
    ap.add_argument("--only", default="ppocrv4_det")
    ap.add_argument("--shapes", default="1x3x640x640,1x3x480x640,1x3x320x320",
                    help="shapes of a one-input model's input (comma-separated, dims joined by x)")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--min-time", type=float, default=0.5)
    ap.add_argument("--work", default=None, help="where the .vmfb and inputs go (default: a temporary folder)")
    args = ap.parse_args()
    kc = os.path.join(args.build, "tools", "kiln-compile", "kiln-compile")
    kb = os.path.join(args.build, "tools", "kiln-bench", "kiln-bench")
    work = args.work or tempfile.mkdtemp(prefix="kiln-symbolic-bench-")
    load0 = open("/proc/loadavg").read().split()[:3]

    rows = []
    for m in corpus.load_all([s for s in args.only.split(",") if s]):
        path = m.cache_path(args.cache)
        state, why = corpus.cache_state(m, args.cache)
        if state != "ok":
            print(f"{m.id}: skipped, {why}", file=sys.stderr)
            continue
        if len(m.inputs) == 1 and args.shapes:
            cases = [{m.inputs[0]["name"]: [int(d) for d in s.split("x")]} for s in args.shapes.split(",")]
        else:
            cases = m.shapes
        d = os.path.join(work, m.id)
        os.makedirs(d, exist_ok=True)
        sym = os.path.join(d, "symbolic.vmfb")
        compile_model(kc, path, sym, m.compile_args)
        per_case = []
        for k, case in enumerate(cases):
            feeds = m.make_inputs(case, seed=1000 + k)
            npys = save_inputs(m, feeds, d, f"case{k}_")
            dims = named_dims(m, case)
            pinned = os.path.join(d, f"pinned{k}.vmfb")
            compile_model(kc, path, pinned, m.compile_args + [f"--dim={n}={v}" for n, v in dims.items()])
            per_case.append((case, npys, pinned))
        times = {}
        for _ in range(args.rounds):
            for k, (case, npys, pinned) in enumerate(per_case):
                for kind, f in (("symbolic", sym), ("pinned", pinned)):
                    times.setdefault((k, kind), []).append(kiln_bench(kb, f, npys, args.threads, args.min_time))
        for k, (case, _, _) in enumerate(per_case):
            med = {kind: (statistics.median(t[0] for t in times[(k, kind)]),
                          statistics.median(t[1] for t in times[(k, kind)])) for kind in ("symbolic", "pinned")}
            rows.append((m.id, m.shape_label(case), med))
            print(f"{m.id} {m.shape_label(case)}: symbolic {med['symbolic'][0] * 1e3:.1f} ms, "
                  f"pinned {med['pinned'][0] * 1e3:.1f} ms", file=sys.stderr, flush=True)
    load1 = open("/proc/loadavg").read().split()[:3]

    print("| model | shape | symbolic p50 (ms) | pinned p50 (ms) | ratio p50 | symbolic CPU (ms) | "
          "pinned CPU (ms) | ratio CPU |")
    print("|---|---|---|---|---|---|---|---|")
    for mid, label, med in rows:
        s, p = med["symbolic"], med["pinned"]
        print(f"| {mid} | {label} | {s[0] * 1e3:.1f} | {p[0] * 1e3:.1f} | {s[0] / p[0]:.2f} | "
              f"{s[1] * 1e3:.1f} | {p[1] * 1e3:.1f} | {s[1] / p[1]:.2f} |")
    print(f"\n{args.threads} thread(s), median of {args.rounds} rounds, each at least {args.min_time} s per file; "
          f"load average {' '.join(load0)} at the start, {' '.join(load1)} at the end; {os.cpu_count()} CPUs")


if __name__ == "__main__":
    sys.exit(main())
