"""python -m kiln.triton: export a .vmfb as a Triton model, or start Triton on a repository.

  python -m kiln.triton export MODEL.vmfb --name NAME --repository DIR [--backend python|kiln]
         [--max-batch-size N] [--instances K] [--threads T] [--function F]
         [--no-dynamic-batching] [--max-queue-delay-us U]
  python -m kiln.triton serve --repository DIR [--http-port P] [--grpc-port P]
         [--metrics-port P] [--address A] [--backend-directory DIR] [-- TRITONSERVER_ARGS...]
"""

import argparse
import os
import sys

from . import repository as export_module
from . import server as serve_module


def _export(args) -> int:
    import kiln

    try:
        path = export_module.export(
            args.vmfb, args.name, args.repository, function=args.function,
            max_batch_size=args.max_batch_size, instances=args.instances, threads=args.threads,
            dynamic_batching=not args.no_dynamic_batching, max_queue_delay_us=args.max_queue_delay_us,
            backend=args.backend, copy_backend=not args.no_backend_copy)
    except (export_module.ExportError, kiln.Error) as e:
        print(f"kiln.triton export: {e}", file=sys.stderr)
        return 1
    if args.max_batch_size is None:
        batch = export_module.batch_dimension(kiln.load(args.vmfb), args.function)
        if batch is not None:
            print(f"kiln.triton export: batching along '{batch}' (the first dimension of every input and "
                  "output): Triton concatenates requests along it, right only when its rows are independent; "
                  "export with --max-batch-size 0 otherwise (a sequence, say)", file=sys.stderr)
    files = "1/model.py" if args.backend == "python" else "the server's kiln backend" if args.no_backend_copy \
        else "libtriton_kiln.so"
    print(f"kiln.triton export: wrote {path} (config.pbtxt, 1/model.vmfb, {files})")
    return 0


def _serve(args) -> int:
    extra = list(args.tritonserver_args)
    if extra and extra[0] == "--":
        extra = extra[1:]
    try:
        backends = serve_module.backend_directory(args.backend_directory) if args.backend_directory else None
        command = serve_module.server_command(
            args.repository, http_port=args.http_port, grpc_port=args.grpc_port,
            metrics_port=args.metrics_port, address=args.address, extra=extra, backends=backends)
        env = serve_module.server_environment()
    except serve_module.ServerNotFound as e:
        print(f"kiln.triton serve: {e}", file=sys.stderr)
        return 1
    sys.stdout.flush()
    os.execve(command[0], command, env)
    return 1  # not reached


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m kiln.triton", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    e = sub.add_parser("export", help="write a Triton model repository entry for a .vmfb")
    e.add_argument("vmfb")
    e.add_argument("--name", required=True, help="the model's name in Triton")
    e.add_argument("--repository", required=True, help="the model repository folder")
    e.add_argument("--backend", choices=export_module.BACKENDS, default="python",
                   help="python: model.py on Triton's Python backend (default); kiln: the native backend "
                        "libtriton_kiln.so, copied into the model's folder")
    e.add_argument("--no-backend-copy", action="store_true",
                   help="with --backend kiln: leave libtriton_kiln.so out of the model folder (the server's backend "
                        "directory provides it: serve --backend-directory)")
    e.add_argument("--max-batch-size", type=int, default=None,
                   help="largest batch Triton may form (default 64 when the first dimension is a symbolic "
                        "batch shared by every input and output, else 0; 0 turns batching off)")
    e.add_argument("--instances", type=int, default=1, help="model instances (stub processes, or contexts of the native backend) (default 1)")
    e.add_argument("--threads", type=int, default=1,
                   help="Kiln threads of each instance's context (default 1; 0: Kiln's default)")
    e.add_argument("--function", default="main", help="the module's function to serve (default main)")
    e.add_argument("--no-dynamic-batching", action="store_true", help="leave dynamic_batching out of the config")
    e.add_argument("--max-queue-delay-us", type=int, default=100,
                   help="how long the dynamic batcher waits to fill a batch (default 100)")
    s = sub.add_parser("serve", help="run tritonserver from this venv's nvidia-pytriton on a repository")
    s.add_argument("--repository", required=True)
    s.add_argument("--http-port", type=int, default=8000)
    s.add_argument("--grpc-port", type=int, default=8001)
    s.add_argument("--metrics-port", type=int, default=8002)
    s.add_argument("--address", default="127.0.0.1", help="address to listen on (default loopback)")
    s.add_argument("--backend-directory",
                   help="serve with this backend directory, made (or completed) with links python/ to the wheel's "
                        "Python backend and kiln/ to the package's libtriton_kiln.so (default: the wheel's own, "
                        "python/ only; models exported with --backend kiln carry the library themselves)")
    s.add_argument("tritonserver_args", nargs=argparse.REMAINDER, help="after --: passed to tritonserver")
    args = parser.parse_args(argv)
    return _export(args) if args.command == "export" else _serve(args)


if __name__ == "__main__":
    sys.exit(main())
