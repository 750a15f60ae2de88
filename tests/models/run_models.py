"""Runs the corpus of published ONNX models (tests/models/manifests) through Kiln and ONNX Runtime.

For each model whose files scripts/fetch_models.sh put in the cache: `kiln-compile` once with
its symbolic dimensions, then for each shape of its manifest: inputs made as the manifest
says, ONNX Runtime and `kiln-run` (inputs and outputs as .npy) on them, outputs compared:
max |kiln - ort| / max |ort| <= rtol for floats (1e-4 unless the manifest says why not),
equal for integers and booleans, same shapes and dtypes.

A manifest's `expect` is Kiln's status today:
  pass         compiles and matches at every shape; anything else fails the run;
  unsupported  Kiln fails with a message containing `error`; the run fails if it no longer
               does (it passes now, or fails with another message), so that the manifest is
               updated as support lands.
  mismatch     Kiln compiles and runs it but an output differs from ONNX Runtime's, with a
               comparison message containing `error` (a known wrong result, recorded so that
               it is fixed, not hidden); the run fails if that changes.
Models whose files are not in the cache are skipped, each named with the reason; when every
model is skipped the exit status is 77 (ctest's SKIP_RETURN_CODE). Nothing is downloaded.

usage: build/venv/bin/python tests/models/run_models.py --kiln-compile PATH --kiln-run PATH
           [--cache build/models] [--work DIR] [--only ID,ID] [--manifests DIR] [--ort-only] [--keep]
"""
import argparse
import os
import shutil
import subprocess
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import corpus  # noqa: E402


def ort_session(path, threads=1):
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    return ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])


def check_manifest_against_model(m, path):
    """The manifest's inputs (names, order, dtypes, dims) must be the model's: a stale manifest fails."""
    import onnx
    model = onnx.load(path, load_external_data=False)
    inits = {i.name for i in model.graph.initializer}
    problems = []
    real = [i for i in model.graph.input if i.name not in inits]
    if [i.name for i in real] != [i["name"] for i in m.inputs]:
        return [f"inputs are {[i.name for i in real]}, the manifest lists {[i['name'] for i in m.inputs]}"]
    for i, spec in zip(real, m.inputs):
        t = i.type.tensor_type
        dtype = onnx.helper.tensor_dtype_to_np_dtype(t.elem_type)
        if np.dtype(dtype) != np.dtype(corpus.DTYPES[spec["dtype"]]):
            problems.append(f"input {i.name}: dtype {np.dtype(dtype)}, the manifest says {spec['dtype']}")
        dims = [d.dim_param if d.HasField("dim_param") else (d.dim_value if d.HasField("dim_value") else "?")
                for d in t.shape.dim]
        if dims != list(spec["dims"]):
            problems.append(f"input {i.name}: dims {dims}, the manifest says {spec['dims']}")
    return problems


def run(cmd, log, timeout):
    """(exit status, output); the command and its output go to `log`."""
    t0 = time.time()
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=timeout)
        out, rc = p.stdout.decode(errors="replace"), p.returncode
    except subprocess.TimeoutExpired as e:
        out, rc = (e.stdout or b"").decode(errors="replace") + f"\n[timed out after {timeout} s]", -1
    except OSError as e:
        out, rc = f"[could not run {cmd[0]}: {e}]", -1
    with open(log, "w") as f:
        f.write(" ".join(cmd) + f"\n[exit {rc}, {time.time() - t0:.1f} s]\n" + out)
    return rc, out


