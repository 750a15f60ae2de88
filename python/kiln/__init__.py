"""Kiln's runtime from Python: load a compiled ``.vmfb`` and call its functions.

    import numpy as np, kiln
    m = kiln.load("mlp.vmfb")
    y = m["main"](x, w0, b0, w1, b1)      # numpy in, kiln.Tensor out
    np.asarray(y)                         # a view of the output, no copy

Arrays pass without copying through the buffer protocol or DLPack (numpy, torch, any
object with ``__dlpack__``) when their data is 64-byte aligned; others are copied
into aligned storage. Calls release the GIL. Errors are :class:`kiln.Error` subclasses
carrying Kiln's message.
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
    "Function",
    "Module",
    "Tensor",
    "ValueInfo",
    "__version__",
    "api_version",
    "empty",
    "from_dlpack",
    "load",
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
