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
import sys
import tempfile
import threading
import time
import unittest

import numpy as np
import tritonclient.http as httpclient

import serving_models
from round_robin_proxy import RoundRobinProxy
from test_triton import SOURCE, TOLERANCE, WORK, kiln_run
from triton_process import TritonProcess


class ReplicasBehindLoadBalancerTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.work = tempfile.mkdtemp(prefix="replicas.", dir=WORK)
        mlp = serving_models.export_mlp(cls.work, SOURCE, 11, kiln_run)
        cls.backend, cls.vmfb, cls.repository, cls.inputs, cls.expected = mlp
        print(f"ReplicasBehindLoadBalancerTest: backend {cls.backend}", file=sys.stderr)
        cls.replicas = []
        cls.proxy = None
        try:
            cls.replicas = [TritonProcess(cls.repository, os.path.join(cls.work, f"replica{i}.log")) for i in range(2)]
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
