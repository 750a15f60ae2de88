"""A Triton Inference Server model repository entry for a compiled ``.vmfb``.

    REPOSITORY/NAME/config.pbtxt      from the module's own introspection
    REPOSITORY/NAME/1/model.vmfb      the compiled module
    REPOSITORY/NAME/1/model.py        the Python-backend model (this folder's model.py)

or, with ``backend="kiln"``, Kiln's native Triton backend instead of model.py:

    REPOSITORY/NAME/libtriton_kiln.so, libkiln.so.N    the backend (serving/triton_backend/)

Triton looks for ``libtriton_<backend>.so`` in the model's version folder, then its model
folder, then BACKEND_DIRECTORY/<backend>/; putting it in the model folder makes the
repository self-contained (any tritonserver, any replica, serves it as it is).

``config.pbtxt`` lists the function's parameters as inputs and its results as outputs, with
their dtypes and dims (``-1`` for a symbolic dimension). When every input and output starts
with the same symbolic dimension, that dimension is taken as the batch: the config gets
``max_batch_size`` and ``dynamic_batching``, the dims leave it out, and Triton may merge
requests, which model.py answers with one call. That is only right when rows are
independent (an MLP, a CNN); for a model whose first dimension is a sequence (a transformer
block over ``s`` tokens) pass ``max_batch_size=0``.
"""

import os
import shutil
from typing import List, Optional

# Kiln dtype -> Triton data type (model_config.proto's DataType names).
_TRITON_DTYPES = {
    "bool": "TYPE_BOOL",
    "uint8": "TYPE_UINT8",
    "uint16": "TYPE_UINT16",
    "uint32": "TYPE_UINT32",
    "uint64": "TYPE_UINT64",
    "int8": "TYPE_INT8",
    "int16": "TYPE_INT16",
    "int32": "TYPE_INT32",
    "int64": "TYPE_INT64",
    "float16": "TYPE_FP16",
    "bfloat16": "TYPE_BF16",
    "float32": "TYPE_FP32",
    "float64": "TYPE_FP64",
}


BACKENDS = ("python", "kiln")


class ExportError(Exception):
    """A module that cannot be served as asked; the message says why."""


def native_backend_dir() -> str:
    """The folder holding libtriton_kiln.so and the libkiln it loads (kiln/triton/backends/kiln)."""
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "backends", "kiln")


def _native_backend_files() -> List[str]:
    folder = native_backend_dir()
    library = os.path.join(folder, "libtriton_kiln.so")
    if not os.path.isfile(library):
        raise ExportError(
            f"--backend kiln: the native backend is not built (no {library}); build it with "
            "cmake -DKILN_BUILD_TRITON_BACKEND=ON and ninja kiln_triton_backend, or export with --backend python")
    return [os.path.join(folder, f) for f in sorted(os.listdir(folder)) if ".so" in f]


def _tensor_values(values, what: str, function: str):
    for v in values:
        if v.kind != "tensor":
            raise ExportError(
                f"{function}: {what} '{v.name}' is a {v.kind}, not a tensor; "
                "a Triton model takes and returns tensors only")
        if v.dtype not in _TRITON_DTYPES:
            raise ExportError(f"{function}: {what} '{v.name}' has dtype {v.dtype}, which Triton has no type for")
        if v.shape is None:
            raise ExportError(f"{function}: {what} '{v.name}' has no known rank; Triton needs one")
    return values


def _batch_dim(values) -> Optional[str]:
    """The symbolic first dimension that every value shares, or None."""
    firsts = {v.shape[0] if len(v.shape) > 0 else None for v in values}
    if len(firsts) != 1:
        return None
    first = firsts.pop()
    return first if isinstance(first, str) else None


def batch_dimension(module, function: str = "main") -> Optional[str]:
    """The symbolic first dimension shared by every parameter and result of `function`, or None."""
    f = module[function]
    return _batch_dim(list(f.params) + list(f.results))


def _dims(shape, batched: bool) -> str:
    dims = shape[1:] if batched else shape
    return "[ " + ", ".join(str(d) if isinstance(d, int) else "-1" for d in dims) + " ]"


def _unique_names(values) -> List[str]:
    names, seen = [], set()
    for i, v in enumerate(values):
        name = v.name or f"output{i}"
        if name in seen:
            name = f"{name}_{i}"
        seen.add(name)
        names.append(name)
    return names


