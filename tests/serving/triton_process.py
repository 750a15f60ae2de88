"""A tritonserver process for the serving tests: started by `python -m kiln.triton serve` on
free loopback ports, waited for, asked for its metrics, stopped with SIGTERM."""
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request

import tritonclient.http as httpclient

START_TIMEOUT_S = 120


def free_ports(count):
    sockets = []
    for _ in range(count):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        sockets.append(s)
    ports = [s.getsockname()[1] for s in sockets]
    for s in sockets:
        s.close()
    return ports


class TritonProcess:
    """One tritonserver started by `python -m kiln.triton serve` on `repository` (extra: more
    serve arguments), on free loopback ports, logging to `log_path`."""

    def __init__(self, repository, log_path, extra=()):
        self.http_port, self.grpc_port, self.metrics_port = free_ports(3)
        self.log_path = log_path
        self.log = open(self.log_path, "w")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "kiln.triton", "serve", "--repository", repository,
             "--http-port", str(self.http_port), "--grpc-port", str(self.grpc_port),
             "--metrics-port", str(self.metrics_port)] + list(extra),
            stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True)

    @property
    def address(self):
        return f"127.0.0.1:{self.http_port}"

    def wait_ready(self, model):
        client = httpclient.InferenceServerClient(self.address)
        try:
            deadline = time.monotonic() + START_TIMEOUT_S
            while time.monotonic() < deadline:
                if self.process.poll() is not None:
                    raise RuntimeError(f"tritonserver exited with {self.process.returncode}:\n{self.log_tail()}")
                try:
                    if client.is_server_ready() and client.is_model_ready(model):
                        return
                except Exception:  # not listening yet
                    pass
                time.sleep(0.5)
            raise RuntimeError(f"tritonserver not ready after {START_TIMEOUT_S} s:\n{self.log_tail()}")
        finally:
            client.close()  # an open connection would hold the server's shutdown

    def inference_count(self, model):
        with urllib.request.urlopen(f"http://127.0.0.1:{self.metrics_port}/metrics", timeout=10) as r:
            for line in r.read().decode().splitlines():
                if line.startswith(f'nv_inference_count{{model="{model}",'):
                    return int(float(line.split()[-1]))
        raise AssertionError(f"no nv_inference_count for {model} on {self.address}")

    def log_tail(self):
        if not self.log.closed:
            self.log.flush()
        with open(self.log_path) as f:
            return "".join(f.readlines()[-30:])

    def stop(self):
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=40)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()
        self.log.close()
        return self.process.returncode
