#!/usr/bin/python3
"""Tests of experiments/tune.py's table writer (no MPI): layout classes and their bounds, the
decision rule (fastest median, adjacent sizes merged into bands, alternatives fastest first),
vector points below two blocks left out, the table's format, tb-bench's repetitions to medians,
and the MPICH selection (native as scattered, algorithms MPICH lacks left out and named, decisions
its tree cannot take listed)."""
import io
import json
import os
import sys
import tempfile
import unittest
from contextlib import redirect_stderr

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tune  # noqa: E402

TWO_ON_ONE = (2, 1, 2)
TWO_ON_TWO = (2, 2, 1)


def bench_doc(times):
    """A tb-bench JSON with one iteration row per (algorithm, size, repetition seconds)."""
    rows = []
    for (algorithm, size), reps in times.items():
        for t in reps:
            name = f"alltoallw/contiguous/{algorithm}/{size}/manual_time"
            rows.append({"name": name, "run_name": name, "run_type": "iteration", "real_time": t * 1e6,
                         "time_unit": "us"})
        rows.append({"name": name + "_median", "run_name": name, "run_type": "aggregate", "real_time": 0.0,
                     "time_unit": "us"})
    return {"context": {"node_layout": "{\"nodes\":2,\"source\":\"TB_NUM_NODES=2\"}"}, "benchmarks": rows}


class Classes(unittest.TestCase):
    def test_bands_of_block_bytes(self):
        classes = tune.layout_classes(["contiguous", "vector64", "vector4K"])
        self.assertEqual(classes[0], {"name": "contiguous", "contiguous": True})
        self.assertEqual([(c["name"], c["max_block_bytes"]) for c in classes[1:]], [("block64", 512), ("block4K", None)])

    def test_bad_layouts(self):
        for bad in ("pencil", "vectorX", "vector0"):
            with self.assertRaises(ValueError):
                tune.block_bytes(bad)
        self.assertEqual(tune.block_bytes("vector4K"), 4096)

    def test_the_slab_has_no_class_of_its_own(self):
        self.assertEqual([c["name"] for c in tune.layout_classes(["contiguous", "vector64", "slab"])],
                         ["contiguous", "block64"])

    def test_the_slabs_blocks_from_tb_benchs_counter(self):
        doc = {"benchmarks": [{"name": "redistribute/slab/native/1024/manual_time", "block_bytes": 64.0},
                              {"name": "redistribute/slab/pairwise/1024/manual_time", "block_bytes": 64.0},
                              {"name": "redistribute/slab/native/65536/manual_time", "block_bytes": 256.0},
                              {"name": "redistribute/slab/native/65536/manual_time", "run_type": "aggregate"}]}
        self.assertEqual(tune.block_sizes(doc), {1024: 64, 65536: 256})
        with self.assertRaisesRegex(ValueError, "redistribute/slab/native/16/manual_time.*no counter block_bytes"):
            tune.block_sizes({"benchmarks": [{"name": "redistribute/slab/native/16/manual_time"}]})
        doc["benchmarks"][1]["block_bytes"] = 128.0
        with self.assertRaisesRegex(ValueError, "at 1024 B per peer disagree on block_bytes: "
                                    "'redistribute/slab/native/1024/manual_time' has 64, "
                                    "'redistribute/slab/pairwise/1024/manual_time' 128"):
            tune.block_sizes(doc)

    def test_a_slab_point_joins_the_band_of_its_blocks(self):
        # tb-bench's slab blocks (16 z bytes, z^3 <= size / 16): 16 B at 16 and 32 B per peer, 64 B at
        # 1 KiB, 256 B at 64 KiB, 1 KiB at 4 MiB.
        classes = tune.layout_classes(["contiguous", "vector64", "vector256", "vector4K"])
        blocks = {16: 16, 32: 16, 1024: 64, 65536: 256, 4 << 20: 1024}
        self.assertEqual([tune.point_class("slab", s, classes, blocks[s]) for s in blocks],
                         [None, "block64", "block64", "block256", "block256"])
        self.assertEqual(tune.point_class("slab", 65536, tune.layout_classes(["vector64", "vector4K"]), 256), "block64")
        with self.assertRaisesRegex(ValueError, "slab's point at 1024 B per peer has no block size"):
            tune.point_class("slab", 1024, classes)