def config_text(module, name: str, *, function: str = "main", max_batch_size: Optional[int] = None,
                instances: int = 1, dynamic_batching: bool = True, max_queue_delay_us: int = 100,
                threads: int = 1, backend: str = "python") -> str:
    """The config.pbtxt of `module` (a kiln.Module) served as model `name` by `backend`
    ("python": model.py on Triton's Python backend; "kiln": libtriton_kiln.so).

    ``max_batch_size``: None picks 64 when the function has a symbolic batch dimension (and 0
    otherwise); 0 turns batching off; N > 0 requires a batch dimension.
    """
    if backend not in BACKENDS:
        raise ExportError(f"--backend must be one of {', '.join(BACKENDS)}, got '{backend}'")
    if function not in module.functions:
        raise ExportError(f"the module has no function '{function}' (it has: {', '.join(module.functions)})")
    f = module[function]
    params = _tensor_values(f.params, "parameter", function)
    results = _tensor_values(f.results, "result", function)
    batch = _batch_dim(list(params) + list(results))
    if max_batch_size is None:
        max_batch_size = 64 if batch is not None else 0
    if max_batch_size < 0:
        raise ExportError(f"--max-batch-size must be 0 or more, got {max_batch_size}")
    if max_batch_size > 0 and batch is None:
        raise ExportError(
            f"--max-batch-size {max_batch_size}: {function} has no symbolic first dimension shared by every "
            "input and output to batch along; export with --max-batch-size 0")
    if instances < 1:
        raise ExportError(f"--instances must be 1 or more, got {instances}")
    if threads < 0:
        raise ExportError(f"--threads must be 0 (Kiln's default) or more, got {threads}")
    batched = max_batch_size > 0
    lines = [
        f'name: "{name}"',
        f'backend: "{backend}"',
        f"max_batch_size: {max_batch_size}",
    ]
    for section, values, names in (("input", params, [p.name for p in params]),
                                   ("output", results, _unique_names(results))):
        lines.append(f"{section} [")
        entries = []
        for v, n in zip(values, names):
            entries.append(
                f'  {{\n    name: "{n}"\n    data_type: {_TRITON_DTYPES[v.dtype]}\n'
                f"    dims: {_dims(v.shape, batched)}\n  }}")
        lines.append(",\n".join(entries))
        lines.append("]")
    lines.append(f"instance_group [\n  {{\n    count: {instances}\n    kind: KIND_CPU\n  }}\n]")
    if batched and dynamic_batching:
        lines.append(f"dynamic_batching {{\n  max_queue_delay_microseconds: {max_queue_delay_us}\n}}")
    # Read by model.py or libtriton_kiln.so: which function, the threads of each instance's context.
    lines.append("parameters [")
    lines.append(",\n".join(
        f'  {{\n    key: "{k}"\n    value: {{ string_value: "{v}" }}\n  }}'
        for k, v in (("kiln_function", function), ("kiln_threads", str(threads)),
                     ("kiln_batch_dim", batch if batched else ""))))
    lines.append("]")
    return "\n".join(lines) + "\n"


def export(vmfb: str, name: str, repository: str, *, version: int = 1, backend: str = "python",
           copy_backend: bool = True, **config) -> str:
    """Writes REPOSITORY/NAME (config.pbtxt, VERSION/model.vmfb, and VERSION/model.py or, with
    `copy_backend`, the native backend's libraries in NAME/); returns its path. Without
    `copy_backend` the server's backend directory must hold kiln/libtriton_kiln.so."""
    from .. import _kiln

    if not name or "/" in name or name in (".", ".."):
        raise ExportError(f"--name must be a plain model name, got '{name}'")
    module = _kiln.load(vmfb)
    text = config_text(module, name, backend=backend, **config)
    libraries = _native_backend_files() if backend == "kiln" and copy_backend else []
    model_dir = os.path.join(repository, name)
    version_dir = os.path.join(model_dir, str(version))
    os.makedirs(version_dir, exist_ok=True)
    shutil.copyfile(vmfb, os.path.join(version_dir, "model.vmfb"))
    if backend == "python":
        shutil.copyfile(os.path.join(os.path.dirname(__file__), "model.py"), os.path.join(version_dir, "model.py"))
    for library in libraries:
        shutil.copy2(library, os.path.join(model_dir, os.path.basename(library)))
    with open(os.path.join(model_dir, "config.pbtxt"), "w") as f:
        f.write(text)
    return model_dir
