"""analysis/smpi_vs_measured.py on a hand-made store: which rows pair up, the error of each pair,
the bytes per peer and the summary over the goal's range."""
import contextlib
import io
import json
import os
import sys
import tempfile
import unittest

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, here)
import smpi_vs_measured  # noqa: E402

PLATFORM = "experiments/platforms/this-host.xml"


def row(mode, method, fastest, shape="64x64x64", **extra):
    r = {"tool": "tb-redistribute", "mode": mode, "mpi": "smpi" if mode == "smpi" else "mpich", "ranks": 2, "global_shape": shape, "grid": "2",
         "from_axis": 2, "to_axis": 0, "element_type": "complex<double>", "method": method,
         "fastest_s": fastest, "median_s": fastest * 1.5}
    if mode == "smpi":
        r.update(platform=PLATFORM, smpi_compute="on")
    r.update(extra)
    return r


class Pairs(unittest.TestCase):
    def store(self, rows):
        f = tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False)
        self.addCleanup(os.unlink, f.name)
        f.write("".join(json.dumps(r) + "\n" for r in rows))
        f.close()
        return f.name

    def test_each_simulated_point_meets_its_measured_twin(self):
        rows = [row("intra", "alltoallw:native", 2e-3), row("smpi", "alltoallw:native", 1.5e-3),
                row("intra", "alltoallw:pairwise", 4e-3), row("smpi", "alltoallw:pairwise", 5e-3),
                row("intra", "local_remap", 1e-3),                       # not simulated: no pair
                row("smpi", "alltoallw:pack_alltoallv", 1e-3),           # not measured: no pair
                row("smpi", "alltoallw:native", 9e-3, platform="experiments/platforms/other.xml"),
                row("smpi", "alltoallw:native", 8e-3, smpi_compute="off"),    # another setting
                row("intra", "alltoallw:native", 7e-3, mpi="openmpi"),         # another library
                row("intra", "memcpy_floor", 1e-4), row("smpi", "memcpy_floor", 1e-4)]
        pairs = smpi_vs_measured.pairs(smpi_vs_measured.read_rows(self.store(rows)), PLATFORM)
        self.assertEqual([(p["algorithm"], round(p["error"], 6)) for p in pairs], [("native", -0.25), ("pairwise", 0.25)])
        self.assertEqual(pairs[0]["bytes_per_peer"], 64 ** 3 * 16 // 4)  # 1 MiB: the array over ranks squared
        self.assertEqual(pairs[0]["measured_median_s"], 3e-3)

    def test_the_summary_counts_only_the_goal_range(self):
        pairs = [{"algorithm": "native", "bytes_per_peer": b, "error": e}
                 for b, e in ((32 << 10, 0.9), (64 << 10, 0.1), (1 << 20, -0.3), (16 << 20, 0.5), (32 << 20, 0.9))]
        lines = smpi_vs_measured.summary(pairs)
        self.assertEqual(lines[2], "| native | 3 | 1 | +50.0 % (16777216 B/peer) | +10.0 % |")

    def test_a_point_stored_twice_is_an_error_that_names_it(self):
        path = self.store([row("intra", "alltoallw:native", 2e-3, key="a"), row("intra", "alltoallw:native", 3e-3, key="b"),
                           row("smpi", "alltoallw:native", 1e-3)])
        err = io.StringIO()
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            self.assertEqual(smpi_vs_measured.main([path]), 2)
        self.assertIn("measured point", err.getvalue())
        self.assertIn("stored twice (keys a and b)", err.getvalue())

    def test_the_platform_may_be_given_as_a_path_from_anywhere(self):
        path = self.store([row("intra", "alltoallw:native", 2e-3), row("smpi", "alltoallw:native", 1e-3)])
        with tempfile.TemporaryDirectory() as out, contextlib.redirect_stdout(io.StringIO()):
            absolute = os.path.join(smpi_vs_measured.ROOT, PLATFORM)
            self.assertEqual(smpi_vs_measured.main([path, "--platform", absolute, "--out", out]), 0)
            with open(os.path.join(out, "comparison.csv")) as f:
                self.assertIn("native", f.read())

    def test_points_are_paired_by_the_calibrations_vector_path_state(self):
        def launch(ratio):
            return {"metadata": {"vector_path": {"ratio": ratio}}}
        with tempfile.TemporaryDirectory() as out:
            platform = os.path.join(out, "p.xml")
            rows = [row("intra", "alltoallw:native", 2e-3, shape="64x64x64", **launch(5.5)),
                    row("smpi", "alltoallw:native", 1e-3, shape="64x64x64", platform=platform),   # -50 %, slow
                    row("intra", "alltoallw:native", 2e-3, shape="128x128x64", **launch(1.5)),
                    row("smpi", "alltoallw:native", 2.2e-3, shape="128x128x64", platform=platform)]  # +10 %, fast
            path = self.store(rows)
            for value, expected in (("2.0,1.8", ["fast", "| native | 1 | 1 | +10.0 % (4194304 B/peer) | +10.0 % |"]),
                                    ("6.0,5.0", ["slow", "| native | 1 | 0 | -50.0 % (1048576 B/peer) | -50.0 % |"]),
                                    ("2.0,6.0", ["changed state during its non-contiguous exchanges (2.0x -> 6.0x SLOW)"]),
                                    (None, [])):
                with open(platform, "w") as f:
                    prop = f'<prop id="tb_calibration_vector_path" value="{value}"/>' if value else ""
                    f.write(f"<platform version='4.1'><zone id='z'>{prop}</zone></platform>")
                printed = io.StringIO()
                with contextlib.redirect_stdout(printed):
                    self.assertEqual(smpi_vs_measured.main([path, "--platform", platform]), 0)
                text = printed.getvalue()
                self.assertIn("| 5.5x SLOW |", text)  # the measured launch's state per point
                self.assertIn("| 1.5x |", text)
                for line in expected:
                    self.assertIn(line, text)
                self.assertEqual("The calibration's vector path" in text, value is not None, value)
            with open(platform, "w") as f:
                f.write("<platform><zone><prop id='tb_calibration_vector_path' value='fast'/></zone></platform>")
            err = io.StringIO()
            with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
                self.assertEqual(smpi_vs_measured.main([path, "--platform", platform]), 2)
            self.assertIn("property tb_calibration_vector_path is 'fast', not BEFORE,AFTER ratios", err.getvalue())
            with open(platform, "w") as f:
                f.write("<platform><zone>")  # cut short
            err = io.StringIO()
            with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
                self.assertEqual(smpi_vs_measured.main([path, "--platform", platform]), 2)
            self.assertIn("p.xml: not a platform file", err.getvalue())

    def test_a_store_without_pairs_is_an_error_that_says_so(self):
        path = self.store([row("intra", "alltoallw:native", 2e-3)])
        err = io.StringIO()
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            self.assertEqual(smpi_vs_measured.main([path]), 2)
        self.assertIn("no tb-redistribute point both measured", err.getvalue())

    def test_a_time_or_rank_count_that_is_not_above_zero_is_an_error_naming_the_point(self):
        for extra, text in (({"fastest_s": 0.0}, "has fastest_s 0 (must be > 0)"),
                            ({"fastest_s": float("nan")}, "has fastest_s nan (must be > 0)"),
                            ({"fastest_s": -3e-3}, "has fastest_s -0.003 (must be > 0)"),
                            ({"median_s": "fast"}, "has median_s 'fast' (must be > 0)"),
                            ({"ranks": 0}, "has ranks 0 (must be > 0)")):
            path = self.store([row("intra", "alltoallw:native", 2e-3, **extra), row("smpi", "alltoallw:native", 1e-3)])
            err, out = io.StringIO(), io.StringIO()
            with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
                self.assertEqual(smpi_vs_measured.main([path]), 2, extra)
            self.assertIn(f"smpi_vs_measured.py: error: {path}: the measured point (", err.getvalue())
            self.assertIn(text, err.getvalue())
            self.assertEqual(out.getvalue(), "")  # no table of wrong numbers
        bare = row("smpi", "alltoallw:native", 1e-3)
        del bare["fastest_s"]
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            # the platform by its absolute path: ctest runs this from the build tree
            store = self.store([row("intra", "alltoallw:native", 2e-3), bare])
            absolute = os.path.join(smpi_vs_measured.ROOT, PLATFORM)
            self.assertEqual(smpi_vs_measured.main([store, "--platform", absolute]), 2)
        self.assertIn("the simulated point (2, '64x64x64', '2', 2, 0, 'complex<double>', 'native') has no fastest_s",
                      err.getvalue())

    def test_an_out_that_is_a_file_is_an_error_naming_it(self):
        path = self.store([row("intra", "alltoallw:native", 2e-3), row("smpi", "alltoallw:native", 1e-3)])
        with tempfile.NamedTemporaryFile() as f:
            err = io.StringIO()
            with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()), \
                    self.assertRaises(SystemExit) as exit:
                smpi_vs_measured.main([path, "--out", f.name])
            self.assertEqual(exit.exception.code, 2)
            self.assertIn(f"--out {f.name}: not a folder", err.getvalue())

    def test_a_missing_store_is_an_error_that_names_it(self):
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            self.assertEqual(smpi_vs_measured.main(["/nonexistent/store.jsonl"]), 2)
        self.assertIn("/nonexistent/store.jsonl", err.getvalue())


if __name__ == "__main__":
    unittest.main()
