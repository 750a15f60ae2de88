"""Type stubs of the extension kiln._kiln (src/*.cc)."""

import os
from typing import Any, Optional, Sequence, Tuple, Union

__version__: str
api_version: Tuple[int, int]

class Tensor:
    """A dense, row-major CPU tensor owned by Kiln; numpy and DLPack consumers view it without copying."""

    @property
    def shape(self) -> Tuple[int, ...]: ...
    @property
    def dtype(self) -> str: ...
    @property
    def ndim(self) -> int: ...
    @property
    def size(self) -> int: ...
    @property
    def nbytes(self) -> int: ...
    @property
    def data_ptr(self) -> int: ...
    def numpy(self) -> Any:
        """A numpy array viewing this tensor's storage (no copy)."""
    def __dlpack__(
        self,
        *,
        stream: Optional[Any] = None,
        max_version: Optional[Tuple[int, int]] = None,
        dl_device: Optional[Tuple[int, int]] = None,
        copy: Optional[bool] = None,
    ) -> Any: ...
    def __dlpack_device__(self) -> Tuple[int, int]: ...
    def __buffer__(self, flags: int) -> memoryview: ...

class ValueInfo:
    """A declared parameter or result of a compiled function."""

    @property
    def name(self) -> str: ...
    @property
    def kind(self) -> str:
        """'tensor', 'int', 'float', 'shape', 'tuple', ..."""
    @property
    def dtype(self) -> Optional[str]: ...
    @property
    def shape(self) -> Optional[Tuple[Union[int, str, None], ...]]:
        """An int per static dimension, the expression's text ('n') per symbolic one."""

class Function:
    """A function of a loaded module."""

    @property
    def name(self) -> str: ...
    @property
    def params(self) -> list[ValueInfo]: ...
    @property
    def results(self) -> list[ValueInfo]: ...
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Runs the function with the GIL released; returns a Tensor, or a tuple for a tuple result."""

class Context:
    """A reusable call context (Module.context): its own threads, executor and profile."""

    def __getitem__(self, name: str) -> Function: ...
    @property
    def threads(self) -> int: ...
    def profile(self) -> str:
        """The per-kernel profile table (the context was made with profile=True)."""
    def reset_profile(self) -> None: ...

class Module:
    """A loaded, verified .vmfb; immutable and shared by any number of threads."""

    def __getitem__(self, name: str) -> Function: ...
    def __contains__(self, name: str) -> bool: ...
    @property
    def functions(self) -> dict[str, Function]: ...
    def context(self, *, threads: int = 0, executor: str = "auto", profile: bool = False) -> Context: ...

def load(source: Union[str, os.PathLike[str], bytes, bytearray, memoryview]) -> Module:
    """Loads and verifies a .vmfb from a path or from its bytes."""

def empty(shape: Sequence[int], dtype: str = "float32") -> Tensor:
    """A zero-filled tensor with 64-byte aligned storage."""

def from_dlpack(array: Any) -> Tensor:
    """A Tensor over `array`: shared when 64-byte aligned, copied otherwise."""
