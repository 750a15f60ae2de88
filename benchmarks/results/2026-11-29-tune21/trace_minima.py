#!/usr/bin/python3
"""Per-kernel minimum time over the calls of a kiln-bench trace, for a loaded machine.

    kiln-bench m.vmfb --threads=1 --profile --profile_calls=50 --trace=t.json > prof.txt
    python3 trace_minima.py t.json prof.txt

kiln-bench's profile gives each kernel's mean wall time; on a machine shared with other
builds a call is often preempted, and the mean counts that. The minimum over the calls of
each kernel is near its unloaded time. FLOPs per call come from the profile (GFLOP/s x mean).
"""
import collections
import json
import re
import sys

ROOF_GFLOPS = 268.3  # kiln-bench's FMA roof at one thread on this machine

trace, prof = sys.argv[1], sys.argv[2]
events = json.load(open(trace))["traceEvents"]
times, shapes = collections.defaultdict(list), {}
for e in events:
    if e.get("cat") == "kernel":
        times[e["name"]].append(e["dur"])
        shapes[e["name"]] = e["args"]["shapes"]
flops = {}
row = re.compile(r"\s*[\d.]+\s+[\d.]+%\s+\d+\s+([\d.]+)\s+([\d.]+)\s+[\d.]+\s+[\d.]+\s+kernel\s+(\S+)")
for line in open(prof):
    m = row.match(line)
    if m:
        flops[m.group(3)] = float(m.group(2)) * 1e3 * float(m.group(1))
calls = sum(1 for e in events if e.get("cat") == "invoke") or 1
rows = sorted(((k, len(v), min(v), sorted(v)[len(v) // 2]) for k, v in times.items()), key=lambda r: -r[1] * r[2])
total = sum(n * mn for _, n, mn, _ in rows)
print("sum of per-kernel minima per invocation: %.1f us" % (total / calls))
for k, n, mn, md in rows:
    g = flops.get(k, 0) / (mn * 1e3)
    print("%-50s n=%4d min %8.1f med %8.1f share %5.1f%%  %6.1f GF/s  %4.0f%% roof  %s"
          % (k[:50], n, mn, md, 100 * n * mn / total, g, 100 * g / ROOF_GFLOPS, shapes[k][:110]))
