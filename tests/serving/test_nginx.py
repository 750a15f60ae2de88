"""The nginx configuration of docs/guide/serving.md ("Scaling out"), run for real: Debian's
nginx (scripts/setup_nginx.sh unpacks it into build/nginx) in front of two Triton replicas
on one model repository, HTTP through `proxy_pass` and gRPC through `grpc_pass`.

The configuration is read from the guide's ```nginx block and only its addresses change
(the replicas' and the balancer's loopback ports), so the text users copy is the text
tested. Run by ctest (kiln_triton_nginx_test) through run_triton_test.sh with
KILN_NGINX set to the nginx binary. Checks: every HTTP and gRPC response through nginx
matches kiln-run; both replicas served requests (least_conn spreads concurrent ones); with
one replica stopped, nginx passes every request to the other.
"""
import concurrent.futures
import os
import re
import subprocess
import sys
import tempfile
import time
import unittest

import numpy as np
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient

import serving_models
from test_triton import SOURCE, TOLERANCE, WORK, kiln_run
from triton_process import TritonProcess, free_ports

NGINX = os.environ.get("KILN_NGINX", "")
START_TIMEOUT_S = 30


def guide_nginx_block():
    """The ```nginx block of docs/guide/serving.md."""
    with open(os.path.join(SOURCE, "docs", "guide", "serving.md")) as f:
        text = f.read()
    blocks = re.findall(r"```nginx\n(.*?)```", text, re.S)
    assert len(blocks) == 1, f"docs/guide/serving.md has {len(blocks)} nginx blocks, the test expects one"
    return blocks[0]


