"""Checks of the corpus harness itself that need no fetched model (ctest kiln_models_harness_test):
every manifest loads and is consistent, inputs are made as the manifests say, and the
comparison catches each kind of difference it is there to catch.

usage: build/venv/bin/python tests/models/harness_test.py
"""
import os
import re
import sys
import tempfile
import unittest

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import corpus  # noqa: E402
import run_models  # noqa: E402


class ManifestsTest(unittest.TestCase):
    def test_every_manifest_is_consistent(self):
        ms = corpus.load_all()
        self.assertGreaterEqual(len(ms), 15)
        ids = [m.id for m in ms]
        self.assertEqual(len(ids), len(set(ids)))
        for m in ms:
            with self.subTest(model=m.id):
                for rel, sha in m.files():
                    self.assertRegex(sha, r"^[0-9a-f]{64}$")
                    self.assertTrue(rel.endswith((".onnx", ".onnx.data")), rel)
                self.assertRegex(m.version, r"^[0-9][0-9A-Za-z.]*$")
                self.assertIn(m.expect, ("pass", "unsupported", "mismatch"))
                self.assertLess(m.bench_shape, len(m.shapes))
                for k, case in enumerate(m.shapes):
                    feeds = m.make_inputs(case, seed=1000 + k)
                    for i in m.inputs:
                        a = feeds[i["name"]]
                        self.assertEqual(a.dtype, np.dtype(corpus.DTYPES[i["dtype"]]))
                        self.assertEqual(len(a.shape), len(i["dims"]))
                        for d, n in zip(i["dims"], a.shape):
                            if isinstance(d, int) and d > 0:
                                self.assertEqual(d, n, f"{i['name']}: static dim {d} given as {n}")
                        v = i["values"]
                        if v["kind"] == "int" and a.size:
                            self.assertGreaterEqual(a.min(), v["low"])
                            self.assertLess(a.max(), v["high"])
                # two shapes that differ in some symbolic dimension
                if len(m.shapes) >= 2:
                    labels = {m.shape_label(c) for c in m.shapes}
                    self.assertEqual(len(labels), len(m.shapes))

    def test_dim_kind_follows_the_other_input(self):
        m = next(m for m in corpus.load_all() if m.id == "lac_encoder")
        feeds = m.make_inputs({"token_ids": [3, 17], "length": [3]}, seed=1)
        self.assertEqual(feeds["length"].tolist(), [17, 17, 17])

    def test_bad_manifests_are_refused(self):
        with open(os.path.join(corpus.MANIFESTS, "magika.toml")) as f:
            good = f.read()
        bad = {
            # Whatever magika's status is: an unknown expect, and "unsupported" without its error.
            "expect": re.sub(r'(?m)^expect = .*$', 'expect = "maybe"', good),
            "no error": re.sub(r'(?m)^error = .*\n', "", re.sub(r'(?m)^expect = .*$', 'expect = "unsupported"', good)),
            "rtol without reason": good.replace("rtol = 1e-4", "rtol = 1e-3"),
            "one shape": re.sub(r"shapes = \[\n(?:  .*\n)+\]", "shapes = [\n  { bytes = [1, 2048] },\n]", good),
        }
        with tempfile.TemporaryDirectory() as d:
            for what, text in bad.items():
                with self.subTest(what=what):
                    self.assertNotEqual(text, good)
                    p = os.path.join(d, "m.toml")
                    with open(p, "w") as f:
                        f.write(text)
                    with self.assertRaises(ValueError) as e:
                        corpus.Manifest(p)
                    self.assertIn(p, str(e.exception))  # the manifest's own check, not a TOML syntax error


class CompareTest(unittest.TestCase):
    def check(self, got, want, rtol=1e-4):
        return run_models.compare("y", np.asarray(got), np.asarray(want), rtol, [0.0])

    def test_equal_passes(self):
        self.assertIsNone(self.check(np.float32([1, -2, 3]), np.float32([1, -2, 3])))
        self.assertIsNone(self.check(np.float32([1, -2, 3.00001]), np.float32([1, -2, 3])))
        self.assertIsNone(self.check(np.int64([4, 5]), np.int64([4, 5])))

    def test_differences_fail(self):
        self.assertIn("max |kiln - ort|", self.check(np.float32([1, -2, 3.01]), np.float32([1, -2, 3])))
        self.assertIn("shape", self.check(np.float32([1, 2]), np.float32([[1, 2]])))
        self.assertIn("dtype", self.check(np.float64([1, 2]), np.float32([1, 2])))
        self.assertIn("differ", self.check(np.int64([4, 6]), np.int64([4, 5])))
        self.assertIn("differ", self.check(np.bool_([True, False]), np.bool_([True, True])))
        self.assertIn("NaN", self.check(np.float32([np.nan, 1]), np.float32([0, 1])))

    def test_relative_to_the_largest_reference(self):
        # 1e-5 off on an element of 1e-3 is fine when the output's scale is 1.
        self.assertIsNone(self.check(np.float32([1.0, 1e-3 + 1e-5]), np.float32([1.0, 1e-3])))
        self.assertIsNotNone(self.check(np.float32([1.0, 1e-3 + 1e-3]), np.float32([1.0, 1e-3])))


if __name__ == "__main__":
    unittest.main()
