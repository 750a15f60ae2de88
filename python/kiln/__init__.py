"""Kiln's runtime from Python: load a compiled ``.vmfb`` and call its functions.

    import numpy as np, kiln
    m = kiln.load("mlp.vmfb")
    y = m["main"](x, w0, b0, w1, b1)      # numpy in, kiln.Tensor out
    np.asarray(y)                         # a view of the output, no copy

Arrays pass without copying through the buffer protocol or DLPack (numpy, torch, any
object with ``__dlpack__``) when their data is 64-byte aligned; others are copied
into aligned storage. Calls release the GIL. Errors are :class:`kiln.Error` subclasses
carrying Kiln's message.

When the package is built with the compiler, :func:`kiln.compile` turns an ONNX model or
Relax text into an :class:`Executable` (``.save(path)``, ``.load()``), and :func:`kiln.tune` tunes a
PrimFunc's schedule by measurement into a database that ``kiln.compile(tuning_db=...)`` uses.
"""

from ._kiln import (
    Context,
    Function,
    Module,
    Tensor,
    ValueInfo,
    __version__,
    api_version,
    empty,
    from_dlpack,
    load,
)
from .compiler import Executable, compile
from .tuner import TuneResult, tune
from .errors import (
    DataLossError,
    Error,
    FailedPreconditionError,
    IncompatibleError,
    InternalError,
    InvalidArgumentError,
    NotFoundError,
    OutOfRangeError,
    ResourceExhaustedError,
    UnimplementedError,
)

__all__ = [
    "Context",
    "Executable",
    "Function",
    "Module",
    "Tensor",
    "ValueInfo",
    "__version__",
    "api_version",
    "compile",
    "empty",
    "from_dlpack",
    "load",
    "tune",
    "TuneResult",
    "Error",
    "InvalidArgumentError",
    "NotFoundError",
    "OutOfRangeError",
    "DataLossError",
    "UnimplementedError",
    "FailedPreconditionError",
    "ResourceExhaustedError",
    "InternalError",
    "IncompatibleError",
]
