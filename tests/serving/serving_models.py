"""The models the serving test and benchmark export: Kiln's examples with their weights bound
at compile time (random, seeded), so that each served function takes only its data input.

    build(source, out_vmfb, data_inputs=("x",), seed=0) -> path of the .vmfb
"""
import os

import numpy as np

import kiln


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
