#!/usr/bin/env python3
"""Guided (evolutionary + cost model) against pure random search, same spaces.

For each kernel of benchmarks/tuning/ (the MLC course's 128^3 matmul, a
1x32x28x28 3x3 convolution as legalization writes it, the 1024x1024 sigmoid
of the TE example) and each search, runs `kiln-tune` for N trials from an
empty database (and no saved cost model) with a few seeds, and writes:
  OUT/tuning_curves.csv   kernel, search, seed, trial, latency_us (empty when
                          the candidate failed), best_us (the best candidate
                          so far), default_us
  OUT/tuning_curves.svg   best candidate latency against trials (mean over
                          seeds), one panel per kernel, the default schedule
                          dashed
and prints, per kernel, the trials each search needs to reach within 5% of
the best time any run found, and to beat the default schedule's time as
measured in the same run (`kiln-tune` re-measures it each round and keeps
the fastest median). --from-csv redoes the analysis and the SVG from a CSV. Only the standard library (no matplotlib): the SVG is written
here.

  /usr/bin/python3 benchmarks/tuning/guided_vs_random.py --kiln-tune build/tools/kiln-tune/kiln-tune \
      --trials 64 --seeds 3 --out docs/guide
"""
import argparse
import csv
import os
import re
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
KERNELS = [("matmul 128x128x128", "mm.relax", "mm"),
           ("conv2d 1x32x28x28, 3x3", "conv.relax", "conv2d"),
           ("sigmoid 1024x1024", "sigmoid.relax", "sigmoid")]
SEARCHES = [("guided", "evolutionary"), ("random", "random")]
TRIAL = re.compile(r"^\[(\d+)/\d+\] \S+: (?:([0-9.]+) us|(\S+))")
DEFAULT = re.compile(r"default schedule ([0-9.]+) us")
SUMMARY_DEFAULT = re.compile(r"^\s+\S+\s+([0-9.]+) us\s+([0-9.]+) us")


def run(tool, kernel_file, func, search, seed, trials, batch, threads):
    with tempfile.TemporaryDirectory() as db:
        cmd = [tool, os.path.join(HERE, kernel_file), "--function", func, "--db", db, "--trials", str(trials),
               "--batch", str(batch), "--seed", str(seed), "--search", search, "--threads", str(threads)]
        out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    latencies, default = [], None
    for line in out.splitlines():
        m = TRIAL.match(line)
        if m:
            latencies.append(float(m.group(2)) if m.group(2) else None)
        elif line.startswith("tune ") and DEFAULT.search(line):
            default = float(DEFAULT.search(line).group(1))
        m = SUMMARY_DEFAULT.match(line)
        if m:
            default = float(m.group(1))  # the fastest default median of the run
    return latencies, default


def best_so_far(latencies):
    best, out = None, []
    for x in latencies:
        if x is not None and (best is None or x < best):
            best = x
        out.append(best)
    return out


def trials_to(curve, target):
    for i, b in enumerate(curve):
        if b is not None and b <= target:
            return i + 1
    return None