def compare(name, got, want, rtol, worst):
    """None if output `name` matches, else why not; worst[0] keeps the largest relative error seen."""
    if got.shape != want.shape:
        return f"output {name}: shape {list(got.shape)}, ONNX Runtime's {list(want.shape)}"
    if got.dtype != want.dtype:
        return f"output {name}: dtype {got.dtype}, ONNX Runtime's {want.dtype}"
    if want.dtype.kind in "iub":
        bad = np.flatnonzero(got.ravel() != want.ravel())
        if bad.size:
            i = bad[0]
            return (f"output {name}: {bad.size} of {want.size} elements differ, first at flat index {i}: "
                    f"{got.ravel()[i]} vs {want.ravel()[i]}")
        return None
    g, w = got.astype(np.float64), want.astype(np.float64)
    nan_w, nan_g = np.isnan(w), np.isnan(g)
    if (nan_w != nan_g).any():
        return f"output {name}: NaN at {int((nan_w != nan_g).sum())} positions where ONNX Runtime has none (or the reverse)"
    g, w = np.where(nan_w, 0, g), np.where(nan_w, 0, w)
    if w.size == 0:
        return None
    err = np.abs(g - w)
    scale = max(float(np.abs(w).max()), 1e-30)
    rel = float(err.max()) / scale
    worst[0] = max(worst[0], rel)
    if not rel <= rtol:
        i = int(err.argmax())
        return (f"output {name}: max |kiln - ort| / max |ort| = {rel:.3g} > {rtol:g} "
                f"(worst at flat index {i}: {g.ravel()[i]:.9g} vs {w.ravel()[i]:.9g}, max |ort| = {scale:.4g})")
    return None


class Result:
    def __init__(self, m):
        self.m, self.status, self.lines = m, None, []

    def set(self, status, *lines):
        self.status = status
        self.lines.extend(lines)
        return self


