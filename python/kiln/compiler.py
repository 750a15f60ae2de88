"""Kiln's compiler from Python: :func:`compile` and :class:`Executable`.

    exe = kiln.compile("model.onnx", dims={"batch": 8})
    exe.save("model.vmfb")
    m = exe.load()                      # a kiln.Module, as kiln.load gives

The compiler is the extension ``kiln._compiler`` (the pipeline ``kiln-compile`` runs),
present when the package was built with the compiler (``pip install ./python`` where
LLVM 19 is installed, and the project's own build in ``build/python``). A package built
without it (``--config-settings=cmake.define.KILN_WITH_LLVM=OFF``, the runtime alone) raises
:class:`kiln.UnimplementedError` from :func:`compile`.
"""

import os
from typing import Any, Mapping, Optional, Union

from . import _kiln
from .errors import InvalidArgumentError, NotFoundError, UnimplementedError

try:
    from . import _compiler
except ImportError:  # built without the compiler
    _compiler = None


class Executable:
    """A compiled module: the bytes of a ``.vmfb``."""

    def __init__(self, data: bytes) -> None:
        self._data = bytes(data)

    def __bytes__(self) -> bytes:
        return self._data

    def __len__(self) -> int:
        return len(self._data)

    def save(self, path: Union[str, "os.PathLike[str]"]) -> None:
        """Writes the ``.vmfb`` to ``path`` (replacing it); ``kiln.load`` and ``kiln-run`` read it."""
        with open(path, "wb") as f:
            f.write(self._data)

    def load(self) -> _kiln.Module:
        """Loads the executable into the runtime (``kiln.load`` of its bytes)."""
        return _kiln.load(self._data)


def _option_values(options: Mapping[str, Any]) -> "dict[str, list[str]]":
    # kiln-compile's option names, with '_' accepted for '-' (tuning_db, params_function);
    # values as their text, booleans as true/false, a list for a repeatable option.
    values = {}
    for key, value in options.items():
        name = str(key).replace("_", "-")
        items = value if isinstance(value, (list, tuple)) else [value]
        texts = []
        for item in items:
            if isinstance(item, bool):
                texts.append("true" if item else "false")
            elif isinstance(item, os.PathLike):
                texts.append(os.fspath(item))
            else:
                texts.append(str(item))
        values[name] = texts
    return values


def _looks_like_text(source: str) -> bool:
    return "\n" in source or "@I.ir_module" in source or "@R.function" in source


def compile(
    source: Union[str, "os.PathLike[str]"],
    *,
    dims: Optional[Mapping[str, int]] = None,
    target: Optional[str] = None,
    tuning_db: Optional[Union[str, "os.PathLike[str]"]] = None,
    threads: Optional[int] = None,
    options: Optional[Mapping[str, Any]] = None,
) -> Executable:
    """Compiles a model to an :class:`Executable`, as ``kiln-compile`` does.

    ``source`` is a path to an ONNX model (``.onnx``) or a Relax text (``.relax``), or Relax
    text itself (a string holding a newline or ``@I.ir_module``). ``dims`` fixes symbolic
    input dimensions of an imported model by name (``{"batch": 1}``, ``{"x:2": 224}``), as
    ``--dim``. ``target`` is ``kiln-compile --target`` (an LLVM triple, or ``"cuda"``;
    default this machine), ``tuning_db`` a ``kiln-tune`` database folder. ``threads`` is
    ``--threads``: the threads the kernels' schedules plan for (default this machine's
    cores); a database's records apply only when ``kiln.tune`` measured them with as many
    threads. ``options`` takes
    any other ``kiln-compile`` option by its ``--config`` name (``"fuse": False``,
    ``"O": 2``, ``"bound": ["n=128"]``, ``"params": "weights.npz"``, ``"matmul": "dnnl"``;
    ``_`` may stand for ``-``). The GIL is released while compiling.

    Raises :class:`kiln.Error` subclasses with the compiler's message: a file that cannot be
    read is :class:`kiln.NotFoundError`, a parse error or a bad option
    :class:`kiln.InvalidArgumentError`.
    """
    if _compiler is None:
        raise UnimplementedError(
            "kiln.compile: this kiln package was built without the compiler (KILN_WITH_LLVM=OFF); "
            "pip install ./python builds it with the compiler where LLVM 19 is installed "
            "(scripts/setup.sh)",
            "UNIMPLEMENTED",
        )
    values = _option_values(options or {})
    if target is not None:
        values["target"] = [str(target)]
    if tuning_db is not None:
        values["tuning-db"] = [os.fspath(tuning_db)]
    if threads is not None:
        values["threads"] = [str(threads)]
    fixed = {}
    for name, value in (dims or {}).items():
        if isinstance(value, bool) or not isinstance(value, int):
            raise InvalidArgumentError(
                f"dims['{name}']: expected a positive integer, got {value!r}", "INVALID_ARGUMENT")
        fixed[str(name)] = value
    if isinstance(source, os.PathLike):
        source = os.fspath(source)
    if not isinstance(source, str):
        raise InvalidArgumentError(
            f"kiln.compile: source must be a path or Relax text, got {type(source).__name__}",
            "INVALID_ARGUMENT")
    is_path = not _looks_like_text(source)
    if is_path and not os.path.exists(source):
        raise NotFoundError(f"kiln.compile: no such file '{source}'", "NOT_FOUND")
    return Executable(_compiler.compile(source, is_path, fixed, values))


__all__ = ["Executable", "compile"]
