#!/usr/bin/python3
"""Tests of analysis/fft_head_to_head.py: the table from hand-made result files, and bad files
refused with an error that names them."""
import json
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fft_head_to_head  # noqa: E402
from test_alltoallw_sizes import run_main  # noqa: E402

FFTW = {"tool": "tb-fftw-mpi", "global_shape": "16x16x16", "verified": True, "fastest_s": 2e-3, "median_s": 3e-3}
TB_FFT = {"tool": "tb-fft", "method": "native", "serial": "strided", "global_shape": "16x16x16", "verified": True,
          "fastest_s": 1e-3, "median_s": 1e-3}


class HeadToHead(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)

    def file(self, doc, name="run.json"):
        path = os.path.join(self.tmp.name, name)
        with open(path, "w") as f:
            f.write(doc if isinstance(doc, str) else json.dumps(doc))
        return path

    def run_main(self, *paths):
        return run_main(fft_head_to_head, ["fft_head_to_head.py", *paths])

    def assert_error(self, doc, message):
        path = self.file(doc)
        status, out, err = self.run_main(path)
        self.assertEqual((status, out), (2, ""))
        self.assertIn(f"fft_head_to_head.py: error: {path}: {message}", err)

    def test_the_table_gives_each_code_its_ratio_to_fftw_mpi(self):
        status, out, _ = self.run_main(self.file({"metadata": {"ranks": 2}, "results": [FFTW, TB_FFT]}))
        self.assertEqual(status, 0)
        self.assertIn("| tb-fft native (strided) | 2 | yes | 1.00 | 1.00 | 0.50 | - |", out)

    def test_help_prints_the_usage_and_the_description(self):
        status, out, _ = self.run_main("--help")
        self.assertEqual(status, 0)
        self.assertIn("usage: fft_head_to_head.py [-h] FILE [FILE ...]", out)
        self.assertIn("Comparison table of the FFT head to head", out)
        self.assertEqual(self.run_main()[0], 2)

    def test_a_file_that_is_no_result_file_is_an_error_naming_it(self):
        status, _, err = self.run_main(self.tmp.name)
        self.assertEqual(status, 2)
        self.assertIn(f"fft_head_to_head.py: error: {self.tmp.name}: is a directory", err)
        missing = os.path.join(self.tmp.name, "none.json")
        self.assertIn(f"{missing}: cannot be read: No such file", self.run_main(missing)[2])
        self.assert_error("", "not JSON (Expecting value")
        self.assert_error([1, 2], 'no "metadata" object')
        self.assert_error({"metadata": {}, "results": [FFTW]}, "metadata: no ranks")
        self.assert_error({"metadata": {"ranks": 2}}, 'no "results" list of objects')
        self.assert_error({"metadata": {"ranks": 2}, "results": []}, "holds no results")

    def test_a_result_without_a_field_the_table_needs_is_an_error_naming_it(self):
        for result, message in ((dict(FFTW, fastest_s=None), "result 1: fastest_s is None, not a number > 0"),
                                ({k: v for k, v in TB_FFT.items() if k != "serial"}, "result 1: no serial"),
                                (dict(FFTW, global_shape=[16, 16, 16]), "result 1: global_shape is not a string"),
                                ({k: v for k, v in FFTW.items() if k != "verified"}, "result 1: no verified")):
            self.assert_error({"metadata": {"ranks": 2}, "results": [result]}, message)


if __name__ == "__main__":
    unittest.main()
