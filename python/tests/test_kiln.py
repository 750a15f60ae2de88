"""Tests of the kiln package: loading, introspection, calls, zero-copy, threads, errors.

Run by ctest through run_tests.sh, which sets KILN_PYTHON_TEST_MODELS to the folder of the
compiled models and either PYTHONPATH to the build tree's package (kiln_python_test) or
KILN_PYTHON_INSTALLED for the package pip installed in the venv (kiln_python_installed_test).
"""
import os
import threading
import unittest

import numpy as np

import kiln
import kiln.triton

MODELS = os.environ["KILN_PYTHON_TEST_MODELS"]
MLP = os.path.join(MODELS, "mlp.vmfb")
ADD = os.path.join(MODELS, "add.vmfb")


def aligned(array):
    """`array` copied into Kiln-allocated (64-byte aligned) storage, and a numpy view of it."""
    tensor = kiln.empty(array.shape, str(array.dtype))
    view = np.asarray(tensor)
    view[...] = array
    return tensor, view


def mlp_inputs(n, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.uniform(-1, 1, (n, 784)).astype(np.float32)
    w0 = rng.uniform(-0.1, 0.1, (128, 784)).astype(np.float32)
    b0 = rng.uniform(-0.1, 0.1, (128,)).astype(np.float32)
    w1 = rng.uniform(-0.1, 0.1, (10, 128)).astype(np.float32)
    b1 = rng.uniform(-0.1, 0.1, (10,)).astype(np.float32)
    return x, w0, b0, w1, b1


def mlp_reference(x, w0, b0, w1, b1):
    h = np.maximum(x.astype(np.float64) @ w0.T + b0, 0)
    return h @ w1.T + b1


class LoadTest(unittest.TestCase):
    def test_functions_describe_parameters(self):
        m = kiln.load(MLP)
        self.assertIn("main", m.functions)
        self.assertIn("main", m)
        self.assertNotIn("nope", m)
        main = m.functions["main"]
        self.assertEqual([p.name for p in main.params], ["x", "w0", "b0", "w1", "b1"])
        x = main.params[0]
        self.assertEqual((x.kind, x.dtype, x.shape), ("tensor", "float32", ("n", 784)))
        self.assertEqual(main.params[1].shape, (128, 784))
        self.assertEqual(main.results[0].shape, ("n", 10))
        self.assertEqual(main.results[0].dtype, "float32")

    def test_load_from_bytes_and_pathlike(self):
        import pathlib

        with open(ADD, "rb") as f:
            data = f.read()
        for source in (data, bytearray(data), pathlib.Path(ADD)):
            m = kiln.load(source)
            y = m["main"](np.array([1.5], np.float32), np.array([2.0], np.float32))
            self.assertEqual(np.asarray(y).tolist(), [3.5])

    def test_missing_file_is_not_found(self):
        with self.assertRaises(kiln.NotFoundError) as caught:
            kiln.load(os.path.join(MODELS, "no_such_model.vmfb"))
        self.assertIn("no_such_model.vmfb", str(caught.exception))
        self.assertEqual(caught.exception.code, "NOT_FOUND")

    def test_damaged_bytes_are_an_error(self):
        with open(ADD, "rb") as f:
            data = bytearray(f.read())
        with self.assertRaises(kiln.Error):
            kiln.load(bytes(data[: len(data) // 2]))

    def test_unknown_function_is_a_key_error_listing_the_functions(self):
        m = kiln.load(ADD)
        with self.assertRaises(KeyError) as caught:
            m["nope"]
        self.assertIsInstance(caught.exception, kiln.NotFoundError)
        self.assertIn("main", str(caught.exception))


class CallTest(unittest.TestCase):
    def test_mlp_matches_numpy_at_several_batches(self):
        m = kiln.load(MLP)
        for n in (1, 3, 8):
            args = mlp_inputs(n, seed=n)
            y = m["main"](*args)
            self.assertIsInstance(y, kiln.Tensor)
            self.assertEqual(y.shape, (n, 10))
            self.assertEqual(y.dtype, "float32")
            np.testing.assert_allclose(np.asarray(y), mlp_reference(*args), rtol=1e-4, atol=1e-4)

    def test_keyword_arguments(self):
        m = kiln.load(MLP)
        x, w0, b0, w1, b1 = mlp_inputs(2)
        y = m["main"](x, w0, b0, w1=w1, b1=b1)
        np.testing.assert_allclose(np.asarray(y), mlp_reference(x, w0, b0, w1, b1), rtol=1e-4, atol=1e-4)
        with self.assertRaises(kiln.InvalidArgumentError) as caught:
            m["main"](x, w0, b0, w1, bias=b1)
        self.assertIn("b1", str(caught.exception))

    def test_unaligned_and_strided_inputs(self):
        m = kiln.load(ADD)
        # Views one and two floats into a buffer: 4-byte aligned, so they are
        # copied into aligned storage, and the result is still right.
        base = np.arange(3, dtype=np.float32)
        self.assertEqual(np.asarray(m["main"](base[1:2], base[2:3])).tolist(), [3.0])
        # A non-contiguous array is refused, naming the argument.
        strided = np.arange(8, dtype=np.float32).reshape(2, 4)[:, ::2]
        with self.assertRaises(kiln.InvalidArgumentError) as caught:
            m["main"](strided, base[:1])
        self.assertIn("argument a", str(caught.exception))
        self.assertIn("contiguous", str(caught.exception))

    def test_numpy_arrays_read_without_the_buffer_protocol(self):
        import sys

        m = kiln.load(ADD)
        # An aligned plain array is wrapped, holding a reference to the array only while Kiln
        # uses its data.
        _, a = aligned(np.array([1.0], np.float32))
        before = sys.getrefcount(a)
        y = m["main"](a, a)
        self.assertEqual(np.asarray(y).tolist(), [2.0])
        del y
        self.assertEqual(sys.getrefcount(a), before)
        # What the direct read does not take goes through the buffer protocol, as before:
        # a subclass, a read-only array, a byte-swapped one (refused, naming the argument).
        class Subclass(np.ndarray):
            pass

        one = np.array([1.5], np.float32)
        self.assertEqual(np.asarray(m["main"](one.view(Subclass), one)).tolist(), [3.0])
        one.flags.writeable = False
        self.assertEqual(np.asarray(m["main"](one, one)).tolist(), [3.0])
        with self.assertRaises(kiln.InvalidArgumentError) as caught:
            m["main"](np.array([1.0], ">f4"), one)
        self.assertIn("argument a", str(caught.exception))
        self.assertIn("'>f'", str(caught.exception))

    def test_dlpack_producer_input(self):
        class OnlyDLPack:
            """An array that offers only __dlpack__ (as torch does), not the buffer protocol."""

            def __init__(self, array):
                self.array = array

            def __dlpack__(self, **kwargs):
                return self.array.__dlpack__(**kwargs)

            def __dlpack_device__(self):
                return self.array.__dlpack_device__()

        m = kiln.load(ADD)
        _, a = aligned(np.array([4.0], np.float32))
        y = m["main"](OnlyDLPack(a), OnlyDLPack(np.array([0.25], np.float32)))
        self.assertEqual(np.asarray(y).tolist(), [4.25])

    def test_dlpack_input_on_a_gpu_is_refused(self):
        import ctypes

        class OnCuda:
            """numpy's DLPack capsule, relabelled as a kDLCUDA tensor (its data is never read)."""

            def __init__(self, array):
                self.array = array

            def __dlpack__(self, **kwargs):
                capsule = self.array.__dlpack__()
                get = ctypes.pythonapi.PyCapsule_GetPointer
                get.restype, get.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
                managed = get(capsule, b"dltensor")
                ctypes.c_int32.from_address(managed + 8).value = 2  # dl_tensor.device.device_type = kDLCUDA
                return capsule

        m = kiln.load(ADD)
        with self.assertRaises(kiln.InvalidArgumentError) as caught:
            m["main"](OnCuda(np.array([1.0], np.float32)), np.array([2.0], np.float32))
        self.assertIn("argument a", str(caught.exception))
        self.assertIn("the tensor is on DLPack device type 2; the Python package runs on the CPU (kDLCPU) only",
                      str(caught.exception))

    def test_output_is_zero_copy(self):
        m = kiln.load(ADD)
        y = m["main"](np.array([1.0], np.float32), np.array([2.0], np.float32))
        view = np.asarray(y)
        self.assertEqual(view.ctypes.data, y.data_ptr)
        self.assertEqual(np.from_dlpack(y).ctypes.data, y.data_ptr)
        self.assertEqual(y.__dlpack_device__(), (1, 0))
        del y  # the view keeps the storage alive
        self.assertEqual(view.tolist(), [3.0])

    def test_kiln_tensor_input_is_passed_as_is(self):
        m = kiln.load(ADD)
        a, a_view = aligned(np.array([5.0], np.float32))
        y = m["main"](a, np.array([1.0], np.float32))
        a_view[0] = 7.0  # writing through the view changes the tensor the next call reads
        z = m["main"](a, np.array([1.0], np.float32))
        self.assertEqual((np.asarray(y)[0], np.asarray(z)[0]), (6.0, 8.0))
        self.assertEqual(repr(a), "kiln.Tensor(shape=(1,), dtype=float32)")

    def test_from_dlpack_shares_aligned_storage(self):
        _, view = aligned(np.zeros((2, 3), np.float32))
        t = kiln.from_dlpack(view)
        self.assertEqual(t.data_ptr, view.ctypes.data)
        self.assertEqual(t.shape, (2, 3))

    def test_context_with_threads_and_executors(self):
        m = kiln.load(MLP)
        args = mlp_inputs(4)
        expected = mlp_reference(*args)
        for executor in ("auto", "vm"):
            ctx = m.context(threads=2, executor=executor)
            self.assertEqual(ctx.threads, 2)
            for _ in range(3):
                np.testing.assert_allclose(np.asarray(ctx["main"](*args)), expected, rtol=1e-4, atol=1e-4)
        with self.assertRaises(kiln.InvalidArgumentError):
            m.context(executor="fast")

    def test_graph_executor_on_a_static_function(self):
        m = kiln.load(ADD)
        ctx = m.context(threads=1, executor="graph")
        self.assertEqual(np.asarray(ctx["main"](np.ones(1, np.float32), np.ones(1, np.float32))).tolist(), [2.0])

    def test_graph_executor_refuses_a_symbolic_function(self):
        m = kiln.load(MLP)
        ctx = m.context(executor="graph")
        with self.assertRaises(kiln.FailedPreconditionError):
            ctx["main"](*mlp_inputs(1))

    def test_profile_table_names_kernels(self):
        m = kiln.load(MLP)
        ctx = m.context(threads=1, profile=True)
        ctx["main"](*mlp_inputs(1))
        table = ctx.profile()
        self.assertIn("main", table)
        ctx.reset_profile()
        with self.assertRaises(kiln.FailedPreconditionError):
            m.context(threads=1).profile()


class ErrorTest(unittest.TestCase):
    def test_wrong_dimension_names_argument_and_dimension(self):
        m = kiln.load(MLP)
        x, w0, b0, w1, b1 = mlp_inputs(1)
        with self.assertRaises(kiln.InvalidArgumentError) as caught:
            m["main"](np.zeros((1, 100), np.float32), w0, b0, w1, b1)
        message = str(caught.exception)
        self.assertIn("x", message)
        self.assertIn("dimension 1", message)
        self.assertIn("784", message)
        self.assertIn("100", message)
        self.assertIsInstance(caught.exception, ValueError)
        self.assertEqual(caught.exception.code, "INVALID_ARGUMENT")

    def test_wrong_dtype_names_argument(self):
        m = kiln.load(MLP)
        x, w0, b0, w1, b1 = mlp_inputs(1)
        with self.assertRaises(kiln.InvalidArgumentError) as caught:
            m["main"](x, w0.astype(np.float64), b0, w1, b1)
        message = str(caught.exception)
        self.assertIn("w0", message)
        self.assertIn("float64", message)

    def test_wrong_count_and_wrong_kind(self):
        m = kiln.load(ADD)
        with self.assertRaises(kiln.InvalidArgumentError):
            m["main"](np.ones(1, np.float32))
        with self.assertRaises(kiln.InvalidArgumentError) as caught:
            m["main"](np.ones(1, np.float32), "text")
        self.assertIn("argument b", str(caught.exception))
        self.assertIn("str", str(caught.exception))

    def test_unknown_dtype_for_empty(self):
        with self.assertRaises(kiln.InvalidArgumentError):
            kiln.empty((2,), "complex64")


class ThreadTest(unittest.TestCase):
    def test_threads_call_one_module_in_parallel(self):
        m = kiln.load(MLP)
        main = m["main"]
        cases = [mlp_inputs(n, seed=n) for n in (1, 2, 5, 7)]
        expected = [mlp_reference(*c) for c in cases]
        failures = []
        inside = threading.Barrier(len(cases))

        def worker(i):
            try:
                inside.wait()
                for _ in range(50):
                    y = main(*cases[i])
                    np.testing.assert_allclose(np.asarray(y), expected[i], rtol=1e-4, atol=1e-4)
            except Exception as error:  # reported below, with the thread's case
                failures.append((i, error))

        threads = [threading.Thread(target=worker, args=(i,)) for i in range(len(cases))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual(failures, [])

    def test_gil_is_released_during_a_call(self):
        # Another Python thread records timestamps while the main thread runs
        # long calls. It can run in the middle of a call only if the call
        # released the GIL: with the GIL held, the most it could get is the
        # switch interval (set small here) before the call starts.
        import sys
        import time

        m = kiln.load(MLP)
        ctx = m.context(threads=1)
        args = mlp_inputs(4096)
        stamps = []
        done = threading.Event()

        def recorder():
            while not done.is_set():
                stamps.append(time.perf_counter())

        interval = sys.getswitchinterval()
        sys.setswitchinterval(0.0002)
        t = threading.Thread(target=recorder)
        t.start()
        try:
            windows = []
            for _ in range(10):
                t0 = time.perf_counter()
                ctx["main"](*args)
                windows.append((t0, time.perf_counter()))
        finally:
            done.set()
            t.join()
            sys.setswitchinterval(interval)
        long_calls = [(a, b) for a, b in windows if b - a > 0.002]
        self.assertTrue(long_calls, windows)  # the test proves nothing with calls this short
        inside = [
            sum(1 for s in stamps if a + (b - a) / 3 < s < b - (b - a) / 3) for a, b in long_calls
        ]
        # One call with a stamp inside proves the release (a call holding the
        # GIL lets no other Python thread run at all); asking it of every call
        # would fail on a loaded machine where the recorder is not scheduled.
        self.assertTrue(any(n > 0 for n in inside), inside)

    def test_one_context_shared_by_threads_takes_turns(self):
        m = kiln.load(ADD)
        ctx = m.context(threads=1)
        add = ctx["main"]
        results = []

        def worker(v):
            for _ in range(100):
                results.append(np.asarray(add(np.array([v], np.float32), np.array([1.0], np.float32)))[0] == v + 1)

        threads = [threading.Thread(target=worker, args=(float(v),)) for v in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual(len(results), 400)
        self.assertTrue(all(results))


class GuideTest(unittest.TestCase):
    """Every ```python block of docs/guide/python.md, in order, in one namespace."""

    def test_guide_examples_run(self):
        import contextlib
        import io
        import re
        import shutil
        import tempfile

        with open(os.environ["KILN_PYTHON_GUIDE"]) as f:
            page = f.read()
        blocks = re.findall(r"^```python\n(.*?)^```", page, flags=re.S | re.M)
        self.assertGreaterEqual(len(blocks), 5)
        namespace = {}
        with tempfile.TemporaryDirectory() as work:
            shutil.copy(MLP, work)
            # The compiling examples start from the source of mlp.vmfb.
            examples = os.path.join(os.path.dirname(os.environ["KILN_PYTHON_GUIDE"]), "..", "..", "examples")
            shutil.copy(os.path.join(examples, "mlp.relax"), work)
            previous = os.getcwd()
            os.chdir(work)
            try:
                for i, block in enumerate(blocks):
                    with self.subTest(block=i), contextlib.redirect_stdout(io.StringIO()):
                        exec(compile(block, f"python.md block {i}", "exec"), namespace)
            finally:
                os.chdir(previous)


ADD_TEXT = """
@I.ir_module
class Module:
    @R.function
    def main(a: R.Tensor((1,), dtype="float32"), b: R.Tensor((1,), dtype="float32")) -> R.Tensor((1,), dtype="float32"):
        with R.dataflow():
            c = R.add(a, b)
            R.output(c)
        return c
"""


class CompileWithoutCompilerTest(unittest.TestCase):
    def test_package_without_the_compiler_says_so(self):
        # As in a package built with KILN_WITH_LLVM=OFF: no kiln._compiler.
        saved = kiln.compiler._compiler
        kiln.compiler._compiler = None
        try:
            with self.assertRaises(kiln.UnimplementedError) as caught:
                kiln.compile(ADD_TEXT)
        finally:
            kiln.compiler._compiler = saved
        self.assertIn("kiln.compile: this kiln package was built without the compiler (KILN_WITH_LLVM=OFF)",
                      str(caught.exception))
        self.assertEqual(caught.exception.code, "UNIMPLEMENTED")


@unittest.skipUnless(os.environ.get("KILN_PYTHON_INSTALLED"), "the build tree's package (run_tests.sh ... installed)")
class InstalledPackageTest(unittest.TestCase):
    """kiln_python_installed_test: the package pip installed (make python-package), with the compiler."""

    def test_package_is_the_one_pip_installed(self):
        import sysconfig

        site = os.path.realpath(sysconfig.get_paths()["platlib"])
        package = os.path.realpath(os.path.dirname(kiln.__file__))
        self.assertEqual(os.path.dirname(package), site)
        self.assertFalse(os.environ.get("PYTHONPATH"))

    def test_package_has_the_compiler_and_the_tuner(self):
        import importlib

        # LLVM 19 is there after scripts/setup.sh, so pip install ./python builds both.
        self.assertIsNotNone(kiln.compiler._compiler)
        tune = importlib.import_module("kiln._tune")
        package = os.path.dirname(kiln.__file__)
        for module in (kiln._kiln, kiln.compiler._compiler, tune):
            self.assertEqual(os.path.dirname(module.__file__), package)


@unittest.skipIf(kiln.compiler._compiler is None, "the package was built without the compiler")
class CompileTest(unittest.TestCase):
    MLP_SOURCE = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "mlp.relax")

    def test_compile_text_runs(self):
        exe = kiln.compile(ADD_TEXT)
        self.assertIsInstance(exe, kiln.Executable)
        y = exe.load()["main"](np.array([1.5], np.float32), np.array([2.25], np.float32))
        np.testing.assert_array_equal(np.asarray(y), [3.75])

    def test_compile_file_matches_the_kiln_compile_build(self):
        exe = kiln.compile(self.MLP_SOURCE)
        inputs = mlp_inputs(3)
        y = np.asarray(exe.load()["main"](*inputs))
        expected = np.asarray(kiln.load(MLP)["main"](*inputs))
        np.testing.assert_allclose(y, expected, rtol=1e-6, atol=1e-6)

    def test_save_writes_a_vmfb_that_load_reads(self):
        import tempfile

        exe = kiln.compile(self.MLP_SOURCE, options={"fuse": False, "O": 2})
        with tempfile.TemporaryDirectory() as work:
            path = os.path.join(work, "mlp.vmfb")
            exe.save(path)
            with open(path, "rb") as f:
                self.assertEqual(f.read(), bytes(exe))
            inputs = mlp_inputs(2, seed=3)
            np.testing.assert_allclose(np.asarray(kiln.load(path)["main"](*inputs)), mlp_reference(*inputs),
                                       rtol=1e-4, atol=1e-5)

    def test_params_option_binds_weights(self):
        import tempfile

        x, w0, b0, w1, b1 = mlp_inputs(4, seed=5)
        with tempfile.TemporaryDirectory() as work:
            weights = os.path.join(work, "weights.npz")
            np.savez(weights, w0=w0, b0=b0, w1=w1, b1=b1)
            main = kiln.compile(self.MLP_SOURCE, options={"params": weights}).load()["main"]
        self.assertEqual([p.name for p in main.params], ["x"])
        np.testing.assert_allclose(np.asarray(main(x)), mlp_reference(x, w0, b0, w1, b1), rtol=1e-4, atol=1e-5)

    def test_parse_error_carries_line_and_caret(self):
        with self.assertRaises(kiln.InvalidArgumentError) as caught:
            kiln.compile("@I.ir_module\nclass Module:\n    bogus\n")
        self.assertIn("<string>:3:5", str(caught.exception))
        self.assertIn("^", str(caught.exception))
        self.assertEqual(caught.exception.code, "INVALID_ARGUMENT")

    def test_missing_file_is_not_found(self):
        with self.assertRaises(kiln.NotFoundError) as caught:
            kiln.compile("no_such_model.onnx")
        self.assertIn("no_such_model.onnx", str(caught.exception))

    def test_unknown_option_lists_the_options(self):
        with self.assertRaises(kiln.InvalidArgumentError) as caught:
            kiln.compile(ADD_TEXT, options={"fusion": True})
        self.assertIn("unknown compile option 'fusion'", str(caught.exception))
        self.assertIn("winograd", str(caught.exception))

    def test_bad_option_value_has_kiln_compile_message(self):
        with self.assertRaisesRegex(kiln.InvalidArgumentError, "--fuse must be on or off, got 'maybe'"):
            kiln.compile(ADD_TEXT, options={"fuse": "maybe"})

    def test_output_option_is_refused(self):
        with self.assertRaisesRegex(kiln.InvalidArgumentError, "unknown compile option 'output'"):
            kiln.compile(ADD_TEXT, options={"output": "x.vmfb"})

    def test_bad_dims(self):
        with self.assertRaisesRegex(kiln.InvalidArgumentError, r"dims\['batch'\]: expected a positive integer, got 0"):
            kiln.compile(ADD_TEXT, dims={"batch": 0})
        with self.assertRaisesRegex(kiln.InvalidArgumentError, r"dims\['batch'\]: expected a positive integer, got '8'"):
            kiln.compile(ADD_TEXT, dims={"batch": "8"})

    def test_unknown_target_is_the_compiler_error(self):
        with self.assertRaises(kiln.Error) as caught:
            kiln.compile(ADD_TEXT, target="no-such-triple")
        self.assertIn("no-such-triple", str(caught.exception))

    def test_numpy_dtypes_other_than_float32(self):
        # numpy arrays are read from numpy's own structures (numpy_array.cc): each dtype's
        # character code must map to the dtype Kiln checks and computes in.
        for dtype in ("int32", "int64", "float64", "uint8", "int16"):
            with self.subTest(dtype=dtype):
                main = kiln.compile(ADD_TEXT.replace("float32", dtype)).load()["main"]
                a, b = np.array([3], dtype), np.array([4], dtype)
                y = np.asarray(main(a, b))
                self.assertEqual((y.dtype, y.tolist()), (np.dtype(dtype), [7]))
                with self.assertRaises(kiln.InvalidArgumentError) as caught:
                    main(a.astype(np.float32), b)
                self.assertIn(f"main: input a: expected {dtype}[1], got float32[1]", str(caught.exception))

    def test_onnx_with_dims(self):
        import tempfile

        try:
            import onnx
            from onnx import TensorProto, helper
        except ImportError:
            self.skipTest("no onnx package in this venv")
        graph = helper.make_graph(
            [helper.make_node("Relu", ["x"], ["y"])], "relu",
            [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4])],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 4])])
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
        with tempfile.TemporaryDirectory() as work:
            path = os.path.join(work, "relu.onnx")
            onnx.save(model, path)
            symbolic = kiln.compile(path).load()["main"]
            fixed = kiln.compile(path, dims={"batch": 2}).load()["main"]
        self.assertEqual(symbolic.params[0].shape, ("batch", 4))
        self.assertEqual(fixed.params[0].shape, (2, 4))
        x = np.array([[-1, 2, -3, 4], [5, -6, 7, -8]], np.float32)
        np.testing.assert_array_equal(np.asarray(fixed(x)), np.maximum(x, 0))

    def test_source_of_another_type_is_refused(self):
        with self.assertRaisesRegex(kiln.InvalidArgumentError, "source must be a path or Relax text, got bytes"):
            kiln.compile(b"@I.ir_module")

    def test_compile_releases_the_gil(self):
        ticks = []
        done = threading.Event()

        def ticker():
            while not done.is_set():
                ticks.append(1)
                done.wait(0.001)

        t = threading.Thread(target=ticker)
        t.start()
        try:
            kiln.compile(self.MLP_SOURCE)
        finally:
            done.set()
            t.join()
        self.assertGreater(len(ticks), 1)


