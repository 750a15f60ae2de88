"""Writes the inputs of the example models' end-to-end GPU checks as .npy files.

    python3 tests/gpu/make_model_inputs.py CASE OUT_DIR

CASE is mlp_n4, mlp_n256, transformer_s128, resnet_block or matmul_512. Values are uniform
in [-1, 1) from a fixed seed, except batch-norm variances (uniform in
[0.5, 1.5)), so that no output is NaN (a square root of a negative variance)
and the GPU's results can be compared with the CPU's element by element.
Writes in0.npy, in1.npy, ... in the function's parameter order.
"""
import os
import sys

import numpy as np

# (name, shape) per parameter of each example's main, in order.
CASES = {
    "mlp_n4": [("x", (4, 784)), ("w0", (128, 784)), ("b0", (128,)), ("w1", (10, 128)), ("b1", (10,))],
    "mlp_n256": [("x", (256, 784)), ("w0", (128, 784)), ("b0", (128,)), ("w1", (10, 128)), ("b1", (10,))],
    "transformer_s128": [("x", (128, 64)), ("ln1_g", (64,)), ("ln1_b", (64,)), ("wq", (64, 64)), ("wk", (64, 64)),
                         ("wv", (64, 64)), ("wo", (64, 64)), ("bo", (64,)), ("ln2_g", (64,)), ("ln2_b", (64,)),
                         ("w1", (64, 256)), ("b1", (256,)), ("w2", (256, 64)), ("b2", (64,))],
    "resnet_block": [("x", (1, 64, 56, 56)), ("w1", (64, 64, 3, 3)), ("g1", (64,)), ("be1", (64,)), ("m1", (64,)),
                     ("v1", (64,)), ("w2", (64, 64, 3, 3)), ("g2", (64,)), ("be2", (64,)), ("m2", (64,)),
                     ("v2", (64,))],
    "matmul_512": [("a", (512, 512)), ("b", (512, 512))],
}


def main():
    case, out = sys.argv[1], sys.argv[2]
    os.makedirs(out, exist_ok=True)
    rng = np.random.default_rng(22)
    for i, (name, shape) in enumerate(CASES[case]):
        if case == "resnet_block" and name.startswith("v"):
            a = rng.uniform(0.5, 1.5, shape)
        else:
            a = rng.uniform(-1.0, 1.0, shape)
        np.save(os.path.join(out, "in%d.npy" % i), a.astype(np.float32))


if __name__ == "__main__":
    main()