class Decisions(unittest.TestCase):
    def test_fastest_median_and_merged_bands(self):
        by_size = {1: {"native": 1.0, "pairwise": 2.0}, 2: {"native": 1.0, "pairwise": 3.0},
                   4: {"native": 5.0, "pairwise": 1.0}, 8: {"native": 9.0, "pairwise": 2.0}}
        bands = tune.bands(by_size)
        self.assertEqual([(b["bytes_per_peer"], b["algorithm"]) for b in bands],
                         [([0, 2], "native"), ([3, None], "pairwise")])
        self.assertEqual(bands[0]["alternatives"], ["pairwise"])
        self.assertEqual(bands[1]["sizes"], [4, 8])

    def test_a_tolerance_keeps_the_previous_winner_through_near_ties(self):
        by_size = {1: {"a": 1.0, "b": 2.0}, 2: {"a": 1.05, "b": 1.0}, 4: {"a": 1.0, "b": 2.0}, 8: {"a": 2.0, "b": 1.0}}
        self.assertEqual(tune.winners(by_size), ["a", "b", "a", "b"])
        self.assertEqual(tune.winners(by_size, 0.1), ["a", "a", "a", "b"])
        self.assertEqual([b["bytes_per_peer"] for b in tune.bands(by_size, 0.1)], [[0, 4], [5, None]])

    def test_one_winner_is_one_unbounded_band(self):
        bands = tune.bands({1: {"a": 1.0, "b": 2.0}, 2: {"a": 1.0, "b": 2.0}})
        self.assertEqual([(b["bytes_per_peer"], b["algorithm"]) for b in bands], [([0, None], "a")])

    def test_vector_points_below_two_blocks_are_left_out(self):
        measured = {(TWO_ON_ONE, "vector64"): {("native", 64): 1.0, ("pairwise", 64): 0.5,
                                               ("native", 128): 1.0, ("pairwise", 128): 2.0}}
        entries = tune.table_entries(measured)
        self.assertEqual(len(entries), 1)
        self.assertEqual(entries[0]["algorithm"], "native")
        self.assertEqual(entries[0]["layout_class"], "block64")
        self.assertEqual(entries[0]["node_layout"], {"ranks": 2, "nodes": 1, "ranks_per_node": 2})

    def test_slab_and_vector_points_of_one_class_choose_the_algorithm_never_far_behind_on_either(self):
        # At 64 KiB per peer the slab's 256-byte blocks share vector256's band: vector256 ranks a
        # first (b 1.3x), the slab b first (a 2x); the band takes b, whose worst ratio is 1.3. At
        # 1 MiB only vector256 has a point there (the slab's 512-byte blocks too, but not measured).
        measured = {(TWO_ON_ONE, "vector256"): {("a", 65536): 1.0, ("b", 65536): 1.3,
                                                ("a", 1 << 20): 1.0, ("b", 1 << 20): 2.0},
                    (TWO_ON_ONE, "slab"): {("a", 65536): 4.0, ("b", 65536): 2.0}}
        entries = tune.table_entries(measured, blocks={"slab": {65536: 256}})
        self.assertEqual([(e["layout_class"], e["bytes_per_peer"], e["algorithm"]) for e in entries],
                         [("block256", [0, 65536], "b"), ("block256", [65537, None], "a")])
        self.assertEqual(entries[0]["worst_over_fastest"], {"a": [2.0], "b": [1.3]})
        self.assertEqual(entries[0]["median_s"], {"a": [5.0], "b": [3.3]})

    def test_the_table_format(self):
        measured = {(TWO_ON_ONE, "contiguous"): {("native", 1): 1.0, ("node_leader", 1): 2.0}}
        table = tune.tuning_table(tune.table_entries(measured), tune.layout_classes(["contiguous"]), {"x": 1})
        text = json.dumps(table)
        again = json.loads(text)
        self.assertEqual(again["format"], "tb-alltoallw-tuning")
        self.assertEqual(again["version"], 1)
        self.assertEqual(again["entries"][0]["bytes_per_peer"], [0, None])
        self.assertEqual(again["entries"][0]["algorithm"], "native")

    def test_over_launches_the_algorithm_never_far_behind_wins(self):
        # "fickle" is 5 % ahead in launch 1 and 3x behind in launch 2 (and in launch 3 ahead again):
        # its median over launches is the fastest, but "steady" is never more than 1.05x behind.
        launches = [{("fickle", 8): 1.00, ("steady", 8): 1.05}, {("fickle", 8): 3.00, ("steady", 8): 1.00},
                    {("fickle", 8): 0.95, ("steady", 8): 1.00}]
        entry, = tune.table_entries({(TWO_ON_ONE, "contiguous"): launches})
        self.assertEqual(entry["algorithm"], "steady")
        self.assertEqual(entry["median_s"], {"fickle": [1.00], "steady": [1.00]})
        self.assertEqual(entry["worst_over_fastest"], {"fickle": [3.0], "steady": [1.053]})
        one, = tune.table_entries({(TWO_ON_ONE, "contiguous"): launches[:1]})
        self.assertEqual(one["algorithm"], "fickle")                 # one launch: the fastest median

    def test_an_algorithm_missing_from_a_launch_is_judged_on_the_launches_it_ran(self):
        medians, worst = tune.combined([{("a", 1): 2.0, ("b", 1): 1.0}, {("a", 1): 1.0}])
        self.assertEqual(medians, {("a", 1): 1.5, ("b", 1): 1.0})
        self.assertEqual(worst, {("a", 1): 2.0, ("b", 1): 1.0})

    def test_one_algorithm_takes_a_node_layout_where_it_is_good_enough(self):
        # At 2 nodes "a" is within 1.1x at 9 of 10 points and never worse than 1.2x: it takes every
        # class there, so auto needs no agreement; at 1 node "b" is 3x faster at large sizes: bands.
        two = (2, 2, 1)
        near = {("a", s): 1.05 if s != 512 else 1.2 for s in (1, 2, 4, 8, 16, 32, 64, 128, 256, 512)}
        near.update({("b", s): 1.0 for s in (1, 2, 4, 8, 16, 32, 64, 128, 256, 512)})
        measured = {(two, "contiguous"): near, (TWO_ON_ONE, "contiguous"): {("a", 1): 1.0, ("b", 1): 2.0,
                                                                           ("a", 1 << 20): 3.0, ("b", 1 << 20): 1.0}}
        entries = tune.table_entries(measured, one=(0.9, 0.1, 1.25))
        at_two = [e for e in entries if e["node_layout"]["nodes"] == 2]
        self.assertEqual([(e["bytes_per_peer"], e["algorithm"]) for e in at_two], [([0, None], "b")])
        self.assertIn("100%", at_two[0]["rule"])   # "b" is the fastest everywhere: the larger share wins
        at_one = [e["algorithm"] for e in entries if e["node_layout"]["nodes"] == 1]
        self.assertEqual(at_one, ["a", "b"])
        near[("b", 256)] = 2.0                        # b now 1.9x behind once: a alone qualifies, at 9 of 10
        entry, = [e for e in tune.table_entries(measured, one=(0.9, 0.1, 1.25)) if e["node_layout"]["nodes"] == 2]
        self.assertEqual(entry["algorithm"], "a")
        self.assertIn("90%", entry["rule"])
        self.assertIn("worst 1.20x", entry["rule"])
        banded = [e for e in tune.table_entries(measured, one=(0.9, 0.1, 1.15)) if e["node_layout"]["nodes"] == 2]
        self.assertEqual([e["algorithm"] for e in banded], ["b", "a", "b"])  # a's worst 1.2 > 1.15: bands
        self.assertNotIn("rule", banded[0])
        del near[("b", 512)]                          # an algorithm not measured everywhere never qualifies
        self.assertEqual(tune.one_algorithm([("contiguous", {}, {1: {"a": 1.0, "b": 1.0}, 2: {"a": 1.0}})],
                                            0.9, 0.1, 1.25), ("a", 1.0, 1.0))

    def test_a_measured_agreement_dearer_than_the_split_gains_gives_one_algorithm(self):
        # a is 1.3x behind b at the two large sizes, b 1.3x behind a at the three small ones: no
        # algorithm meets the goals alone, and bands need auto's agreement on every call.
        two = (2, 2, 1)
        times = {("a", s): 1.0 if s < 8 else 1.3 for s in (1, 2, 4, 8, 16)}
        times.update({("b", s): 1.3 if s < 8 else 1.0 for s in (1, 2, 4, 8, 16)})
        measured = {(two, "contiguous"): times}
        dear = tune.table_entries(measured, one=(0.9, 0.1, 1.25), agreements={two: 0.5})
        self.assertEqual([(e["bytes_per_peer"], e["algorithm"]) for e in dear], [([0, None], "a")])
        self.assertIn("60% of its points, worst 1.30x; per-size bands would be at 0%", dear[0]["rule"])
        self.assertIn("500000.00 us per call", dear[0]["rule"])
        cheap = tune.table_entries(measured, one=(0.9, 0.1, 1.25), agreements={two: 0.01})
        self.assertEqual([e["algorithm"] for e in cheap], ["a", "b"])    # 1.01x: the bands win
        self.assertEqual([e["algorithm"] for e in tune.table_entries(measured, one=(0.9, 0.1, 1.25))], ["a", "b"])

    def test_where_one_algorithm_takes_the_blocking_calls_prepared_calls_keep_the_bands(self):
        # The measured agreement makes "a" take every blocking call; prepared calls agree once, so
        # they get the per-size bands (a below 8 B, b from 8 B), marked as theirs; a node layout
        # the rule leaves to bands gets no prepared entries.
        two = (2, 2, 1)
        times = {("a", s): 1.0 if s < 8 else 1.3 for s in (1, 2, 4, 8, 16)}
        times.update({("b", s): 1.3 if s < 8 else 1.0 for s in (1, 2, 4, 8, 16)})
        measured = {(two, "contiguous"): times,
                    (TWO_ON_ONE, "contiguous"): {("a", 1): 1.0, ("b", 1): 2.0, ("a", 64): 3.0, ("b", 64): 1.0}}
        entries = tune.table_entries(measured, one=(0.9, 0.1, 1.25), agreements={two: 0.5}, prepared_bands=True)
        at_two = [(e.get("calls", "blocking"), e["bytes_per_peer"], e["algorithm"]) for e in entries
                  if e["node_layout"]["nodes"] == 2]
        self.assertEqual(at_two, [("blocking", [0, None], "a"), ("prepared", [0, 4], "a"), ("prepared", [5, None], "b")])
        prepared = [e for e in entries if e.get("calls") == "prepared"]
        self.assertTrue(all(e["rule"] == tune.PREPARED_BANDS_RULE for e in prepared))
        self.assertEqual(prepared[1]["median_s"], {"a": [1.3, 1.3], "b": [1.0, 1.0]})
        self.assertFalse([e for e in entries if e["node_layout"]["nodes"] == 1 and "calls" in e])
        without = tune.table_entries(measured, one=(0.9, 0.1, 1.25), agreements={two: 0.5})
        self.assertFalse([e for e in without if "calls" in e])
        self.assertIn("prepared calls (blocking measurements), 2 ranks, 2 node(s), contiguous, >= 5 B per peer: b",
                      "\n".join(tune.decision_lines(entries)))

    def test_algorithms_measured_at_different_points_never_count_as_measured_everywhere(self):
        classes = [("contiguous", {1: {"a": 1.0}, 2: {"b": 1.0}}, {1: {"a": 1.0}, 2: {"b": 1.0}})]
        self.assertIsNone(tune.one_algorithm(classes, 0.9, 0.1, 1.25))
        self.assertIsNone(tune.best_single(classes, 0.1))

    def test_prepared_forms_are_split_off_under_the_plain_name(self):
        blocking, persistent = tune.split_calls({("native", 8): 1.0, ("native:persistent", 8): 2.0, ("pairwise", 8): 3.0})
        self.assertEqual(blocking, {("native", 8): 1.0, ("pairwise", 8): 3.0})
        self.assertEqual(persistent, {("native", 8): 2.0})

    def test_the_agreement_cost_is_paired_per_pass(self):
        doc = bench_doc({})
        doc["benchmarks"] = [{"name": f"alltoallw/contiguous/{a}/{s}/pass:{k}/manual_time", "run_type": "iteration",
                              "real_time": t, "time_unit": "us"}
                             for s, k, a, t in ((1, 1, "auto", 3.0), (1, 1, "pairwise", 1.0), (1, 2, "auto", 9.0),
                                                (1, 2, "pairwise", 8.0), (1, 3, "auto", 2.5), (1, 3, "pairwise", 1.0),
                                                (2, 1, "auto", 2.0), (2, 1, "pairwise", 1.0))]
        self.assertAlmostEqual(tune.agreement_cost(doc), 1.25e-6)  # size 1: median(2, 1, 1.5); size 2: 1

    def test_medians_of_repetitions(self):
        times = tune.medians(bench_doc({("native", 8): [3.0, 1.0, 2.0], ("pairwise", 8): [4.0, 5.0]}))
        self.assertAlmostEqual(times[("native", 8)], 2.0)
        self.assertAlmostEqual(times[("pairwise", 8)], 4.5)

    def test_node_layout_from_the_context(self):
        self.assertEqual(tune.node_layout_of(bench_doc({})["context"], 2, 1), {"ranks": 2, "nodes": 2, "ranks_per_node": 1})
        self.assertEqual(tune.node_layout_of({}, 3, 2), {"ranks": 3, "nodes": 2, "ranks_per_node": 2})


