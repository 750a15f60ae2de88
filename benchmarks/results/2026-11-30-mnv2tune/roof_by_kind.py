#!/usr/bin/python3
"""Group a kiln-bench --profile table (its roofline columns) by kernel kind.

    kiln-bench m.vmfb --threads=1 --profile --profile_calls=N > prof.txt
    python3 roof_by_kind.py prof.txt

Each kernel is taken at its fastest call ("min us": on a loaded machine the mean
counts preemptions), its share of the roofline is the table's roof% scaled to that
call (roof% x mean / min), and kernels are grouped by what they compute, from
their names and argument shapes. For each group: time (sum of per-call minima),
share of the model, and the time it would save at 50 % / 100 % of its roofline,
which bounds what any schedule of that group can win.
"""
import collections
import re
import sys

ROW = re.compile(r"\s*([\d.]+)\s+([\d.]+)%\s+(\d+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)?\s+([\d.]+)?\s+([\d.]+)?\s+(<<)?\s*kernel\s+(\S+)\s+(.*)")


def dims(shapes):
    return [[int(d) for d in m.split(",") if d.strip()] for m in re.findall(r"float32\[([^\]]*)\]", shapes)]


def kind(name, shapes):
    t = dims(shapes)
    if name.startswith("winograd_input"):
        return "winograd input transform"
    if "winograd_output" in name:
        if "conv2d" in name:
            return "winograd output transform + fused 1x1 conv"
        if "pool" in name:
            return "winograd output transform + fused max pool"
        return "winograd output transform (+ epilogue)"
    if name.startswith("winograd_matmul") or (name.startswith("matmul") and len(t) >= 1 and len(t[0]) == 3 and t[0][0] in (16, 36)):
        return "winograd products"
    if "pool" in name or name.startswith("mean") or "_mean" in name:
        return "pools / mean"
    if "matmul" in name:
        return "classifier (matmul)"
    if "conv2d" in name and len(t) >= 2:
        x, w = t[0], t[1]
        if len(w) == 4 and w[1] == 1 and x[1] == w[0]:
            return "depthwise %dx%d%s" % (w[2], w[3], " (plane <= 28^2)" if x[2] <= 28 else " (plane >= 56^2)")
        if x[1] == 3:
            return "first conv"
        if len(w) == 5 and w[2] == 1 and w[3] == 1:
            return "pointwise 1x1 (+ epilogue)"
        if len(w) == 5:
            return "direct conv %dx%d" % (w[2], w[3])
    if "concat" in name:
        return "concat"
    return "other"


rows = []
for line in open(sys.argv[1]):
    m = ROW.match(line)
    if not m:
        continue
    count, mean, mn = int(m.group(3)), float(m.group(4)), float(m.group(5))
    roof = float(m.group(8)) if m.group(8) else None
    gf = float(m.group(6)) if m.group(6) else None
    gb = float(m.group(7)) if m.group(7) else None
    name, shapes = m.group(10), m.group(11)
    rows.append(dict(name=name, shapes=shapes, count=count, mean=mean, min=mn,
                     roof_min=roof * mean / mn if roof else None,
                     gf_min=gf * mean / mn if gf else None, gb_min=gb * mean / mn if gb else None,
                     kind=kind(name, shapes)))
# One invocation's worth: the profile counts calls over all invocations; a kernel
# called k times per invocation has count = k x calls. Calls = the smallest count.
calls = min(r["count"] for r in rows)
total = sum(r["min"] * r["count"] / calls for r in rows)
print("sum of per-call minima per invocation: %.1f us (%d invocations)" % (total, calls))
print("%-50s %6s %9s %6s %8s %7s %6s  %s" % ("kernel", "calls", "min us", "share", "GFLOP/s", "GB/s", "roof%", "kind"))
for r in sorted(rows, key=lambda r: -r["min"] * r["count"]):
    per = r["count"] // calls
    print("%-50s %6d %9.1f %5.1f%% %8s %7s %6s  %s" % (
        r["name"][:50], per, r["min"], 100 * r["min"] * per / total,
        "%.1f" % r["gf_min"] if r["gf_min"] else "-", "%.1f" % r["gb_min"] if r["gb_min"] else "-",
        "%.0f" % r["roof_min"] if r["roof_min"] else "-", r["kind"]))
print()
g = collections.defaultdict(lambda: [0.0, 0.0, 0.0, 0.0, 0])
for r in rows:
    per = r["count"] // calls
    t = r["min"] * per
    roof = (r["roof_min"] or 100.0) / 100.0
    a = g[r["kind"]]
    a[0] += t
    a[1] += t * roof  # time at the roofline
    a[2] += max(0.0, t - t * roof / 0.5) if roof < 0.5 else 0.0  # saved if raised to 50 % of roof
    a[3] += t * roof * 100  # for the weighted mean roof%
    a[4] += per
print("%-50s %5s %9s %6s %9s %11s %11s" % ("kind", "calls", "us", "share", "roof% (w)", "save @50%", "save @100%"))
for k, a in sorted(g.items(), key=lambda kv: -kv[1][0]):
    print("%-50s %5d %9.1f %5.1f%% %9.0f %8.1f us %8.1f us" % (k, a[4], a[0], 100 * a[0] / total, a[3] / a[0], a[2], a[0] - a[1]))
