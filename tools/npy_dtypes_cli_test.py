#!/usr/bin/python3
"""kiln_npy_dtypes_cli_test (issue 19 §4): every dtype Kiln computes in goes
through .npy files with the tools as a user runs them. For each dtype a model
transposes a 2x3 input (a generated kernel moving the elements); NumPy writes
the input, kiln-run reads it and writes the output, NumPy reads that back and
checks it bit for bit; kiln-run --expected_output compares through .npy too,
and kiln-bench runs the model on the same file and on random inputs. bfloat16, which NumPy lacks,
goes both ways of the convention (runtime/npy.h): '<V2' (np.save of an
ml_dtypes.bfloat16 array) and raw bits as '<u2'.

  npy_dtypes_cli_test.py KILN-COMPILE KILN-RUN KILN-BENCH WORKDIR
"""
import os
import shutil
import subprocess
import sys

import numpy as np

compile_tool, run_tool, bench_tool, work = sys.argv[1:5]
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
failures = []

MODEL = """@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((2, 3), dtype="{dtype}")) -> R.Tensor((3, 2), dtype="{dtype}"):
        with R.dataflow():
            y = R.permute_dims(x, axes=None)
            R.output(y)
        return y
"""

# Kiln dtype -> the array NumPy writes for it (values chosen to use every byte).
BF16_BITS = np.array([[0x3F80, 0xC000, 0x7F7F], [0x0001, 0x8000, 0x4049]], dtype="<u2")
INPUTS = {
    "float16": np.array([[0.5, -2, 65504], [6.1e-5, -0.0, 3.140625]], dtype="<f2"),
    "float32": np.array([[1.5, -2, 3.4e38], [1e-30, 0, 7]], dtype="<f4"),
    "float64": np.array([[1.5, -2, 1e300], [1e-300, 0, 7]], dtype="<f8"),
    "int8": np.array([[-128, 127, 0], [1, -1, 5]], dtype="i1"),
    "int16": np.array([[-32768, 32767, 0], [258, -1, 5]], dtype="<i2"),
    "int32": np.array([[-2**31, 2**31 - 1, 0], [65536, -1, 5]], dtype="<i4"),
    "int64": np.array([[-2**63, 2**63 - 1, 0], [2**40, -1, 5]], dtype="<i8"),
    "uint8": np.array([[255, 0, 1], [128, 7, 5]], dtype="u1"),
    "uint16": np.array([[65535, 0, 1], [258, 7, 5]], dtype="<u2"),
    "uint32": np.array([[2**32 - 1, 0, 1], [65536, 7, 5]], dtype="<u4"),
    "uint64": np.array([[2**64 - 1, 0, 1], [2**40, 7, 5]], dtype="<u8"),
    "bool": np.array([[True, False, True], [False, False, True]]),
    "bfloat16": BF16_BITS.view("V2"),
}


def run(*args):
    r = subprocess.run(args, capture_output=True, text=True)
    return r.returncode, r.stdout, r.stderr


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


for dtype, x in INPUTS.items():
    src = os.path.join(work, dtype + ".relax")
    vmfb = os.path.join(work, dtype + ".vmfb")
    with open(src, "w") as f:
        f.write(MODEL.format(dtype=dtype))
    rc, out, err = run(compile_tool, src, "-o", vmfb)
    check(rc == 0, f"{dtype}: kiln-compile failed: {err.strip()}")
    if rc != 0:
        continue
    x_path = os.path.join(work, dtype + ".x.npy")
    y_path = os.path.join(work, dtype + ".y.npy")
    np.save(x_path, x)
    rc, out, err = run(run_tool, vmfb, "--input=@" + x_path, "--output=@" + y_path)
    check(rc == 0, f"{dtype}: kiln-run failed: {err.strip()}")
    if rc != 0:
        continue
    y = np.load(y_path)
    check(y.dtype == x.dtype, f"{dtype}: output dtype {y.dtype}, input {x.dtype}")
    check(y.shape == (3, 2), f"{dtype}: output shape {y.shape}")
    check(y.tobytes() == np.ascontiguousarray(x.T).tobytes(), f"{dtype}: output is not the input transposed")
    rc, out, err = run(run_tool, vmfb, "--input=@" + x_path, "--expected_output=@" + y_path, "--atol=0", "--rtol=0")
    check(rc == 0 and "output 0: matches" in out, f"{dtype}: --expected_output: {out.strip()} {err.strip()}")
    rc, out, err = run(bench_tool, vmfb, "--input=@" + x_path, "--runs=3", "--warmup=1")
    check(rc == 0, f"{dtype}: kiln-bench failed: {err.strip()}")
    rc, out, err = run(bench_tool, vmfb, "--runs=3", "--warmup=1")  # random inputs of the parameter's dtype
    check(rc == 0, f"{dtype}: kiln-bench with random inputs failed: {err.strip()}")

# bfloat16 given as its bits in uint16 (NumPy without ml_dtypes).
bits_path = os.path.join(work, "bf16_bits.npy")
out_path = os.path.join(work, "bf16_from_bits.y.npy")
np.save(bits_path, BF16_BITS)
rc, out, err = run(run_tool, os.path.join(work, "bfloat16.vmfb"), "--input=@" + bits_path, "--output=@" + out_path)
check(rc == 0, f"bfloat16 from '<u2' bits: kiln-run failed: {err.strip()}")
if rc == 0:
    y = np.load(out_path)
    check(y.dtype.str in ("<V2", "|V2"), f"bfloat16 output written as {y.dtype.str}")
    check((y.view("<u2") == BF16_BITS.T).all(), "bfloat16 from '<u2' bits: wrong values")

# A float16 file for a float32 parameter is refused by the call, not misread.
rc, out, err = run(run_tool, os.path.join(work, "float32.vmfb"), "--input=@" + os.path.join(work, "float16.x.npy"))
check(rc == 1 and "float16" in err, f"float16 input for a float32 parameter: rc {rc}, {err.strip()}")

if failures:
    print(f"{len(failures)} failures")
    sys.exit(1)
print("ok:", ", ".join(INPUTS))
