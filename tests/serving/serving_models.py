"""The models the serving test and benchmark export: Kiln's examples with their weights bound
at compile time (random, seeded), so that each served function takes only its data input.

    build(source, out_vmfb, data_inputs=("x",), seed=0) -> path of the .vmfb
    export_mlp(work, source_dir, seed, reference) -> MlpRepository (the replica tests' model)
"""
import collections
import os
import subprocess
import sys

import numpy as np

import kiln
import kiln.triton


def build(source, out_vmfb, data_inputs=("x",), seed=0, scale=0.1, options=None):
    """Compiles `source` with every parameter but `data_inputs` bound to seeded uniform weights."""
    free = kiln.compile(source, options=options).load()
    rng = np.random.default_rng(seed)
    weights = {}
    for p in free["main"].params:
        if p.name in data_inputs:
            continue
        if not all(isinstance(d, int) for d in p.shape):
            raise ValueError(f"{source}: parameter {p.name} has a symbolic shape {p.shape}; cannot bind it")
        weights[p.name] = rng.uniform(-scale, scale, p.shape).astype(p.dtype)
    npz = os.path.splitext(out_vmfb)[0] + ".weights.npz"
    np.savez(npz, **weights)
    kiln.compile(source, options=dict(options or {}, params=npz)).save(out_vmfb)
    return out_vmfb


MlpRepository = collections.namedtuple("MlpRepository", "backend vmfb repository inputs expected")


def export_mlp(work, source_dir, seed, reference, requests=48):
    """examples/mlp.relax (symbolic batch) built into `work` and exported as model "mlp" to
    work/repository, on Kiln's native backend when it is built, else the Python backend;
    `requests` batch-1 inputs from `seed` and reference(vmfb, x, folder, tag)'s output for each
    (kiln-run's, in the tests)."""
    native = os.path.isfile(os.path.join(kiln.triton.native_backend_dir(), "libtriton_kiln.so"))
    backend = "kiln" if native else "python"
    vmfb = build(os.path.join(source_dir, "examples", "mlp.relax"), os.path.join(work, "mlp.vmfb"))
    repository = os.path.join(work, "repository")
    subprocess.run([sys.executable, "-m", "kiln.triton", "export", vmfb, "--name", "mlp",
                    "--repository", repository, "--backend", backend], check=True, timeout=60)
    rng = np.random.default_rng(seed)
    inputs = [rng.uniform(-1, 1, (1, 784)).astype(np.float32) for _ in range(requests)]
    expected = [reference(vmfb, x, work, f"x{i}") for i, x in enumerate(inputs)]
    return MlpRepository(backend, vmfb, repository, inputs, expected)
