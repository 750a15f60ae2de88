"""Kiln's errors as Python exceptions.

Every failing Kiln call raises a subclass of :class:`Error` chosen by the C API's
status code, with Kiln's own message (``"main: argument x dimension 1: expected 784,
got 100"``). Each subclass also derives from the built-in exception a Python caller
would expect (a wrong argument is a ``ValueError``, an unknown function a ``KeyError``),
so code that already catches those keeps working.
"""


class Error(Exception):
    """A failed Kiln call: ``code`` is the status code's name, ``message`` Kiln's text."""

    def __init__(self, message: str, code: str = "UNKNOWN") -> None:
        super().__init__(message)
        self.message = message
        self.code = code

    # KeyError's own __str__ quotes its argument; Kiln's message reads better as is.
    def __str__(self) -> str:
        return self.message


class InvalidArgumentError(Error, ValueError):
    """KILN_STATUS_INVALID_ARGUMENT: a wrong count, dtype, shape or value."""


class NotFoundError(Error, KeyError):
    """KILN_STATUS_NOT_FOUND: no such file, function or registered name."""


class OutOfRangeError(Error, IndexError):
    """KILN_STATUS_OUT_OF_RANGE: an index past the end."""


class DataLossError(Error):
    """KILN_STATUS_DATA_LOSS: a damaged .vmfb or .npy file."""


class UnimplementedError(Error, NotImplementedError):
    """KILN_STATUS_UNIMPLEMENTED: valid input that Kiln does not handle."""


class FailedPreconditionError(Error):
    """KILN_STATUS_FAILED_PRECONDITION: e.g. executor="graph" for a function without a graph."""


class ResourceExhaustedError(Error, MemoryError):
    """KILN_STATUS_RESOURCE_EXHAUSTED: an allocation failed."""


class InternalError(Error):
    """KILN_STATUS_INTERNAL: a bug in Kiln; please report it with the message."""


class IncompatibleError(Error):
    """KILN_STATUS_INCOMPATIBLE: a .vmfb from a newer format or another target."""


# Indexed by kiln_status_code_t (capi/kiln.h); the extension raises through this.
_BY_CODE = {
    1: InvalidArgumentError,
    2: NotFoundError,
    3: OutOfRangeError,
    4: DataLossError,
    5: UnimplementedError,
    6: FailedPreconditionError,
    7: ResourceExhaustedError,
    8: InternalError,
    9: IncompatibleError,
}


def _class_for_code(code: int) -> type:
    return _BY_CODE.get(code, Error)


__all__ = [
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
