#!/usr/bin/python3
"""The best three records per workload of a kiln-tune database, with the knob values they chose
(only those not at the rule's 0, and the thread hint): python3 best_records.py DB_DIR"""
import collections
import json
import sys

db = sys.argv[1]
names = {}
for line in open(db + "/workloads.jsonl"):
    w = json.loads(line)
    names[w["hash"]] = w["name"]
by = collections.defaultdict(list)
for line in open(db + "/records.jsonl"):
    r = json.loads(line)
    if r["state"] != "ok":
        continue
    vals, knobs = {}, {}
    for ins in r["trace"]:
        if ins["inst"] == "sample_categorical":
            vals[ins["out"][0]] = ins["in"][0][1][ins["decision"][0]]
        elif ins["inst"] == "annotate" and ins["in"][1][1][0] in vals:
            knobs[ins["in"][0][1].replace("kiln.knob.", "")] = vals[ins["in"][1][1][0]]
    by[r["workload"]].append((r["median_us"], {k: v for k, v in knobs.items() if v != 0}))
for w, recs in by.items():
    recs.sort(key=lambda x: x[0])
    default = [t for t, k in recs if set(k) <= {"threads"} and k.get("threads", 1) == 1]
    print("%s (%s): %d distinct points measured, default point %s us" % (
        names.get(w, w), w, len(recs), "%.1f" % min(default) if default else "-"))
    for t, k in recs[:3]:
        print("   %7.1f us  %s" % (t, " ".join("%s=%s" % kv for kv in sorted(k.items()))))
