#!/usr/bin/python3
"""Tests of analysis/alltoallw_sizes.py: the same table from a tb-bench JSON file and from a
run.py store (experiments/node_leader_sizes.sh writes a store)."""
import io
import json
import os
import sys
import tempfile
import unittest
from contextlib import redirect_stdout

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


if __name__ == "__main__":
    unittest.main()
