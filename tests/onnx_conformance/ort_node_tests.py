#!/usr/bin/env python3
"""ONNX Runtime on the node tests kiln-onnx-conformance selected, inputs as the tests define them.

Reads kiln-onnx-conformance's per-test lines (stdout, or stderr with --markdown) from a file, runs
each in-scope test's model on every test_data_set_N with ONNX Runtime (CPU, every input fed as a
graph input), compares with output_K.pb as Kiln's runner does (rtol 1e-3, atol 1e-5 for floats,
exact otherwise) and prints the pass/fail counts beside Kiln's, overall and per outcome, for
docs/onnx_conformance*.md.

usage: ort_node_tests.py KILN_LINES_FILE [--data DIR]
Needs the project venv (numpy, onnx, onnxruntime); exits 77 when it lacks them.
"""
import argparse
import glob
import os
import sys

try:
    import numpy as np
    import onnx
    from onnx import numpy_helper
    import onnxruntime as ort
except ImportError as e:  # pragma: no cover
    print(f"ort_node_tests.py: skipped: the Python environment lacks {e.name} (use the project venv)")
    sys.exit(77)


def load_pb(path):
    t = onnx.TensorProto()
    with open(path, "rb") as f:
        t.ParseFromString(f.read())
    return numpy_helper.to_array(t)


def numbered(d, prefix):
    out, i = [], 0
    while os.path.exists(os.path.join(d, f"{prefix}_{i}.pb")):
        out.append(os.path.join(d, f"{prefix}_{i}.pb"))
        i += 1
    return out


def run_test(test_dir):
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    sess = ort.InferenceSession(os.path.join(test_dir, "model.onnx"), so, providers=["CPUExecutionProvider"])
    names = [i.name for i in sess.get_inputs()]
    for ds in sorted(glob.glob(os.path.join(test_dir, "test_data_set_*"))):
        ins = [load_pb(p) for p in numbered(ds, "input")]
        outs = sess.run(None, dict(zip(names, ins)))
        for got, path in zip(outs, numbered(ds, "output")):
            want = load_pb(path)
            got = np.asarray(got)
            if got.shape != want.shape:
                return f"shape {got.shape} != {want.shape}"
            if np.issubdtype(want.dtype, np.floating):
                if not np.allclose(got, want, rtol=1e-3, atol=1e-5, equal_nan=True):
                    return "values differ"
            elif not np.array_equal(got, want):
                return "values differ"
    return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("lines")
    ap.add_argument("--data", default=os.environ.get("KILN_ONNX_TESTDATA", "/usr/share/libonnx-testdata/data/node"))
    a = ap.parse_args()
    kiln = {}
    with open(a.lines) as f:
        for line in f:
            parts = line.split()
            if len(parts) >= 2 and parts[0].startswith("test_"):
                outcome = "out of scope" if parts[1] == "out" else parts[1]
                kiln[parts[0]] = outcome
    counts = {"pass": 0, "fail": 0}
    kiln_counts = {"pass": 0, "fail": 0}
    failures = []
    for name, outcome in sorted(kiln.items()):
        if outcome == "out of scope":
            continue
        kiln_counts[outcome] += 1
        try:
            why = run_test(os.path.join(a.data, name))
        except Exception as e:  # ONNX Runtime refuses the model or the inputs
            why = str(e).splitlines()[0][:120]
        if why is None:
            counts["pass"] += 1
        else:
            counts["fail"] += 1
            failures.append((name, why))
    n = counts["pass"] + counts["fail"]
    print(f"in-scope tests: {n}; Kiln: {kiln_counts['pass']} pass, {kiln_counts['fail']} fail; "
          f"ONNX Runtime {ort.__version__}: {counts['pass']} pass, {counts['fail']} fail")
    for name, why in failures:
        print(f"  ONNX Runtime fails {name}: {why}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
