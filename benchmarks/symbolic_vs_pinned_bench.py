"""A model compiled once with symbolic dimensions against the same model compiled per shape with them pinned.

Issue 20 §3: the symbolic compile is to run within 10 % of the pinned one at every shape. Not part
of `make test`. Run with the project venv's python after scripts/fetch_models.sh:

    build/venv/bin/python benchmarks/symbolic_vs_pinned_bench.py [--cache build/models] [--build build]
        [--all | --only ppocrv4_det,...] [--shapes 1x3x640x640,1x3x480x640] [--threads 1]
        [--rounds 3] [--min-time 0.5] [--work DIR [--reuse]] [--kernel-diff N]

Models: --all takes every corpus model that has a symbolic dimension and is expected to pass
(each at its manifest's `shapes`, three or more per model); --only names some (default
ppocrv4_det). --shapes replaces the manifest's shapes of a one-input model.

For each model: kiln-compile once as the corpus test does (symbolic), and once per shape with
every symbolic dimension fixed by --dim to that shape's value (pinned): a named one by its name,
an unnamed one ('?', -1) by input and position (`--dim x:2=48`). Then rounds that interleave the
two at each shape, each a `kiln-bench FILE --input=@x.npy --threads=T --min-time=S
--format=json` call on the same inputs. A round's figures are the p50 latency and the CPU time
per call (kiln-bench's cpu_ms_per_call: steadier than wall time on a busy machine, but with
several threads it adds the threads' time up). Printed: the medians over rounds and the
symbolic / pinned ratios of both, the median of the per-round CPU ratios (the two files of a
pair run one after the other, so they share the load of that moment) with their range, as a
Markdown table; shapes whose CPU ratio is over 1.10 are marked; then the load average at the
start and end. --interpreted also times the symbolic file with every VM call interpreted (kiln-bench
--replay=off: no call plans, vm/call_plan.h) and adds the replayed / interpreted CPU ratio per round.
--kernel-diff N then adds, for each shape over 1.10, the N kernels that hold the gap
(from a --trace of each file). A model that fails to compile or run, and a shape
whose pinned compile fails, are reported and the run goes on.
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile


sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "models"))
import corpus  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from models_corpus_bench import save_inputs  # noqa: E402


def is_static(dim):
    return isinstance(dim, int) and dim >= 1  # exporters write -1 or 0 for an unknown size


def has_symbolic_dims(m):
    return any(not is_static(d) for i in m.inputs for d in i["dims"])


def pinned_dims(m, case):
    """[--dim item] fixing every symbolic dimension of model m's inputs to its value in case: a named
    dimension by its name (once), an unnamed one ('?', -1, 0) by input and position."""
    items, named = [], set()
    for i in m.inputs:
        for pos, (dim, v) in enumerate(zip(i["dims"], m.shape_of(i, case))):
            if is_static(dim):
                continue
            if isinstance(dim, str) and dim != "?":
                if dim in named:
                    continue
                named.add(dim)
                items.append(f"{dim}={v}")
            else:
                items.append(f"{i['name']}:{pos}={v}")
    return items


def kiln_bench(kb, vmfb, npys, threads, min_time, extra=()):
    """(p50 seconds, CPU seconds per call) of one kiln-bench run."""
    cmd = [kb, vmfb] + [f"--input=@{p}" for p in npys] + \
          [f"--threads={threads}", f"--min-time={min_time}", "--warmup=1", "--runs=3", "--format=json"] + list(extra)
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, check=True)
    r = json.loads(p.stdout)["results"][0]
    return r["latency_ms"]["p50"] / 1e3, r["cpu_ms_per_call"] / 1e3


def compile_model(kc, path, out, args, reuse=False):
    # --reuse: a file newer than kiln-compile and the model was compiled by it from the same flags
    # (the file's name says which shape it pins); it saves the compiles when re-running a model.
    if reuse and os.path.exists(out) and os.path.getmtime(out) > max(os.path.getmtime(kc), os.path.getmtime(path)):
        return
    p = subprocess.run([kc, path, "-o", out] + args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    if p.returncode != 0:
        raise RuntimeError(f"kiln-compile {' '.join(args)} failed: {p.stdout.decode()[-500:]}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cache", default="build/models")
    ap.add_argument("--build", default="build")
    ap.add_argument("--only", default="ppocrv4_det", help="model ids, comma-separated")
    ap.add_argument("--all", action="store_true",
                    help="every corpus model with a symbolic dimension that is expected to pass")
    ap.add_argument("--shapes", default=None,
                    help="shapes of a one-input model's input (comma-separated, dims joined by x); "
                         "default: the manifest's")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--min-time", type=float, default=0.5)
    ap.add_argument("--work", default=None, help="where the .vmfb and inputs go (default: a temporary folder)")
    ap.add_argument("--kernel-diff", type=int, default=0, metavar="N",
                    help="for each shape over 1.10: trace both files and print the N kernels with the largest gap")
    ap.add_argument("--interpreted", action="store_true",
                    help="also time the symbolic file with kiln-bench --replay=off (every VM call interpreted, "
                         "no call plans: vm/call_plan.h) and print the replay's effect")
    ap.add_argument("--reuse", action="store_true",
                    help="keep a .vmfb already in --work that is newer than kiln-compile and the model")
    args = ap.parse_args()
    kc = os.path.join(args.build, "tools", "kiln-compile", "kiln-compile")
    kb = os.path.join(args.build, "tools", "kiln-bench", "kiln-bench")
    work = args.work or tempfile.mkdtemp(prefix="kiln-symbolic-bench-")
    load0 = open("/proc/loadavg").read().split()[:3]

    if args.all:
        models = [m for m in corpus.load_all() if has_symbolic_dims(m) and m.expect == "pass"]
    else:
        models = corpus.load_all([s for s in args.only.split(",") if s])
    rows, failed, no_pinned, diffs = [], [], [], []
    for m in models:
        try:
            rows += bench_model(m, args, kc, kb, work, no_pinned, diffs)
        except (RuntimeError, subprocess.CalledProcessError) as e:
            why = e.stderr.decode()[-300:] if isinstance(e, subprocess.CalledProcessError) and e.stderr else str(e)
            print(f"{m.id}: failed, {why}", file=sys.stderr, flush=True)
            failed.append(m.id)
    load1 = open("/proc/loadavg").read().split()[:3]

    extra_head = " interpreted CPU (ms) | replayed / interpreted CPU: median (min-max) |" if args.interpreted else ""
    print("| model | shape | symbolic p50 (ms) | pinned p50 (ms) | ratio p50 | symbolic CPU (ms) | "
          "pinned CPU (ms) | ratio CPU | per-round CPU ratio: median (min-max) |" + extra_head)
    print("|---|---|---|---|---|---|---|---|---|" + ("---|---|" if args.interpreted else ""))
    for mid, label, med, paired, replay in rows:
        s, p = med["symbolic"], med["pinned"]
        mark = "**" if s[1] / p[1] > 1.10 else ""
        extra = ""
        if args.interpreted:
            extra = (f" {fmt_ms(med['interpreted'][1])} | "
                     f"{statistics.median(replay):.2f} ({min(replay):.2f}-{max(replay):.2f}) |")
        print(f"| {mid} | {label} | {fmt_ms(s[0])} | {fmt_ms(p[0])} | {s[0] / p[0]:.2f} | "
              f"{fmt_ms(s[1])} | {fmt_ms(p[1])} | {mark}{s[1] / p[1]:.2f}{mark} | "
              f"{statistics.median(paired):.2f} ({min(paired):.2f}-{max(paired):.2f}) |" + extra)
    over = sorted({mid for mid, _, med, _, _ in rows if med["symbolic"][1] / med["pinned"][1] > 1.10})
    print(f"\n{len(rows)} shapes of {len({r[0] for r in rows})} models; CPU ratio over 1.10 in: "
          f"{', '.join(over) or 'none'}" + (f"; failed: {', '.join(failed)}" if failed else ""))
    if no_pinned:
        print("no pinned build (kiln-compile with --dim failed): " + "; ".join(f"{i} {s}" for i, s in no_pinned))
    print(f"{args.threads} thread(s), median of {args.rounds} rounds, each at least {args.min_time} s per file; "
          f"load average {' '.join(load0)} at the start, {' '.join(load1)} at the end; {os.cpu_count()} CPUs")
    for mid, label, text in diffs:
        print(f"\n{mid} {label}: per-kernel time per call, symbolic against pinned (median of each kernel's "
              f"traced calls times its calls per call; robust to the preemptions that swamp --profile's means)\n")
        print(text)
    return 1 if failed else 0


def trace_medians(kb, vmfb, npys, path, calls):
    """{event name: median duration (us) x occurrences per call} from a kiln-bench --trace of `calls` calls."""
    subprocess.run([kb, vmfb] + [f"--input=@{p}" for p in npys] +
                   ["--threads=1", "--min-time=0", "--runs=3", "--profile", f"--profile_calls={calls}", f"--trace={path}"],
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    durs = {}
    for e in json.load(open(path))["traceEvents"]:
        if e.get("ph") == "X" and e.get("cat") != "invoke" and e["name"] != "main":
            durs.setdefault(e["name"], []).append(e["dur"])
    return {k: statistics.median(v) * len(v) / calls for k, v in durs.items()}


def kernel_diff(kb, sym, pinned, npys, d, top, calls=50):
    """A Markdown table of the `top` kernels (and VM builtins) whose time per call differs most, symbolic over
    pinned. Kernels are matched by name: both builds fuse the same graph, so names mostly agree; one that
    exists in one build only (a pad fused into a pool in one, folded away in the other) shows 0 in the other."""
    a = trace_medians(kb, sym, npys, os.path.join(d, "trace_symbolic.json"), calls)
    b = trace_medians(kb, pinned, npys, os.path.join(d, "trace_pinned.json"), calls)
    rows = sorted(((a.get(k, 0.0), b.get(k, 0.0), k) for k in set(a) | set(b)), key=lambda r: r[1] - r[0])
    lines = [f"sum: symbolic {sum(a.values()):.1f} us, pinned {sum(b.values()):.1f} us per call", "",
             "| symbolic (us) | pinned (us) | gap (us) | kernel |", "|---|---|---|---|"]
    # The largest gaps, then the few where the pinned build is the slower (or the only one with that
    # kernel: when the builds fuse or name a layer differently its time shows up on both ends).
    shown = rows[:top] + [r for r in rows[max(top, len(rows) - 3):] if r[1] > r[0]]
    lines += [f"| {x:.2f} | {y:.2f} | {x - y:+.2f} | {k} |" for x, y, k in shown]
    return "\n".join(lines)


def fmt_ms(seconds):
    """Milliseconds with three significant digits (the corpus spans 15 us to 300 ms)."""
    return f"{seconds * 1e3:.3g}"


def bench_model(m, args, kc, kb, work, no_pinned, diffs):
    """Appends (model id, shape label) to no_pinned for each shape whose pinned compile fails;
    returns [(model id, shape label, {kind: (median p50 s, median CPU s)}, [per-round CPU ratio])] of model m."""
    path = m.cache_path(args.cache)
    state, why = corpus.cache_state(m, args.cache)
    if state != "ok":
        print(f"{m.id}: skipped, {why}", file=sys.stderr)
        return []
    if len(m.inputs) == 1 and args.shapes:
        cases = [{m.inputs[0]["name"]: [int(d) for d in s.split("x")]} for s in args.shapes.split(",")]
    else:
        cases = m.shapes
    d = os.path.join(work, m.id)
    os.makedirs(d, exist_ok=True)
    sym = os.path.join(d, "symbolic.vmfb")
    compile_model(kc, path, sym, m.compile_args, args.reuse)
    per_case = []
    for k, case in enumerate(cases):
        feeds = m.make_inputs(case, seed=1000 + k)
        npys = save_inputs(m, feeds, d, f"case{k}_")
        pinned = os.path.join(d, "pinned_" + re.sub(r"[^0-9A-Za-z]+", "_", m.shape_label(case)) + ".vmfb")
        try:
            compile_model(kc, path, pinned, m.compile_args + [f"--dim={item}" for item in pinned_dims(m, case)],
                          args.reuse)
        except RuntimeError as e:
            # A shape the symbolic build runs but the pinned one rejects has nothing to compare with.
            print(f"{m.id} {m.shape_label(case)}: {e}", file=sys.stderr, flush=True)
            no_pinned.append((m.id, m.shape_label(case)))
            continue
        per_case.append((case, npys, pinned))
    times = {}
    # (kind, kiln-bench flags); "pinned" runs the shape's pinned file, the others the symbolic one.
    kinds = [("symbolic", ()), ("pinned", ())] + ([("interpreted", ("--replay=off",))] if args.interpreted else [])
    for _ in range(args.rounds):
        for k, (case, npys, pinned) in enumerate(per_case):
            for kind, extra in kinds:
                f = pinned if kind == "pinned" else sym
                times.setdefault((k, kind), []).append(kiln_bench(kb, f, npys, args.threads, args.min_time, extra))
    rows = []
    for k, (case, _, _) in enumerate(per_case):
        med = {kind: (statistics.median(t[0] for t in times[(k, kind)]),
                      statistics.median(t[1] for t in times[(k, kind)])) for kind, _ in kinds}
        paired = [s[1] / p[1] for s, p in zip(times[(k, "symbolic")], times[(k, "pinned")])]
        replay = [s[1] / i[1] for s, i in zip(times[(k, "symbolic")], times.get((k, "interpreted"), []))]
        rows.append((m.id, m.shape_label(case), med, paired, replay))
        if args.kernel_diff and med["symbolic"][1] / med["pinned"][1] > 1.10:
            diffs.append((m.id, m.shape_label(case), kernel_diff(kb, sym, per_case[k][2], per_case[k][1], d, args.kernel_diff)))
        print(f"{m.id} {m.shape_label(case)}: CPU symbolic {fmt_ms(med['symbolic'][1])} ms, "
              f"pinned {fmt_ms(med['pinned'][1])} ms, ratio {med['symbolic'][1] / med['pinned'][1]:.2f}",
              file=sys.stderr, flush=True)
    return rows


if __name__ == "__main__":
    sys.exit(main())
