"""Two Triton replicas on one model repository behind a round-robin load balancer
(round_robin_proxy.py), as docs/guide/serving.md "Scaling out" describes: each replica is a
`python -m kiln.triton serve` on the same folder; clients talk to the balancer only.

Run by ctest (kiln_triton_replicas_test) through run_triton_test.sh, like test_triton.py.
The model is the MLP with a symbolic batch, on Kiln's native backend when it is built
(libtriton_kiln.so), else on the Python backend. Checks: every response through the
balancer matches kiln-run; the requests were spread over both replicas (each replica's own
inference count); with one replica stopped, the other answers every request.
"""
import concurrent.futures
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
import unittest
import urllib.request

import numpy as np
import tritonclient.http as httpclient

import kiln
import kiln.triton
import serving_models
from round_robin_proxy import RoundRobinProxy
from test_triton import SOURCE, TOLERANCE, WORK, free_ports, kiln_run

START_TIMEOUT_S = 120


class Replica:
    """One tritonserver started by `python -m kiln.triton serve` on `repository`."""

    def __init__(self, repository, folder, index):
        self.http_port, self.grpc_port, self.metrics_port = free_ports(3)
        self.log_path = os.path.join(folder, f"replica{index}.log")
        self.log = open(self.log_path, "w")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "kiln.triton", "serve", "--repository", repository,
             "--http-port", str(self.http_port), "--grpc-port", str(self.grpc_port),
             "--metrics-port", str(self.metrics_port)],
            stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True)

    @property
    def address(self):
        return f"127.0.0.1:{self.http_port}"

    def wait_ready(self, model):
        client = httpclient.InferenceServerClient(self.address)
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"replica exited with {self.process.returncode}:\n{self.log_tail()}")
            try:
                if client.is_server_ready() and client.is_model_ready(model):
                    return
            except Exception:  # not listening yet
                pass
            time.sleep(0.5)
        raise RuntimeError(f"replica not ready after {START_TIMEOUT_S} s:\n{self.log_tail()}")

    def inference_count(self, model):
        with urllib.request.urlopen(f"http://127.0.0.1:{self.metrics_port}/metrics", timeout=10) as r:
            for line in r.read().decode().splitlines():
                if line.startswith(f'nv_inference_count{{model="{model}",'):
                    return int(float(line.split()[-1]))
        raise AssertionError(f"no nv_inference_count for {model} on {self.address}")

    def log_tail(self):
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


class ReplicasBehindLoadBalancerTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.work = tempfile.mkdtemp(prefix="replicas.", dir=WORK)
        native = os.path.isfile(os.path.join(kiln.triton.native_backend_dir(), "libtriton_kiln.so"))
        cls.backend = "kiln" if native else "python"
        print(f"ReplicasBehindLoadBalancerTest: backend {cls.backend}", file=sys.stderr)
        cls.vmfb = serving_models.build(os.path.join(SOURCE, "examples", "mlp.relax"),
                                        os.path.join(cls.work, "mlp.vmfb"))
        cls.repository = os.path.join(cls.work, "repository")
        subprocess.run([sys.executable, "-m", "kiln.triton", "export", cls.vmfb, "--name", "mlp",
                        "--repository", cls.repository, "--backend", cls.backend], check=True, timeout=60)
        rng = np.random.default_rng(11)
        cls.inputs = [rng.uniform(-1, 1, (1, 784)).astype(np.float32) for _ in range(48)]
        cls.expected = [kiln_run(cls.vmfb, x, cls.work, f"x{i}") for i, x in enumerate(cls.inputs)]
        cls.replicas = []
        cls.proxy = None
        try:
            cls.replicas = [Replica(cls.repository, cls.work, i) for i in range(2)]
            for r in cls.replicas:
                r.wait_ready("mlp")
            cls.proxy = RoundRobinProxy(("127.0.0.1", 0), [r.address for r in cls.replicas])
            cls.proxy_address = f"127.0.0.1:{cls.proxy.server_address[1]}"
            threading.Thread(target=cls.proxy.serve_forever, daemon=True).start()
        except BaseException:
            cls.tearDownClass()
            raise

    @classmethod
    def tearDownClass(cls):
        if cls.proxy is not None:
            cls.proxy.shutdown()
            cls.proxy.server_close()
        codes = [r.stop() for r in cls.replicas]
        # Each replica stops cleanly on SIGTERM (test_2 stops one itself).
        assert all(c == 0 for c in codes), f"replica exit statuses {codes}"

    def infer(self, x):
        client = httpclient.InferenceServerClient(self.proxy_address)
        tensor = httpclient.InferInput("x", list(x.shape), "FP32")
        tensor.set_data_from_numpy(x)
        return client.infer("mlp", [tensor]).as_numpy("result")

    def test_1_requests_spread_over_both_replicas_and_match_kiln_run(self):
        before = [r.inference_count("mlp") for r in self.replicas]
        sent_before = dict(self.proxy.counts)
        with concurrent.futures.ThreadPoolExecutor(8) as pool:
            results = list(pool.map(self.infer, self.inputs, timeout=300))
        for i, y in enumerate(results):
            np.testing.assert_allclose(y, self.expected[i], rtol=TOLERANCE, atol=TOLERANCE)
        sent = [self.proxy.counts[r.address] - sent_before[r.address] for r in self.replicas]
        # The Python backend may count a request just after its response went out.
        deadline = time.monotonic() + 10
        while True:
            served = [r.inference_count("mlp") - b for r, b in zip(self.replicas, before)]
            if served == sent or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        # Round robin: 24 batch-1 requests each, and each replica counted what it was sent.
        self.assertEqual(sent, [24, 24], f"proxy counts {self.proxy.counts}")
        self.assertEqual(served, sent, f"replica inference counts {served}")

    def test_2_the_balancer_skips_a_stopped_replica(self):
        self.assertEqual(self.replicas[1].stop(), 0)
        survivor = self.replicas[0]
        before = survivor.inference_count("mlp")
        for i in range(4):
            np.testing.assert_allclose(self.infer(self.inputs[i]), self.expected[i], rtol=TOLERANCE, atol=TOLERANCE)
        self.assertEqual(survivor.inference_count("mlp") - before, 4)

if __name__ == "__main__":
    unittest.main()
