"""The corpus of published ONNX models (issue 20 §4): manifests, cache paths, inputs.

Each model has one manifest, tests/models/manifests/ID.toml: the package and version
that carry it on PyPI, the file's path inside the package's archive and its sha256,
its family and exporter, its inputs with their symbolic dimensions, the concrete
shapes to test, how input values are made, the tolerance, and Kiln's current status
(`expect = "pass"`, `expect = "unsupported"` with the message Kiln prints today, or
`expect = "mismatch"` with the comparison's message where Kiln runs it and differs).

scripts/fetch_models.sh fetches the files into a cache (default build/models):
CACHE/PACKAGE-VERSION/PATH. Nothing here downloads anything.
"""
import hashlib
import os
import tomllib

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
MANIFESTS = os.path.join(HERE, "manifests")

DTYPES = {"float32": np.float32, "int64": np.int64, "int32": np.int32, "bool": np.bool_}
VALUE_KINDS = ("uniform", "int", "ones", "zeros", "const", "dim")


class Manifest:
    def __init__(self, path):
        with open(path, "rb") as f:
            d = tomllib.load(f)
        self.path = path
        self.id = os.path.splitext(os.path.basename(path))[0]
        self.package = d["package"]
        self.version = d["version"]
        self.file = d["file"]
        self.sha256 = d["sha256"]
        self.data_files = d.get("data_files", [])  # [{file, sha256}]: external tensor data
        self.family = d["family"]
        self.exporter = d["exporter"]
        self.exercises = d["exercises"]
        self.rtol = float(d.get("rtol", 1e-4))
        self.rtol_reason = d.get("rtol_reason", "")
        self.compile_args = list(d.get("compile_args", []))
        self.expect = d["expect"]
        self.error = d.get("error", "")
        self.inputs = d["inputs"]  # [{name, dtype, dims, values}]
        self.shapes = d["shapes"]  # [{input name: shape}] for the inputs with symbolic dims
        self.bench_shape = int(d.get("bench_shape", 0))
        self.check()

    def check(self):
        where = f"{self.path}:"
        if self.expect not in ("pass", "unsupported", "mismatch"):
            raise ValueError(f"{where} expect must be 'pass', 'unsupported' or 'mismatch', not {self.expect!r}")
        if self.expect != "pass" and not self.error:
            raise ValueError(f"{where} expect = {self.expect!r} needs `error`: the substring of Kiln's message "
                             "(unsupported) or of the comparison's (mismatch)")
        if self.rtol != 1e-4 and not self.rtol_reason:
            raise ValueError(f"{where} a tolerance other than 1e-4 needs rtol_reason")
        if len(self.shapes) < 2 and any(not all(isinstance(d, int) for d in i["dims"]) for i in self.inputs):
            raise ValueError(f"{where} a model with symbolic dimensions is tested at two or more shapes")
        for i in self.inputs:
            if i["dtype"] not in DTYPES:
                raise ValueError(f"{where} input {i['name']}: dtype {i['dtype']} not one of {sorted(DTYPES)}")
            if i["values"]["kind"] not in VALUE_KINDS:
                raise ValueError(f"{where} input {i['name']}: values.kind not one of {VALUE_KINDS}")
        for s in self.shapes:
            for name in s:
                if name not in [i["name"] for i in self.inputs]:
                    raise ValueError(f"{where} shape names unknown input {name!r}")

    @property
    def key(self):
        return f"{self.package}=={self.version}"

    def files(self):
        """[(path in the archive, sha256)] of the model and its external data."""
        return [(self.file, self.sha256)] + [(f["file"], f["sha256"]) for f in self.data_files]

    def cache_path(self, cache, rel=None):
        return os.path.join(cache, f"{self.package}-{self.version}", rel or self.file)

    def shape_of(self, inp, case):
        """The concrete shape of input `inp` in shape case `case`."""
        if inp["name"] in case:
            return list(case[inp["name"]])
        dims = inp["dims"]
        if not all(isinstance(d, int) for d in dims):
            raise ValueError(f"{self.path}: input {inp['name']} has symbolic dims {dims}: give its shape in every case")
        return list(dims)

    def shape_label(self, case):
        return " ".join(f"{i['name']}={'x'.join(map(str, self.shape_of(i, case))) or 'scalar'}" for i in self.inputs)

    def make_inputs(self, case, seed):
        """{name: np.ndarray} for one shape case; values as the manifest says."""
        rng = np.random.default_rng(seed)
        shapes = {i["name"]: self.shape_of(i, case) for i in self.inputs}
        out = {}
        for i in self.inputs:
            dt, shape, v = DTYPES[i["dtype"]], shapes[i["name"]], i["values"]
            kind = v["kind"]
            if kind == "uniform":
                a = rng.uniform(v.get("low", 0.0), v.get("high", 1.0), size=shape)
            elif kind == "int":  # integers in [low, high), e.g. token ids below the vocabulary size
                a = rng.integers(v["low"], v["high"], size=shape)
            elif kind == "ones":
                a = np.ones(shape)
            elif kind == "zeros":
                a = np.zeros(shape)
            elif kind == "const":
                a = np.full(shape, v["value"])
            elif kind == "dim":  # the size of another input's axis (sequence lengths)
                a = np.full(shape, shapes[v["input"]][v["axis"]])
            out[i["name"]] = np.asarray(a).astype(dt)
        return out


def load_all(only=None, folder=MANIFESTS):
    ms = [Manifest(os.path.join(folder, f)) for f in sorted(os.listdir(folder)) if f.endswith(".toml")]
    if only:
        wanted = set(only)
        unknown = wanted - {m.id for m in ms}
        if unknown:
            raise SystemExit(f"unknown model ids: {sorted(unknown)}; known: {[m.id for m in ms]}")
        ms = [m for m in ms if m.id in wanted]
    return ms


def sha256_of(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def cache_state(m, cache):
    """("ok" | "missing" | "mismatch", reason): whether every file of model m is in the cache with its
    pinned sha256."""
    for rel, sha in m.files():
        p = m.cache_path(cache, rel)
        if not os.path.exists(p):
            return "missing", f"not fetched: {p} is missing (scripts/fetch_models.sh {cache})"
        got = sha256_of(p)
        if got != sha:
            return "mismatch", f"sha256 of {p} is {got}, the manifest pins {sha} (rerun scripts/fetch_models.sh {cache})"
    return "ok", ""
