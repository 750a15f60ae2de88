"""Tests of kiln.tune: a few trials each, no timing asserted.

Run by ctest (kiln_python_tune_test) through run_tests.sh, like test_kiln.py.
"""
import importlib.util
import json
import os
import signal
import tempfile
import threading
import unittest

import numpy as np

import kiln

# The MLC course's matmul and an elementwise kernel (tools/kiln-tune/tune_e2e_test.cc's
# module): add1 reads the input, not mm's result, so fusion leaves mm a kernel of its own.
MM_MODULE = """@I.ir_module
class Module:
    @T.prim_func
    def mm(A: T.Buffer((128, 128), "float32"), B: T.Buffer((128, 128), "float32"), C: T.Buffer((128, 128), "float32")):
        T.func_attr({"global_symbol": "mm", "tir.noalias": True})
        for i, j, k in T.grid(128, 128, 128):
            with T.block("C"):
                vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                with T.init():
                    C[vi, vj] = T.float32(0)
                C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]

    @T.prim_func
    def add1(A: T.Buffer((128, 128), "float32"), B: T.Buffer((128, 128), "float32")):
        for i, j in T.grid(128, 128):
            with T.block("B"):
                vi, vj = T.axis.remap("SS", [i, j])
                B[vi, vj] = A[vi, vj] + T.float32(1)

    @R.function
    def main(a: R.Tensor((128, 128), dtype="float32"), b: R.Tensor((128, 128), dtype="float32")) -> R.Tuple(R.Tensor((128, 128), dtype="float32"), R.Tensor((128, 128), dtype="float32")):
        cls = Module
        with R.dataflow():
            c = R.call_tir(cls.mm, (a, b), out_sinfo=R.Tensor((128, 128), dtype="float32"))
            d = R.call_tir(cls.add1, (a,), out_sinfo=R.Tensor((128, 128), dtype="float32"))
            R.output(c, d)
        return (c, d)
"""

# The runner measures float32 buffers only: the default schedule of this one cannot be measured.
INT_MODULE = """@I.ir_module
class Module:
    @T.prim_func
    def inc(A: T.Buffer((16,), "int32"), B: T.Buffer((16,), "int32")):
        for i in range(16):
            with T.block("B"):
                vi = T.axis.spatial(16, i)
                B[vi] = A[vi] + 1
"""


def read_records(db):
    with open(os.path.join(db, "records.jsonl")) as f:
        return [json.loads(line) for line in f if line.strip()]