def run_model(m, args, model_path):
    r = Result(m)
    problems = check_manifest_against_model(m, model_path)
    if problems:
        return r.set("FAIL", f"the manifest {m.path} does not describe {model_path}:", *problems)
    work = os.path.join(args.work, m.id)
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)

    ort_outs = []
    sess = ort_session(model_path)
    out_names = [o.name for o in sess.get_outputs()]
    for k, case in enumerate(m.shapes):
        feeds = m.make_inputs(case, seed=1000 + k)
        for j, i in enumerate(m.inputs):
            np.save(os.path.join(work, f"s{k}_in{j}.npy"), feeds[i["name"]])
        ort_outs.append(sess.run(None, feeds))
    if args.ort_only:
        shapes = "; ".join(f"{m.shape_label(c)} -> " + ", ".join(f"{list(o.shape)}{o.dtype}" for o in outs)
                           for c, outs in zip(m.shapes, ort_outs))
        return r.set("ORT-OK", shapes)

    # Compile once, with the model's symbolic dimensions.
    vmfb = os.path.join(work, f"{m.id}.vmfb")
    rc, out = run([args.kiln_compile, model_path, "-o", vmfb] + m.compile_args,
                  os.path.join(work, "compile.log"), args.compile_timeout)
    failures, outputs, worst = [], [out], [0.0]
    tool_failed = rc != 0
    if rc != 0:
        failures.append(f"kiln-compile (exit {rc}): " + out.strip()[-2000:])
    else:
        for k, case in enumerate(m.shapes):
            ins = [f"--input=@{os.path.join(work, f's{k}_in{j}.npy')}" for j in range(len(m.inputs))]
            outs = [os.path.join(work, f"s{k}_out{j}.npy") for j in range(len(out_names))]
            # Three calls: the outputs compared are the last one's, which on
            # the VM replays the second call's recorded kernel calls
            # (vm/call_plan.h) instead of interpreting the bytecode.
            rc, out = run([args.kiln_run, vmfb, "--repeat=2"] + ins + [f"--output=@{p}" for p in outs],
                          os.path.join(work, f"run{k}.log"), args.run_timeout)
            outputs.append(out)
            label = m.shape_label(case)
            if rc != 0:
                tool_failed = True
                failures.append(f"kiln-run at {label} (exit {rc}): " + out.strip()[-2000:])
                continue
            for name, p, want in zip(out_names, outs, ort_outs[k]):
                why = compare(name, np.load(p), np.asarray(want), m.rtol, worst) if os.path.exists(p) else \
                    f"output {name}: kiln-run wrote no {p}"
                if why:
                    failures.append(f"at {label}: {why}")
    if not args.keep and os.path.exists(vmfb):
        os.remove(vmfb)  # some are hundreds of MB; the logs and .npy files stay in the work folder
    all_out = "\n".join(outputs)
    shapes = ", ".join(m.shape_label(c) for c in m.shapes)
    if m.expect == "pass":
        if failures:
            return r.set("FAIL", f"expected to pass (manifest {m.path}) but:", *failures)
        return r.set("PASS", f"matches ONNX Runtime at {shapes} (largest max |kiln - ort| / max |ort|: "
                     f"{worst[0]:.2g}, tolerance {m.rtol:g})")
    if m.expect == "unsupported" and m.error in all_out:
        return r.set("UNSUPPORTED", f"as expected: {m.error!r}")
    if m.expect == "mismatch" and not tool_failed and any(m.error in f for f in failures):
        return r.set("MISMATCH", f"as expected (a known wrong result of Kiln's): {m.error!r}")
    if not failures:
        return r.set("FAIL", f"now compiles and matches ONNX Runtime at {shapes}: Kiln supports it. "
                     f"Set expect = \"pass\" in {m.path} (and update docs/models.md).")
    return r.set("FAIL", f"still fails, but no longer with {m.error!r}: update `error` in {m.path} "
                 f"(and docs/models.md) to the new message if this failure is the expected one:", *failures)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cache", default="build/models")
    ap.add_argument("--kiln-compile")
    ap.add_argument("--kiln-run")
    ap.add_argument("--work", default=None, help="scratch folder (default: CACHE/work)")
    ap.add_argument("--only", default="", help="comma-separated model ids")
    ap.add_argument("--manifests", default=corpus.MANIFESTS, help="folder of manifests (default: %(default)s)")
    ap.add_argument("--ort-only", action="store_true", help="check the manifests against ONNX Runtime only")
    ap.add_argument("--keep", action="store_true", help="keep each compiled .vmfb in the work folder")
    ap.add_argument("--compile-timeout", type=int, default=900)
    ap.add_argument("--run-timeout", type=int, default=300)
    args = ap.parse_args()
    if not args.ort_only and not (args.kiln_compile and args.kiln_run):
        ap.error("--kiln-compile and --kiln-run are needed (or --ort-only)")
    args.work = args.work or os.path.join(args.cache, "work")

    models = corpus.load_all([s for s in args.only.split(",") if s], args.manifests)
    results = []
    for m in models:
        path = m.cache_path(args.cache)
        state, why = corpus.cache_state(m, args.cache)
        if state != "ok":
            r = Result(m).set("SKIP" if state == "missing" else "FAIL", why)
        else:
            t0 = time.time()
            r = run_model(m, args, path)
            r.lines[-1] += f" [{time.time() - t0:.1f} s]"
        results.append(r)
        print(f"{r.status:<11} {m.id} ({m.key}, {m.file})", flush=True)
        for line in r.lines:
            print("            " + line.replace("\n", "\n            "), flush=True)

    count = {s: sum(r.status == s for r in results)
             for s in ("PASS", "UNSUPPORTED", "MISMATCH", "ORT-OK", "SKIP", "FAIL")}
    print(f"\nmodels: {count['PASS']} pass, {count['UNSUPPORTED']} expected unsupported, "
          f"{count['MISMATCH']} expected mismatch, "
          f"{count['ORT-OK']} checked with ONNX Runtime only, {count['SKIP']} skipped, {count['FAIL']} failed")
    if count["SKIP"]:
        print("skipped (not fetched): " + ", ".join(r.m.id for r in results if r.status == "SKIP") +
              f"\n  fetch them with: scripts/fetch_models.sh {args.cache}")
    if count["FAIL"]:
        print("failed: " + ", ".join(r.m.id for r in results if r.status == "FAIL"))
        return 1
    if count["SKIP"] == len(results):
        return 77
    return 0


if __name__ == "__main__":
    sys.exit(main())