class MpichSelection(unittest.TestCase):
    GENERIC = {"collective=alltoallw": {"comm_type=intra": {"is_sendbuf_inplace=no": {}, "is_sendbuf_inplace=yes": {}}},
               "collective=bcast": {"comm_type=intra": {}}}

    def measured(self):
        return {(TWO_ON_ONE, "contiguous"): {("native", 1): 1.0, ("node_leader", 1): 2.0, ("ucx_zcopy", 1): 9.0,
                                            ("native", 1024): 5.0, ("node_leader", 1024): 1.0, ("ucx_zcopy", 1024): 0.5},
                (TWO_ON_TWO, "contiguous"): {("native", 1): 1.0, ("pairwise", 1): 2.0,
                                             ("native", 1024): 1.0, ("pairwise", 1024): 2.0}}

    def test_names_and_left_out(self):
        times, left_out = tune.mpich_times(self.measured())
        self.assertIn(("intra", "contiguous"), times)
        self.assertEqual(set(times[("intra", "contiguous")][1]), {"mpich:scattered", "mpich:node_leader"})
        self.assertEqual(left_out, ["ucx_zcopy (not in MPICH)"])

    def test_selection_written_and_unmapped_named(self):
        measured = self.measured()
        entries = tune.table_entries(measured)
        with tempfile.TemporaryDirectory() as tmp:
            generic = os.path.join(tmp, "generic.json")
            with open(generic, "w") as f:
                json.dump(self.GENERIC, f)
            out = os.path.join(tmp, "sel.json")
            notes = tune.write_mpich_selection(out, generic, self.GENERIC, measured, entries, 2, uniform=False)
            with open(out) as f:
                tree = json.load(f)
        branch = json.dumps(tree["collective=alltoallw"]["comm_type=intra"]["is_sendbuf_inplace=no"])
        self.assertIn("MPIR_Alltoallw_intra_scattered", branch)
        self.assertIn("collective=bcast", tree)  # the rest of the generic tree kept
        self.assertTrue(any("ucx_zcopy is not in MPICH" in n for n in notes["unmapped"]), notes["unmapped"])

    def test_layouts_the_tree_cannot_tell(self):
        self.assertIsNone(tune.mpich_mode({"ranks": 4, "nodes": 2, "ranks_per_node": 2}))
        self.assertEqual(tune.mpich_mode({"ranks": 4, "nodes": 1, "ranks_per_node": 4}), "intra")
        self.assertEqual(tune.mpich_mode({"ranks": 2, "nodes": 2, "ranks_per_node": 1}), "cliques")


