"""analysis/model_validation.py: the memory model from tb-redistribute's memcpy floors; the
signed error, bias, median |error| and rankings of the report on hand-made inputs; tb-bench's
patterns in TB_ALLTOALLW_RECORD's format; the median of several host calibrations."""
import contextlib
import csv
import io
import json
import os
import re
import sys
import tempfile
import unittest
from contextlib import redirect_stdout

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import model_validation  # noqa: E402
from model_validation import Comparison, Point  # noqa: E402

KIB, MIB = 1 << 10, 1 << 20


def run_failing(tmp, *argv):
    """main's exit status and stderr for `argv` (after the script's name), and whether it wrote
    anything into `tmp` beside the inputs already there."""
    before = set(os.listdir(tmp))
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()) as err:
        code = model_validation.main(["model_validation.py", *argv])
    return code, err.getvalue(), sorted(set(os.listdir(tmp)) - before)


def write_text(tmp, name, text):
    path = os.path.join(tmp, name)
    with open(path, "w") as f:
        f.write(text)
    return path


def measured(tmp, name, floor_bytes, floor_s, with_floor=True, streaming_s=None, floor_fastest_s=None):
    """A tb-redistribute JSON whose floors have the median `floor_s` (and `streaming_s`); their
    fastest is floor_fastest_s (default: half the median), which the model must not use."""
    def floor(method, median_s):
        fastest_s = floor_fastest_s if floor_fastest_s is not None else median_s / 2
        return {"method": method, "local_bytes_max": floor_bytes, "fastest_s": fastest_s, "median_s": median_s}
    rows = [{"method": "alltoallw:native", "local_bytes_max": floor_bytes, "fastest_s": 10 * floor_s,
             "median_s": 10 * floor_s}]
    if with_floor:
        rows.append(floor("memcpy_floor", floor_s))
    if streaming_s is not None:
        rows.append(floor("streaming_copy", streaming_s))
    path = os.path.join(tmp, name)
    with open(path, "w") as f:
        json.dump({"metadata": {}, "results": rows}, f)
    return path