def svg(panels, path, trials):
    w, h, pad_l, pad_b, pad_t, gap = 330, 260, 58, 40, 34, 20
    total_w = max(len(panels) * (w + gap) + 20, 500)
    colors = {"guided": "#1f77b4", "random": "#ff7f0e"}
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{total_w}" height="{h + 40}" '
             f'font-family="sans-serif" font-size="11">', f'<rect width="100%" height="100%" fill="white"/>']
    for p, (title, curves, default) in enumerate(panels):
        x0 = 10 + p * (w + gap)
        values = [v for c in curves.values() for v in c if v is not None] + [default]
        lo, hi = min(values) * 0.95, max(values) * 1.05
        hi = min(hi, max(default * 3, lo * 1.5))  # early outliers clipped: the race near the default matters
        px = lambda t: x0 + pad_l + (t - 1) / max(trials - 1, 1) * (w - pad_l - 10)
        py = lambda v: pad_t + (1 - (min(v, hi) - lo) / (hi - lo)) * (h - pad_t - pad_b)
        fmt = ".1f" if hi - lo < 20 else ".0f"
        parts.append(f'<text x="{x0 + w / 2}" y="16" text-anchor="middle" font-size="13">{title}</text>')
        parts.append(f'<rect x="{x0 + pad_l}" y="{pad_t}" width="{w - pad_l - 10}" height="{h - pad_t - pad_b}" '
                     f'fill="none" stroke="#999"/>')
        for k in range(5):
            v = lo + (hi - lo) * k / 4
            parts.append(f'<text x="{x0 + pad_l - 4}" y="{py(v) + 4:.1f}" text-anchor="end">{v:{fmt}}</text>')
            parts.append(f'<line x1="{x0 + pad_l}" x2="{x0 + w - 10}" y1="{py(v):.1f}" y2="{py(v):.1f}" '
                         f'stroke="#eee"/>')
        for t in sorted({1, trials // 4, trials // 2, 3 * trials // 4, trials}):
            parts.append(f'<text x="{px(t):.1f}" y="{h - pad_b + 14}" text-anchor="middle">{t}</text>')
        parts.append(f'<text x="{x0 + pad_l + (w - pad_l) / 2}" y="{h - 8}" text-anchor="middle">trials</text>')
        parts.append(f'<text x="{x0 + 12}" y="{pad_t + (h - pad_t - pad_b) / 2}" text-anchor="middle" '
                     f'transform="rotate(-90 {x0 + 12} {pad_t + (h - pad_t - pad_b) / 2})">best latency (us)</text>')
        parts.append(f'<line x1="{x0 + pad_l}" x2="{x0 + w - 10}" y1="{py(default):.1f}" y2="{py(default):.1f}" '
                     f'stroke="#444" stroke-dasharray="5,4"/>')
        parts.append(f'<text x="{x0 + w - 12}" y="{py(default) - 4:.1f}" text-anchor="end" fill="#444">'
                     f'default {default:{fmt}} us</text>')
        for name, curve in curves.items():
            pts = [f"{px(i + 1):.1f},{py(v):.1f}" for i, v in enumerate(curve) if v is not None]
            if pts:
                parts.append(f'<polyline fill="none" stroke="{colors[name]}" stroke-width="2" points="{" ".join(pts)}"/>')
    lx = 10 + 58
    for i, (name, color) in enumerate(colors.items()):
        label = "evolutionary + cost model" if name == "guided" else "random sampling"
        parts.append(f'<line x1="{lx + i * 220}" x2="{lx + i * 220 + 24}" y1="{h + 22}" y2="{h + 22}" '
                     f'stroke="{color}" stroke-width="2"/>')
        parts.append(f'<text x="{lx + i * 220 + 30}" y="{h + 26}">{label}</text>')
    parts.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(parts) + "\n")


def analyse(kernels, runs, trials, out):
    """runs[(func, search, seed)] = (latencies, default_us). Prints trials to
    targets; writes the SVG."""
    panels = []
    for title, _, func in kernels:
        seeds = sorted({k[2] for k in runs if k[0] == func})
        if not seeds:
            continue
        curves, finals = {}, {}
        for name, _ in SEARCHES:
            per_seed = [best_so_far(runs[(func, name, s)][0]) for s in seeds if (func, name, s) in runs]
            n = min(len(c) for c in per_seed)
            curves[name] = [statistics.mean(c[t] for c in per_seed) if all(c[t] for c in per_seed) else None
                            for t in range(n)]
            finals[name] = per_seed
        default = statistics.median(runs[k][1] for k in runs if k[0] == func)
        best_any = min(c[-1] for runs_ in finals.values() for c in runs_ if c and c[-1])
        target = 1.05 * best_any
        counts = {name: [trials_to(c, target) for c in r] for name, r in finals.items()}
        print(f"{func}: trials to within 5% of the best any run found ({target:.1f} us), per seed: "
              + "; ".join(f"{n} {counts[n]}" for n in counts))
        # Each run against its own default (measured in that run).
        beat = {name: [trials_to(best_so_far(runs[(func, name, s)][0]), runs[(func, name, s)][1] * 0.999)
                       for s in seeds] for name, _ in SEARCHES}
        print(f"{func}: trials to beat the run's own default, per seed: "
              + "; ".join(f"{n} {beat[n]}" for n in beat))
        for name, r in finals.items():
            print(f"{func}: {name}: best per seed " + ", ".join(f"{c[-1]:.1f}" for c in r) + " us; defaults "
                  + ", ".join(f"{runs[(func, name, s)][1]:.1f}" for s in seeds) + " us")
        panels.append((title, curves, default))
    svg(panels, os.path.join(out, "tuning_curves.svg"), trials)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kiln-tune", default="build/tools/kiln-tune/kiln-tune")
    ap.add_argument("--trials", type=int, default=64)
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--kernels", default="", help="comma-separated subset of mm,conv2d,sigmoid")
    ap.add_argument("--from-csv", default="", help="redo the analysis and the SVG from an earlier run's CSV")
    ap.add_argument("--out", default=".")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    wanted = set(filter(None, args.kernels.split(",")))
    kernels = [k for k in KERNELS if not wanted or k[2] in wanted]
    runs = {}
    if args.from_csv:
        with open(args.from_csv) as f:
            for r in csv.DictReader(f):
                key = (r["kernel"], r["search"], int(r["seed"]))
                lat, _ = runs.get(key, ([], None))
                lat.append(float(r["latency_us"]) if r["latency_us"] else None)
                runs[key] = (lat, float(r["default_us"]))
        trials = max(len(v[0]) for v in runs.values())
        analyse(kernels, runs, trials, args.out)
        return 0
    rows = []
    for _, kernel_file, func in kernels:
        for name, search in SEARCHES:
            for seed in range(1, args.seeds + 1):
                lat, default = run(args.kiln_tune, kernel_file, func, search, seed, args.trials, args.batch,
                                   args.threads)
                runs[(func, name, seed)] = (lat, default)
                curve = best_so_far(lat)
                for t, (x, b) in enumerate(zip(lat, curve)):
                    rows.append([func, name, seed, t + 1, "" if x is None else x, "" if b is None else b, default])
                print(f"{func} {name} seed {seed}: default {default:.1f} us, best {curve[-1]} us", flush=True)
    with open(os.path.join(args.out, "tuning_curves.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["kernel", "search", "seed", "trial", "latency_us", "best_us", "default_us"])
        w.writerows(rows)
    analyse(kernels, runs, args.trials, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