class Options(unittest.TestCase):
    def test_the_table_file_is_written_whole_with_the_usual_mode(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "t.json")
            old = os.umask(0o022)
            try:
                tune.write_json(path, {"x": 1})
            finally:
                os.umask(old)
            self.assertEqual(os.stat(path).st_mode & 0o777, 0o644)
            with open(path) as f:
                self.assertEqual(json.load(f), {"x": 1})
            self.assertEqual(os.listdir(tmp), ["t.json"])  # no temporary file left

    def test_defaults_and_errors(self):
        o = tune.parse(["--build", "/x/build/h-auto-ompi"])
        self.assertEqual(o.mpi, "openmpi")
        self.assertEqual(o.nodes, [1, 2])
        self.assertTrue(o.mpich_json.endswith("mpich-selection.json"))
        with self.assertRaises(SystemExit), redirect_stderr(io.StringIO()):
            tune.parse(["--nodes", "3"])  # more nodes than the 2 ranks
        with self.assertRaises(SystemExit), redirect_stderr(io.StringIO()):
            tune.parse(["--launches", "0"])
        for bad in ("0.9,0.1", "1.5,0.1,1.25", "0.9,x,1.25"):
            with self.assertRaises(SystemExit), redirect_stderr(io.StringIO()):
                tune.parse(["--one-algorithm", bad])
        self.assertEqual(tune.parse([]).one_algorithm, (0.9, 0.1, 1.25))
        self.assertIsNone(tune.parse(["--one-algorithm", "off"]).one_algorithm)
        stderr = io.StringIO()
        with self.assertRaises(SystemExit), redirect_stderr(stderr):
            tune.parse(["--layouts", "contiguous,slab"])  # the slab's points need a vector<B> band to join
        self.assertIn("the slab's points join the bands of the vector<B> layouts", stderr.getvalue())
        self.assertEqual(tune.parse(["--layouts", "contiguous,vector64,slab"]).layouts,
                         ["contiguous", "vector64", "slab"])
        self.assertEqual(tune.bench_args(tune.parse(["--repetitions", "5"]), ["native"], "contiguous", "o.json")[7:9],
                         ["--passes", "5"])


if __name__ == "__main__":
    unittest.main()