class MemoryFromFloors(unittest.TestCase):
    def test_bandwidth_by_size_from_the_floors_per_block_from_the_base(self):
        with tempfile.TemporaryDirectory() as tmp:
            big = measured(tmp, "m-big.json", 16 << 20, 1e-3, streaming_s=5e-4)  # 16.8 and 33.6 GB/s
            small = measured(tmp, "m-small.json", 4096, 1e-7)      # 40.96 GB/s
            base = {"copy_bandwidth_bytes_per_s": 5e9, "per_block_s": 2e-9, "bandwidth_by_bytes": [[1, 1]]}
            m = model_validation.memory_from_floors([big, small], base)
        self.assertEqual(m["bandwidth_by_bytes"], [[4096.0, 4096 / 1e-7], [float(16 << 20), (16 << 20) / 1e-3]])
        self.assertAlmostEqual(m["copy_bandwidth_bytes_per_s"], (16 << 20) / 1e-3)
        self.assertEqual(m["streaming_bandwidth_by_bytes"], [[float(16 << 20), (16 << 20) / 5e-4]])
        self.assertEqual(m["per_block_s"], 2e-9)
        self.assertEqual(base["bandwidth_by_bytes"], [[1, 1]], "the base model is not modified")

    def test_repetitions_of_one_size_give_the_median_bandwidth(self):
        with tempfile.TemporaryDirectory() as tmp:
            runs = [measured(tmp, f"rep{k}.json", 4096, s) for k, s in enumerate((1e-7, 4e-7, 2e-7))]
            m = model_validation.memory_from_floors(runs, {"per_block_s": 0})
        self.assertEqual(m["bandwidth_by_bytes"], [[4096.0, 4096 / 2e-7]])

    def test_the_floor_is_its_median_not_its_fastest(self):
        # median 2e-7 s, fastest 1e-7 s: 4096 B / 2e-7 s = 20.48 GB/s, not 40.96
        with tempfile.TemporaryDirectory() as tmp:
            path = measured(tmp, "m.json", 4096, 2e-7, floor_fastest_s=1e-7, streaming_s=4e-7)
            m = model_validation.memory_from_floors([path], {"per_block_s": 0})
        self.assertEqual(m["bandwidth_by_bytes"], [[4096.0, 4096 / 2e-7]])
        self.assertEqual(m["streaming_bandwidth_by_bytes"], [[4096.0, 4096 / 4e-7]])

    def test_a_floor_without_a_median_is_an_error_naming_the_file(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = measured(tmp, "old-floor.json", 4096, 1e-7)
            with open(path) as f:
                doc = json.load(f)
            for row in doc["results"]:
                row.pop("median_s")
            with open(path, "w") as f:
                json.dump(doc, f)
            with self.assertRaisesRegex(ValueError, "old-floor.json: the memcpy_floor row has no median_s"):
                model_validation.memory_from_floors([path], {})

    def test_a_run_without_a_floor_is_an_error_naming_the_file(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = measured(tmp, "no-floor.json", 4096, 1e-7, with_floor=False)
            with self.assertRaisesRegex(ValueError, "no-floor.json: no memcpy_floor row"):
                model_validation.memory_from_floors([path], {})

    def test_a_floor_that_is_not_a_finite_size_and_time_is_an_error_naming_the_file(self):
        with tempfile.TemporaryDirectory() as tmp:
            base = write_text(tmp, "base.json", '{"copy_bandwidth_bytes_per_s": 1e10, "per_block_s": 1e-9}')
            for name, nbytes, seconds in (("floor-nan.json", "1048576", "NaN"),
                                          ("floor-inf.json", "1048576", "Infinity"),
                                          ("floor-str.json", '"1M"', "1e-4"), ("floor-zero.json", "0", "1e-4")):
                floor = write_text(tmp, name, f'{{"results": [{{"method": "memcpy_floor", "local_bytes_max": {nbytes}, '
                                              f'"median_s": {seconds}}}]}}')
                code, err, written = run_failing(tmp, "memory-from-floors", os.path.join(tmp, "mem.json"), base, floor)
                self.assertEqual((code, written), (1, []), name)
                self.assertIn(f"{name}: the memcpy_floor row needs finite bytes and time above 0", err)

    def test_files_of_another_shape_are_errors_naming_them(self):
        with tempfile.TemporaryDirectory() as tmp:
            base = write_text(tmp, "base.json", '{"per_block_s": 1e-9}')
            floor = measured(tmp, "m.json", 4096, 1e-7)
            cases = ((base, write_text(tmp, "rows.json", '{"results": {"method": "memcpy_floor"}}'),
                      r'\S*rows.json: "results" must be a list of rows'),
                     (base, write_text(tmp, "row5.json", '{"results": [5]}'),
                      r'\S*row5.json: "results" must be a list'),
                     (base, write_text(tmp, "list.json", "[1]"), r"\S*list.json: not a tb-redistribute JSON object"),
                     (write_text(tmp, "base-list.json", "[1]"), floor, r"base \S*base-list.json: not a memory model"),
                     (write_text(tmp, "garbage.txt", "garbage"), floor, r"base \S*garbage.txt: not JSON"))
            for base_path, floor_path, message in cases:
                code, err, written = run_failing(tmp, "memory-from-floors", os.path.join(tmp, "mem.json"), base_path,
                                                 floor_path)
                self.assertEqual((code, written), (1, []), message)
                self.assertRegex(err, rf"^model_validation.py memory-from-floors: error: {message}")


def comparison(algorithm, measured_s, predicted_s, nbytes=64 * KIB, layout="contiguous", source="tb-bench"):
    """One comparison whose five repetitions have the median `measured_s`."""
    samples = [measured_s * f for f in (0.9, 1.0, 1.3, 0.95, 1.1)]
    return Comparison(Point(source, layout, nbytes), algorithm, samples, predicted_s)


class Errors(unittest.TestCase):
    def test_signed_error_is_predicted_minus_measured_over_measured(self):
        self.assertAlmostEqual(model_validation.signed_error(1.2, 1.0), 0.2)
        self.assertAlmostEqual(model_validation.signed_error(0.5, 2.0), -0.75)
        with self.assertRaisesRegex(ValueError, "above 0"):
            model_validation.signed_error(1.0, 0.0)

    def test_the_measured_time_is_the_median_of_the_repetitions_not_the_fastest(self):
        c = Comparison(Point("tb-bench", "contiguous", KIB), "native", [5.0, 1.0, 3.0, 9.0, 4.0], 3.0)
        self.assertEqual(c.measured_s, 4.0)
        self.assertAlmostEqual(c.error, -0.25)
        self.assertAlmostEqual(c.spread, (9.0 - 1.0) / 4.0)

    def test_bias_is_the_mean_signed_error_beside_the_median_and_mean_of_its_size(self):
        # errors +30 %, -10 %, -20 %, +40 %, at 64 KiB; and one at 512 B that the summary leaves out
        cs = [comparison("native", 1.0, 1.3), comparison("pairwise", 1.0, 0.9), comparison("node_leader", 2.0, 1.6),
              comparison("native", 1.0, 1.4, nbytes=128 * KIB), comparison("native", 1.0, 9.0, nbytes=512)]
        s = model_validation.summarise(cs)
        self.assertEqual(s.points, 4)
        self.assertAlmostEqual(s.bias, (0.3 - 0.1 - 0.2 + 0.4) / 4)
        self.assertAlmostEqual(s.mean_abs, (0.3 + 0.1 + 0.2 + 0.4) / 4)
        self.assertAlmostEqual(s.median_abs, (0.2 + 0.3) / 2)
        self.assertEqual((s.within, s.within_of), (2, 4))  # -10 % and -20 % from 64 KiB

    def test_within_counts_only_points_from_64_kib_per_peer(self):
        cs = [comparison("native", 1.0, 1.1, nbytes=32 * KIB), comparison("native", 1.0, 1.5, nbytes=64 * KIB)]
        s = model_validation.summarise(cs)
        self.assertEqual((s.points, s.within, s.within_of), (2, 0, 1))

    def test_errors_that_cancel_have_no_bias_but_a_large_error(self):
        s = model_validation.summarise([comparison("a", 1.0, 1.5), comparison("b", 1.0, 0.5)])
        self.assertAlmostEqual(s.bias, 0.0)
        self.assertAlmostEqual(s.median_abs, 0.5)

    def test_nothing_from_1_kib_is_no_summary(self):
        self.assertIsNone(model_validation.summarise([comparison("native", 1.0, 2.0, nbytes=512)]))


class Rankings(unittest.TestCase):
    def test_same_order_matches(self):
        r = model_validation.ranking([comparison("native", 3.0, 2.0), comparison("pairwise", 1.0, 0.5),
                                      comparison("node_leader", 2.0, 1.9)])
        self.assertEqual(r.measured, ["pairwise", "node_leader", "native"])
        self.assertEqual(r.predicted, ["pairwise", "node_leader", "native"])
        self.assertTrue(r.matches)

    def test_a_swapped_pair_differs(self):
        r = model_validation.ranking([comparison("native", 1.0, 2.0), comparison("pairwise", 1.5, 1.0)])
        self.assertEqual(r.measured, ["native", "pairwise"])
        self.assertEqual(r.predicted, ["pairwise", "native"])
        self.assertFalse(r.matches)

    def test_checked_at_the_256_cube_slab_and_at_1_mib_per_peer_only(self):
        slab = Point("tb-redistribute", "slab 256x256x256 c64", 64 * MIB)
        mib = Point("tb-bench", "vector64", MIB)
        other = Point("tb-redistribute", "slab 128x128x128 c64", 8 * MIB)
        cs = [Comparison(p, a, [1.0] * 5, 1.0) for p in (other, slab, mib) for a in ("native", "pairwise")]
        self.assertEqual(model_validation.ranking_points(cs), [slab, mib])


def write_bench(path, times, fields=None):
    """A tb-bench --interleave --passes JSON: times[(layout, bytes, algorithm)] = [us per pass];
    `fields` are added to every benchmark (an error, say)."""
    benchmarks = [{"name": f"alltoallw/{layout}/{algorithm}/{nbytes}/pass:{k + 1}/manual_time", "run_type": "iteration",
                   "real_time": t, "time_unit": "us", **(fields or {})}
                  for (layout, nbytes, algorithm), ts in times.items() for k, t in enumerate(ts)]
    with open(path, "w") as f:
        json.dump({"context": {}, "benchmarks": benchmarks}, f)


def write_prediction(path, totals, network="host-calibrated"):
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["pattern", "ranks", "algorithm", "network", "communication_s", "local_s", "overhead_s", "total_s",
                    "phases", "messages"])
        for algorithm, total in totals.items():
            w.writerow(["p", 2, algorithm, network, total / 2, total / 2, 0, total, 1, 4])


def write_redistribute(path, rows_s, shape="64x64x64", local_bytes=2 * MIB, ranks=2, verified="yes"):
    rows = [{"method": "memcpy_floor", "local_bytes_max": local_bytes, "fastest_s": 1e-4, "median_s": 1e-4,
             "global_shape": shape, "element_type": "c64", "verified": "-"}]
    rows += [{"method": method, "local_bytes_max": local_bytes, "fastest_s": s * 0.9, "median_s": s,
              "global_shape": shape, "element_type": "c64", "verified": verified} for method, s in rows_s.items()]
    with open(path, "w") as f:
        json.dump({"metadata": {"ranks": ranks}, "results": rows}, f)


def record_state(path, ratio, key="cross_core_handoff"):
    """Records a cross-core handoff state (or with key "vector_path", the vector path's) in a tool's
    file where that tool puts it: tb-bench's context (a JSON string), tb-redistribute's metadata, a
    tb-beff calibration's block."""
    with open(path) as f:
        doc = json.load(f)
    state = ({"bytes": MIB, "handoff_us": 50.0 * ratio, "private_us": 50.0, "ratio": ratio} if key == "cross_core_handoff"
             else {"bytes": 65536, "block_bytes": 1024, "contiguous_us": 8.0, "vector_us": 8.0 * ratio, "ratio": ratio})
    if "benchmarks" in doc:
        doc["context"][key] = json.dumps(state)
    else:
        doc["metadata" if "metadata" in doc else "calibration"][key] = state
    with open(path, "w") as f:
        json.dump(doc, f)


class Report(unittest.TestCase):
    """The whole report from files as model_validation.sh writes them."""

    def run_report(self, tmp, redistribute_reps=5, bench_passes=5, expect="native,pairwise,local_remap",
                   calibrations=0, states=None, min_repetitions=5, state="all", min_calibrations=3):
        """`states`: {file name: cross-core handoff ratio} recorded in those files, as tb-* do."""
        bench = os.path.join(tmp, "bench.json")
        write_bench(bench, {("contiguous", MIB, "native"): [100, 110, 400, 90, 105][:bench_passes],   # median 105 us
                            ("contiguous", MIB, "pairwise"): [200, 210, 190, 205, 50][:bench_passes]})  # median 200 us
        folder = os.path.join(tmp, "pred")
        os.mkdir(folder)
        write_prediction(os.path.join(folder, f"contiguous-{MIB}.csv"), {"native": 126e-6, "pairwise": 150e-6})
        predicted = os.path.join(tmp, "predicted-64.csv")
        write_prediction(predicted, {"native": 1.1e-3, "pairwise": 0.8e-3, "local_remap": 2.0e-3})
        reps = []
        for k in range(redistribute_reps):
            path = os.path.join(tmp, f"measured-64-rep{k}.json")
            write_redistribute(path, {"alltoallw:native": 1e-3 * (1 + k / 10), "alltoallw:pairwise (steps)": 1e-3,
                                      "local_remap": 2e-3})
            reps.append(path)
        out_csv, out_md = os.path.join(tmp, "v.csv"), os.path.join(tmp, "r.md")
        argv = ["model_validation.py", "report", "--redistribute", predicted, *reps, "--bench", bench, folder,
                "--csv", out_csv, "--markdown", out_md, "--expect-algorithms", expect,
                "--min-repetitions", str(min_repetitions), "--state", state, "--min-calibrations", str(min_calibrations)]
        if calibrations:
            argv += ["--calibrations"] + [calibration(tmp, f"h{k}.json", k + 1, f"t{k}") for k in range(calibrations)]
        for name, ratio in (states or {}).items():
            record_state(os.path.join(tmp, name), ratio)
        text = io.StringIO()
        with redirect_stdout(text):
            code = model_validation.main(argv)
        return code, text.getvalue(), out_csv

    def failing_report(self, **options):
        """run_report's exit status and what it wrote to stderr."""
        err = io.StringIO()
        with tempfile.TemporaryDirectory() as tmp, contextlib.redirect_stderr(err):
            code, _, _ = self.run_report(tmp, **options)
        return code, err.getvalue()

    def test_report_states_every_point_the_error_the_bias_and_the_rankings(self):
        with tempfile.TemporaryDirectory() as tmp:
            code, text, out_csv = self.run_report(tmp)
            with open(out_csv) as f:
                rows = list(csv.DictReader(f))
        self.assertEqual(code, 0)
        errors = {(r["source"], r["algorithm"]): float(r["signed_error"]) for r in rows}
        # redistribution: native's median over 1.0, 1.1, ..., 1.4 ms is 1.2 ms
        self.assertAlmostEqual(errors[("tb-redistribute", "native")], 1.1 / 1.2 - 1, places=6)
        self.assertAlmostEqual(errors[("tb-redistribute", "pairwise")], -0.2, places=6)
        self.assertAlmostEqual(errors[("tb-redistribute", "local_remap")], 0.0, places=6)
        self.assertAlmostEqual(errors[("tb-bench", "native")], 126 / 105 - 1, places=6)  # +20 %
        self.assertAlmostEqual(errors[("tb-bench", "pairwise")], -0.25, places=6)
        all_errors = sorted(errors.values())
        bias = sum(all_errors) / 5
        self.assertIn(f"bias {100 * bias:+.1f} % over 5 points", text)
        self.assertIn("every point compares each algorithm tb-model costs: native, pairwise, local_remap", text)
        self.assertIn("overall: median |error| 20.0 %", text)  # |errors|: 0, 8.3, 20, 20, 25 %
        self.assertRegex(text, r"\| native \| 2 \| [0-9.]+ % \| [0-9.]+ % \| [-+][0-9.]+ % \| 2 of 2 \|")
        # slab 64^3 at 2 ranks is 1 MiB per peer: both points' rankings are checked
        self.assertIn("ranking at tb-redistribute slab 64x64x64 c64 1 MiB: matches; measured pairwise < native < "
                      "local_remap; predicted pairwise < native < local_remap", text)
        self.assertIn("ranking at tb-bench contiguous 1 MiB: matches; measured native < pairwise; "
                      "predicted native < pairwise", text)
        self.assertIn("- ranking at the 256x256x256 slab: not in this run", text)
        self.assertIn("- |bias| <= 5 %", text)

    def test_every_part_of_a_prediction_is_kept_and_the_timing_barrier_shown_only_where_it_costs(self):
        c = model_validation.Comparison(model_validation.Point("tb-bench", "contiguous", MIB), "native", [1e-3] * 5,
                                        1.2e-3, {"communication_s": 4e-4, "local_s": 5e-4, "overhead_s": 1e-4,
                                                 "timing_s": 2e-4})
        quiet = model_validation.Comparison(c.point, "pairwise", [1e-3] * 5, 1e-3, dict(c.parts, timing_s=0.0))
        self.assertIn("(comm + local + overhead + timing)", "\n".join(model_validation.report_lines([c, quiet])))
        self.assertIn("(0.4000 + 0.5000 + 0.1000 + 0.2000)", "\n".join(model_validation.report_lines([c])))
        self.assertIn("(comm + local + overhead)", "\n".join(model_validation.report_lines([quiet])))
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "v.csv")
            model_validation.write_csv(path, [c])
            with open(path) as f:
                row = next(csv.DictReader(f))
        self.assertAlmostEqual(sum(float(row[k]) for k in model_validation.PARTS), float(row["predicted_s"]))

    def test_launches_of_the_sweep_pool_their_passes_and_must_run_the_same_points(self):
        with tempfile.TemporaryDirectory() as tmp:
            paths = []
            for k, times in enumerate(([100, 110], [400], [90, 105])):
                paths.append(os.path.join(tmp, f"bench-rep{k}.json"))
                write_bench(paths[-1], {("contiguous", MIB, "native"): times})
            points = model_validation.bench_launches(paths)
            samples = points[model_validation.Point("tb-bench", "contiguous", MIB)]["native"]
            self.assertEqual(sorted(round(t * 1e6) for t in samples), [90, 100, 105, 110, 400])
            other = os.path.join(tmp, "bench-other.json")
            write_bench(other, {("vector64", MIB, "native"): [1, 2]})
            with self.assertRaisesRegex(ValueError, "bench-other.json: its points differ"):
                model_validation.bench_launches(paths + [other])
            fewer = os.path.join(tmp, "bench-fewer.json")
            write_bench(fewer, {("contiguous", MIB, "native"): [1], ("contiguous", MIB, "pairwise"): [1]})
            with self.assertRaisesRegex(ValueError, "bench-fewer.json: its points differ"):
                model_validation.bench_launches(paths + [fewer])
            folder = os.path.join(tmp, "pred")
            os.mkdir(folder)
            write_prediction(os.path.join(folder, f"contiguous-{MIB}.csv"), {"native": 105e-6})
            text = io.StringIO()
            with redirect_stdout(text):
                code = model_validation.main(["model_validation.py", "report", "--bench", *paths, folder])
            self.assertEqual(code, 0)
            self.assertIn("| tb-bench contiguous | 1 MiB | native | 5 | 0.1050 |", text.getvalue())

    def test_the_calibrations_spread_closes_the_report_when_given(self):
        with tempfile.TemporaryDirectory() as tmp:
            _, plain, _ = self.run_report(tmp)
        with tempfile.TemporaryDirectory() as tmp:
            code, text, _ = self.run_report(tmp, calibrations=3)
        self.assertEqual(code, 0)
        self.assertNotIn("Calibration spread", plain)
        self.assertIn("Calibration spread: 3 tb-beff calibration(s)", text)
        self.assertIn("| host: alpha s | - | s | 1e-06 | 2e-06 | 3e-06 | 3.00 |", text)

    def test_the_state_each_launch_started_in_closes_the_report(self):
        with tempfile.TemporaryDirectory() as tmp:
            _, before, _ = self.run_report(tmp)
        self.assertIn("- redistributions: not recorded", before)  # files written before tb-* recorded it
        states = {"h0.json": 1.0, "h1.json": 8.7, "bench.json": 1.1, "measured-64-rep0.json": 1.1,
                  "measured-64-rep1.json": 9.4, "measured-64-rep2.json": 1.2, "measured-64-rep3.json": 1.0,
                  "measured-64-rep4.json": 1.1}
        with tempfile.TemporaryDirectory() as tmp:
            code, text, _ = self.run_report(tmp, calibrations=3, states=states)
        self.assertEqual(code, 0)
        self.assertIn("- calibrations: 1 of 2 slow (1.0, 8.7, -)", text)  # h2.json recorded none
        self.assertIn("- redistributions: 1 of 5 slow (1.1, 9.4, 1.2, 1.0, 1.1)", text)
        self.assertIn("- sweep launches: 0 of 1 slow (1.1)", text)

    def test_a_state_keeps_only_the_launches_that_started_in_it(self):
        # rep1 started slow and is the 1.1 ms repetition of native: left out, the median moves
        states = {"bench.json": 1.1, "measured-64-rep0.json": 1.1, "measured-64-rep1.json": 9.4,
                  "measured-64-rep2.json": 1.2, "measured-64-rep3.json": 1.0, "measured-64-rep4.json": 1.1,
                  "h0.json": 1.0, "h1.json": 8.7, "h2.json": 1.0}
        with tempfile.TemporaryDirectory() as tmp:
            code, every, csv_all = self.run_report(tmp, calibrations=3, states=states)
            with open(csv_all) as f:
                native_all = next(r for r in csv.DictReader(f) if r["algorithm"] == "native" and r["source"] == "tb-redistribute")
        with tempfile.TemporaryDirectory() as tmp:
            code_fast, fast, csv_fast = self.run_report(tmp, calibrations=3, states=states, min_repetitions=3,
                                                        state="fast", min_calibrations=2)
            with open(csv_fast) as f:
                native_fast = next(r for r in csv.DictReader(f) if r["algorithm"] == "native" and r["source"] == "tb-redistribute")
        self.assertEqual((code, code_fast), (0, 0))
        self.assertEqual(native_all["repetitions"], "5")
        self.assertEqual(native_fast["repetitions"], "4")
        self.assertAlmostEqual(float(native_all["measured_median_s"]), 1.2e-3)   # of 1.0 - 1.4 ms
        self.assertAlmostEqual(float(native_fast["measured_median_s"]), 1.25e-3)  # of 1.0, 1.2, 1.3, 1.4 ms
        self.assertIn("Only the timings made in the fast state", fast)
        self.assertNotIn("Only the timings", every)
        self.assertIn("The host network is the median of the 2 calibration(s) made in the fast state.", fast)
        self.assertIn("Calibration spread: 2 tb-beff calibration(s)", fast)
        self.assertIn("- calibrations: 1 of 3 slow (1.0, 8.7, 1.0)", fast)  # what was left out is still counted

    def test_a_state_with_too_few_calibrations_is_costed_on_all_of_them_and_says_so(self):
        states = {"bench.json": 1.1, **{f"measured-64-rep{k}.json": 1.0 for k in range(5)},
                  "h0.json": 1.0, "h1.json": 8.7, "h2.json": 1.0}
        with tempfile.TemporaryDirectory() as tmp:
            code, fast, _ = self.run_report(tmp, calibrations=3, states=states, min_repetitions=1, state="fast")
        self.assertEqual(code, 0)
        self.assertIn("The host network is the median of all 3 calibration(s), since only 2 were made in the fast "
                      "state (fewer than 3; --min-calibrations).", fast)
        self.assertIn("Calibration spread: 3 tb-beff calibration(s)", fast)

    def test_a_state_cannot_sort_files_that_recorded_none(self):
        code, err = self.failing_report(state="fast")
        self.assertEqual(code, 1)
        self.assertIn("measured-64-rep0.json: native: no cross-core handoff state recorded", err)

    def test_a_state_nothing_was_timed_in_is_an_error(self):
        states = {"bench.json": 1.1, **{f"measured-64-rep{k}.json": 1.0 for k in range(5)}}
        code, err = self.failing_report(states=states, state="slow", min_repetitions=1)
        self.assertEqual(code, 1)
        self.assertIn("no algorithm has 1 repetitions timed in the slow state at any point", err)

    def test_each_row_is_sorted_by_the_state_around_it_not_its_launchs_start(self):
        # Every launch started fast; rep2's native row and the sweep's pairwise pass 2 ran slow
        # (their tools measured the state before and after them): both are left out of the fast
        # report, and pairwise, with 4 of 5 passes, too few for 5 repetitions, is named as left out.
        states = {"bench.json": 1.1, **{f"measured-64-rep{k}.json": 1.0 for k in range(5)}}
        with tempfile.TemporaryDirectory() as tmp:
            self.run_report(tmp, states=states)  # writes the files
            self.rewrite_rows(os.path.join(tmp, "measured-64-rep2.json"), "results", lambda row: row.update(
                handoff_before=1.0, handoff_after=9.1 if row["method"] == "alltoallw:native" else 1.1))
            self.rewrite_rows(os.path.join(tmp, "bench.json"), "benchmarks", lambda b: b.update(
                handoff_before=8.0 if "/pairwise/" in b["name"] and "/pass:2/" in b["name"] else 1.0, handoff_after=1.0))
            code, report, rows = self.report_in_state(tmp, "fast", min_repetitions=5,
                                                      expect="native,pairwise,local_remap")
        self.assertEqual(code, 0)
        self.assertNotIn(("tb-redistribute", "native"), rows)  # 4 of 5 repetitions fast
        self.assertEqual(rows[("tb-redistribute", "pairwise")]["repetitions"], "5")
        self.assertNotIn(("tb-bench", "pairwise"), rows)
        self.assertEqual(rows[("tb-bench", "native")]["repetitions"], "5")
        self.assertIn("- native at tb-redistribute slab 64x64x64 c64 1 MiB: 4", report)
        self.assertIn("- pairwise at tb-bench contiguous 1 MiB: 4", report)
        self.assertIn("- redistribution rows timed: 1 of 15 slow", report)
        self.assertIn("- sweep benchmarks timed: 1 of 10 slow", report)
        self.assertIn("tb-model costs: native, pairwise, local_remap, but the 2 left out (last sections)", report)
        self.assertIn("ranking at tb-bench contiguous 1 MiB: not checked (an algorithm was left out there)", report)
        self.assertNotIn("ranking at tb-bench contiguous 1 MiB: matches", report)

    def test_a_vector_state_sorts_the_rows_by_the_vector_path_around_them(self):
        # Every row ran in the fast handoff state; rep2's pairwise row and the sweep's native pass 3
        # found the vector path slow: --state vector-fast leaves those repetitions out, vector-slow
        # keeps only them, and the handoff's --state fast keeps everything.
        states = {"bench.json": 1.1, **{f"measured-64-rep{k}.json": 1.0 for k in range(5)}}
        with tempfile.TemporaryDirectory() as tmp:
            self.run_report(tmp, states=states)  # writes the files
            for k in range(5):
                record_state(os.path.join(tmp, f"measured-64-rep{k}.json"), 1.5, "vector_path")
                self.rewrite_rows(os.path.join(tmp, f"measured-64-rep{k}.json"), "results", lambda row, k=k: row.update(
                    handoff_before=1.0, handoff_after=1.0, vector_before=1.4,
                    vector_after=6.2 if k == 2 and row["method"].startswith("alltoallw:pairwise") else 1.6))
            record_state(os.path.join(tmp, "bench.json"), 1.5, "vector_path")
            self.rewrite_rows(os.path.join(tmp, "bench.json"), "benchmarks", lambda b: b.update(
                handoff_before=1.0, handoff_after=1.0, vector_before=5.5 if "/native/" in b["name"] and "/pass:3/" in b["name"]
                else 1.2, vector_after=1.3))
            reports = {state: self.report_in_state(tmp, state) for state in ("vector-fast", "vector-slow", "fast")}
        (code, text, rows), (code_slow, slow_text, slow_rows), (code_fast, _, fast_rows) = reports.values()
        self.assertEqual((code, code_slow, code_fast), (0, 0, 0))
        self.assertEqual(rows[("tb-redistribute", "pairwise")]["repetitions"], "4")  # rep2's ran slow
        self.assertEqual(rows[("tb-bench", "native")]["repetitions"], "4")  # pass 3 ran slow
        self.assertEqual(rows[("tb-redistribute", "native")]["repetitions"], "5")
        self.assertEqual(set(slow_rows), {("tb-redistribute", "pairwise"), ("tb-bench", "native")})
        self.assertEqual(slow_rows[("tb-redistribute", "pairwise")]["repetitions"], "1")
        self.assertEqual(len(fast_rows), 5, "the handoff's state does not read the vector path's")
        self.assertIn("counted as slow when the vector path ratio its tool took before or after it", text)
        self.assertIn("Machine state (vector path): the vector path: a 64 KiB message", text)
        self.assertIn("- redistribution rows timed: 1 of 15 slow", text)
        self.assertIn("- sweep benchmarks timed: 1 of 10 slow", text)
        self.assertIn("- redistributions: 0 of 5 slow (1.5, 1.5, 1.5, 1.5, 1.5)", slow_text)

    def test_a_vector_state_cannot_sort_rows_that_recorded_only_the_handoff(self):
        states = {"bench.json": 1.1, **{f"measured-64-rep{k}.json": 1.0 for k in range(5)}}
        code, err = self.failing_report(states=states, state="vector-fast", min_repetitions=1)
        self.assertEqual(code, 1)
        self.assertIn("measured-64-rep0.json: native: no vector path state recorded", err)

    def rewrite_rows(self, path, key, change):
        with open(path) as f:
            doc = json.load(f)
        for row in doc[key]:
            change(row)
        with open(path, "w") as f:
            json.dump(doc, f)

    def report_in_state(self, tmp, state, min_repetitions=1, expect=None):
        """(exit code, report, {(source, algorithm): CSV row}) of a report in `state` over the files
        run_report wrote in tmp, points with at least `min_repetitions` in the state."""
        out = os.path.join(tmp, f"{state}.csv")
        argv = ["model_validation.py", "report", "--redistribute", os.path.join(tmp, "predicted-64.csv"),
                *(os.path.join(tmp, f"measured-64-rep{k}.json") for k in range(5)),
                "--bench", os.path.join(tmp, "bench.json"), os.path.join(tmp, "pred"),
                "--min-repetitions", str(min_repetitions), "--state", state, "--csv", out]
        argv += ["--expect-algorithms", expect] if expect else []
        text = io.StringIO()
        with redirect_stdout(text):
            code = model_validation.main(argv)
        with open(out) as f:
            rows = {(r["source"], r["algorithm"]): r for r in csv.DictReader(f)}
        return code, text.getvalue(), rows

    def test_the_slow_threshold_is_the_tools_one(self):
        header = os.path.join(os.path.dirname(os.path.abspath(model_validation.__file__)), "..", "microbench",
                              "machine_state.hpp")
        with open(header) as f:
            tools = re.search(r"kSlowHandoffRatio = ([0-9.]+);", f.read())
        self.assertIsNotNone(tools, "machine_state.hpp no longer defines kSlowHandoffRatio")
        self.assertEqual(float(tools.group(1)), model_validation.SLOW_HANDOFF_RATIO)
        with open(header) as f:
            vector = re.search(r"kSlowVectorRatio = ([0-9.]+);", f.read())
        self.assertIsNotNone(vector, "machine_state.hpp no longer defines kSlowVectorRatio")
        self.assertEqual(float(vector.group(1)), model_validation.SLOW_VECTOR_RATIO)

    def test_fewer_than_five_repetitions_is_an_error(self):
        code, err = self.failing_report(redistribute_reps=4)
        self.assertEqual(code, 1)
        self.assertIn("has 4 repetition(s); at least 5 are needed", err)

    def test_an_expected_algorithm_missing_at_a_point_is_an_error_naming_it(self):
        code, err = self.failing_report(expect="native,pairwise,node_leader,local_remap")
        self.assertEqual(code, 1)
        self.assertIn("tb-bench contiguous 1 MiB: node_leader", err)
        self.assertIn("tb-redistribute slab 64x64x64 c64 1 MiB: node_leader", err)
        self.assertNotIn("tb-bench contiguous 1 MiB: local_remap", err, "tb-bench has no local_remap")

    def test_predictions_for_several_networks_are_refused(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "p.csv")
            write_prediction(path, {"native": 1.0})
            with open(path, "a") as f:
                f.write("p,2,native,iec-ring,0,0,0,1,1,1\n")
            with self.assertRaisesRegex(ValueError, "p.csv: predictions for 2 networks"):
                model_validation.predicted_rows(path)

    def test_a_repetition_without_a_time_above_zero_is_an_error_naming_the_point(self):
        point = Point("tb-bench", "contiguous", MIB)
        with self.assertRaisesRegex(ValueError, r"bench.json: native at tb-bench contiguous .* time of 0.0 s"):
            model_validation.compare(point, {"native": [1e-4, 0.0, 1e-4, 1e-4, 1e-4]}, {"native": {"total_s": 1e-4}},
                                     5, "bench.json")

    def test_a_failed_benchmark_is_an_error_not_a_sample(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "bench.json")
            write_bench(path, {("contiguous", MIB, "native"): [100.0]},
                        {"error_occurred": True, "error_message": "MPI_ERR_TRUNCATE"})
            with self.assertRaisesRegex(ValueError, "bench.json: benchmark .* failed: MPI_ERR_TRUNCATE"):
                model_validation.bench_samples(path)

    def test_a_redistribution_that_failed_its_check_is_an_error(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "m.json")
            write_redistribute(path, {"alltoallw:native": 1e-3}, verified="no")
            with self.assertRaisesRegex(ValueError, "m.json: alltoallw:native verified 'no'"):
                model_validation.measured_rows(path)

    def test_redistribution_files_of_another_shape_are_errors_naming_them(self):
        with tempfile.TemporaryDirectory() as tmp:
            cases = (("[1]", r"list.json: not a tb-redistribute JSON object"),
                     ('{"metadata": {"ranks": 2}, "results": {}}', r"dict.json: \"results\" must be a list of rows"),
                     ('{"metadata": {"ranks": 2}, "results": [{"median_s": 1}]}', r"nomethod.json: result 1 has no method"),
                     ('{"metadata": [], "results": []}', r"metalist.json: metadata.ranks is missing"))
            for (text, expect), name in zip(cases, ("list", "dict", "nomethod", "metalist")):
                path = write_text(tmp, f"{name}.json", text)
                with self.assertRaisesRegex(ValueError, expect):
                    model_validation.redistribute_samples([path])
            path = os.path.join(tmp, "nan.json")
            write_redistribute(path, {"alltoallw:native": float("nan")})
            with self.assertRaisesRegex(ValueError, r"nan.json: alltoallw:native: median_s is nan"):
                model_validation.measured_rows(path)

    def test_a_prediction_that_is_not_tb_models_csv_is_an_error_naming_the_line(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = write_text(tmp, "other.csv", "a,b\n1,2\n")
            with self.assertRaisesRegex(ValueError, r"other.csv: line 2 has no network or algorithm"):
                model_validation.predicted_rows(path)
            path = os.path.join(tmp, "p.csv")
            write_prediction(path, {"native": 1.0})
            with open(path, "a") as f:
                f.write("p,2,pairwise,host,0,0,0,fast,1,1\n")
            with self.assertRaisesRegex(ValueError, r"p.csv: line 3 \(pairwise\): total_s 'fast' is not a time"):
                model_validation.predicted_rows(path)

    def test_repetitions_of_different_cubes_are_refused(self):
        with tempfile.TemporaryDirectory() as tmp:
            a, b = os.path.join(tmp, "a.json"), os.path.join(tmp, "b.json")
            write_redistribute(a, {"alltoallw:native": 1e-3})
            write_redistribute(b, {"alltoallw:native": 1e-3}, shape="32x32x32", local_bytes=256 * KIB)
            with self.assertRaisesRegex(ValueError, "b.json: slab 32x32x32 c64 .* one --redistribute takes one cube"):
                model_validation.redistribute_samples([a, b])


class BenchPatterns(unittest.TestCase):
    def test_contiguous_is_one_block_per_side_for_every_pair_self_included(self):
        p = model_validation.bench_pattern("contiguous", 4 * KIB, 2)
        self.assertEqual(p["ranks"], 2)
        self.assertEqual(p["pairs"], [[0, 0, 4096, 1, 1], [0, 1, 4096, 1, 1], [1, 0, 4096, 1, 1], [1, 1, 4096, 1, 1]])

    def test_vector_sends_bytes_over_block_blocks_and_receives_one(self):
        self.assertEqual(model_validation.bench_pattern("vector64", KIB, 2)["pairs"][1], [0, 1, 1024, 16, 1])
        self.assertEqual(model_validation.bench_pattern("vector4K", MIB, 3)["pairs"][5], [1, 2, MIB, 256, 1])
        self.assertEqual(model_validation.bench_pattern("vector64", 32, 2)["pairs"][0], [0, 0, 32, 1, 1])

    def test_unknown_layouts_and_sizes_are_errors(self):
        with self.assertRaisesRegex(ValueError, "only contiguous and vector<B>"):
            model_validation.bench_pattern("slab", KIB, 2)
        with self.assertRaisesRegex(ValueError, "power of two"):
            model_validation.bench_pattern("vector48", KIB, 2)
        with self.assertRaisesRegex(ValueError, "not a size"):
            model_validation.sweep_sizes("1X:4M")

    def test_patterns_refuses_bad_options_naming_them_before_writing(self):
        # too many ranks last: without its check it builds ranks^2 pairs in memory
        cases = ((["--sizes", "1K:4K", "--layouts", ","], "--layouts ',': no layout given"),
                 (["--sizes", "0:4K"], "--sizes 0:4K: '0' is not a size in bytes"),
                 (["--sizes", "1K:4K", "--layouts", "contiguous,vector0"],
                  "--layouts contiguous,vector0: layout 'vector0': B '0' is not a size in bytes"),
                 (["--sizes", "1:1", "--ranks", "0"], "--ranks 0: at least 1"),
                 (["--sizes", "1:1", "--ranks", "100000"], "--ranks 100000: at most 4096 ranks"))
        with tempfile.TemporaryDirectory() as tmp:
            for options, message in cases:
                code, err, written = run_failing(tmp, "patterns", os.path.join(tmp, "p.jsonl"), *options)
                self.assertEqual((code, written), (1, []), message)
                self.assertIn(f"model_validation.py patterns: error: {message}", err)
        self.assertEqual(model_validation.MAX_PATTERN_RANKS, 4096, "fpga_transport/pattern.cpp's kMaxPatternRanks")

    def test_sweep_is_the_powers_of_two_from_min_to_max(self):
        self.assertEqual(model_validation.sweep_sizes("1K:8K"), [1024, 2048, 4096, 8192])
        self.assertEqual(model_validation.sweep_sizes("4M"), [4 * MIB])
        with self.assertRaisesRegex(ValueError, "MAX at least MIN"):
            model_validation.sweep_sizes("8K:1K")

    def test_patterns_writes_one_line_per_layout_and_size_and_lists_the_calls(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "p.jsonl")
            text = io.StringIO()
            with redirect_stdout(text):
                code = model_validation.main(["model_validation.py", "patterns", path, "--sizes", "1K:2K"])
            with open(path) as f:
                lines = [json.loads(line) for line in f]
        self.assertEqual(code, 0)
        self.assertEqual(text.getvalue().split("\n")[:4], ["0 contiguous 1024", "1 contiguous 2048", "2 vector64 1024",
                                                           "3 vector64 2048"])
        self.assertEqual([line["pairs"][1][3] for line in lines], [1, 1, 16, 32])
        self.assertEqual(set(lines[0]), {"ranks", "description", "pairs"}, "exactly the keys tb-model reads")


def calibration(tmp, name, scale, stamp, **changes):
    """A tb-beff --fit-out file whose measured values are `scale` times a base; `changes` replace keys."""
    host = {"alpha_s": 1e-6 * scale, "beta_s_per_byte": 1e-10 * scale,
            "message_seconds_by_bytes": [[1.0, 4e-7 * scale], [1024.0, 8e-7 * scale]],
            "noncontiguous_send_extra_seconds": [
                {"block_bytes": 64.0, "seconds_by_bytes": [[4096.0, 2e-6 * scale], [262144.0, 9e-5 * scale]]}]}
    host.update(changes)
    spec = {"kind": "host", "name": "host-calibrated", "comment": "tb-beff exchanges.",
            "calibration": {"git_commit": "abc", "mpi_library": "MPICH", "ranks": 2, "timestamp_utc": stamp},
            "library": {"bandwidth_by_bytes": [[65536.0, 1.5e9 / scale]], "streaming_from_bytes": 4194304.0},
            "host": host}
    path = os.path.join(tmp, name)
    with open(path, "w") as f:
        json.dump(spec, f)
    return path


class Overheads(unittest.TestCase):
    """model_validation.py overheads: each algorithm's time at 1 B per peer in a state, as
    tb-model --overheads reads it."""

    def launches(self, tmp, states):
        """One tb-bench launch at 1 B per peer per entry of `states` ({native, pairwise}: handoff
        ratio around each benchmark); launch k times native at 1 + k us, pairwise at 10 + k us."""
        paths = []
        for k, by_algorithm in enumerate(states):
            path = os.path.join(tmp, f"overheads-rep{k}.json")
            write_bench(path, {("contiguous", 1, "native"): [1 + k], ("contiguous", 1, "pairwise"): [10 + k],
                               ("contiguous", 2, "native"): [99]})
            record_state(path, 1.0)
            with open(path) as f:
                doc = json.load(f)
            for b in doc["benchmarks"]:
                ratio = by_algorithm["native" if "/native/" in b["name"] else "pairwise"]
                b.update(handoff_before=ratio, handoff_after=1.0)
            with open(path, "w") as f:
                json.dump(doc, f)
            paths.append(path)
        return paths

    def overheads(self, tmp, paths, state):
        out, err = os.path.join(tmp, f"o-{state}.json"), io.StringIO()
        with contextlib.redirect_stderr(err):
            code = model_validation.main(["model_validation.py", "overheads", "--state", state, out, *paths])
        if code:
            return code, err.getvalue(), None
        with open(out) as f:
            doc = json.load(f)
        # (microseconds, unit, samples): the file is in seconds
        times = {b["name"]: (round(b["real_time"] * 1e6, 9), b["time_unit"], b["samples"]) for b in doc["benchmarks"]}
        return code, err.getvalue(), (times, doc["context"])

    def test_each_state_takes_the_median_of_its_own_launches(self):
        with tempfile.TemporaryDirectory() as tmp:
            paths = self.launches(tmp, [{"native": 9.0, "pairwise": 9.0}, {"native": 1.0, "pairwise": 1.0},
                                        {"native": 1.0, "pairwise": 9.0}, {"native": 1.0, "pairwise": 1.0}])
            _, _, (fast, _) = self.overheads(tmp, paths, "fast")
            _, _, (slow, _) = self.overheads(tmp, paths, "slow")
            _, _, (every, _) = self.overheads(tmp, paths, "all")
        name = "alltoallw/contiguous/{}/1/manual_time"
        self.assertEqual(fast[name.format("native")], (3, "s", 3))    # launches 1-3: 2, 3, 4 us
        self.assertEqual(fast[name.format("pairwise")], (12, "s", 2))  # launches 1 and 3: 11, 13 us
        self.assertEqual(slow[name.format("native")], (1, "s", 1))
        self.assertEqual(slow[name.format("pairwise")], (11, "s", 2))  # launches 0 and 2: 10, 12 us
        self.assertEqual(every[name.format("native")], (2.5, "s", 4))
        self.assertEqual(len(fast), 2)  # the 2 B benchmark is not an overhead

    def test_an_algorithm_never_timed_in_the_state_falls_back_to_all_and_says_so(self):
        with tempfile.TemporaryDirectory() as tmp:
            paths = self.launches(tmp, [{"native": 1.0, "pairwise": 9.0}, {"native": 1.0, "pairwise": 9.0}])
            code, err, (times, context) = self.overheads(tmp, paths, "fast")
        self.assertEqual(code, 0)
        self.assertEqual(times["alltoallw/contiguous/pairwise/1/manual_time"], (10.5, "s", 2))
        self.assertEqual(context["fell_back"], ["pairwise"])
        self.assertIn("no 1 B benchmark of pairwise timed in the fast state; its overhead is the median of all 2", err)

    def test_launches_without_a_1_byte_benchmark_are_an_error(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "b.json")
            write_bench(path, {("contiguous", 2, "native"): [1.0]})
            code, err, _ = self.overheads(tmp, [path], "all")
        self.assertEqual(code, 1)
        self.assertIn("no tb-bench benchmark at 1 B per peer, contiguous", err)


    def test_a_benchmark_time_that_is_not_a_time_above_zero_is_an_error_naming_it(self):
        name = "alltoallw/contiguous/native/1/manual_time"
        with tempfile.TemporaryDirectory() as tmp:
            for time in ("NaN", "-1.0", '"fast"', "0", "Infinity"):
                path = write_text(tmp, "ov.json", f'{{"benchmarks": [{{"name": "{name}", "real_time": {time}, '
                                                  '"time_unit": "us"}]}')
                code, err, written = run_failing(tmp, "overheads", os.path.join(tmp, "o.json"), path)
                self.assertEqual((code, written), (1, []), time)
                self.assertRegex(err, rf"ov.json: benchmark {name}: real_time \S+ is not a time > 0")
            self.assertIn("real_time nan is not a time > 0", run_failing(
                tmp, "overheads", os.path.join(tmp, "o.json"),
                write_text(tmp, "n.json", f'{{"benchmarks": [{{"name": "{name}", "real_time": NaN}}]}}'))[1])

    def test_files_of_another_shape_are_errors_naming_them(self):
        with tempfile.TemporaryDirectory() as tmp:
            for text, message in (('{"benchmarks": {"a": 1}}', '"benchmarks" must be a list of objects'),
                                  ('{"benchmarks": [5]}', '"benchmarks" must be a list of objects'),
                                  ('{"benchmarks": [{"real_time": 1}]}', '"benchmarks" must be a list of objects'),
                                  ("[1, 2]", "not a tb-bench JSON object"), ("garbage", "not JSON")):
                path = write_text(tmp, "ov.json", text)
                code, err, written = run_failing(tmp, "overheads", os.path.join(tmp, "o.json"), path)
                self.assertEqual((code, written), (1, []), text)
                self.assertIn(f"ov.json: {message}", err)


class HostMedian(unittest.TestCase):
    def test_every_measured_value_is_the_median_over_the_calibrations(self):
        with tempfile.TemporaryDirectory() as tmp:
            files = [calibration(tmp, f"h{k}.json", scale, f"t{k}") for k, scale in enumerate([1, 4, 2])]
            merged = model_validation.host_median(files)
        host = merged["host"]
        self.assertAlmostEqual(host["alpha_s"], 2e-6)
        self.assertEqual([x for x, _ in host["message_seconds_by_bytes"]], [1.0, 1024.0], "sizes kept")
        self.assertAlmostEqual(host["message_seconds_by_bytes"][1][1], 1.6e-6)
        extra = host["noncontiguous_send_extra_seconds"][0]
        self.assertEqual(extra["block_bytes"], 64.0)
        self.assertAlmostEqual(extra["seconds_by_bytes"][1][1], 1.8e-4, msg="4x in one calibration is not taken")
        self.assertAlmostEqual(merged["library"]["bandwidth_by_bytes"][0][1], 0.75e9)
        self.assertEqual(merged["calibration"]["timestamps_utc"], ["t0", "t1", "t2"])
        self.assertEqual(merged["calibration"]["median_of"], 3)
        self.assertEqual(merged["kind"], "host")

    def test_each_calibrations_end_state_is_kept_not_merged(self):
        with tempfile.TemporaryDirectory() as tmp:
            files = [calibration(tmp, f"h{k}.json", 1, f"t{k}") for k in range(2)]
            for path, end in zip(files, (1.0, 8.8)):
                with open(path) as f:
                    doc = json.load(f)
                doc["calibration"]["cross_core_handoff_after"] = {"ratio": end}
                with open(path, "w") as f:
                    json.dump(doc, f)
            merged = model_validation.host_median(files)
        self.assertEqual([s["ratio"] for s in merged["calibration"]["cross_core_handoffs_after"]], [1.0, 8.8])

    def test_each_calibrations_vector_path_states_are_kept_not_merged(self):
        with tempfile.TemporaryDirectory() as tmp:
            files = [calibration(tmp, f"h{k}.json", 1, f"t{k}") for k in range(3)]
            for path, (before, after) in zip(files[:2], ((1.5, 5.6), (6.1, 1.2))):
                with open(path) as f:
                    doc = json.load(f)
                doc["calibration"].update(vector_path={"ratio": before}, vector_path_after={"ratio": after})
                with open(path, "w") as f:
                    json.dump(doc, f)
            merged = model_validation.host_median(files)  # states differ: no "calibration block differs"
            self.assertEqual([s and s["ratio"] for s in merged["calibration"]["vector_paths"]], [1.5, 6.1, None])
            self.assertEqual([s and s["ratio"] for s in merged["calibration"]["vector_paths_after"]], [5.6, 1.2, None])
            self.assertNotIn("vector_paths", model_validation.host_median(files[2:])["calibration"])  # none recorded

    def test_a_calibration_is_slow_when_it_started_or_ended_slow(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = calibration(tmp, "h.json", 1, "t")
            record_state(path, 1.1)
            with open(path) as f:
                doc = json.load(f)
            self.assertEqual(model_validation.launch_ratio(doc), 1.1)
            doc["calibration"]["cross_core_handoff_after"] = dict(doc["calibration"]["cross_core_handoff"], ratio=9.2)
            self.assertEqual(model_validation.launch_ratio(doc), 9.2)

    def test_a_vector_state_takes_the_median_over_the_calibrations_in_it(self):
        with tempfile.TemporaryDirectory() as tmp:
            files = [calibration(tmp, f"h{k}.json", scale, f"t{k}") for k, scale in enumerate([1, 4, 2, 5, 6])]
            for path, (start, end) in zip(files, ((1.2, 1.3), (6.0, 1.1), (1.5, 1.4), (1.1, 7.2), (5.1, 6.3))):
                record_state(path, 1.0)  # every one in the fast handoff state
                record_state(path, start, "vector_path")
                with open(path) as f:
                    doc = json.load(f)
                doc["calibration"]["vector_path_after"] = dict(doc["calibration"]["vector_path"], ratio=end)
                with open(path, "w") as f:
                    json.dump(doc, f)
            out = os.path.join(tmp, "slow.json")
            with redirect_stdout(io.StringIO()) as said:
                code = model_validation.main(["model_validation.py", "host-median", "--state", "vector-slow", out, *files])
            with open(out) as f:
                slow = json.load(f)
        self.assertEqual(code, 0)
        self.assertEqual(slow["calibration"]["median_of"], 3)  # started or ended slow: 4, 5 and 6 us
        self.assertAlmostEqual(slow["host"]["alpha_s"], 5e-6)
        self.assertIn("the median of the 3 calibration(s) made in the vector-slow state", said.getvalue())

    def test_each_calibrations_state_is_kept_not_merged(self):
        with tempfile.TemporaryDirectory() as tmp:
            files = [calibration(tmp, f"h{k}.json", 1, f"t{k}") for k in range(3)]
            record_state(files[0], 1.1)
            record_state(files[1], 9.0)
            merged = model_validation.host_median(files)  # states differ: no "calibration block differs"
        self.assertEqual([s and s["ratio"] for s in merged["calibration"]["cross_core_handoffs"]], [1.1, 9.0, None])
        self.assertNotIn("cross_core_handoffs_after", merged["calibration"])  # none recorded an end

    def test_a_state_takes_the_median_over_its_calibrations_only(self):
        with tempfile.TemporaryDirectory() as tmp:
            files = [calibration(tmp, f"h{k}.json", scale, f"t{k}") for k, scale in enumerate([1, 4, 2])]
            for path, ratio in zip(files, (1.0, 9.0, 1.1)):
                record_state(path, ratio)
            out = os.path.join(tmp, "fast.json")
            with redirect_stdout(io.StringIO()) as said:
                code = model_validation.main(["model_validation.py", "host-median", "--state", "fast",
                                              "--min-calibrations", "2", out, *files])
            with open(out) as f:
                merged = json.load(f)
            with redirect_stdout(io.StringIO()) as said_slow:
                code_slow = model_validation.main(["model_validation.py", "host-median", "--state", "slow", out, *files])
            with open(out) as f:
                slow = json.load(f)
            with redirect_stdout(io.StringIO()) as said_one:
                model_validation.main(["model_validation.py", "host-median", "--state", "slow",
                                       "--min-calibrations", "1", out, *files])
            with open(out) as f:
                slow_one = json.load(f)
            for command in ("host-median", "report"):  # both refuse a minimum below 1 before anything runs
                with contextlib.redirect_stderr(io.StringIO()) as err, self.assertRaises(SystemExit) as refused:
                    model_validation.main(["model_validation.py", command, "--min-calibrations", "0", out, *files])
                self.assertEqual(refused.exception.code, 2)
                self.assertIn("--min-calibrations: 0: at least 1", err.getvalue())
        self.assertEqual((code, code_slow), (0, 0))
        self.assertAlmostEqual(merged["host"]["alpha_s"], 1e-6)  # the lower of 1 and 2 us; the slow 4 us left out
        self.assertEqual(merged["calibration"]["median_of"], 2)
        self.assertIn("the median of the 2 calibration(s) made in the fast state", said.getvalue())
        # one slow calibration of three: too few for a median, so the network is all three's (2 us)
        self.assertAlmostEqual(slow["host"]["alpha_s"], 2e-6)
        self.assertEqual(slow["calibration"]["state"], {
            "asked": "slow", "network": "the median of all 3 calibration(s), since only 1 was made in the slow state "
                                        "(fewer than 3; --min-calibrations)"})
        self.assertIn(slow["calibration"]["state"]["network"], said_slow.getvalue())
        self.assertAlmostEqual(slow_one["host"]["alpha_s"], 4e-6)  # one is enough when asked: the slow one itself
        self.assertIn("made in the slow state", said_one.getvalue())

    def test_one_calibration_is_itself(self):
        with tempfile.TemporaryDirectory() as tmp:
            merged = model_validation.host_median([calibration(tmp, "h.json", 3, "t")])
        self.assertAlmostEqual(merged["host"]["beta_s_per_byte"], 3e-10)

    def test_curves_at_other_sizes_are_an_error_naming_the_curve(self):
        with tempfile.TemporaryDirectory() as tmp:
            a = calibration(tmp, "a.json", 1, "t0")
            b = calibration(tmp, "b.json", 1, "t1", message_seconds_by_bytes=[[1.0, 4e-7], [2048.0, 9e-7]])
            with self.assertRaisesRegex(ValueError, r"network\.host\.message_seconds_by_bytes: .*b\.json differs from .*a\.json"):
                model_validation.host_median([a, b])

    def test_other_block_sizes_are_an_error(self):
        with tempfile.TemporaryDirectory() as tmp:
            a = calibration(tmp, "a.json", 1, "t0")
            b = calibration(tmp, "b.json", 1, "t1", noncontiguous_send_extra_seconds=[
                {"block_bytes": 1024.0, "seconds_by_bytes": [[4096.0, 2e-6], [262144.0, 9e-5]]}])
            with self.assertRaisesRegex(ValueError, r"noncontiguous_send_extra_seconds\[0\]: .*b\.json differs"):
                model_validation.host_median([a, b])

    def test_a_curve_missing_from_one_calibration_is_an_error(self):
        with tempfile.TemporaryDirectory() as tmp:
            a = calibration(tmp, "a.json", 1, "t0", get_seconds_by_bytes=[[64.0, 1e-6]])
            b = calibration(tmp, "b.json", 1, "t1")
            with self.assertRaisesRegex(ValueError, r"network\.host: .*b\.json has other keys .*get_seconds_by_bytes"):
                model_validation.host_median([a, b])

    def test_calibrations_of_another_library_are_refused(self):
        with tempfile.TemporaryDirectory() as tmp:
            a = calibration(tmp, "a.json", 1, "t0")
            b = calibration(tmp, "b.json", 1, "t1")
            with open(b) as f:
                spec = json.load(f)
            spec["calibration"]["mpi_library"] = "Open MPI"
            with open(b, "w") as f:
                json.dump(spec, f)
            with self.assertRaisesRegex(ValueError, "b.json: its calibration block"):
                model_validation.host_median([a, b])

    def test_an_even_count_takes_a_measured_value_not_the_mean_of_two_states(self):
        with tempfile.TemporaryDirectory() as tmp:
            files = [calibration(tmp, f"h{k}.json", scale, f"t{k}") for k, scale in enumerate([1, 4, 1, 4])]
            merged = model_validation.host_median(files)
        self.assertAlmostEqual(merged["host"]["alpha_s"], 1e-6)
        self.assertAlmostEqual(merged["host"]["message_seconds_by_bytes"][1][1], 8e-7)

    def test_points_of_another_shape_in_a_later_file_are_refused(self):
        with tempfile.TemporaryDirectory() as tmp:
            a = calibration(tmp, "a.json", 1, "t0")
            b = calibration(tmp, "b.json", 1, "t1", message_seconds_by_bytes=[[1.0, 4e-7, 0.0], [1024.0, 8e-7, 0.0]])
            c = calibration(tmp, "c.json", 1, "t2", message_seconds_by_bytes=[[1.0, None], [1024.0, 8e-7]])
            for odd in (b, c):
                with self.assertRaisesRegex(ValueError, rf"message_seconds_by_bytes: {odd} differs"):
                    model_validation.host_median([a, odd])

    def test_a_file_that_is_not_json_is_named(self):
        with tempfile.TemporaryDirectory() as tmp:
            a = calibration(tmp, "a.json", 1, "t0")
            bad = os.path.join(tmp, "bad.json")
            with open(bad, "w") as f:
                f.write("{not json")
            with self.assertRaisesRegex(ValueError, "bad.json: not JSON"):
                model_validation.host_median([a, bad])

    def test_a_measured_value_that_is_not_finite_and_at_least_zero_is_an_error_naming_it(self):
        with tempfile.TemporaryDirectory() as tmp:
            good = calibration(tmp, "good.json", 1, "t0", alpha_s=0.0)  # 0: the fit and the extras clamp at 0
            extra = [{"block_bytes": 64.0, "seconds_by_bytes": [[4096.0, 0.0], [262144.0, 9e-5]]}]
            zero = calibration(tmp, "zero.json", 1, "t1", noncontiguous_send_extra_seconds=extra)
            self.assertEqual(model_validation.host_median([good, zero])["host"]["alpha_s"], 0.0)
            cases = ({"alpha_s": float("nan")}, "host.alpha_s is nan"), \
                    ({"beta_s_per_byte": -1e-10}, "host.beta_s_per_byte is -1e-10"), \
                    ({"message_seconds_by_bytes": [[1.0, 4e-7], [1024.0, float("inf")]]},
                     r"host.message_seconds_by_bytes\[1\]\[1\] is inf")
            for changes, message in cases:
                bad = calibration(tmp, "bad.json", 1, "t2", **changes)
                out = os.path.join(tmp, "hm.json")
                code, err, written = run_failing(tmp, "host-median", out, bad, bad, good)
                self.assertEqual((code, written), (1, []), message)
                self.assertRegex(err, rf"host-median: error: \S*bad.json: {message} \(must be finite and >= 0\)")

    def test_files_that_are_not_calibrations_are_errors_naming_them(self):
        with tempfile.TemporaryDirectory() as tmp:
            good = calibration(tmp, "good.json", 1, "t0")
            listed = write_text(tmp, "list.json", "[1, 2]")
            block = write_text(tmp, "block.json", '{"kind": "host", "host": {"alpha_s": 2e-6}, "calibration": "x"}')
            for options, path, message in (([], listed, "list.json: not a calibration object"),
                                           (["--state", "fast"], listed, "list.json: not a calibration object"),
                                           ([], block, 'block.json: "calibration" must be an object')):
                code, err, written = run_failing(tmp, "host-median", *options, os.path.join(tmp, "hm.json"), path, good)
                self.assertEqual((code, written), (1, []), message)
                self.assertIn(message, err)
                self.assertNotIn("Traceback", err)

    def test_a_refused_merge_writes_no_file(self):
        with tempfile.TemporaryDirectory() as tmp:
            a = calibration(tmp, "a.json", 1, "t0")
            b = calibration(tmp, "b.json", 1, "t1", message_seconds_by_bytes=[[2.0, 4e-7], [1024.0, 8e-7]])
            out = os.path.join(tmp, "host.json")
            with redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()) as err:
                code = model_validation.main(["model_validation.py", "host-median", out, a, b])
            self.assertEqual(code, 1)
            self.assertIn("b.json differs", err.getvalue())
            self.assertFalse(os.path.exists(out))

    def test_the_command_writes_the_merged_network(self):
        with tempfile.TemporaryDirectory() as tmp:
            files = [calibration(tmp, f"h{k}.json", k + 1, f"t{k}") for k in range(3)]
            out = os.path.join(tmp, "host.json")
            self.assertEqual(model_validation.main(["model_validation.py", "host-median", out] + files), 0)
            with open(out) as f:
                self.assertAlmostEqual(json.load(f)["host"]["alpha_s"], 2e-6)


class CalibrationSpread(unittest.TestCase):
    def spread(self, scales, **changes):
        with tempfile.TemporaryDirectory() as tmp:
            files = [calibration(tmp, f"h{k}.json", scale, f"t{k}", **changes) for k, scale in enumerate(scales)]
            return {row[0]: row[1:] for row in model_validation.calibration_spread(files)}

    def test_each_curve_gives_min_median_and_max_where_the_calibrations_differ_most(self):
        with tempfile.TemporaryDirectory() as tmp:
            files = [calibration(tmp, f"h{k}.json", 1, f"t{k}") for k in range(3)]
            with open(files[2]) as f:
                spec = json.load(f)
            spec["host"]["message_seconds_by_bytes"][1][1] = 4e-6  # 5x at 1 KiB, the same at 1 B
            with open(files[2], "w") as f:
                json.dump(spec, f)
            rows = {row[0]: row[1:] for row in model_validation.calibration_spread(files)}
        self.assertEqual(rows["host: message"], (1024.0, 8e-7, 8e-7, 4e-6))
        self.assertEqual(rows["host: alpha s"], (None, 1e-6, 1e-6, 1e-6))

    def test_entries_are_named_by_their_block_size_and_the_median_is_a_measured_value(self):
        rows = self.spread([1, 4, 2, 3])
        x, lo, mid, hi = rows["host: noncontiguous send extra (block 64.0 B)"]
        self.assertEqual(x, 4096.0)  # the same relative spread at both sizes: the first
        self.assertAlmostEqual(lo, 2e-6)
        self.assertAlmostEqual(mid, 4e-6, msg="median_low of 2, 4, 6, 8 us")
        self.assertAlmostEqual(hi, 8e-6)
        self.assertIn("library: bandwidth by bytes", rows)

    def test_calibrations_of_another_shape_are_refused_as_by_host_median(self):
        with tempfile.TemporaryDirectory() as tmp:
            a = calibration(tmp, "a.json", 1, "t0")
            b = calibration(tmp, "b.json", 1, "t1", message_seconds_by_bytes=[[1.0, 4e-7], [2048.0, 9e-7]])
            with self.assertRaisesRegex(ValueError, r"message_seconds_by_bytes: .*b\.json differs"):
                model_validation.calibration_spread([a, b])

    def test_the_section_counts_the_calibrations_and_says_where_one_was_zero(self):
        with tempfile.TemporaryDirectory() as tmp:
            a = calibration(tmp, "a.json", 1, "t0")
            b = calibration(tmp, "b.json", 1, "t1", alpha_s=0.0)
            lines = model_validation.spread_lines([a, b])
        self.assertTrue(lines[0].startswith("Calibration spread: 2 tb-beff calibration(s)"))
        self.assertIn("| host: alpha s | - | s | 0 | 0 | 1e-06 | min 0 |", lines)
        self.assertIn("| host: beta s per byte | - | s/B | 1e-10 | 1e-10 | 1e-10 | 1.00 |", lines)


if __name__ == "__main__":
    unittest.main()