def nginx_conf(block, replicas, http_port, grpc_port, folder):
    """The guide's block with loopback addresses, inside the settings a process that is not
    the system's nginx needs (its own pid file, logs and temp folders)."""
    block = (block.replace("10.0.0.1:8000", replicas[0].address)
                  .replace("10.0.0.2:8000", replicas[1].address)
                  .replace("10.0.0.1:8001", f"127.0.0.1:{replicas[0].grpc_port}")
                  .replace("10.0.0.2:8001", f"127.0.0.1:{replicas[1].grpc_port}"))
    block, n_http = re.subn(r"listen 8000\b", f"listen 127.0.0.1:{http_port}", block)
    block, n_grpc = re.subn(r"listen 8001\b", f"listen 127.0.0.1:{grpc_port}", block)
    assert n_http == 1 and n_grpc == 1, f"the guide's nginx block no longer listens on 8000 and 8001:\n{block}"
    temp = "\n".join(f"  {d}_temp_path {folder}/{d};" for d in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"))
    return (f"daemon off;\nworker_processes 2;\npid {folder}/nginx.pid;\nerror_log {folder}/error.log warn;\n"
            f"events {{ worker_connections 256; }}\n"
            f"http {{\n  access_log off;\n{temp}\n{block}}}\n")


@unittest.skipUnless(NGINX and os.access(NGINX, os.X_OK), "no nginx (scripts/setup_nginx.sh; KILN_NGINX unset)")
class NginxInFrontOfReplicasTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.work = tempfile.mkdtemp(prefix="nginx.", dir=WORK)
        mlp = serving_models.export_mlp(cls.work, SOURCE, 12, kiln_run)
        cls.backend, cls.vmfb, cls.repository, cls.inputs, cls.expected = mlp
        print(f"NginxInFrontOfReplicasTest: backend {cls.backend}", file=sys.stderr)
        cls.replicas = []
        cls.nginx = None
        cls.nginx_log = None
        try:
            cls.replicas = [TritonProcess(cls.repository, os.path.join(cls.work, f"replica{i}.log")) for i in range(2)]
            for r in cls.replicas:
                r.wait_ready("mlp")
            cls.http_port, cls.grpc_port = free_ports(2)
            conf = os.path.join(cls.work, "nginx.conf")
            with open(conf, "w") as f:
                f.write(nginx_conf(guide_nginx_block(), cls.replicas, cls.http_port, cls.grpc_port, cls.work))
            test = subprocess.run([NGINX, "-t", "-p", cls.work, "-c", conf, "-e", "stderr"],
                                  capture_output=True, text=True, timeout=30)
            assert test.returncode == 0, f"nginx -t refused the guide's configuration:\n{test.stderr}"
            cls.nginx_log = open(os.path.join(cls.work, "nginx.stderr"), "w")
            cls.nginx = subprocess.Popen([NGINX, "-p", cls.work, "-c", conf, "-e", "stderr"],
                                         stdout=subprocess.DEVNULL, stderr=cls.nginx_log, start_new_session=True)
            cls.wait_nginx()
        except BaseException:
            cls.tearDownClass()
            raise

    @classmethod
    def wait_nginx(cls):
        client = httpclient.InferenceServerClient(f"127.0.0.1:{cls.http_port}")
        try:
            deadline = time.monotonic() + START_TIMEOUT_S
            while time.monotonic() < deadline:
                if cls.nginx.poll() is not None:
                    raise RuntimeError(f"nginx exited with {cls.nginx.returncode}: see {cls.work}/nginx.stderr")
                try:
                    if client.is_server_ready():
                        return
                except Exception:  # not listening yet
                    pass
                time.sleep(0.2)
            raise RuntimeError(f"nginx not answering after {START_TIMEOUT_S} s")
        finally:
            client.close()

    @classmethod
    def tearDownClass(cls):
        if cls.nginx is not None and cls.nginx.poll() is None:
            cls.nginx.terminate()  # SIGTERM: nginx's fast shutdown
            try:
                cls.nginx.wait(timeout=20)
            except subprocess.TimeoutExpired:
                cls.nginx.kill()
                cls.nginx.wait()
        if cls.nginx_log is not None:
            cls.nginx_log.close()
        codes = [r.stop() for r in cls.replicas]
        assert all(c == 0 for c in codes), f"replica exit statuses {codes}"

    def infer_http(self, x):
        client = httpclient.InferenceServerClient(f"127.0.0.1:{self.http_port}")
        try:
            tensor = httpclient.InferInput("x", list(x.shape), "FP32")
            tensor.set_data_from_numpy(x)
            return client.infer("mlp", [tensor]).as_numpy("result")
        finally:
            client.close()

    def infer_grpc(self, x):
        client = grpcclient.InferenceServerClient(f"127.0.0.1:{self.grpc_port}")
        try:
            tensor = grpcclient.InferInput("x", list(x.shape), "FP32")
            tensor.set_data_from_numpy(x)
            return client.infer("mlp", [tensor]).as_numpy("result")
        finally:
            client.close()

    def served(self, before, total):
        """Each replica's inference count since `before`, once they add up to `total` (the
        Python backend may count a request just after its response went out)."""
        deadline = time.monotonic() + 10
        while True:
            counts = [r.inference_count("mlp") - b for r, b in zip(self.replicas, before)]
            if sum(counts) >= total or time.monotonic() > deadline:
                return counts
            time.sleep(0.2)

    def test_1_http_and_grpc_through_nginx_match_kiln_run_on_both_replicas(self):
        before = [r.inference_count("mlp") for r in self.replicas]
        half = len(self.inputs) // 2
        with concurrent.futures.ThreadPoolExecutor(8) as pool:
            http = pool.map(self.infer_http, self.inputs[:half], timeout=300)
            grpc = pool.map(self.infer_grpc, self.inputs[half:], timeout=300)
            results = list(http) + list(grpc)
        for i, y in enumerate(results):
            np.testing.assert_allclose(y, self.expected[i], rtol=TOLERANCE, atol=TOLERANCE)
        counts = self.served(before, len(self.inputs))
        self.assertEqual(sum(counts), len(self.inputs), f"replica inference counts {counts}")
        # least_conn with 8 requests in flight at a time sends work to both.
        self.assertTrue(all(c > 0 for c in counts), f"replica inference counts {counts}")

    def test_2_nginx_passes_requests_to_the_replica_still_up(self):
        self.assertEqual(self.replicas[1].stop(), 0)
        survivor = self.replicas[0]
        before = survivor.inference_count("mlp")
        for i in range(4):
            np.testing.assert_allclose(self.infer_http(self.inputs[i]), self.expected[i], rtol=TOLERANCE, atol=TOLERANCE)
            np.testing.assert_allclose(self.infer_grpc(self.inputs[i]), self.expected[i], rtol=TOLERANCE, atol=TOLERANCE)
        self.assertEqual(survivor.inference_count("mlp") - before, 8)


if __name__ == "__main__":
    unittest.main()
