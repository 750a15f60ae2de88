"""Is the per-layer Winograd decision worth a search on this machine?

Builds one 3x3 conv + bias + ReLU (pad 1, batch 1, constant weights) per
stride-1 3x3 shape of SqueezeNet 1.1 and ResNet-18, and a chain of four
512 -> 512 convs at 7^2 (ResNet-18's layer 4: weights past the L3, streamed
from memory each call, as in the model), each with kiln-compile --threads 1
--winograd=on and off, then times every file with kiln-bench --threads=1 in
its own process, rounds with the order alternating, and prints the CPU time
per call and the per-round ratios off / on.

  build/venv/bin/python benchmarks/tuning/winograd_on_off.py --build build --work /tmp/wino --rounds 5
"""
import argparse
import json
import os
import subprocess

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

CASES = {  # name: (C, O, H = W, convs in a chain)
    "sq_fire2_16_64_55": (16, 64, 55, 1), "sq_fire4_32_128_27": (32, 128, 27, 1),
    "sq_fire6_48_192_13": (48, 192, 13, 1), "sq_fire8_64_256_13": (64, 256, 13, 1),
    "r18_64_64_56": (64, 64, 56, 1), "r18_128_128_28": (128, 128, 28, 1),
    "r18_256_256_14": (256, 256, 14, 1), "r18_512_512_7": (512, 512, 7, 1),
    "r18_512_512_7_chain4": (512, 512, 7, 4)}


def conv_model(path, c, o, h, depth, rng):
    nodes, inits, prev, cin = [], [], "x", c
    for i in range(depth):
        inits += [numpy_helper.from_array((rng.standard_normal((o, cin, 3, 3)) * 0.02).astype(np.float32), f"w{i}"),
                  numpy_helper.from_array((rng.standard_normal(o) * 0.1).astype(np.float32), f"b{i}")]
        nodes += [helper.make_node("Conv", [prev, f"w{i}", f"b{i}"], [f"c{i}"], pads=[1, 1, 1, 1], kernel_shape=[3, 3]),
                  helper.make_node("Relu", [f"c{i}"], [f"r{i}"])]
        prev, cin = f"r{i}", o
    g = helper.make_graph(nodes, "conv", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, c, h, h])],
                          [helper.make_tensor_value_info(prev, TensorProto.FLOAT, [1, o, h, h])], inits)
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), path)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--work", default="/tmp/kiln-winograd-on-off")
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    compile_tool = os.path.join(args.build, "tools/kiln-compile/kiln-compile")
    bench = os.path.join(args.build, "tools/kiln-bench/kiln-bench")
    os.makedirs(args.work, exist_ok=True)
    rng = np.random.default_rng(0)
    for name, (c, o, h, depth) in CASES.items():
        onnx_path = os.path.join(args.work, name + ".onnx")
        conv_model(onnx_path, c, o, h, depth, rng)
        for wg in ("on", "off"):
            subprocess.run([compile_tool, onnx_path, "--threads", "1", "--winograd=" + wg, "-o",
                            os.path.join(args.work, f"{name}_{wg}.vmfb")], check=True, capture_output=True)
    cpu = {n: {"on": [], "off": []} for n in CASES}
    for r in range(args.rounds):
        for name, (_, _, _, depth) in CASES.items():
            for wg in (("on", "off") if r % 2 == 0 else ("off", "on")):
                out = subprocess.run([bench, os.path.join(args.work, f"{name}_{wg}.vmfb"), "--threads=1",
                                      "--min-time=%s" % (1 if depth > 1 else 0.5), "--format=json"],
                                     check=True, capture_output=True, text=True).stdout
                cpu[name][wg].append(json.loads(out)["results"][0]["cpu_ms_per_call"])
    print("case  CPU ms per call: winograd on (median), off (median)  per-round ratios off / on")
    for name, d in cpu.items():
        print(name, "%.4f" % np.median(d["on"]), "%.4f" % np.median(d["off"]),
              " ".join("%.2f" % (b / a) for a, b in zip(d["on"], d["off"])))


if __name__ == "__main__":
    main()
