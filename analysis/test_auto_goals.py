"""Tests of analysis/auto_goals.py on hand-made points."""
import io
import json
import os
import sys
import tempfile
import unittest
from contextlib import redirect_stdout

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import auto_goals  # noqa: E402
from auto_goals import load_passes, point_ratios, report, summary, sweep_and_redistributions  # noqa: E402
from test_alltoallw_sizes import run_main  # noqa: E402


class AutoGoals(unittest.TestCase):
    def setUp(self):
        self.times = {
            ("contiguous", 1): {"native": 1.0, "pairwise": 2.0, "auto": 1.2, "native:persistent": 0.9,
                                "node_leader": 3.0, "node_leader:persistent": 0.5},
            ("contiguous", 1 << 20): {"native": 10.0, "node_leader": 4.0, "auto": 4.2,
                                      "node_leader:persistent": 4.4},
        }

    def test_ratios_per_point(self):
        small, large = point_ratios(self.times)
        self.assertAlmostEqual(small["auto_fastest"], 1.2)          # fastest other: native 1.0
        self.assertAlmostEqual(small["auto_native"], 1.2)
        self.assertAlmostEqual(small["leader_persistent_native"], 0.5)
        self.assertAlmostEqual(small["persistent"]["node_leader"], 0.5 / 3.0)
        self.assertAlmostEqual(large["auto_fastest"], 4.2 / 4.0)
        self.assertNotIn("leader_persistent_native", large)         # above 4 KiB

    def test_auto_over_its_choice(self):
        small, large = point_ratios(self.times, {("contiguous", 1): "native", ("contiguous", 1 << 20): "node_leader"})
        self.assertAlmostEqual(small["auto_chosen"], 1.2)
        self.assertAlmostEqual(large["auto_chosen"], 4.2 / 4.0)
        s = summary([small, large])
        self.assertEqual((s["auto_chosen_points"], s["auto_chosen_within_1.10"]), (2, 1))
        self.assertAlmostEqual(s["auto_chosen_worst"], 1.2)
        unknown, _ = point_ratios(self.times, {("contiguous", 1): "no_such_algorithm"})
        self.assertNotIn("auto_chosen", unknown)                    # a choice the run did not time

    def test_summary_counts_what_the_goals_count(self):
        s = summary(point_ratios(self.times))
        self.assertEqual(s["points"], 2)
        self.assertAlmostEqual(s["auto_within_1.10"], 0.5)          # 1.2 misses, 1.05 meets
        self.assertAlmostEqual(s["auto_worst"], 1.2)
        self.assertEqual(s["auto_native_over_1.05"], 1)
        self.assertEqual([p[:2] for p in s["persistent_slower"]["node_leader"]], [("contiguous", 1 << 20)])
        self.assertNotIn("native", s["persistent_slower"])


class Passes(unittest.TestCase):
    def test_a_ratio_is_the_median_of_the_ratios_within_each_pass(self):
        # Pass 2 is slow for everyone (the machine was busy): paired, it cancels; pass 3 has an
        # outlier of auto alone, which the median drops.
        times = {("contiguous", 64): {"auto": [1.1, 11.0, 9.0, 1.0, 1.2], "native": [1.0, 10.0, 1.0, 1.0, 1.0],
                                      "pairwise": [2.0, 20.0, 2.0, 2.0, 2.0]}}
        row, = point_ratios(times)
        self.assertAlmostEqual(row["auto_fastest"], 1.1)            # ratios 1.1, 1.1, 9, 1.0, 1.2
        self.assertAlmostEqual(row["auto_native"], 1.1)

    def test_the_fastest_other_is_taken_within_each_pass(self):
        times = {("vector64", 4096): {"auto": [1.0, 1.0, 1.0], "native": [1.0, 2.0, 2.0], "pairwise": [2.0, 0.5, 2.0]}}
        row, = point_ratios(times)
        self.assertAlmostEqual(row["auto_fastest"], 1.0)            # per pass 1.0, 2.0, 1.0

    def test_the_prepared_auto_is_held_to_the_fastest_prepared_form(self):
        times = {("contiguous", 64): {"auto": 1.0, "native": 1.0, "auto:persistent": 1.2,
                                      "native:persistent": 2.0, "pairwise:persistent": 1.0}}
        row, = point_ratios(times)
        self.assertAlmostEqual(row["prepared_auto_fastest"], 1.2)   # pairwise's prepared form, not auto's own
        s = summary([row])
        self.assertEqual((s["prepared_auto_points"], s["prepared_auto_within_1.10"]), (1, 0))

    def test_load_passes_orders_the_passes_and_skips_aggregates(self):
        rows = [{"name": f"alltoallw/contiguous/auto/8/pass:{k}/manual_time", "run_type": "iteration",
                 "real_time": t, "time_unit": "us", "label": "auto -> native"} for k, t in ((2, 5.0), (1, 3.0))]
        rows.append({"name": "alltoallw/contiguous/auto/8/pass:1/manual_time_median", "run_type": "aggregate",
                     "real_time": 99.0, "time_unit": "us"})
        rows.append({"name": "alltoallw/contiguous/native/8/manual_time", "run_type": "iteration",
                     "real_time": 4.0, "time_unit": "ns"})
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "run.json")
            with open(path, "w") as f:
                json.dump({"context": {}, "benchmarks": rows}, f)
            _, times, labels, redistributions = load_passes(path)
        self.assertEqual(times[("contiguous", 8)]["auto"], {1: 3.0, 2: 5.0})
        self.assertEqual(times[("contiguous", 8)]["native"], {1: 0.004})
        self.assertEqual(labels["auto"], "auto -> native")
        self.assertEqual(redistributions, set())

    def test_passes_pair_by_their_number_and_a_missing_pass_is_left_out(self):
        row, = point_ratios({("contiguous", 8): {"auto": {1: 10.0, 3: 30.0}, "native": {1: 10.0, 2: 1.0, 3: 30.0}}})
        self.assertAlmostEqual(row["auto_native"], 1.0)             # passes 1 and 3; pass 2 has no auto


