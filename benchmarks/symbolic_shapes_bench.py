"""Every shape of a few corpus models, 1 thread: Kiln compiled once with symbolic dimensions,
Kiln pinned to that shape (--dim), ONNX Runtime and OpenVINO, in alternating rounds.

    build/venv/bin/python benchmarks/symbolic_shapes_bench.py --only mtcnn_onet,nudenet_320n

Issue 20 section 3 asks the symbolic file to run within 10 % of the pinned one at each shape.
Prints one Markdown row per (model, shape): the median and the minimum over the rounds of each
runtime's median call (wall time; on a busy machine read the minima and the ratios of one row).
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile


sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import models_corpus_bench as mcb  # noqa: E402

corpus = mcb.corpus


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cache", default="build/models")
    ap.add_argument("--build", default="build")
    ap.add_argument("--only", required=True)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--min-time", type=float, default=0.3)
    ap.add_argument("--work", default=None)
    args = ap.parse_args()
    kc = os.path.join(args.build, "tools", "kiln-compile", "kiln-compile")
    kb = os.path.join(args.build, "tools", "kiln-bench", "kiln-bench")
    try:
        import openvino  # noqa: F401
        use_ov = True
    except ImportError:
        use_ov = False
        print("(no openvino in this venv: its columns are left out)", file=sys.stderr)
    work = args.work or tempfile.mkdtemp(prefix="kiln-symbolic-shapes-")
    load0 = open("/proc/loadavg").read().split()[:3]
    kinds = ["kiln", "kiln-pinned", "ort"] + (["ov"] if use_ov else [])
    print("| model | shape | " + " | ".join(f"{k} median / min (ms)" for k in kinds) +
          " | kiln / pinned | kiln / faster peer |")
    print("|---|---|" + "---|" * (len(kinds) + 2))
    for m in corpus.load_all([s for s in args.only.split(",") if s]):
        path = m.cache_path(args.cache)
        d = os.path.join(work, m.id)
        os.makedirs(d, exist_ok=True)
        vmfb = os.path.join(d, m.id + ".vmfb")
        subprocess.run([kc, path, "-o", vmfb] + m.compile_args, check=True, stdout=subprocess.DEVNULL)
        for si, case in enumerate(m.shapes):
            feeds = m.make_inputs(case, seed=1000 + si)
            npys = mcb.save_inputs(m, feeds, d, f"s{si}_")
            dims = mcb.named_dims(m, case)
            pinned = os.path.join(d, f"{m.id}.s{si}.pinned.vmfb")
            subprocess.run([kc, path, "-o", pinned] + m.compile_args + [f"--dim={k}={v}" for k, v in dims.items()],
                           check=True, stdout=subprocess.DEVNULL)
            runners = {"ort": mcb.ort_runner(path, feeds, 1)}
            if use_ov:
                runners["ov"] = mcb.openvino_runner(path, feeds, 1)
            res = {k: [] for k in kinds}
            for _ in range(args.rounds):
                for k in kinds:
                    if k.startswith("kiln"):
                        res[k].append(mcb.kiln_bench(kb, vmfb if k == "kiln" else pinned, npys, 1, args.min_time))
                    else:
                        res[k].append(mcb.time_calls(runners[k], args.min_time))
            med = {k: statistics.median(v) * 1e3 for k, v in res.items()}
            mn = {k: min(v) * 1e3 for k, v in res.items()}
            peer = min(mn[k] for k in kinds if not k.startswith("kiln"))
            print(f"| {m.id} | {m.shape_label(case)} | " +
                  " | ".join(f"{med[k]:.3g} / {mn[k]:.3g}" for k in kinds) +
                  f" | {mn['kiln'] / mn['kiln-pinned']:.2f} | {mn['kiln'] / peer:.2f} |", flush=True)
    load1 = open("/proc/loadavg").read().split()[:3]
    print(f"\n1 thread, {args.rounds} alternating rounds of at least {args.min_time} s per runtime; ratios of minima; "
          f"load average {' '.join(load0)} at the start, {' '.join(load1)} at the end; {os.cpu_count()} CPUs")


if __name__ == "__main__":
    sys.exit(main())
