#!/usr/bin/python3
"""Tests of the report on a small store (analysis/fixtures/store.jsonl, real runs of tb-bench,
tb-fft and tb-redistribute through experiments/run.py at tiny sizes)."""
import contextlib
import io
import json
import os
import sys
import tempfile
import unittest

import pandas as pd

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import report  # noqa: E402

FIXTURE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures", "store.jsonl")


class Report(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.df = report.load(FIXTURE)
        cls.tmp = tempfile.TemporaryDirectory()
        cls.path, cls.images = report.report(cls.df, cls.tmp.name)
        with open(cls.path) as f:
            cls.md = f.read()

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_every_kind_of_plot_is_made(self):
        names = [os.path.basename(p) for p in self.images]
        for prefix in ("time_intra_", "bandwidth_intra_", "speedup_intra_", "time_cliques_", "intra_vs_inter_",
                       "floor_", "scaling_", "breakdown_"):
            self.assertTrue(any(n.startswith(prefix) for n in names), prefix)
        for p in self.images:
            self.assertGreater(os.path.getsize(p), 1000, p)
            with open(p, "rb") as f:
                self.assertEqual(f.read(8), b"\x89PNG\r\n\x1a\n", p)

    def test_speedup_is_native_time_over_time(self):
        s = report.sizes_frame(self.df)
        sp = report.speedups(s)
        row = sp[(sp["mode"] == "intra") & (sp["layout"] == "contiguous") & (sp["algorithm"] == "pairwise")].iloc[0]
        native = s[(s["mode"] == "intra") & (s["layout"] == "contiguous") & (s["algorithm"] == "native")
                   & (s["bytes_per_peer"] == row["bytes_per_peer"])].iloc[0]
        self.assertAlmostEqual(row["speedup_vs_native"], native["time_s"] / row["time_s"])
        self.assertAlmostEqual(sp[sp["algorithm"] == "native"]["speedup_vs_native"].max(), 1.0)

    def test_mode_ratio_is_against_intra(self):
        m = report.mode_ratios(report.sizes_frame(self.df))
        self.assertTrue((m["mode"] == "cliques").all())
        r = m.iloc[0]
        self.assertAlmostEqual(r["ratio_to_intra"], r["time_s"] / r["intra_s"])

    def test_markdown_has_the_tables(self):
        for text in ("## Alltoallw per message size", "Speedup vs native", "## Intra- vs inter-node",
                     "## Redistributions against the memcpy floor", "## Parallel FFT", "fixture_fft", "bytes_per_peer |"):
            self.assertIn(text, self.md)

    def test_redistributions_that_differ_in_grid_mpi_or_forced_algorithm_stay_apart(self):
        def row(mpi, ranks, grid, method, seconds, **env):
            return {"experiment": "scaling", "tool": "tb-redistribute", "mode": "intra", "mpi": mpi, "ranks": ranks,
                    "grid": grid, "global_shape": "64x64x64", "method": method, "fastest_s": seconds,
                    "median_s": seconds, "fastest_over_floor": seconds / 0.001,
                    "point": {f"env:{k}": v for k, v in env.items()}}
        rows = [row("mpich", 4, "4", "alltoallw:native", 0.004), row("mpich", 4, "2x2", "alltoallw:native", 0.003),
                row("mpich-patched", 4, "4", "alltoallw:native", 0.005),
                row("mpich-patched", 4, "4", "alltoallw:native", 0.002, MPIR_CVAR_ALLTOALLW_INTRA_ALGORITHM="node_leader"),
                row("mpich-patched", 4, "4", "alltoallw:native", 0.0025, MPIR_CVAR_COLL_SELECTION_TUNING_JSON_FILE="t.json"),
                row("mpich", 8, "8", "alltoallw:node_leader (on-node: staged)", 0.002),
                row("mpich", 8, "8", "alltoallw:node_leader (on-node: staged)", 0.001)]  # a rerun: the later one counts
        r = report.redistribution_frame(pd.DataFrame(rows))
        self.assertEqual(len(r), 6)
        self.assertEqual(set(r["decomposition"]), {"slab", "pencil"})
        self.assertEqual(sorted(r[r["mpi"] == "mpich-patched"]["variant"]),
                         ["alltoallw:native", "alltoallw:native [mpich: json t.json]",
                          "alltoallw:native [mpich: node_leader]"])
        self.assertEqual(r[r["ranks"] == 8].iloc[0]["fastest_s"], 0.001)
        self.assertEqual(r[r["ranks"] == 8].iloc[0]["variant"], "alltoallw:node_leader")
        with tempfile.TemporaryDirectory() as out:
            _, images = report.report(pd.DataFrame(rows), out)
            self.assertEqual(sorted(os.path.basename(p) for p in images),
                             ["floor_scaling_pencil.png", "floor_scaling_slab.png"])

    def test_a_grid_that_divides_one_axis_is_a_slab(self):
        self.assertEqual([report.decomposition(g) for g in ("4", "1x4", "4x1", "1x1", "2x2", "2x1x2")],
                         ["slab", "slab", "slab", "slab", "pencil", "pencil"])

    def test_two_selection_files_are_two_variants(self):
        a = {"env:MPIR_CVAR_COLL_SELECTION_TUNING_JSON_FILE": "/x/alltoallw.json", "env:TB_SELECTION_FILE_SHA256": "0123456789abcdef"}
        b = dict(a, **{"env:TB_SELECTION_FILE_SHA256": "fedcba9876543210"})
        self.assertEqual(report.selection_suffix(a), " [mpich: json alltoallw.json 01234567]")
        self.assertNotEqual(report.selection_suffix(a), report.selection_suffix(b))

    def test_rank_count_lines_keep_shapes_and_grids_apart(self):
        k = pd.DataFrame({"mpi": "mpich", "mode": "intra", "variant": "native", "ranks": [4, 4, 8, 4],
                          "global_shape": ["64x64x64", "64x64x64", "64x64x64", "32x32x32"],
                          "grid": ["2x2", "1x4x1", "2x4", "2x2"]})
        self.assertEqual(list(report.rank_series(k, k)),
                         ["native 64x64x64 grid 2x2", "native 64x64x64 grid 1x4x1", "native 64x64x64 grid 2x4",
                          "native 32x32x32 grid 2x2"])
        one = k.iloc[[0, 2]]
        self.assertEqual(list(report.rank_series(one, one)), ["native", "native"])
        modes = one.assign(mode=["intra", "cliques"])
        self.assertEqual(list(report.rank_series(modes, modes)), ["native intra", "native cliques"])

    def run_main(self, rows, *options):
        """(exit status, stderr) of main on a store of `rows`, SystemExit's code for a parser error."""
        with tempfile.TemporaryDirectory() as tmp:
            store = os.path.join(tmp, "s.jsonl")
            with open(store, "w") as f:
                f.writelines(json.dumps(r) + "\n" for r in rows)
            err = io.StringIO()
            with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
                try:
                    status = report.main([store, "--out", os.path.join(tmp, "out"), *options])
                except SystemExit as e:
                    status = e.code
            self.assertFalse(os.path.exists(os.path.join(tmp, "out")), "a report of a bad store")
        return status, err.getvalue().replace(store, "STORE")

    def test_a_row_without_a_field_the_report_reads_is_an_error_naming_it(self):
        with open(FIXTURE) as f:
            rows = [json.loads(line) for line in f]
        del rows[0]["time_s"]
        for bad, text in (([{"experiment": "x", "tool": "tb-bench"}], "STORE: tb-bench row 1 has no mode"),
                          (rows, "STORE: tb-bench row 1 has no time_s"),
                          ([{"host": {"cores": 2}}],
                           "STORE: row 1 has no experiment (not a row of experiments/run.py)")):
            self.assertEqual(self.run_main(bad), (2, f"report.py: error: {text}\n"))

    def test_a_time_that_is_not_above_zero_is_an_error_naming_the_row(self):
        with open(FIXTURE) as f:
            rows = [json.loads(line) for line in f]
        bench = [i for i, r in enumerate(rows) if r["tool"] == "tb-bench"]
        for value, text in ((-8.77e-6, "-8.77e-06"), (float("nan"), "nan"), (0, "0")):
            changed = [dict(r) for r in rows]
            changed[bench[3]]["time_s"] = value
            status, err = self.run_main(changed)
            self.assertEqual(status, 2)
            self.assertIn(f"STORE: tb-bench row {bench[3] + 1} (intra, contiguous, mpich ", err)
            self.assertIn(f"time_s {text} is not a time > 0", err)
        changed = [dict(r) for r in rows]
        changed[[r["tool"] for r in rows].index("tb-redistribute")]["median_s"] = -1.0
        self.assertIn("median_s -1 is not a time > 0", self.run_main(changed)[1])

    def test_an_out_that_is_a_file_is_an_error_naming_it(self):
        with tempfile.NamedTemporaryFile() as f:
            err = io.StringIO()
            with contextlib.redirect_stderr(err), self.assertRaises(SystemExit) as exit:
                report.main([FIXTURE, "--out", f.name])
            self.assertEqual(exit.exception.code, 2)
            self.assertIn(f"error: --out {f.name}: is a file, not a folder", err.getvalue())

    def test_an_empty_store_is_an_error(self):
        with tempfile.NamedTemporaryFile("w", suffix=".jsonl") as f:
            with self.assertRaises(ValueError):
                report.load(f.name)


if __name__ == "__main__":
    unittest.main()
