import json, subprocess, statistics, os, sys
KB = "/work/wt-pnetfirst/build/tools/kiln-bench/kiln-bench"
C = "/work/scratch-pnetfirst/svp0/mtcnn_pnet/"
cases = [("pnet 1x12x12x3", "pnet_sym", "pnet_pin12", C + "case0_in0.npy"),
         ("pnet 1x240x320x3", "pnet_sym", "pnet_pin240", C + "case1_in0.npy"),
         ("pnet 2x97x61x3", "pnet_sym", "pnet_pin97", C + "case2_in0.npy"),
         ("onet 1x48x48x3", "onet_sym", "onet_pin1", "onet1.npy")]
rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 5
def bench(f, npy):
    p = subprocess.run(["nice", KB, f, "--input=@" + npy, "--threads=1", "--min-time=0.3", "--warmup=1", "--runs=3", "--format=json"], capture_output=True, text=True, check=True)
    return json.loads(p.stdout)["results"][0]["cpu_ms_per_call"] * 1e3  # us
res = {}
print("load at start:", open("/proc/loadavg").read().strip())
for r in range(rounds):
    for name, sym, pin, npy in cases:
        order = ["old", "new"] if r % 2 == 0 else ["new", "old"]
        for v in order:
            for kind, base in (("sym", sym), ("pin", pin)):
                res.setdefault((name, kind, v), []).append(bench(f"{base}_{v}.vmfb", npy))
print("load at end:", open("/proc/loadavg").read().strip())
print("| shape | sym old (us) | sym new (us) | pinned old | pinned new | ratio old | ratio new | per-round ratio old / new (median, min-max) |")
print("|---|---|---|---|---|---|---|---|")
for name, *_ in cases:
    m = {k: statistics.median(res[(name,) + k]) for k in [("sym","old"),("sym","new"),("pin","old"),("pin","new")]}
    ro = [a / b for a, b in zip(res[(name,"sym","old")], res[(name,"pin","old")])]
    rn = [a / b for a, b in zip(res[(name,"sym","new")], res[(name,"pin","new")])]
    print(f"| {name} | {m[('sym','old')]:.4g} | {m[('sym','new')]:.4g} | {m[('pin','old')]:.4g} | {m[('pin','new')]:.4g} | {m[('sym','old')]/m[('pin','old')]:.3f} | {m[('sym','new')]/m[('pin','new')]:.3f} | {statistics.median(ro):.3f} ({min(ro):.3f}-{max(ro):.3f}) / {statistics.median(rn):.3f} ({min(rn):.3f}-{max(rn):.3f}) |")
json.dump({"|".join(k): v for k, v in res.items()}, open("ab_raw.json", "w"))