class TritonExportTest(unittest.TestCase):
    """kiln.triton without a server (kiln_triton_test serves what it writes, in the serving venv)."""

    def run_module(self, *args):
        import subprocess
        import sys

        return subprocess.run([sys.executable, "-m", "kiln.triton"] + list(args), capture_output=True, text=True,
                              timeout=60)

    def test_export_writes_the_repository_entry(self):
        import tempfile

        with tempfile.TemporaryDirectory() as work:
            r = self.run_module("export", MLP, "--name", "mlp", "--repository", work, "--no-dynamic-batching",
                                "--instances", "3")
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertTrue(os.path.exists(os.path.join(work, "mlp", "1", "model.vmfb")))
            self.assertTrue(os.path.exists(os.path.join(work, "mlp", "1", "model.py")))
            with open(os.path.join(work, "mlp", "config.pbtxt")) as f:
                config = f.read()
        # mlp.vmfb takes its weights as parameters: they are inputs too, and n is not the
        # first dimension of every one of them, so there is no batch dimension.
        self.assertIn('name: "w0"', config)
        self.assertIn("dims: [ 128, 784 ]", config)
        self.assertIn("max_batch_size: 0", config)
        self.assertIn("dims: [ -1, 784 ]", config)
        self.assertIn("count: 3", config)
        self.assertNotIn("dynamic_batching", config)

    def test_export_for_the_native_backend(self):
        import tempfile

        if not os.path.isfile(os.path.join(kiln.triton.native_backend_dir(), "libtriton_kiln.so")):
            self.skipTest("libtriton_kiln.so is not built (ninja kiln_triton_backend)")
        with tempfile.TemporaryDirectory() as work:
            r = self.run_module("export", ADD, "--name", "add", "--repository", work, "--backend", "kiln")
            self.assertEqual(r.returncode, 0, r.stderr)
            files = sorted(os.listdir(os.path.join(work, "add")))
            self.assertEqual([f for f in files if not f.startswith("libkiln.so.")],
                             ["1", "config.pbtxt", "libtriton_kiln.so"])
            self.assertEqual(len(files), 4, files)  # and libkiln.so.N, which the backend loads
            self.assertEqual(os.listdir(os.path.join(work, "add", "1")), ["model.vmfb"])
            with open(os.path.join(work, "add", "config.pbtxt")) as f:
                self.assertIn('backend: "kiln"', f.read())

    def test_static_shapes_have_no_batch(self):
        text = kiln.triton.config_text(kiln.load(ADD), "add")
        self.assertIn("max_batch_size: 0", text)
        self.assertIn("TYPE_FP32", text)
        self.assertIn("dims: [ 1 ]", text)
        with self.assertRaisesRegex(kiln.triton.ExportError, "no symbolic first dimension"):
            kiln.triton.config_text(kiln.load(ADD), "add", max_batch_size=4)

    def test_serve_without_nvidia_pytriton_says_so(self):
        import importlib.util

        if importlib.util.find_spec("pytriton") is not None:
            self.skipTest("this venv has nvidia-pytriton")
        r = self.run_module("serve", "--repository", MODELS)
        self.assertEqual(r.returncode, 1)
        self.assertIn("nvidia-pytriton is not installed", r.stderr)


class StubTest(unittest.TestCase):
    def test_stubs_name_every_public_name(self):
        stub = os.path.join(os.path.dirname(kiln.__file__), "_kiln.pyi")
        with open(stub) as f:
            text = f.read()
        for name in ("Tensor", "Module", "Function", "Context", "ValueInfo", "load", "empty", "from_dlpack"):
            self.assertIn(name, text)
            self.assertTrue(getattr(kiln, name).__doc__)
        for name in ("compile", "Executable"):
            self.assertTrue(getattr(kiln, name).__doc__)
        with open(os.path.join(os.path.dirname(kiln.__file__), "_compiler.pyi")) as f:
            self.assertIn("def compile", f.read())


if __name__ == "__main__":
    unittest.main()
