#!/usr/bin/env python3
"""Tuning on the shapes Kiln's default schedules handle worst (issue 21 §5).

Each shape is a one-operator Relax module (weights are parameters, as the
op tests write them), so it compiles to a single kernel (with its fused
epilogue where there is one). For each shape, in one run:
  1. `kiln-tune MODULE --db WORK/NAME/db --trials N --threads 1` (the whole-
     module mode: the module's one kernel is its one task, the same kernel
     `kiln-compile` builds; `--function` needs the PrimFunc in the text, which a
     Relax-level module only has after legalization);
  2. `kiln-compile MODULE` (host.vmfb: planned for this machine's cores, the
     default without --threads), `kiln-compile MODULE --threads 1`
     (default.vmfb) and `kiln-compile MODULE --threads 1 --tuning-db`
     (tuned.vmfb: records measured with one thread apply to it);
  3. rounds, interleaved over the shapes: `kiln-bench FILE --threads=1` for
     each of the three files in its own process (p50 of each; the order
     rotates), then oneDNN's primitive for the same op
     (onednn_op.cc, built here with the system's libdnnl, OMP_NUM_THREADS=1;
     plain layouts, and for convolutions also the blocked layouts oneDNN
     prefers, reorders untimed). Each column is the median over the rounds.
Prints a markdown table: shape, default us, tuned us, speedup (default /
tuned, same run), oneDNN us, kiln-tune's own default and best (the kernel
alone, warm), trials, and the load average before and after; then, per
shape, how many candidates each design space gave and its best against the
default (from the database; --spaces-only prints that table again from an
earlier run's --work).

  /work/main/build/venv/bin/python benchmarks/tuning/worst_shapes.py --build build --trials 64 --rounds 5
Only the standard library (--constant-weights: the onnx package too, e.g.
the project venv). --only NAME,NAME runs some shapes; --work DIR keeps the
databases and modules (default: a temporary directory); --constant-weights
writes the convolutions (without epilogue) as ONNX models with constant
weights, which Kiln packs at compile time as in a model.
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def t(shape):
    dims = ", ".join(str(d) for d in shape) + ("," if len(shape) == 1 else "")
    return 'R.Tensor((%s), dtype="float32")' % dims


def conv_out(h, k, s, p0, p1):
    return (h + p0 + p1 - k) // s + 1


def conv(name, cls, n, c, h, w, o, kh, kw, s=1, pad=(0, 0, 0, 0), groups=1, bias=False, relu=False):
    pt, pl, pb, pr = pad
    oh, ow = conv_out(h, kh, s, pt, pb), conv_out(w, kw, s, pl, pr)
    params = [("x", (n, c, h, w)), ("w", (o, c // groups, kh, kw))]
    body = ["y0 = R.nn.conv2d(x, w, strides=[%d, %d], padding=[%d, %d, %d, %d], groups=%d)" % (s, s, pt, pl, pb, pr, groups)]
    last = "y0"
    if bias:
        params.append(("b", (1, o, 1, 1)))
        body.append("y1 = R.add(y0, b)")
        last = "y1"
    if relu:
        body.append("y2 = R.nn.relu(%s)" % last)
        last = "y2"
    onednn = ["conv", n, c, h, w, o, kh, kw, s, s, pt, pl, pb, pr, groups, int(bias), int(relu)]
    return dict(name=name, cls=cls, params=params, body=body, last=last, out=(n, o, oh, ow), onednn=onednn,
                blocked=True)


def conv1d(name, cls, n, c, w, o, k, pad):
    params = [("x", (n, c, w)), ("w", (o, c, k))]
    body = ["y0 = R.nn.conv1d(x, w, padding=[%d, %d])" % (pad, pad)]
    # oneDNN: the same convolution as a 2-D one of height 1.
    onednn = ["conv", n, c, 1, w, o, 1, k, 1, 1, 0, pad, 0, pad, 1, 0, 0]
    return dict(name=name, cls=cls, params=params, body=body, last="y0", out=(n, o, w + 2 * pad - k + 1),
                onednn=onednn, blocked=True)


def matmul(name, cls, m, k, n, bias=False, relu=False):
    params = [("x", (m, k)), ("w", (k, n))]
    body = ['y0 = R.matmul(x, w, out_dtype="void")']
    last = "y0"
    if bias:
        params.append(("b", (n,)))
        body.append("y1 = R.add(y0, b)")
        last = "y1"
    if relu:
        body.append("y2 = R.nn.relu(%s)" % last)
        last = "y2"
    return dict(name=name, cls=cls, params=params, body=body, last=last, out=(m, n),
                onednn=["matmul", m, k, n, int(bias), int(relu)], blocked=False)


def simple(name, cls, shape, expr, out, onednn):
    return dict(name=name, cls=cls, params=[("x", shape)], body=["y0 = " + expr], last="y0", out=out,
                onednn=onednn, blocked=False)


SHAPES = [
    conv("conv_odd_c17_k23", "odd channel counts", 1, 17, 28, 28, 23, 3, 3, pad=(1, 1, 1, 1)),
    conv("conv_small_spatial_4x4", "small spatial size", 1, 128, 4, 4, 128, 3, 3, pad=(1, 1, 1, 1)),
    conv("conv_1x7", "1xN convolution", 1, 32, 24, 96, 32, 1, 7, pad=(0, 3, 0, 3)),
    conv("conv_7x1", "Nx1 convolution", 1, 32, 96, 24, 32, 7, 1, pad=(3, 0, 3, 0)),
    conv1d("conv1d_c64_w500_k5", "1-D convolution", 1, 64, 500, 64, 5, 2),
    conv("dw_s2_c64_56", "depthwise, stride 2", 1, 64, 56, 56, 64, 3, 3, s=2, pad=(1, 1, 1, 1), groups=64),
    conv("dw_s2_c120_5x5", "depthwise, stride 2", 1, 120, 28, 28, 120, 5, 5, s=2, pad=(2, 2, 2, 2), groups=120),
    conv("conv_bias_relu_c24_k40", "fused epilogue, broadcast", 1, 24, 14, 14, 40, 3, 3, pad=(1, 1, 1, 1),
         bias=True, relu=True),
    matmul("mm_tall_thin_4096x64x8", "tall-thin matmul", 4096, 64, 8),
    matmul("mm_short_wide_2x256x4096", "short-wide matmul", 2, 256, 4096),
    matmul("mm_bias_relu_49x96x200", "fused epilogue, broadcast", 49, 96, 200, bias=True, relu=True),
    simple("softmax_64x1001", "softmax (odd row)", (64, 1001), "R.nn.softmax(x, axis=-1)", (64, 1001),
           ["softmax", 64, 1001]),
    simple("maxpool_3x3_s2_c64_56", "pooling", (1, 64, 56, 56),
           "R.nn.max_pool2d(x, pool_size=[3, 3], strides=[2, 2], padding=[1, 1, 1, 1])", (1, 64, 28, 28),
           ["maxpool", 1, 64, 56, 56, 3, 2, 1]),
    simple("mean_1024x777", "row reduction (odd row)", (1024, 777), "R.mean(x, axis=[-1])", (1024,),
           ["mean", 1024, 777]),
]


def module_text(s):
    sig = ", ".join("%s: %s" % (n, t(shape)) for n, shape in s["params"])
    lines = ["@I.ir_module", "class Module:", "    @R.function",
             "    def main(%s) -> %s:" % (sig, t(s["out"])), "        with R.dataflow():"]
    lines += ["            " + b for b in s["body"]]
    lines += ["            gv = %s" % s["last"], "            R.output(gv)", "        return gv", ""]
    return "\n".join(lines)


def write_onnx_conv(s, path):
    """The conv of shape `s` as an ONNX model whose weights are an initializer
    (constant): what a model's convolutions are, packed at compile time in
    blocks of 8 output channels (kernel_layout OIHW8o). Needs the onnx package
    (the project venv), only for --constant-weights."""
    import random
    from onnx import TensorProto, helper, save
    (xn, xs), (wn, ws) = s["params"][0], s["params"][1]
    _, n, c, h, w, o, kh, kw, sh, sw, pt, pl, pb, pr, groups, bias, relu = s["onednn"]
    if bias or relu:
        raise SystemExit("--constant-weights: %s has an epilogue (not written as ONNX)" % s["name"])
    pads = [pl, pr] if len(xs) == 3 else [pt, pl, pb, pr]
    rng = random.Random(0)
    count = 1
    for d in ws:
        count *= d
    weight = helper.make_tensor("w", TensorProto.FLOAT, list(ws), [rng.uniform(-1, 1) for _ in range(count)])
    strides = [sw] if len(xs) == 3 else [sh, sw]
    node = helper.make_node("Conv", ["x", "w"], ["y"], pads=pads, strides=strides, group=groups)
    graph = helper.make_graph([node], s["name"], [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(xs))],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, list(s["out"]))], [weight])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    save(model, path)


def loadavg():
    with open("/proc/loadavg") as f:
        return float(f.read().split()[0])


SUMMARY_ROW = re.compile(r"^\s{2}(\S+)\s+(\d+)\s+([0-9.]+) (us|ms)\s+([0-9.]+) (us|ms)\s+([0-9.]+)x\s+(\d+)\s+(\d+)")


def to_us(v, unit):
    return float(v) * (1000.0 if unit == "ms" else 1.0)


def tune(tools, s, work, trials, seed, constant=False):
    d = os.path.join(work, s["name"])
    os.makedirs(d, exist_ok=True)
    if constant:
        mod = os.path.join(d, "module.onnx")
        write_onnx_conv(s, mod)
    else:
        mod = os.path.join(d, "module.relax")
        with open(mod, "w") as f:
            f.write(module_text(s))
    db = os.path.join(d, "db")
    cmd = [tools["tune"], mod, "--db", db, "--trials", str(trials), "--threads", "1", "--seed", str(seed)]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit("%s failed:\n%s%s" % (" ".join(cmd), r.stdout, r.stderr))
    info = None
    for line in r.stdout.splitlines():
        m = SUMMARY_ROW.match(line)
        if m and m.group(1) != "model":
            info = dict(task=m.group(1), tune_default=to_us(m.group(3), m.group(4)),
                        tune_best=to_us(m.group(5), m.group(6)), trials=int(m.group(8)), failed=int(m.group(9)))
    if info is None:
        raise SystemExit("no summary row in the output of %s:\n%s" % (" ".join(cmd), r.stdout))
    for out, extra in (("host.vmfb", []), ("default.vmfb", ["--threads", "1"]),
                       ("tuned.vmfb", ["--threads", "1", "--tuning-db", db])):
        subprocess.run([tools["compile"], mod, "-o", os.path.join(d, out)] + extra, check=True, capture_output=True)
    with open(os.path.join(d, "default.vmfb"), "rb") as a, open(os.path.join(d, "tuned.vmfb"), "rb") as b:
        info["same_file"] = a.read() == b.read()  # no record beat the default: the builds are identical
    info["dir"] = d
    return info


BUILDS = ("host", "default", "tuned")


def bench_kiln(tools, d, min_time, shift):
    """p50 us of (host, default, tuned), each from its own kiln-bench process
    (in one call with several files, a one-thread build of the depthwise
    conv ran 2-6x slower when it was not the first file); the order is
    rotated by `shift` (rounds rotate it, so no file always runs first)."""
    got = {}
    for k in range(3):
        b = BUILDS[(k + shift) % 3]
        r = subprocess.run([tools["bench"], os.path.join(d, b + ".vmfb"), "--threads=1", "--format=json",
                            "--min-time=%g" % min_time, "--runs=20"], capture_output=True, text=True, check=True)
        got[b] = json.loads(r.stdout)["results"][0]["latency_ms"]["p50"] * 1000.0
    return tuple(got[b] for b in BUILDS)


def bench_onednn(exe, s, blocked):
    args = [exe] + [str(a) for a in s["onednn"]] + (["--blocked"] if blocked else [])
    r = subprocess.run(args, capture_output=True, text=True, env=dict(os.environ, OMP_NUM_THREADS="1"))
    if r.returncode != 0:
        return None
    return float(r.stdout.strip())


def space_table(shapes, work):
    """Per shape, from its database: the candidates of each space (knob
    points of the default schedules, generic rules) and the best of each as a
    ratio to the default schedule's time in the same tuning run."""
    lines = ["| shape | knob-space candidates, best / default | generic-space candidates, best / default |",
             "|---|---|---|"]
    for s in shapes:
        path = os.path.join(work, s["name"], "db", "records.jsonl")
        if not os.path.exists(path):
            continue
        count, best = {"knob": 0, "generic": 0}, {}
        with open(path) as f:
            for line in f:
                r = json.loads(line)
                if r["message"] == "the default schedule":
                    continue
                space = "knob" if any(i["inst"] == "annotate" for i in r["trace"]) else "generic"
                count[space] += 1
                if r["state"] == "ok" and r["default_us"] > 0:
                    best[space] = min(best.get(space, 1e30), r["median_us"] / r["default_us"])
        cells = ["%d, %.2f" % (count[k], best[k]) if k in best else "%d, -" % count[k] for k in ("knob", "generic")]
        lines.append("| %s | %s | %s |" % (s["name"], cells[0], cells[1]))
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build", help="the build directory with kiln-tune, kiln-compile, kiln-bench")
    ap.add_argument("--trials", type=int, default=64)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--min-time", type=float, default=0.3, help="seconds per kiln-bench case per round")
    ap.add_argument("--only", default="", help="comma-separated shape names")
    ap.add_argument("--work", default="", help="keep modules, databases and .vmfb files here")
    ap.add_argument("--no-onednn", action="store_true")
    ap.add_argument("--constant-weights", action="store_true",
                    help="the convolutions' weights as constants (ONNX initializers, packed at compile time as in "
                         "a model; needs the onnx package) instead of parameters; convolutions only")
    ap.add_argument("--spaces-only", action="store_true",
                    help="only print the spaces table from the databases of an earlier run's --work")
    args = ap.parse_args()
    tools = {"tune": os.path.join(args.build, "tools/kiln-tune/kiln-tune"),
             "compile": os.path.join(args.build, "tools/kiln-compile/kiln-compile"),
             "bench": os.path.join(args.build, "tools/kiln-bench/kiln-bench")}
    for k, p in tools.items():
        if not os.access(p, os.X_OK):
            raise SystemExit("%s not found (build it: ninja -C %s kiln-%s)" % (p, args.build, k))
    shapes = SHAPES
    if args.only:
        names = args.only.split(",")
        unknown = [n for n in names if n not in {s["name"] for s in SHAPES}]
        if unknown:
            raise SystemExit("unknown shape(s) %s; the shapes: %s" % (", ".join(unknown),
                                                                     ", ".join(s["name"] for s in SHAPES)))
        shapes = [s for s in SHAPES if s["name"] in names]
    if args.constant_weights:
        shapes = [s for s in shapes if s["onednn"][0] == "conv" and not s["onednn"][15] and not s["onednn"][16]]
    if args.spaces_only:
        if not args.work:
            raise SystemExit("--spaces-only reads the databases of --work DIR")
        print(space_table(shapes, args.work))
        return
    work = args.work or tempfile.mkdtemp(prefix="kiln_worst_shapes_")
    os.makedirs(work, exist_ok=True)

    onednn = None
    if not args.no_onednn:
        onednn = os.path.join(work, "onednn_op")
        r = subprocess.run(["c++", "-O2", "-std=c++17", os.path.join(HERE, "onednn_op.cc"), "-ldnnl", "-o", onednn],
                           capture_output=True, text=True)
        if r.returncode != 0:
            print("oneDNN column skipped: onednn_op.cc did not build:\n" + r.stderr, file=sys.stderr)
            onednn = None

    load = [loadavg()]
    start = time.time()
    info = {}
    for s in shapes:
        info[s["name"]] = tune(tools, s, work, args.trials, args.seed, args.constant_weights)
        i = info[s["name"]]
        print("tuned %-26s %4d trials  kiln-tune: default %.1f us, best %.1f us" %
              (s["name"], i["trials"], i["tune_default"], i["tune_best"]), file=sys.stderr, flush=True)
    load.append(loadavg())
    tune_s = time.time() - start
    samples = {s["name"]: {"host": [], "default": [], "tuned": [], "plain": [], "blocked": []} for s in shapes}
    for r in range(args.rounds):
        for s in shapes:
            m = samples[s["name"]]
            h, d, tu = bench_kiln(tools, info[s["name"]]["dir"], args.min_time, r % 3)
            m["host"].append(h)
            m["default"].append(d)
            m["tuned"].append(tu)
            if onednn:
                m["plain"].append(bench_onednn(onednn, s, False))
                if s["blocked"]:
                    m["blocked"].append(bench_onednn(onednn, s, True))
        print("round %d/%d done" % (r + 1, args.rounds), file=sys.stderr, flush=True)
    load.append(loadavg())

    def med(xs):
        xs = [x for x in xs if x is not None]
        return statistics.median(xs) if xs else None

    def fmt(x):
        return "-" if x is None else ("%.1f" % x)

    print("| shape | class | host-hint us | default us | tuned us | speedup (tuned vs host / vs default) "
          "| oneDNN us (plain / blocked) | kiln-tune default / best us | trials (failed) |")
    print("|---|---|---|---|---|---|---|---|---|")
    for s in shapes:
        m, i = samples[s["name"]], info[s["name"]]
        h, d, tu = med(m["host"]), med(m["default"]), med(m["tuned"])
        vs_host = statistics.median([a / b for a, b in zip(m["host"], m["tuned"])])
        vs_default = statistics.median([a / b for a, b in zip(m["default"], m["tuned"])])
        dn = fmt(med(m["plain"])) + (" / " + fmt(med(m["blocked"])) if s["blocked"] else "")
        speed = "%.2fx / %.2fx" % (vs_host, vs_default) + (" (same build)" if i["same_file"] else "")
        print("| %s | %s | %s | %s | %s | %s | %s | %.1f / %.1f | %d (%d) |" %
              (s["name"], s["cls"], fmt(h), fmt(d), fmt(tu), speed, dn, i["tune_default"],
               i["tune_best"], i["trials"], i["failed"]))
    print()
    print("host-hint: kiln-compile without --threads (planned for this machine's cores); default: "
          "--threads 1; tuned: --threads 1 --tuning-db. Speedup: the median over rounds of host (or default) "
          "p50 / tuned p50 measured in the same round. "
          "(same build): no record beat the default, tuned.vmfb is byte-identical to default.vmfb. "
          "%d rounds, 1 thread; tuning took %.0f s; load average %s (before tuning, after tuning, after measuring)."
          % (args.rounds, tune_s, " / ".join("%.1f" % x for x in load)))
    print()
    print(space_table(shapes, work))


if __name__ == "__main__":
    main()
