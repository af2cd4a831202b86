"""analysis/model_vs_smpi.py: how a point's SMPI time is taken (less the clock's 10 ns) and how
points of 0 are reported and counted; and tb-model on the dragonfly platform against SMPI times
recorded in fixtures/smpi-xc40-64ranks.jsonl (experiments/run.py --mode smpi --compute off on
experiments/platforms/xc40-dragonfly.xml, 64 ranks, the 512^3 pencil pair of
experiments/definitions/smpi_model_check.json), which needs a built tb-model: TB_MODEL names it
(ctest sets it); without it that test is skipped and says so."""
import contextlib
import io
import json
import os
import sys
import tempfile
import unittest
from unittest import mock

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, here)
import model_vs_smpi  # noqa: E402

ROOT = os.path.dirname(here)
PLATFORM = "experiments/platforms/xc40-dragonfly.xml"


def row(algorithm, smpi_s, model_s, ranks=64):
    error, note = model_vs_smpi.relative_error(smpi_s, model_s)
    return {"ranks": ranks, "grid": "8x8", "redistribution": "2->1", "algorithm": algorithm, "smpi_s": smpi_s,
            "model_s": model_s, "error": error, "note": note}


class ZeroTimes(unittest.TestCase):
    def test_the_clock_is_taken_off_and_what_is_left_of_an_empty_call_is_zero(self):
        base = {"mode": "smpi", "tool": "tb-redistribute", "platform": PLATFORM, "smpi_compute": "off", "ranks": 16,
                "global_shape": "512x512x257", "grid": "4x4", "from_axis": 2, "to_axis": 1,
                "element_type": "complex<double>"}
        times = {"memcpy_floor": 9.999999999994822e-09, "streaming_copy": 9.999999999994822e-09,
                 "alltoallw:native": 2.722086014078216e-04, "alltoallw:node_leader (on-node: staged)": 9.99999999994e-09}
        with tempfile.TemporaryDirectory() as folder:
            store = os.path.join(folder, "store.jsonl")
            with open(store, "w") as f:
                for method, seconds in times.items():
                    f.write(json.dumps(dict(base, method=method, fastest_s=seconds)) + "\n")
            [point] = model_vs_smpi.simulated_points(store, PLATFORM).values()
        self.assertEqual(sorted(point), ["native", "node_leader"])  # the floors are no algorithms
        self.assertAlmostEqual(point["native"], 2.722086014078216e-04 - 1e-8, delta=1e-15)
        self.assertEqual(point["node_leader"], 0.0)

    def test_a_point_without_its_memcpy_floor_row_is_an_error_naming_the_store(self):
        row = {"mode": "smpi", "tool": "tb-redistribute", "platform": PLATFORM, "smpi_compute": "off", "ranks": 16,
               "global_shape": "512x512x257", "grid": "4x4", "from_axis": 2, "to_axis": 1,
               "element_type": "complex<double>", "method": "alltoallw:native", "fastest_s": 2.7e-4}
        with tempfile.TemporaryDirectory() as folder:
            store = os.path.join(folder, "store.jsonl")
            with open(store, "w") as f:
                f.write(json.dumps(row) + "\n")
            with self.assertRaisesRegex(ValueError, "store.jsonl: no memcpy_floor row"):
                model_vs_smpi.simulated_points(store, PLATFORM)

    def test_a_point_of_zero_on_both_sides_is_named_and_within_the_goal(self):
        r = row("node_leader", 0.0, 0.0)
        self.assertEqual((r["error"], r["note"]), (None, "both 0"))
        self.assertTrue(model_vs_smpi.within_goal(r))
        self.assertIn("| 0.0000 | 0.0000 | both 0 |", model_vs_smpi.table([r])[2])

    def test_zero_in_smpi_against_a_modelled_time_is_a_miss_without_a_percentage(self):
        r = row("native", 0.0, 1e-6)
        self.assertEqual((r["error"], r["note"]), (None, "SMPI 0, model > 0"))
        self.assertFalse(model_vs_smpi.within_goal(r))

    def test_zero_in_the_model_against_a_simulated_time_is_minus_100_percent(self):
        r = row("node_leader", 0.7e-6, 0.0)
        self.assertEqual(r["error"], -1.0)
        self.assertFalse(model_vs_smpi.within_goal(r))

    def test_the_summary_counts_both_zero_as_met_and_names_the_worst_miss(self):
        rows = [row("node_leader", 0.0, 0.0), row("node_leader", 1e-3, 1.1e-3, ranks=256),
                row("native", 4e-5, 3.9e-5), row("native", 0.0, 1e-6, ranks=256)]
        lines = model_vs_smpi.summary(rows)
        self.assertIn("| native | 2 | 1 | SMPI 0, model > 0 (256 ranks, 2->1) |", lines)
        self.assertIn("| node_leader | 2 | 2 | +10.0 % (256 ranks, 2->1) |", lines)


