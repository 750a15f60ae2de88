"""Kiln models served by a real Triton Inference Server (the nvidia-pytriton wheel's
tritonserver and Python backend), asked by tritonclient over HTTP and gRPC at once.

Run by ctest (kiln_triton_test) through run_triton_test.sh under the serving venv's python
(scripts/setup_serving_venv.sh), with the build tree's kiln package on PYTHONPATH.
Environment: KILN_RUN (the kiln-run binary, the reference), KILN_SOURCE_DIR, KILN_TRITON_WORK
(a scratch folder), KILN_TRITON_ONNX (a folder with resnet18.onnx, or empty to leave it out).

The models, weights bound at compile time (serving_models.build):
  mlp          examples/mlp.relax, x: [n, 784] -> [n, 10]; n is a symbolic batch: the config
               gets max_batch_size and dynamic batching, and model.py answers a batch of
               requests with one call
  transformer  examples/transformer_block.relax, x: [s, 64] -> [s, 64]; s is a sequence, not a
               batch: exported with --max-batch-size 0, dims [-1, 64]
  resnet18     torchvision's ResNet-18 from benchmarks/onnx/export_models.py, [1, 3, 224, 224]
               (only when KILN_TRITON_ONNX has it)
Every response is compared with kiln-run's output for the same input (1e-5).

TritonServingTest serves them with model.py on Triton's Python backend (ctest
kiln_triton_test); NativeBackendServingTest runs the same tests on Kiln's native backend,
libtriton_kiln.so (export --backend kiln; ctest kiln_triton_native_test), and checks
what only it does: several requests answered by one call, a configuration that does not
match the module refused at load with the backend's message.
"""
import concurrent.futures
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.request

import numpy as np
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient

import kiln
import kiln.triton
import serving_models
from triton_process import TritonProcess, free_ports

SOURCE = os.environ["KILN_SOURCE_DIR"]
KILN_RUN = os.environ["KILN_RUN"]
WORK = os.environ["KILN_TRITON_WORK"]
ONNX_DIR = os.environ.get("KILN_TRITON_ONNX", "")
START_TIMEOUT_S = 120
TOLERANCE = 1e-5


def kiln_run(vmfb, x, folder, tag):
    """kiln-run's output for input x (the reference each response is checked against)."""
    xin = os.path.join(folder, f"{tag}.x.npy")
    yout = os.path.join(folder, f"{tag}.y.npy")
    np.save(xin, x)
    subprocess.run([KILN_RUN, vmfb, f"--input=@{xin}", f"--output=@{yout}", "--threads=1"], check=True,
                   stdout=subprocess.DEVNULL, timeout=120)
    return np.load(yout)


class Model:
    def __init__(self, name, vmfb, inputs, export_args):
        self.name = name
        self.vmfb = vmfb
        self.inputs = inputs  # the requests' x arrays
        self.export_args = export_args
        self.expected = []


