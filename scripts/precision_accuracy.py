"""Accuracy of kiln-compile --precision=fp16|bf16 against the float32 build of the same model.

For each model: compile it at fp32, fp16 and bf16, run the three .vmfb files on the same inputs
with kiln-run, and print per precision
  - the .vmfb size,
  - max |half - fp32| / max |fp32| over every output element (the relative error),
  - for a classifier (--classifier: the output's last axis holds the classes), top-1 agreement
    with fp32 over the rows of the batch and the mean top-5 overlap.
With --images N a classifier runs on the given image and N - 1 variants of it (flips, shifts,
brightness, noise), one call each, so agreement is counted over more than one decision.

    build/venv/bin/python scripts/precision_accuracy.py --kiln-compile K --kiln-run R \\
        [--work DIR] MODEL.onnx|MODEL.relax [--input X.npy ...] [--images N] [--classifier] [--dim n=V]

Inputs: the given .npy files (float32), else uniform [-1, 1) from a fixed seed for a .relax
model's main (shapes from --shape name=AxB, repeatable, in parameter order).
"""
import argparse
import os
import subprocess
import sys

import numpy as np


def run(cmd):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if p.returncode != 0:
        sys.exit("failed: " + " ".join(cmd) + "\n" + p.stdout)
    return p.stdout


def variants(x, n):
    """`n` images from one NCHW image: itself, flipped, shifted, brighter, darker, noisy."""
    rng = np.random.default_rng(22)
    out = [x[0]]
    ops = [lambda a: a[:, :, ::-1], lambda a: np.roll(a, 8, axis=2), lambda a: np.roll(a, -8, axis=1),
           lambda a: a * 1.15, lambda a: a * 0.85, lambda a: a + rng.normal(0, 0.1, a.shape),
           lambda a: np.roll(a[:, :, ::-1], 16, axis=1)]
    i = 0
    while len(out) < n:
        op = ops[i % len(ops)]
        extra = rng.normal(0, 0.05 * (i // len(ops)), x[0].shape) if i >= len(ops) else 0
        out.append(op(x[0]) + extra)
        i += 1
    return np.stack(out).astype(np.float32)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("--kiln-compile", required=True)
    ap.add_argument("--kiln-run", required=True)
    ap.add_argument("--work", default="/tmp/kiln_precision")
    ap.add_argument("--input", action="append", default=[])
    ap.add_argument("--shape", action="append", default=[])
    ap.add_argument("--images", type=int, default=0,
                    help="classifier: run this many images made from the (batch 1) input, one call each")
    ap.add_argument("--classifier", action="store_true")
    ap.add_argument("--dim", action="append", default=[])
    ap.add_argument("--precisions", default="fp16,bf16")
    args = ap.parse_args()
    os.makedirs(args.work, exist_ok=True)
    name = os.path.splitext(os.path.basename(args.model))[0]

    inputs = [np.load(p).astype(np.float32) for p in args.input]
    if not inputs:
        rng = np.random.default_rng(22)
        for s in args.shape:
            dims = [int(d) for d in s.split("=")[1].split("x")]
            inputs.append(rng.uniform(-1, 1, dims).astype(np.float32))
    # One list of input files per call.
    calls = []
    images = variants(inputs[0], args.images) if args.images else None
    for c in range(args.images or 1):
        files = []
        for i, a in enumerate(inputs):
            if images is not None and i == 0:
                a = images[c:c + 1]
            f = os.path.join(args.work, "%s.call%d.in%d.npy" % (name, c, i))
            np.save(f, a)
            files.append("--input=@" + f)
        calls.append(files)
    dims = []
    for d in args.dim:
        dims += ["--dim", d]

    outs, sizes = {}, {}
    for p in ["fp32"] + args.precisions.split(","):
        vmfb = os.path.join(args.work, "%s.%s.vmfb" % (name, p))
        run([args.kiln_compile, args.model, "-o", vmfb, "--precision=" + p] + dims)
        sizes[p] = os.path.getsize(vmfb)
        ys = []
        for c, files in enumerate(calls):
            y = os.path.join(args.work, "%s.%s.y%d.npy" % (name, p, c))
            run([args.kiln_run, vmfb, "--threads=1"] + files + ["--output=@" + y])
            ys.append(np.load(y).astype(np.float64))
        outs[p] = np.concatenate(ys) if len(ys) > 1 else ys[0]
        os.remove(vmfb)
    ref = outs["fp32"]
    print("%s: output %s, fp32 .vmfb %.1f MiB" % (name, ref.shape, sizes["fp32"] / 2**20))
    for p in args.precisions.split(","):
        got = outs[p]
        rel = np.max(np.abs(got - ref)) / max(np.max(np.abs(ref)), 1e-30)
        line = "  %s: .vmfb %.1f MiB (%.2fx smaller), max rel error %.3g" % (
            p, sizes[p] / 2**20, sizes["fp32"] / sizes[p], rel)
        if args.classifier:
            r2, g2 = ref.reshape(-1, ref.shape[-1]), got.reshape(-1, got.shape[-1])
            top1 = np.mean(np.argmax(r2, -1) == np.argmax(g2, -1))
            t5r, t5g = np.argsort(-r2, -1)[:, :5], np.argsort(-g2, -1)[:, :5]
            top5 = np.mean([len(set(a) & set(b)) / 5 for a, b in zip(t5r, t5g)])
            line += ", top-1 agreement %d/%d, top-5 overlap %.2f" % (round(top1 * len(r2)), len(r2), top5)
        print(line)


if __name__ == "__main__":
    main()
