#!/usr/bin/python3
"""Tests of analysis/alltoallw_sizes.py: the same table from a tb-bench JSON file and from a
run.py store (experiments/node_leader_sizes.sh writes a store)."""
import io
import json
import os
import sys
import tempfile
import unittest
from contextlib import redirect_stderr, redirect_stdout

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import alltoallw_sizes  # noqa: E402

CONTEXT = {"mpi_library": "MPICH 4.0.2", "ranks": 2, "buffers": "shared",
           "node_layout": json.dumps({"nodes": 2, "source": "TB_NUM_NODES=2"})}


class Tables(unittest.TestCase):
    def test_a_store_gives_one_table_per_point_like_a_benchmark_file(self):
        with tempfile.TemporaryDirectory() as tmp:
            bench = os.path.join(tmp, "b.json")
            with open(bench, "w") as f:
                json.dump({"context": CONTEXT, "benchmarks": [
                    {"name": f"alltoallw/contiguous/{a}/64/manual_time", "real_time": t, "time_unit": "us", "label": a}
                    for a, t in (("native", 2.0), ("node_leader", 1.0))]}, f)
            store = os.path.join(tmp, "s.jsonl")
            with open(store, "w") as f:
                for key in ("k1", "k2"):
                    for a, t in (("native", 2e-6), ("node_leader", 1e-6)):
                        f.write(json.dumps({"key": key, "experiment": "node_leader_sizes", "tool": "tb-bench",
                                            "mpi": "mpich", "mode": "intra", "point": {"ranks": 2, "env:TB_NUM_NODES": 2},
                                            "kind": "alltoallw", "layout": "contiguous", "algorithm": a,
                                            "bytes_per_peer": 64, "time_s": t, "path": a, "metadata": CONTEXT}) + "\n")
                f.write(json.dumps({"key": "k3", "tool": "tb-fft", "method": "native"}) + "\n")
            tables = alltoallw_sizes.load_store(store)
            self.assertEqual(len(tables), 2)
            heading, title, _, times, paths = tables[0]
            self.assertIn("k1", heading)
            self.assertIn("env:TB_NUM_NODES=2", heading)
            ref_title, _, ref_times, ref_paths = alltoallw_sizes.load(bench)
            self.assertEqual(title, ref_title)
            self.assertEqual({k: {a: round(t, 9) for a, t in v.items()} for k, v in times.items()}, ref_times)
            self.assertEqual(paths, ref_paths)
            out = io.StringIO()
            with redirect_stdout(out):
                alltoallw_sizes.main([store, bench])
            self.assertEqual(out.getvalue().count("1.0 (0.50)"), 3)
            self.assertIn("2 node(s) [TB_NUM_NODES=2]", out.getvalue())


def run_main(module, argv):
    """(exit status, stdout, stderr) of module.main(argv); argparse's exits are caught."""
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        try:
            status = module.main(argv)
        except SystemExit as e:
            status = e.code
    return status, out.getvalue(), err.getvalue()


class BadInput(unittest.TestCase):
    """Every bad file is an error that names it (exit 2, argparse's), never a traceback or an empty table."""

    def files(self, tmp, **docs):
        """{name: path} of files holding the given texts (str) or JSON documents (anything else)."""
        paths = {}
        for name, doc in docs.items():
            paths[name] = os.path.join(tmp, name.replace("_", "."))
            with open(paths[name], "w") as f:
                f.write(doc if isinstance(doc, str) else json.dumps(doc))
        return paths

    def assert_error(self, argv, message):
        status, out, err = run_main(alltoallw_sizes, argv)
        self.assertEqual((status, out), (2, ""))
        self.assertIn("alltoallw_sizes.py: error: " + message, err)

    def test_help_prints_the_usage_and_the_description(self):
        status, out, _ = run_main(alltoallw_sizes, ["--help"])
        self.assertEqual(status, 0)
        self.assertIn("usage: alltoallw_sizes.py [-h] FILE [FILE ...]", out)
        self.assertIn("ratio to native measured in the same run", out)
        self.assertEqual(run_main(alltoallw_sizes, [])[0], 2)

    def test_a_file_that_is_no_tb_bench_output_is_an_error_naming_it(self):
        with tempfile.TemporaryDirectory() as tmp:
            p = self.files(tmp, garbage_txt="not json\n", empty_json="", list_json=[1, 2],
                           nobench_json={"benchmarks": []},
                           wrongshape_json={"benchmarks": [{"name": "x"}]}, empty_jsonl="",
                           notime_json={"benchmarks": [{"name": "alltoallw/contiguous/native/64/manual_time"}]},
                           failed_json={"benchmarks": [{"name": "alltoallw/contiguous/native/64/manual_time",
                                                        "error_occurred": True, "real_time": 0}]})
            self.assert_error([os.path.join(tmp, "none.json")], f"{tmp}/none.json: cannot be read: No such file")
            self.assert_error([tmp], f"{tmp}: is a directory")
            self.assert_error([p["garbage_txt"]], f"{p['garbage_txt']}: not JSON (Expecting value")
            self.assert_error([p["empty_json"]], f"{p['empty_json']}: not JSON")
            self.assert_error([p["list_json"]], f'{p["list_json"]}: no "benchmarks" list of tb-bench rows')
            self.assert_error([p["nobench_json"]], f"{p['nobench_json']}: holds no tb-bench benchmarks")
            self.assert_error([p["wrongshape_json"]], f"{p['wrongshape_json']}: benchmark 1 ('x'): name is not "
                                                      "<kind>/<layout>/<algorithm>/<bytes per peer>/...")
            self.assert_error([p["notime_json"]], f"{p['notime_json']}: benchmark 1 "
                                                  "('alltoallw/contiguous/native/64/manual_time'): no real_time")
            self.assert_error([p["failed_json"]], f"{p['failed_json']}: holds no tb-bench benchmarks that ran")
            self.assert_error([p["empty_jsonl"]], f"{p['empty_jsonl']}: holds no tb-bench rows")

    def test_a_store_row_without_a_field_the_table_needs_is_an_error_naming_it(self):
        row = {"key": "k1", "tool": "tb-bench", "layout": "contiguous", "algorithm": "native", "bytes_per_peer": 64}
        for bad, message in ((row, "no time_s"), (dict(row, time_s=-1.0), "time_s is -1.0, not a number > 0"),
                             (dict(row, time_s=1e-6, layout=None), "no layout")):
            with tempfile.TemporaryDirectory() as tmp:
                store = self.files(tmp, s_jsonl=json.dumps(bad) + "\n")["s_jsonl"]
                self.assert_error([store], f"{store}: tb-bench row 1 of point k1: {message}")


if __name__ == "__main__":
    unittest.main()
