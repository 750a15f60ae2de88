"""Starting Triton Inference Server from the ``nvidia-pytriton`` wheel of the running venv.

The wheel holds Triton's ``tritonserver`` binary, its libraries and the Python backend
(``backends/python``) with one stub per Python version; the stub for this interpreter must
be in ``backends/python/triton_python_backend_stub`` (``scripts/setup_serving_venv.sh``
puts it there). The Python backend runs each model instance in a stub process that embeds
Python and finds its prefix by looking for ``python3`` on ``PATH``: with this venv's
``bin`` first on ``PATH``, the stub's interpreter is this venv (its numpy, its packages).
The stub's interpreter ignores ``PYTHONPATH``: where this interpreter imported ``kiln`` from
goes in ``KILN_TRITON_PYTHONPATH``, which model.py puts on ``sys.path``, so a build-tree
package (``build/python``) serves as well as one installed in the venv.
"""

import os
import pathlib
import sys
from typing import Dict, List, Optional


class ServerNotFound(Exception):
    """The running venv has no usable Triton server; the message says what is missing."""


def server_root() -> pathlib.Path:
    """The wheel's server tree (bin/tritonserver, backends/)."""
    try:
        import pytriton
    except ImportError as e:
        raise ServerNotFound(
            f"nvidia-pytriton is not installed in {sys.prefix} (scripts/setup_serving_venv.sh makes a venv "
            "with it)") from e
    root = pathlib.Path(pytriton.__file__).parent / "tritonserver"
    if not (root / "bin" / "tritonserver").is_file():
        raise ServerNotFound(f"no tritonserver binary in {root / 'bin'}")
    stub = root / "backends" / "python" / "triton_python_backend_stub"
    if not stub.is_file():
        version = f"{sys.version_info[0]}.{sys.version_info[1]}"
        raise ServerNotFound(
            f"{stub} is missing: copy python_backend_stubs/{version}/triton_python_backend_stub there "
            "(scripts/setup_serving_venv.sh does)")
    return root


def server_environment(base: Optional[Dict[str, str]] = None) -> Dict[str, str]:
    """The environment tritonserver and its Python stubs need."""
    import kiln

    env = dict(os.environ if base is None else base)
    root = server_root()
    libs = root.parent.parent / "nvidia_pytriton.libs"
    env["LD_LIBRARY_PATH"] = os.pathsep.join(p for p in (str(libs), env.get("LD_LIBRARY_PATH", "")) if p)
    # The stub's embedded Python finds its prefix from python3 on PATH: this venv's.
    env["PATH"] = os.pathsep.join(p for p in (os.path.dirname(sys.executable), env.get("PATH", "")) if p)
    kiln_parent = str(pathlib.Path(kiln.__file__).resolve().parent.parent)
    env["KILN_TRITON_PYTHONPATH"] = kiln_parent
    return env


def backend_directory(path: str) -> str:
    """Makes `path` a Triton backend directory with both backends: ``python`` (a link to the
    wheel's Python backend) and ``kiln`` (a link to the package's libtriton_kiln.so folder,
    when it is built); links already there are kept. Returns the absolute path."""
    from .repository import native_backend_dir

    path = os.path.abspath(path)
    os.makedirs(path, exist_ok=True)
    targets = {"python": server_root() / "backends" / "python"}
    if os.path.isfile(os.path.join(native_backend_dir(), "libtriton_kiln.so")):
        targets["kiln"] = pathlib.Path(native_backend_dir())
    for name, target in targets.items():
        link = os.path.join(path, name)
        if not os.path.lexists(link):
            os.symlink(target, link)
    return path


def server_command(repository: str, *, http_port: int = 8000, grpc_port: int = 8001, metrics_port: int = 8002,
                   address: str = "127.0.0.1", extra: Optional[List[str]] = None,
                   backends: Optional[str] = None) -> List[str]:
    """tritonserver's command line for `repository` on the given ports (0 turns a protocol off).
    `backends`: the backend directory (default: the wheel's, which holds the Python backend
    only; see backend_directory)."""
    root = server_root()
    command = [
        str(root / "bin" / "tritonserver"),
        f"--model-repository={os.path.abspath(repository)}",
        f"--backend-directory={backends or root / 'backends'}",
        f"--cache-directory={root / 'caches'}",
        "--strict-readiness=true",
    ]
    for protocol, port in (("http", http_port), ("grpc", grpc_port), ("metrics", metrics_port)):
        if port == 0:
            command.append(f"--allow-{protocol}=false")
        else:
            command.append(f"--{protocol}-port={port}")
            if protocol != "metrics":
                command.append(f"--{protocol}-address={address}")
            else:
                command.append(f"--metrics-address={address}")
    return command + list(extra or [])