class Redistributions(unittest.TestCase):
    def test_redistribute_rows_are_read_reported_apart_and_left_out_of_the_goals(self):
        rows = [{"name": f"{kind}/{layout}/{algorithm}/1024/manual_time", "run_type": "iteration",
                 "real_time": t, "time_unit": "us", "label": "auto (table) -> native" if algorithm == "auto" else ""}
                for kind, layout, algorithm, t in (("alltoallw", "contiguous", "auto", 1.0),
                                                   ("alltoallw", "contiguous", "native", 1.0),
                                                   ("redistribute", "slab", "auto", 3.0),
                                                   ("redistribute", "slab", "native", 3.0),
                                                   ("redistribute", "slab", "node_leader", 2.0),
                                                   ("redistribute", "slab", "local_remap", 0.5),
                                                   ("redistribute", "slab", "node_leader:persistent", 2.2),
                                                   ("redistribute", "brick", "auto", 1.0),
                                                   ("redistribute", "brick", "native", 1.0))]
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "run.json")
            with open(path, "w") as f:
                json.dump({"context": {}, "benchmarks": rows}, f)
            _, times, _, redistributions = load_passes(path)
            out = io.StringIO()
            with redirect_stdout(out):
                report(path)
        self.assertEqual(redistributions, {"slab", "brick"})          # by the rows' kind, not a list of names
        sweep, moved = sweep_and_redistributions(point_ratios(times), redistributions)
        self.assertEqual([r["layout"] for r in moved], ["brick", "slab"])
        self.assertAlmostEqual(moved[1]["auto_fastest"], 1.5)        # node_leader's 2.0, not local_remap's 0.5
        self.assertEqual(summary(sweep)["points"], 1)                 # the goals count the sweep only
        text = out.getvalue()
        self.assertIn("auto within 1.10x of the fastest at 1 of 1 points", text)
        self.assertIn("redistributions (brick, slab; rows above, not among the goals' points): auto within 1.10x of "
                      "the fastest Alltoallw algorithm at 1 of 2 points; worst 1.50", text)
        self.assertIn("redistributions, node_leader: persistent slower than blocking at 1 points (worst 1.10 at "
                      "slab 1024 B)", text)


class BadInput(unittest.TestCase):
    def assert_error(self, path, doc, message):
        """auto_goals.py on a file holding `doc` (JSON; a str as it is) fails with `message` after its name."""
        with open(path, "w") as f:
            f.write(doc if isinstance(doc, str) else json.dumps(doc))
        status, out, err = run_main(auto_goals, [path])
        self.assertEqual((status, out), (2, ""))
        self.assertIn(f"auto_goals.py: error: {path}: {message}", err)

    def test_help_prints_the_usage_and_the_description(self):
        status, out, _ = run_main(auto_goals, ["--help"])
        self.assertEqual(status, 0)
        self.assertIn("usage: auto_goals.py [-h] RUN.json [RUN.json ...]", out)
        self.assertIn("The goals of `auto`", out)
        self.assertEqual(run_main(auto_goals, [])[0], 2)

    def test_a_file_that_is_no_tb_bench_run_is_an_error_naming_it(self):
        with tempfile.TemporaryDirectory() as tmp:
            status, _, err = run_main(auto_goals, [tmp])
            self.assertEqual(status, 2)
            self.assertIn(f"auto_goals.py: error: {tmp}: is a directory", err)
            path = os.path.join(tmp, "run.json")
            self.assert_error(path, "not json\n", "not JSON (Expecting value")
            self.assert_error(path, [1, 2], 'no "benchmarks" list of tb-bench rows')
            self.assert_error(path, {"benchmarks": []}, "holds no tb-bench benchmarks")
            self.assert_error(path, {"benchmarks": [{"name": "x"}]}, "holds no timed tb-bench benchmarks")
            self.assert_error(path, {"benchmarks": [{"name": "alltoallw/contiguous/auto/8/manual_time",
                                                     "time_unit": "us"}]},
                              "benchmark 1 ('alltoallw/contiguous/auto/8/manual_time'): no real_time")
            self.assert_error(path, {"benchmarks": [{"name": "alltoallw/contiguous/auto/8/manual_time",
                                                     "real_time": 0.0}]},
                              "benchmark 1 ('alltoallw/contiguous/auto/8/manual_time'): real_time is 0.0, "
                              "not a number > 0")
            self.assert_error(path, {"benchmarks": [{"name": f"alltoallw/contiguous/{a}/8/pass:{k}/manual_time",
                                                     "real_time": 1.0} for a, k in (("auto", 1), ("native", 2))]},
                              "no pass was timed on both sides")


if __name__ == "__main__":
    unittest.main()