class TritonServingTest(unittest.TestCase):
    BACKEND = "python"

    @classmethod
    def extra_models(cls, rng):
        """Models only this backend's test serves."""
        return []

    @classmethod
    def server_args(cls):
        """tritonserver flags after the ones `kiln.triton serve` sets."""
        return []

    @classmethod
    def setUpClass(cls):
        cls.work = tempfile.mkdtemp(prefix="triton.", dir=WORK)
        rng = np.random.default_rng(7)
        models = [
            Model("mlp", serving_models.build(os.path.join(SOURCE, "examples", "mlp.relax"),
                                              os.path.join(cls.work, "mlp.vmfb")),
                  [rng.uniform(-1, 1, (b, 784)).astype(np.float32) for b in (1, 3, 1, 2, 5, 1, 4, 2)], []),
            Model("transformer", serving_models.build(os.path.join(SOURCE, "examples", "transformer_block.relax"),
                                                      os.path.join(cls.work, "transformer.vmfb")),
                  [rng.uniform(-1, 1, (s, 64)).astype(np.float32) for s in (16, 7, 128, 33)],
                  ["--max-batch-size", "0", "--instances", "2"]),
        ]
        resnet_onnx = os.path.join(ONNX_DIR, "resnet18.onnx") if ONNX_DIR else ""
        if resnet_onnx and os.path.exists(resnet_onnx):
            vmfb = os.path.join(cls.work, "resnet18.vmfb")
            kiln.compile(resnet_onnx).save(vmfb)
            models.append(Model("resnet18", vmfb,
                                [rng.uniform(-1, 1, (1, 3, 224, 224)).astype(np.float32) for _ in range(2)], []))
        else:
            print(f"{cls.__name__}: resnet18 left out (no resnet18.onnx in '{ONNX_DIR}': "
                  "benchmarks/onnx/export_models.py needs Debian's python3-torch)", file=sys.stderr)
        # The MLP compiled for at most 4 rows (bound n=4) with a batcher that waits 1 s: two
        # 3-row requests merge into a 6-row call that Kiln refuses, then succeed one by one.
        models.append(Model("mlp_bound", serving_models.build(os.path.join(SOURCE, "examples", "mlp.relax"),
                                                              os.path.join(cls.work, "mlp_bound.vmfb"),
                                                              options={"bound": ["n=4"]}),
                            [rng.uniform(-1, 1, (3, 784)).astype(np.float32) for _ in range(2)],
                            ["--max-batch-size", "8", "--max-queue-delay-us", "1000000"]))
        models += cls.extra_models(rng)
        cls.models = {m.name: m for m in models}
        cls.repository = os.path.join(cls.work, "repository")
        for m in models:
            for i, x in enumerate(m.inputs):
                m.expected.append(kiln_run(m.vmfb, x, cls.work, f"{m.name}{i}"))
            subprocess.run([sys.executable, "-m", "kiln.triton", "export", m.vmfb, "--name", m.name,
                            "--repository", cls.repository, "--backend", cls.BACKEND] + m.export_args,
                           check=True, timeout=60)
        cls.http_port, cls.grpc_port, cls.metrics_port = free_ports(3)
        cls.log_path = os.path.join(cls.work, "tritonserver.log")
        cls.log = open(cls.log_path, "w")
        cls.server = subprocess.Popen(
            [sys.executable, "-m", "kiln.triton", "serve", "--repository", cls.repository,
             "--http-port", str(cls.http_port), "--grpc-port", str(cls.grpc_port),
             "--metrics-port", str(cls.metrics_port), "--"] + cls.server_args(),
            stdout=cls.log, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            cls._wait_ready()
        except BaseException:
            cls._stop()
            raise

    @classmethod
    def _wait_ready(cls):
        client = httpclient.InferenceServerClient(f"127.0.0.1:{cls.http_port}")
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if cls.server.poll() is not None:
                raise RuntimeError(f"tritonserver exited with {cls.server.returncode}:\n{cls._log_tail()}")
            try:
                if client.is_server_ready() and all(client.is_model_ready(n) for n in cls.models):
                    return
            except Exception:  # not listening yet
                pass
            time.sleep(0.5)
        raise RuntimeError(f"tritonserver not ready after {START_TIMEOUT_S} s:\n{cls._log_tail()}")

    @classmethod
    def _log_tail(cls):
        cls.log.flush()
        with open(cls.log_path) as f:
            return "".join(f.readlines()[-40:])

    @classmethod
    def _stop(cls):
        if cls.server.poll() is None:
            os.killpg(cls.server.pid, signal.SIGTERM)
            try:
                cls.server.wait(timeout=40)
            except subprocess.TimeoutExpired:
                os.killpg(cls.server.pid, signal.SIGKILL)
                cls.server.wait()
        cls.log.close()

    @classmethod
    def tearDownClass(cls):
        cls._stop()
        # The server stopped on SIGTERM (Triton exits 0 after unloading its models).
        assert cls.server.returncode == 0, f"tritonserver exit status {cls.server.returncode}:\n{cls._log_tail()}"

    # One request; `protocol` is "http" or "grpc". Each call makes its own client: clients
    # are not shared between threads.
    def infer(self, protocol, model, x):
        module = httpclient if protocol == "http" else grpcclient
        port = self.http_port if protocol == "http" else self.grpc_port
        client = module.InferenceServerClient(f"127.0.0.1:{port}")
        tensor = module.InferInput("x", list(x.shape), "FP32")
        tensor.set_data_from_numpy(x)
        result = client.infer(model, [tensor], outputs=[module.InferRequestedOutput("result")])
        return result.as_numpy("result")

    def test_config_from_introspection(self):
        with open(os.path.join(self.repository, "mlp", "config.pbtxt")) as f:
            mlp = f.read()
        self.assertIn("max_batch_size: 64", mlp)
        self.assertIn("dims: [ 784 ]", mlp)
        self.assertIn("dynamic_batching", mlp)
        with open(os.path.join(self.repository, "transformer", "config.pbtxt")) as f:
            transformer = f.read()
        self.assertIn("max_batch_size: 0", transformer)
        self.assertIn("dims: [ -1, 64 ]", transformer)
        self.assertIn("count: 2", transformer)
        self.assertNotIn("dynamic_batching", transformer)
        self.assertIn(f'backend: "{self.BACKEND}"', mlp)
        # What Triton itself made of it.
        client = httpclient.InferenceServerClient(f"127.0.0.1:{self.http_port}")
        config = client.get_model_config("mlp")
        self.assertEqual(config["max_batch_size"], 64)
        self.assertEqual(config["input"][0]["dims"], ["784"] if isinstance(config["input"][0]["dims"][0], str)
                         else [784])

    def test_concurrent_http_and_grpc_requests_match_kiln_run(self):
        jobs = []
        for repeat in range(4):
            for m in self.models.values():
                for i in range(len(m.inputs)):
                    protocol = "http" if (i + repeat) % 2 == 0 else "grpc"
                    jobs.append((protocol, m.name, i))
        with concurrent.futures.ThreadPoolExecutor(16) as pool:
            futures = {pool.submit(self.infer, p, name, self.models[name].inputs[i]): (p, name, i)
                       for p, name, i in jobs}
            for future in concurrent.futures.as_completed(futures, timeout=300):
                p, name, i = futures[future]
                with self.subTest(protocol=p, model=name, request=i):
                    np.testing.assert_allclose(future.result(), self.models[name].expected[i],
                                               rtol=TOLERANCE, atol=TOLERANCE)
        self.assertGreater(len(jobs), 40)

    def test_kiln_error_reaches_the_client(self):
        # s = 200 is past the block's tir_var_upper_bound (128): Kiln refuses it with its message.
        x = np.zeros((200, 64), np.float32)
        for protocol in ("http", "grpc"):
            with self.subTest(protocol=protocol):
                with self.assertRaises(Exception) as caught:
                    self.infer(protocol, "transformer", x)
                self.assertIn("larger than the upper bound the memory plan assumed", str(caught.exception))

    def test_failed_merged_call_is_retried_request_by_request(self):
        m = self.models["mlp_bound"]
        too_big = np.zeros((5, 784), np.float32)
        with concurrent.futures.ThreadPoolExecutor(3) as pool:
            good = [pool.submit(self.infer, p, m.name, x) for p, x in zip(("http", "grpc"), m.inputs)]
            bad = pool.submit(self.infer, "http", m.name, too_big)
            for i, future in enumerate(good):
                np.testing.assert_allclose(future.result(timeout=120), m.expected[i], rtol=TOLERANCE, atol=TOLERANCE)
            with self.assertRaises(Exception) as caught:
                bad.result(timeout=120)
        self.assertIn("larger than the upper bound the memory plan assumed", str(caught.exception))

    def test_metrics_endpoint_counts_inferences(self):
        before = self.inference_count("mlp")
        for i in range(3):
            self.infer("http", "mlp", self.models["mlp"].inputs[i])
        self.assertEqual(self.inference_count("mlp") - before,
                         sum(self.models["mlp"].inputs[i].shape[0] for i in range(3)))

    def test_guide_examples_run(self):
        """docs/guide/serving.md's python blocks, in order, against this server (its ports)."""
        import re

        with open(os.path.join(SOURCE, "docs", "guide", "serving.md")) as f:
            page = f.read()
        blocks = re.findall(r"^```python\n(.*?)^```", page, flags=re.S | re.M)
        self.assertGreaterEqual(len(blocks), 1)
        namespace = {}
        for i, block in enumerate(blocks):
            block = block.replace("localhost:8000", f"127.0.0.1:{self.http_port}")
            block = block.replace("localhost:8001", f"127.0.0.1:{self.grpc_port}")
            with self.subTest(block=i):
                exec(compile(block, f"serving.md block {i}", "exec"), namespace)

    def inference_count(self, model, metric="nv_inference_count"):
        with urllib.request.urlopen(f"http://127.0.0.1:{self.metrics_port}/metrics", timeout=10) as r:
            text = r.read().decode()
        for line in text.splitlines():
            if line.startswith(f'{metric}{{model="{model}",'):
                return int(float(line.split()[-1]))
        self.fail(f"no {metric} for {model} in the metrics")


class NativeBackendServingTest(TritonServingTest):
    """The same models and tests on libtriton_kiln.so, and what only the native backend does."""

    BACKEND = "kiln"

    @classmethod
    def setUpClass(cls):
        if not os.path.isfile(os.path.join(kiln.triton.native_backend_dir(), "libtriton_kiln.so")):
            raise unittest.SkipTest(f"no libtriton_kiln.so in {kiln.triton.native_backend_dir()} "
                                    "(ninja kiln_triton_backend; KILN_BUILD_TRITON_BACKEND=ON)")
        super().setUpClass()

    @classmethod
    def extra_models(cls, rng):
        mlp = os.path.join(cls.work, "mlp.vmfb")  # built by setUpClass
        # A batcher that waits up to 2 s for 16 rows: concurrent requests land in one call.
        return [Model("mlp_wait", mlp, [rng.uniform(-1, 1, (1, 784)).astype(np.float32) for _ in range(16)],
                      ["--max-queue-delay-us", "2000000", "--max-batch-size", "16"])]

    @classmethod
    def server_args(cls):
        # Explicit model control: every model loads at start but `mismatch`, which the test
        # loads itself to see the backend refuse it.
        return ["--model-control-mode=explicit"] + [f"--load-model={m}" for m in cls.models]

    def test_native_backend_is_in_the_model_folder(self):
        folder = os.path.join(self.repository, "mlp")
        self.assertTrue(os.path.isfile(os.path.join(folder, "libtriton_kiln.so")))
        self.assertFalse(os.path.exists(os.path.join(folder, "1", "model.py")))
        with open(os.path.join(self.log_path)) as f:
            self.assertIn("Triton backend API 1.", f.read())

    def test_concurrent_requests_share_one_call(self):
        m = self.models["mlp_wait"]
        before = (self.inference_count(m.name), self.inference_count(m.name, "nv_inference_exec_count"))
        with concurrent.futures.ThreadPoolExecutor(16) as pool:
            futures = [pool.submit(self.infer, "grpc" if i % 2 else "http", m.name, x) for i, x in enumerate(m.inputs)]
            for i, future in enumerate(futures):
                np.testing.assert_allclose(future.result(timeout=120), m.expected[i], rtol=TOLERANCE, atol=TOLERANCE)
        rows = self.inference_count(m.name) - before[0]
        calls = self.inference_count(m.name, "nv_inference_exec_count") - before[1]
        self.assertEqual(rows, 16)
        self.assertLess(calls, rows, "the dynamic batcher's batches were answered by one Kiln call each")

    def test_mismatched_config_is_refused_at_load(self):
        folder = os.path.join(self.repository, "mismatch")
        shutil.copytree(os.path.join(self.repository, "mlp"), folder)
        path = os.path.join(folder, "config.pbtxt")
        with open(path) as f:
            text = f.read()
        with open(path, "w") as f:
            f.write(text.replace('name: "mlp"', 'name: "mismatch"').replace("TYPE_FP32", "TYPE_INT32", 1))
        client = httpclient.InferenceServerClient(f"127.0.0.1:{self.http_port}")
        with self.assertRaises(Exception) as caught:
            client.load_model("mismatch")
        self.assertIn("model 'mismatch', function 'main': parameter 'x' is float32 but the configuration says "
                      "TYPE_INT32", str(caught.exception))


class BackendDirectoryTest(unittest.TestCase):
    """The native backend from the server's backend directory (serve --backend-directory, export
    --no-backend-copy) instead of the model folder, beside a Python-backend model."""

    @classmethod
    def setUpClass(cls):
        if not os.path.isfile(os.path.join(kiln.triton.native_backend_dir(), "libtriton_kiln.so")):
            raise unittest.SkipTest("no libtriton_kiln.so (ninja kiln_triton_backend)")
        cls.work = tempfile.mkdtemp(prefix="triton.", dir=WORK)
        cls.vmfb = serving_models.build(os.path.join(SOURCE, "examples", "mlp.relax"), os.path.join(cls.work, "mlp.vmfb"))
        cls.repository = os.path.join(cls.work, "repository")
        for name, args in (("mlp", ["--backend", "kiln", "--no-backend-copy"]), ("mlp_py", ["--backend", "python"])):
            subprocess.run([sys.executable, "-m", "kiln.triton", "export", cls.vmfb, "--name", name,
                            "--repository", cls.repository] + args, check=True, timeout=60)
        cls.x = np.random.default_rng(5).uniform(-1, 1, (3, 784)).astype(np.float32)
        cls.expected = kiln_run(cls.vmfb, cls.x, cls.work, "x")
        cls.backends = os.path.join(cls.work, "backends")
        cls.server = TritonProcess(cls.repository, os.path.join(cls.work, "tritonserver.log"),
                                   ["--backend-directory", cls.backends])
        try:
            cls.server.wait_ready("mlp")
            cls.server.wait_ready("mlp_py")
        except BaseException:
            cls.server.stop()
            raise

    @classmethod
    def tearDownClass(cls):
        assert cls.server.stop() == 0, cls.server.log_tail()

    def test_both_backends_from_one_directory(self):
        self.assertEqual(sorted(os.listdir(os.path.join(self.repository, "mlp"))), ["1", "config.pbtxt"])
        self.assertEqual(sorted(os.listdir(self.backends)), ["kiln", "python"])
        self.assertTrue(os.path.isfile(os.path.join(self.backends, "kiln", "libtriton_kiln.so")))
        for model in ("mlp", "mlp_py"):
            for module, port in ((httpclient, self.server.http_port), (grpcclient, self.server.grpc_port)):
                with self.subTest(model=model, protocol=module.__name__):
                    client = module.InferenceServerClient(f"127.0.0.1:{port}")
                    tensor = module.InferInput("x", list(self.x.shape), "FP32")
                    tensor.set_data_from_numpy(self.x)
                    try:
                        y = client.infer(model, [tensor]).as_numpy("result")
                    finally:
                        client.close()  # an open HTTP connection would hold the server's shutdown
                    np.testing.assert_allclose(y, self.expected, rtol=TOLERANCE, atol=TOLERANCE)


class ExportErrorTest(unittest.TestCase):
    """The export command's own refusals, each with its message."""

    @classmethod
    def setUpClass(cls):
        cls.work = tempfile.mkdtemp(prefix="export.", dir=WORK)
        cls.transformer = serving_models.build(os.path.join(SOURCE, "examples", "transformer_block.relax"),
                                               os.path.join(cls.work, "t.vmfb"))
        cls.add = os.path.join(cls.work, "add.vmfb")
        kiln.compile(os.path.join(SOURCE, "python", "tests", "add.relax")).save(cls.add)

    def export(self, vmfb, *args):
        return subprocess.run([sys.executable, "-m", "kiln.triton", "export", vmfb, "--repository",
                               os.path.join(self.work, "repo")] + list(args),
                              capture_output=True, text=True, timeout=60)

    def test_batch_size_without_batch_dimension(self):
        r = self.export(self.add, "--name", "add", "--max-batch-size", "8")
        self.assertEqual(r.returncode, 1)
        self.assertIn("no symbolic first dimension shared by every input and output", r.stderr)

    def test_bad_counts_and_names(self):
        r = self.export(self.add, "--name", "add", "--instances", "0")
        self.assertIn("--instances must be 1 or more, got 0", r.stderr)
        r = self.export(self.add, "--name", "a/b")
        self.assertIn("--name must be a plain model name, got 'a/b'", r.stderr)
        r = self.export(self.add, "--name", "add", "--function", "nope")
        self.assertIn("the module has no function 'nope'", r.stderr)
        r = self.export(self.add, "--name", "add", "--max-batch-size", "-1")
        self.assertIn("--max-batch-size must be 0 or more, got -1", r.stderr)
        r = self.export(self.add, "--name", "add", "--threads", "-2")
        self.assertIn("--threads must be 0 (Kiln's default) or more, got -2", r.stderr)

    def test_missing_vmfb_is_kilns_message(self):
        r = self.export(os.path.join(self.work, "none.vmfb"), "--name", "x")
        self.assertEqual(r.returncode, 1)
        self.assertIn("none.vmfb", r.stderr)

    def test_batching_note_for_a_sequence_model(self):
        r = self.export(self.transformer, "--name", "t")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("batching along 's'", r.stderr)
        self.assertIn("--max-batch-size 0", r.stderr)

    def test_non_tensor_parameter_is_refused(self):
        # Triton inputs are tensors; a function taking a shape cannot be served.
        vmfb = os.path.join(self.work, "scalar.vmfb")
        kiln.compile("""
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((2,), dtype="float32"), k: R.Shape(["n"])) -> R.Tensor((2,), dtype="float32"):
        n = T.int64()
        return x
""").save(vmfb)
        r = self.export(vmfb, "--name", "scalar")
        self.assertEqual(r.returncode, 1)
        self.assertIn("parameter 'k' is a shape, not a tensor", r.stderr)

    def compile_main(self, name, signature):
        vmfb = os.path.join(self.work, f"{name}.vmfb")
        kiln.compile(f"""
@I.ir_module
class Module:
    @R.function
    def main{signature}:
        return x
""").save(vmfb)
        return vmfb

    def test_dtype_triton_has_no_type_for(self):
        vmfb = self.compile_main("vector", '(x: R.Tensor((2,), dtype="float32x4")) -> R.Tensor((2,), dtype="float32x4")')
        r = self.export(vmfb, "--name", "vector")
        self.assertEqual(r.returncode, 1)
        self.assertIn("main: parameter 'x' has dtype float32x4, which Triton has no type for", r.stderr)

    def test_unknown_rank_is_refused(self):
        vmfb = self.compile_main("norank", '(x: R.Tensor(dtype="float32")) -> R.Tensor(dtype="float32")')
        r = self.export(vmfb, "--name", "norank")
        self.assertEqual(r.returncode, 1)
        self.assertIn("main: parameter 'x' has no known rank; Triton needs one", r.stderr)

    def test_backend_choice(self):
        r = self.export(self.add, "--name", "add", "--backend", "tensorflow")
        self.assertEqual(r.returncode, 2)
        self.assertIn("argument --backend: invalid choice: 'tensorflow'", r.stderr)
        with self.assertRaises(kiln.triton.ExportError) as caught:
            kiln.triton.export(self.add, "add", os.path.join(self.work, "repo"), backend="tensorflow")
        self.assertIn("--backend must be one of python, kiln, got 'tensorflow'", str(caught.exception))

    def test_native_backend_not_built(self):
        from kiln.triton import repository

        saved = repository.native_backend_dir
        repository.native_backend_dir = lambda: os.path.join(self.work, "no-backend")
        try:
            with self.assertRaises(kiln.triton.ExportError) as caught:
                kiln.triton.export(self.add, "add", os.path.join(self.work, "repo"), backend="kiln")
        finally:
            repository.native_backend_dir = saved
        self.assertIn("--backend kiln: the native backend is not built (no ", str(caught.exception))
        self.assertFalse(os.path.exists(os.path.join(self.work, "repo", "add", "libtriton_kiln.so")))


if __name__ == "__main__":
    unittest.main()