@unittest.skipIf(importlib.util.find_spec("kiln._tune") is None, "the package was built without the compiler")
class TuneTest(unittest.TestCase):
    def setUp(self):
        self.work = tempfile.TemporaryDirectory()
        self.addCleanup(self.work.cleanup)
        self.module = os.path.join(self.work.name, "mm.relax")
        with open(self.module, "w") as f:
            f.write(MM_MODULE)
        self.db = os.path.join(self.work.name, "tuning")

    def test_result_progress_and_records(self):
        lines = []
        result = kiln.tune(self.module, function="mm", db=self.db, trials=3, repeats=3, seed=2,
                           progress=lines.append)
        self.assertIsInstance(result, kiln.TuneResult)
        self.assertEqual((result.function, result.trials, result.db), ("mm", 3, self.db))
        self.assertRegex(result.workload, r"^[0-9a-f]{16}$")
        self.assertGreater(result.default_us, 0)
        self.assertLessEqual(result.best_us, result.default_us)
        self.assertGreaterEqual(result.speedup, 1.0)
        self.assertEqual(result.improved, bool(result.best_trace))
        self.assertTrue(0 <= result.failures <= 3)
        self.assertEqual(len(result.best_after), 3)
        self.assertEqual(result.best_after, sorted(result.best_after, reverse=True))
        self.assertIn("3 trials", repr(result))
        # The lines kiln-tune prints, one call per line, without the newline.
        self.assertTrue(lines[0].startswith(f"tune mm (workload {result.workload}"), lines)
        self.assertIn("evolutionary search", lines[0])
        for k in (1, 2, 3):
            self.assertTrue(any(line.startswith(f"[{k}/3] mm: ") for line in lines), lines)
        self.assertFalse(any("\n" in line for line in lines))
        # Three candidates and the default point's record; the cost model beside them.
        records = read_records(self.db)
        self.assertEqual(len(records), 4)
        self.assertEqual(sum(r["message"] == "the default schedule" for r in records), 1)
        self.assertTrue(os.path.exists(os.path.join(self.db, "cost_model.json")))

    def test_text_source_and_random_search(self):
        lines = []
        result = kiln.tune(MM_MODULE, function="add1", db=self.db, trials=2, repeats=3, search="random",
                           space="default", progress=lines.append)
        self.assertEqual((result.function, result.trials), ("add1", 2))
        self.assertIn("random search", lines[0])
        self.assertEqual(len(read_records(self.db)), 3)

    def test_cold_cache_reaches_the_tool(self):
        # cold_cache=N is kiln-tune --cold-cache=N: the run says so, and every record it
        # writes is marked cold with that flush; a warm run's records say warm.
        lines = []
        kiln.tune(MM_MODULE, function="add1", db=self.db, trials=1, repeats=3, cold_cache=2 << 20,
                  progress=lines.append)
        self.assertIn("cold cache", lines[0])
        records = read_records(self.db)
        self.assertEqual(len(records), 2)
        for r in records:
            self.assertEqual((r["cache"], r["flush_bytes"]), ("cold", 2 << 20), r)
        kiln.tune(MM_MODULE, function="add1", db=self.db, trials=1, repeats=3, cold_cache=True,
                  progress=lines.append)
        default_size = [r["flush_bytes"] for r in read_records(self.db)[2:]]
        self.assertEqual(len(default_size), 2)
        self.assertEqual(len(set(default_size)), 1)
        self.assertGreaterEqual(default_size[0], 1 << 20)
        lines.clear()
        kiln.tune(MM_MODULE, function="add1", db=self.db, trials=1, repeats=3, progress=lines.append)
        self.assertNotIn("cold cache", lines[0])
        self.assertNotIn("trials in the database", lines[0])  # the cold records are not resumed
        for r in read_records(self.db)[4:]:
            self.assertEqual(r["cache"], "warm", r)
            self.assertNotIn("flush_bytes", r)

    def test_compile_with_the_tuning_db(self):
        # Random points of the generic space (block tiling, unlike the default schedule).
        kiln.tune(self.module, function="mm", db=self.db, trials=3, repeats=3, seed=5, search="random",
                  space="generic", progress=lambda line: None)
        rng = np.random.default_rng(0)
        a = rng.uniform(-1, 1, (128, 128)).astype(np.float32)
        b = rng.uniform(-1, 1, (128, 128)).astype(np.float32)
        plain = kiln.compile(self.module, threads=1)
        tuned = kiln.compile(self.module, tuning_db=self.db, threads=1)
        c, d = tuned.load()["main"](a, b)
        np.testing.assert_allclose(np.asarray(c), a.astype(np.float64) @ b, rtol=1e-4, atol=1e-4)
        np.testing.assert_array_equal(np.asarray(d), a + 1)
        # Whatever this busy machine measured, make the best candidate beat the default
        # (default_us raised, the default point's record dropped), so that the compiler
        # applies it: the kernel is then another one than the default schedule's.
        records = [r for r in read_records(self.db) if r["message"] != "the default schedule"]
        self.assertTrue(any(r["state"] == "ok" for r in records), records)
        with open(os.path.join(self.db, "records.jsonl"), "w") as f:
            for r in records:
                r["default_us"] = 1e30
                f.write(json.dumps(r) + "\n")
        applied = kiln.compile(self.module, tuning_db=self.db, threads=1)
        self.assertNotEqual(bytes(applied), bytes(plain))
        c, _ = applied.load()["main"](a, b)
        np.testing.assert_allclose(np.asarray(c), a.astype(np.float64) @ b, rtol=1e-4, atol=1e-4)

    def test_default_progress_goes_to_logging(self):
        with self.assertLogs("kiln.tune", "INFO") as logs:
            kiln.tune(self.module, function="mm", db=self.db, trials=1, repeats=3)
        self.assertTrue(any("[1/1] mm: " in line for line in logs.output), logs.output)

    def test_damaged_database_line_is_a_warning(self):
        os.makedirs(self.db)
        with open(os.path.join(self.db, "records.jsonl"), "w") as f:
            f.write("{not json\n")
        with self.assertLogs("kiln.tune", "WARNING") as logs:
            kiln.tune(self.module, function="mm", db=self.db, trials=1, repeats=3)
        self.assertTrue(any("records.jsonl:1: " in line and "(line skipped)" in line for line in logs.output),
                        logs.output)

    def test_progress_exception_stops_tuning(self):
        def progress(line):
            if line.startswith("[1/"):
                raise RuntimeError("enough")

        with self.assertRaisesRegex(RuntimeError, "enough"):
            kiln.tune(self.module, function="mm", db=self.db, trials=50, repeats=3, progress=progress)
        # The first candidate and the default point's record: nothing after the exception.
        self.assertEqual(len(read_records(self.db)), 2)

    def test_ctrl_c_stops_tuning(self):
        started, finished = threading.Event(), threading.Event()

        def interrupt():
            # Only while tuning: never interrupt the test runner itself.
            if started.wait(60) and not finished.is_set():
                os.kill(os.getpid(), signal.SIGINT)

        def progress(line):
            started.set()

        t = threading.Thread(target=interrupt)
        t.start()
        try:
            with self.assertRaises(KeyboardInterrupt):
                kiln.tune(self.module, function="mm", db=self.db, trials=200, repeats=3, progress=progress)
        finally:
            finished.set()
            started.set()
            t.join()
        self.assertLess(len(read_records(self.db)), 201)

    def test_tuning_releases_the_gil(self):
        ticks = []
        done = threading.Event()

        def ticker():
            while not done.is_set():
                ticks.append(1)
                done.wait(0.001)

        t = threading.Thread(target=ticker)
        t.start()
        try:
            # Ticks counted while Kiln ran, not while the progress callable held the GIL.
            kiln.tune(self.module, function="mm", db=self.db, trials=2, repeats=3, progress=lambda line: None)
        finally:
            done.set()
            t.join()
        self.assertGreater(len(ticks), 1)

    def test_unknown_function_lists_the_primfuncs(self):
        for name in ("nope", "main"):  # main is a Relax function
            with self.assertRaises(kiln.NotFoundError) as caught:
                kiln.tune(self.module, function=name, db=self.db)
            self.assertEqual(str(caught.exception),
                             f"kiln.tune: {self.module} has no PrimFunc named '{name}' (its PrimFuncs: mm, add1)")
            self.assertEqual(caught.exception.code, "NOT_FOUND")
            self.assertIsInstance(caught.exception, KeyError)
        self.assertFalse(os.path.exists(self.db))

    def test_module_without_primfuncs(self):
        with open(os.path.join(os.path.dirname(__file__), "add.relax")) as f:
            add_text = f.read()
        with self.assertRaisesRegex(kiln.NotFoundError, r"<string> has no PrimFunc named 'main' \(it has none\)"):
            kiln.tune(add_text, function="main", db=self.db)

    def test_missing_file(self):
        with self.assertRaisesRegex(kiln.NotFoundError, "kiln.tune: no such file 'no_such.relax'"):
            kiln.tune("no_such.relax", function="mm", db=self.db)

    def test_parse_error_carries_the_line(self):
        with self.assertRaises(kiln.InvalidArgumentError) as caught:
            kiln.tune("@I.ir_module\nclass Module:\n    bogus\n", function="mm", db=self.db)
        self.assertIn("<string>:3:5", str(caught.exception))

    def test_unmeasurable_default_is_a_failed_precondition(self):
        with self.assertRaises(kiln.FailedPreconditionError) as caught:
            kiln.tune(INT_MODULE, function="inc", db=self.db, trials=1)
        self.assertIn("tune inc: the default schedule cannot be measured", str(caught.exception))
        self.assertIn("not float32", str(caught.exception))

    def test_candidates_run_in_the_measuring_program(self):
        # The package carries kiln-measure-host beside kiln._tune, and each candidate runs
        # in it (exec'd), not in a fork of this process: replaced by a program that fails,
        # the default schedule's measurement fails with that program named.
        spec = importlib.util.find_spec("kiln._tune")
        program = os.path.join(os.path.dirname(spec.origin), "kiln-measure-host")
        self.assertTrue(os.access(program, os.X_OK), program)
        os.environ["KILN_MEASURE_HOST"] = "/bin/false"
        try:
            with self.assertRaises(kiln.FailedPreconditionError) as caught:
                kiln.tune(MM_MODULE, function="add1", db=self.db, trials=1)
        finally:
            del os.environ["KILN_MEASURE_HOST"]
        self.assertIn("the measuring process `exec '/bin/false'", str(caught.exception))

    def test_bad_arguments(self):
        cases = [
            (dict(trials=-1), "trials must be an integer >= 0, got -1"),
            (dict(threads=0), "threads must be an integer >= 1, got 0"),
            (dict(seed=1.5), "seed must be an integer >= 0, got 1.5"),
            (dict(repeats=True), "repeats must be an integer >= 1, got True"),
            (dict(batch="8"), "batch must be an integer >= 1, got '8'"),
            (dict(timeout=0), "timeout must be a positive number of seconds, got 0"),
            (dict(search="grid"), "search must be 'evolutionary' or 'random', got 'grid'"),
            (dict(space="mine"), "space must be 'all', 'default' or 'generic', got 'mine'"),
            (dict(progress="stdout"), "progress must be a callable taking a line of text, got str"),
            (dict(function=""), "function must be the name of a PrimFunc, got ''"),
            (dict(db=3), "db must be a folder path, got int"),
            (dict(cold_cache=4096), "cold_cache must be True, False or a flush size in bytes >= 1048576, got 4096"),
            (dict(cold_cache="64M"),
             "cold_cache must be True, False or a flush size in bytes >= 1048576, got '64M'"),
        ]
        for kwargs, message in cases:
            args = dict(function="mm", db=self.db)
            args.update(kwargs)
            with self.subTest(kwargs=kwargs):
                with self.assertRaises(kiln.InvalidArgumentError) as caught:
                    kiln.tune(self.module, **args)
                self.assertEqual(str(caught.exception), "kiln.tune: " + message)
        with self.assertRaisesRegex(kiln.InvalidArgumentError, "source must be a path or Relax text, got bytes"):
            kiln.tune(b"@I.ir_module", function="mm", db=self.db)

    def test_stub_and_docstrings(self):
        with open(os.path.join(os.path.dirname(kiln.__file__), "_tune.pyi")) as f:
            self.assertIn("def tune", f.read())
        self.assertIn("tuning_db", kiln.tune.__doc__)
        self.assertTrue(kiln.TuneResult.__doc__)


class TuneWithoutCompilerTest(unittest.TestCase):
    def test_package_without_the_tuner_says_so(self):
        import sys

        # As in a package built without the compiler (pip install ./python): no kiln._tune.
        saved = sys.modules.get("kiln._tune")
        sys.modules["kiln._tune"] = None
        try:
            with self.assertRaises(kiln.UnimplementedError) as caught:
                kiln.tune("mm.relax", function="mm", db="tuning")
        finally:
            if saved is None:
                del sys.modules["kiln._tune"]
            else:
                sys.modules["kiln._tune"] = saved
        self.assertIn("kiln.tune: this kiln package was built without the compiler", str(caught.exception))


if __name__ == "__main__":
    unittest.main()