class CommandLine(unittest.TestCase):
    """main's errors, with stand-ins for tb-model (no build needed)."""
    def setUp(self):
        tmp = tempfile.TemporaryDirectory()
        self.addCleanup(tmp.cleanup)
        self.tmp = tmp.name
        cwd = os.getcwd()
        os.chdir(ROOT)  # the store names the platform relative to the repository
        self.addCleanup(os.chdir, cwd)
        self.store = os.path.join(here, "fixtures", "smpi-xc40-64ranks.jsonl")

    def run_main(self, *options):
        """(exit status, stdout, stderr); SystemExit's code for a parser error."""
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                status = model_vs_smpi.main([self.store, "--platform", PLATFORM, *options])
            except SystemExit as e:
                status = e.code
        return status, out.getvalue(), err.getvalue()

    def fake_model(self, body):
        path = os.path.join(self.tmp, "tb-model")
        with open(path, "w") as f:
            f.write("#!/bin/sh\n" + body + "\n")
        os.chmod(path, 0o755)
        return path

    def test_an_out_that_is_a_file_and_a_tb_model_that_is_a_folder_are_errors_naming_them(self):
        named = os.path.join(self.tmp, "afile")
        open(named, "w").close()
        status, _, err = self.run_main("--out", named)
        self.assertEqual(status, 2)
        self.assertTrue(err.endswith(f": error: --out {named}: not a folder\n"), err)
        status, _, err = self.run_main("--tb-model", self.tmp)
        self.assertEqual(status, 2)
        self.assertIn(f"--tb-model {self.tmp} is not an executable file", err)

    def test_a_failing_tb_model_is_an_error_naming_it_and_the_point(self):
        status, _, err = self.run_main("--tb-model", "/bin/false", "--out", os.path.join(self.tmp, "d"))
        self.assertEqual(status, 2)
        self.assertIn("model_vs_smpi.py: error: --tb-model /bin/false failed (exit 1) on point (64, '512x512x257'", err)
        status, _, err = self.run_main("--tb-model", self.fake_model("exit 0"))  # writes no CSV
        self.assertEqual(status, 2)
        self.assertIn("tb-model wrote no readable --csv on point (64,", err)

    def test_without_out_no_folder_is_left_behind(self):
        model = self.fake_model('while [ "$1" != --csv ]; do shift; done; '
                                'printf "algorithm,total_s\\nnative,1e-3\\n" > "$2"')
        temporary = os.path.join(self.tmp, "temporary")
        os.mkdir(temporary)
        for fake, expected in ((model, 0), ("/bin/false", 2)):
            with mock.patch.object(tempfile, "tempdir", temporary):
                status, out, _ = self.run_main("--tb-model", fake)
            self.assertEqual(status, expected)
            self.assertEqual(os.listdir(temporary), [])  # network.json and the model's CSVs were there
            if expected == 0:
                self.assertIn("| native |", out)


@unittest.skipUnless(os.environ.get("TB_MODEL"), "TB_MODEL (a built tb-model) is not set")
class ModelAgainstRecordedSmpi(unittest.TestCase):
    def compare(self, without_barrier=False):
        cwd = os.getcwd()
        os.chdir(ROOT)  # the store names the platform relative to the repository
        try:
            points = model_vs_smpi.simulated_points(os.path.join(here, "fixtures", "smpi-xc40-64ranks.jsonl"), PLATFORM)
            with tempfile.TemporaryDirectory() as out:
                network = os.path.join(out, "network.json")
                doc = model_vs_smpi.platform_network.network(PLATFORM)
                if without_barrier:
                    del doc["cluster"]["barrier"]
                with open(network, "w") as f:
                    json.dump(doc, f)
                return model_vs_smpi.compare(points, os.environ["TB_MODEL"], network, out)
        finally:
            os.chdir(cwd)

    def test_the_model_agrees_with_smpi_where_it_models_every_cost(self):
        rows = self.compare()
        self.assertEqual(len(rows), 10)  # 2 redistributions x 5 methods
        for r in rows:
            with self.subTest(algorithm=r["algorithm"], axes=r["redistribution"]):
                self.assertLess(abs(r["error"]), 0.05)

    def test_on_one_node_node_leader_is_the_timing_barrier_alone(self):
        # At 64 ranks (2 nodes) the 2 -> 1 communicators are each on one node, where node_leader's
        # node barrier takes no simulated time: SMPI's 0.724 us are the spread with which rank 0's
        # communicator leaves the timing's MPI_Barrier (rank 0 leaves with its last release, to
        # node 1), which the model has as its timing_barrier term, and nothing else.
        def node_leader(rows):
            [r] = [r for r in rows if r["algorithm"] == "node_leader" and r["redistribution"] == "2->1"]
            return r
        on_node = node_leader(self.compare())
        self.assertAlmostEqual(on_node["smpi_s"], 0.724e-6, delta=0.001e-6)
        self.assertAlmostEqual(on_node["model_s"], 0.724e-6, delta=0.001e-6)
        self.assertEqual(node_leader(self.compare(without_barrier=True))["model_s"], 0.0)


if __name__ == "__main__":
    unittest.main()
