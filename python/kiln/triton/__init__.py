"""Serving Kiln modules with NVIDIA Triton Inference Server (its Python backend, or Kiln's
native backend libtriton_kiln.so).

``python -m kiln.triton export`` writes a model repository entry for a ``.vmfb``
(:func:`export`, :func:`config_text`); ``python -m kiln.triton serve`` starts the
``tritonserver`` of the venv's ``nvidia-pytriton`` wheel on a repository
(:func:`server_command`, :func:`server_environment`). docs/guide/serving.md.
"""

from .repository import ExportError, config_text, export, native_backend_dir
from .server import ServerNotFound, backend_directory, server_command, server_environment, server_root

__all__ = ["ExportError", "ServerNotFound", "backend_directory", "config_text", "export", "native_backend_dir",
           "server_command", "server_environment", "server_root"]
