#!/usr/bin/python3
"""Tests of analysis/mpich_algorithms.py: series names, the selection's safety rule (size thresholds
only between algorithms that send the same messages, unless --uniform), and the JSON it writes."""
import io
import json
import os
import sys
import tempfile
import unittest
from contextlib import redirect_stderr, redirect_stdout

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mpich_algorithms as ma  # noqa: E402

SIZES = [1, 64, 4096, 262144]


def row(mode, mpi, algorithm, size, seconds, layout="contiguous", **env):
    point = {"ranks": 2, **{f"env:{k}": v for k, v in env.items()}}
    return {"experiment": "mpich_algorithms", "tool": "tb-bench", "mode": mode, "mpi": mpi, "ranks": 2,
            "point": point, "layout": layout, "algorithm": algorithm, "bytes_per_peer": size, "time_s": seconds}


def forced(mode, algorithm, size, seconds, layout="contiguous"):
    return row(mode, "mpich-patched", "native", size, seconds, layout,
               MPIR_CVAR_ALLTOALLW_INTRA_ALGORITHM=algorithm)


def campaign():
    """intra: scattered wins the small sizes, node_leader the large ones by far (its total time is
    the smallest); cliques: scattered is the base, pairwise wins at 4 KiB."""
    rows = []
    for layout in ("contiguous", "vector64"):
        for s in SIZES:
            small = s <= 64
            rows += [row("intra", "mpich-patched", "native", s, 1e-6 if small else 40e-3, layout),
                     forced("intra", "pairwise", s, 2e-6 if small else 38e-3, layout),
                     forced("intra", "pack_alltoallv", s, 3e-6 if small else 30e-3, layout),
                     forced("intra", "node_leader", s, 2e-6 if small else 10e-3, layout),
                     row("intra", "mpich-patched", "node_leader", s, 3e-6 if small else 11e-3, layout),
                     row("intra", "mpich", "native", s, 1e-6 if small else 45e-3, layout)]
            rows += [row("cliques", "mpich-patched", "native", s, 5e-6 if s != 4096 else 9e-6, layout),
                     forced("cliques", "pairwise", s, 6e-6 if s != 4096 else 7e-6, layout),
                     forced("cliques", "node_leader", s, 20e-6, layout)]
    return rows


GENERIC = {"collective=bcast": {"algorithm=MPIR_Bcast_intra_binomial": {}},
           "collective=alltoallw": {"comm_type=intra": {
               "is_sendbuf_inplace=yes": {"algorithm=MPIR_Alltoallw_intra_pairwise_sendrecv_replace": {}},
               "is_sendbuf_inplace=no": {"algorithm=MPIR_Alltoallw_intra_scattered": {}}},
               "comm_type=inter": {"algorithm=MPIR_Alltoallw_inter_pairwise_exchange": {}}}}


class Series(unittest.TestCase):
    def test_each_variant_has_its_own_name(self):
        self.assertEqual(ma.series(row("intra", "mpich", "native", 1, 1)), "debian:native")
        self.assertEqual(ma.series(row("intra", "mpich", "node_leader", 1, 1)), "debian:pmpi:node_leader")
        self.assertEqual(ma.series(row("intra", "mpich-patched", "native", 1, 1)), "mpich:default")
        self.assertEqual(ma.series(forced("intra", "pairwise", 1, 1)), "mpich:pairwise")
        self.assertEqual(ma.series(row("intra", "mpich-patched", "native", 1, 1,
                                       MPIR_CVAR_COLL_SELECTION_TUNING_JSON_FILE="x.json")), "mpich:json")
        self.assertEqual(ma.series(row("intra", "mpich-patched", "pairwise", 1, 1)), "pmpi:pairwise")


class Selection(unittest.TestCase):
    def test_base_is_the_smallest_total_time_and_sizes_split_only_same_message_algorithms(self):
        d = ma.decide(ma.size_times(campaign()), 2)
        self.assertEqual(d["intra"]["base"], "node_leader")
        # scattered is faster at 1 and 64 B, but ranks could disagree about the size: one band only.
        self.assertEqual(d["intra"]["bands"], [(None, "node_leader")])
        self.assertEqual(d["cliques"]["base"], "scattered")
        self.assertEqual(d["cliques"]["bands"], [(2 * 64, "scattered"), (2 * 4096, "pairwise"), (None, "scattered")])

    def test_base_is_the_smallest_total_time_not_the_smallest_geometric_mean(self):
        # pairwise is a little faster at the many small points, node_leader far faster at the
        # one large point: the geometric mean favours pairwise, the time spent node_leader.
        rows = []
        for s in (1, 2, 4, 8, 16, 32, 64):
            rows += [forced("intra", "pairwise", s, 1e-6, "slab"), forced("intra", "node_leader", s, 1.5e-6, "slab")]
        rows += [forced("intra", "pairwise", 1 << 24, 40e-3, "slab"), forced("intra", "node_leader", 1 << 24, 6e-3, "slab")]
        d = ma.decide(ma.size_times(rows), 2)["intra"]
        self.assertLess(d["slowdowns"]["pairwise"], d["slowdowns"]["node_leader"])
        self.assertEqual(d["base"], "node_leader")
        self.assertEqual(d["bands"], [(None, "node_leader")])

    def test_uniform_splits_among_all_algorithms(self):
        d = ma.decide(ma.size_times(campaign()), 2, uniform=True)
        self.assertEqual(d["intra"]["bands"], [(2 * 64, "scattered"), (None, "node_leader")])

    def test_the_json_keeps_every_other_collective_and_defaults_unmeasured_sizes_to_scattered(self):
        d = ma.decide(ma.size_times(campaign()), 2)
        tree = ma.selection_json(GENERIC, {2: d})
        self.assertEqual(tree["collective=bcast"], GENERIC["collective=bcast"])
        intra = tree["collective=alltoallw"]["comm_type=intra"]
        self.assertEqual(intra["is_sendbuf_inplace=yes"], GENERIC["collective=alltoallw"]["comm_type=intra"]["is_sendbuf_inplace=yes"])
        out = intra["is_sendbuf_inplace=no"]
        self.assertEqual(list(out), ["comm_size<=2", "comm_size=any"])
        self.assertEqual(out["comm_size=any"], {"algorithm=MPIR_Alltoallw_intra_scattered": {}})
        self.assertEqual(list(out["comm_size<=2"]), ["comm_size=node_comm_size", "comm_size=any"])
        self.assertEqual(out["comm_size<=2"]["comm_size=node_comm_size"],
                         {"total_msg_size=any": {"algorithm=MPIR_Alltoallw_intra_node_leader": {}}})
        self.assertEqual(list(out["comm_size<=2"]["comm_size=any"]),
                         ["total_msg_size<=128", "total_msg_size<=8192", "total_msg_size=any"])
        self.assertEqual(GENERIC["collective=alltoallw"]["comm_type=intra"]["is_sendbuf_inplace=no"],
                         {"algorithm=MPIR_Alltoallw_intra_scattered": {}}, "the input is not modified")

    def test_a_generic_file_without_the_alltoallw_branch_is_an_error(self):
        d = ma.decide(ma.size_times(campaign()), 2)
        with self.assertRaisesRegex(ValueError, "no alltoallw intra branch"):
            ma.selection_json({"collective=bcast": {}}, {2: d})

    def test_no_in_mpich_measurements_is_an_error(self):
        rows = [r for r in campaign() if ma.series(r).startswith(("pmpi:", "debian:"))]
        with self.assertRaisesRegex(ValueError, "no in-MPICH measurements"):
            ma.decide(ma.size_times(rows), 2)


class Slab(unittest.TestCase):
    def test_the_slab_table_gives_the_goal_ratios_and_leaves_out_reference_rows(self):
        def red(mpi, method, seconds, ranks=2, **env):
            return {"experiment": "mpich_slab", "tool": "tb-redistribute", "mode": "intra", "mpi": mpi, "ranks": ranks,
                    "grid": str(ranks), "point": {f"env:{k}": v for k, v in env.items()}, "global_shape": "256x256x256",
                    "method": method, "fastest_s": seconds, "median_s": seconds, "fastest_over_floor": seconds / 0.01}
        rows = [red("mpich", "alltoallw:native", 0.06), red("mpich", "memcpy_floor", 0.01),
                red("mpich-patched", "alltoallw:node_leader (on-node: staged)", 0.010),
                red("mpich-patched", "alltoallw:native", 0.011, MPIR_CVAR_COLL_SELECTION_TUNING_JSON_FILE="t.json")]
        self.assertEqual(ma.series(rows[2]), "pmpi:node_leader")
        text = "\n".join(ma.slab_table(rows))
        self.assertIn("| intra | 2 | 256x256x256 | 2 | mpich:json | 11.00 | 11.00 | 1.10 | 5.45 | 1.10 |", text)
        self.assertNotIn("memcpy_floor", text)

    def test_other_rank_counts_keep_their_own_rows_and_ratios(self):
        def red(mpi, method, seconds, ranks, **env):
            return {"experiment": "mpich_slab", "tool": "tb-redistribute", "mode": "intra", "mpi": mpi, "ranks": ranks,
                    "grid": str(ranks), "point": {f"env:{k}": v for k, v in env.items()}, "global_shape": "256x256x256",
                    "method": method, "fastest_s": seconds, "median_s": seconds, "fastest_over_floor": 1.0}
        rows = [red("mpich", "alltoallw:native", 0.06, 2), red("mpich", "alltoallw:native", 0.02, 16),
                red("mpich-patched", "alltoallw:native", 0.03, 2, MPIR_CVAR_ALLTOALLW_INTRA_ALGORITHM="node_leader"),
                red("mpich-patched", "alltoallw:native", 0.01, 16, MPIR_CVAR_ALLTOALLW_INTRA_ALGORITHM="node_leader")]
        text = "\n".join(ma.slab_table(rows))
        self.assertIn("| intra | 2 | 256x256x256 | 2 | mpich:node_leader | 30.00 | 30.00 | 1.00 | 2.00 | - |", text)
        self.assertIn("| intra | 16 | 256x256x256 | 16 | mpich:node_leader | 10.00 | 10.00 | 1.00 | 2.00 | - |", text)


class Packing(unittest.TestCase):
    def test_the_pack_table_puts_each_engine_beside_the_testbed_packer(self):
        def bench(mpi, name, gbps):
            return {"experiment": "mpich_pack", "tool": "tb-bench-pack", "mode": "intra", "mpi": mpi, "ranks": 1,
                    "name": name, "bytes_per_second": gbps * 1e9}
        rows = [bench("mpich-patched", "BM_Pack/block:64/gap:64", 6.0), bench("mpich-patched", "BM_MpiPack/block:64/gap:64", 4.0),
                bench("mpich", "BM_MpiPack/block:64/gap:64", 2.0), bench("mpich-patched", "BM_Pack/block:256/gap:64", 9.0)]
        text = "\n".join(ma.pack_table(rows))
        self.assertIn("| block:64/gap:64 | 6.00 | 4.00 | 2.00 | - | - | - | 1.50 |", text)
        self.assertNotIn("gap:64 | 9.00", text, "a layout MPI_Pack did not run is left out")


class Report(unittest.TestCase):
    def test_the_report_gives_the_campaign_its_own_section_and_keeps_it_out_of_the_generic_tables(self):
        import pandas as pd
        import report
        with tempfile.TemporaryDirectory() as tmp:
            path, _ = report.report(pd.DataFrame(campaign()), tmp)
            with open(path) as f:
                text = f.read()
        self.assertIn("## The MPICH patch series", text)
        self.assertIn("mpich:node_leader", text)
        self.assertNotIn("## Alltoallw per message size", text)



def write_inputs(tmp, rows=None):
    """(store, generic): the campaign's rows (or `rows`) as a run.py store and MPICH's generic
    selection, written in `tmp`."""
    store, generic = os.path.join(tmp, "s.jsonl"), os.path.join(tmp, "generic.json")
    with open(store, "w") as f:
        f.writelines(json.dumps(r) + "\n" for r in (campaign() if rows is None else rows))
    with open(generic, "w") as f:
        json.dump(GENERIC, f)
    return store, generic

class CommandLine(unittest.TestCase):
    def test_writes_the_json_and_prints_the_ratio_columns(self):
        with tempfile.TemporaryDirectory() as tmp:
            store = os.path.join(tmp, "s.jsonl")
            with open(store, "w") as f:
                for r in campaign():
                    f.write(json.dumps(r) + "\n")
                f.write('{"experiment": "mpich_alg')  # a line cut by a killed runner
            generic = os.path.join(tmp, "generic.json")
            with open(generic, "w") as f:
                json.dump(GENERIC, f)
            out = os.path.join(tmp, "sel.json")
            stdout, stderr = io.StringIO(), io.StringIO()
            with redirect_stdout(stdout), redirect_stderr(stderr):
                status = ma.main([store, "--selection-json", out, "--generic", generic])
            self.assertEqual(status, 0, stderr.getvalue())
            self.assertIn("s.jsonl:73: skipped, not JSON", stderr.getvalue())
            with open(out) as f:
                self.assertIn("comm_size<=2", json.load(f)["collective=alltoallw"]["comm_type=intra"]["is_sendbuf_inplace=no"])
            text = stdout.getvalue()
            self.assertIn("mpich/pmpi node_leader", text)
            self.assertIn("| 262144 |", text)
            self.assertIn("0.91", text)  # mpich:node_leader 10 ms / pmpi:node_leader 11 ms

    def test_each_measured_rank_count_decides_up_to_itself_and_an_earlier_file_keeps_the_rest(self):
        two = campaign()  # intra: node_leader; cliques: scattered/pairwise bands
        sixteen = [dict(r, ranks=16) for r in campaign() if r["mode"] == "intra" and "node_leader" not in str(r)]
        by_ranks = ma.decide_by_ranks(two + sixteen)
        self.assertEqual(list(by_ranks), [2, 16])
        self.assertEqual(by_ranks[16]["intra"]["bands"], [(None, "pack_alltoallv")])
        self.assertEqual(by_ranks[2]["cliques"]["bands"][0], (2 * 64, "scattered"))  # bounds scale with ranks
        out = ma.selection_json(GENERIC, by_ranks)["collective=alltoallw"]["comm_type=intra"]["is_sendbuf_inplace=no"]
        self.assertEqual(list(out), ["comm_size<=2", "comm_size<=16", "comm_size=any"])
        self.assertEqual(out["comm_size<=16"]["comm_size=node_comm_size"],
                         {"total_msg_size=any": {"algorithm=MPIR_Alltoallw_intra_pack_alltoallv": {}}})
        self.assertEqual(out["comm_size<=16"]["comm_size=any"], {"algorithm=MPIR_Alltoallw_intra_scattered": {}})
        # a new store with 4 ranks only, merged into that file: 2 and 16 stay, 4 is added between
        earlier = ma.selection_json(GENERIC, by_ranks)
        kept = ma.previous_branches(earlier, "earlier.json")
        four = ma.decide_by_ranks([dict(r, ranks=4) for r in campaign()])
        merged = ma.selection_json(GENERIC, four, kept)["collective=alltoallw"]["comm_type=intra"]["is_sendbuf_inplace=no"]
        self.assertEqual(list(merged), ["comm_size<=2", "comm_size<=4", "comm_size<=16", "comm_size=any"])
        self.assertEqual(merged["comm_size<=16"], out["comm_size<=16"])
        self.assertEqual(four[4]["cliques"]["bands"][0], (4 * 64, "scattered"))  # 64 B per peer x 4 ranks
        # a rank count measured again replaces the earlier file's branch for the node layouts it
        # measured (here one node) and keeps the others (one rank per node)
        again = ma.selection_json(GENERIC, ma.decide_by_ranks([dict(r, ranks=2) for r in sixteen]), kept)
        two_ranks = again["collective=alltoallw"]["comm_type=intra"]["is_sendbuf_inplace=no"]["comm_size<=2"]
        self.assertEqual(two_ranks["comm_size=node_comm_size"], out["comm_size<=16"]["comm_size=node_comm_size"])
        self.assertEqual(two_ranks["comm_size=any"], out["comm_size<=2"]["comm_size=any"])
        self.assertEqual(list(two_ranks), ["comm_size=node_comm_size", "comm_size=any"])
        with self.assertRaisesRegex(ValueError, "x.json has no alltoallw intra branch"):
            ma.previous_branches({"collective=bcast": {}}, "x.json")
        text = "\n".join(ma.report(two + sixteen, by_ranks))
        self.assertIn("- 16 ranks, intra (one node): base pack_alltoallv", text)
        self.assertIn("### contiguous, intra, 16 ranks", text)
        self.assertIn("### contiguous, intra, 2 ranks", text)

    def test_a_bound_beyond_what_mpich_parses_is_an_error(self):
        rows = [forced("cliques", a, s, t, "contiguous") for s, a, t in
                ((1 << 23, "scattered", 1.0), (1 << 23, "pairwise", 2.0), (1 << 24, "scattered", 2.0),
                 (1 << 24, "pairwise", 1.0))]
        self.assertEqual(ma.decide(ma.size_times(rows), 16)["cliques"]["bands"][0], ((1 << 23) * 16, "scattered"))
        with self.assertRaisesRegex(ValueError, "more than MPICH's selection parses"):
            ma.decide(ma.size_times(rows), 256)

    def test_point_args_name_the_written_file_and_change_with_its_contents(self):
        with tempfile.TemporaryDirectory() as tmp:
            store, generic = write_inputs(tmp)
            out = os.path.join(tmp, "sel.json")
            stdout = io.StringIO()
            with redirect_stdout(stdout), redirect_stderr(io.StringIO()):
                status = ma.main([store, "--selection-json", out, "--generic", generic, "--point-args", '{"-m": "1:64"}'])
            self.assertEqual(status, 0)
            point = json.loads(stdout.getvalue())  # the JSON alone: no tables
            self.assertEqual(point["-m"], "1:64")
            self.assertEqual(point["env:MPIR_CVAR_COLL_SELECTION_TUNING_JSON_FILE"], os.path.abspath(out))
            with open(out, "a") as f:
                f.write(" ")
            self.assertNotEqual(ma.selection_point_args("{}", out)["env:TB_SELECTION_FILE_SHA256"],
                                point["env:TB_SELECTION_FILE_SHA256"])
        with redirect_stderr(io.StringIO()), self.assertRaises(SystemExit):
            ma.main(["s.jsonl", "--point-args", ""])
        with self.assertRaisesRegex(ValueError, "not a JSON object"):
            ma.selection_point_args("5", "x.json")

    def run_main(self, argv):
        """(exit status, stdout, stderr) of main, SystemExit's code for a parser error."""
        stdout, stderr = io.StringIO(), io.StringIO()
        with redirect_stdout(stdout), redirect_stderr(stderr):
            try:
                status = ma.main(argv)
            except SystemExit as e:
                status = e.code
        return status, stdout.getvalue(), stderr.getvalue()

    def test_a_row_without_a_time_above_zero_is_an_error_naming_it_and_writes_nothing(self):
        with tempfile.TemporaryDirectory() as tmp:
            generic = os.path.join(tmp, "generic.json")
            with open(generic, "w") as f:
                json.dump(GENERIC, f)
            store, out = os.path.join(tmp, "s.jsonl"), os.path.join(tmp, "sel.json")
            point = "row 2 (intra, contiguous, mpich:pairwise, 1 B): time_s"
            for value, text in ((None, "s.jsonl: tb-bench row 2 has no time_s"),
                                ("fast", f"{point} 'fast' is not a time > 0"),
                                (-1e-6, f"{point} -1e-06 is not a time > 0"),
                                (float("nan"), f"{point} nan is not a time > 0"),
                                (0, f"{point} 0 is not a time > 0")):
                rows = campaign()
                rows[1] = dict(rows[1], time_s=value)
                if value is None:
                    del rows[1]["time_s"]
                with open(store, "w") as f:
                    f.writelines(json.dumps(r) + "\n" for r in rows)
                status, stdout, stderr = self.run_main([store, "--selection-json", out, "--generic", generic])
                self.assertEqual(status, 2, value)
                self.assertIn("mpich_algorithms.py: error: " + store, stderr)
                self.assertIn(text, stderr)
                self.assertEqual(stdout, "")
                self.assertEqual(sorted(os.listdir(tmp)), ["generic.json", "s.jsonl"])  # no selection from them

    def test_bad_outputs_and_options_are_errors_before_anything_is_written(self):
        with tempfile.TemporaryDirectory() as tmp:
            store, generic = write_inputs(tmp)
            garbage = os.path.join(tmp, "garbage.txt")
            with open(garbage, "w") as f:
                f.write("garbage\n")
            adir, out = os.path.join(tmp, "adir"), os.path.join(tmp, "sel.json")
            os.mkdir(adir)
            for argv, text in (([store, "--selection-json", adir, "--generic", generic],
                                f"--selection-json {adir}: is a directory"),
                               ([store, "--selection-json", out, "--generic", generic, "--point-args", "{x"],
                                "--point-args '{x': not JSON ("),
                               ([store, "--selection-json", out, "--generic", garbage],
                                f"--generic {garbage}: not JSON ("),
                               ([store, "--selection-json", out, "--generic", generic, "--merge", garbage],
                                f"--merge {garbage}: not JSON ("),
                               ([store, "--selection-json", out, "--generic", os.path.join(tmp, "none.json")],
                                "none.json: cannot be read: No such file or directory")):
                status, stdout, stderr = self.run_main(argv)
                self.assertEqual(status, 2, argv)
                self.assertIn(text, stderr)
                self.assertNotIn("wrote", stderr)
                self.assertEqual(sorted(os.listdir(tmp)), ["adir", "garbage.txt", "generic.json", "s.jsonl"])

    def test_selection_json_needs_the_generic_tree(self):
        with redirect_stderr(io.StringIO()), self.assertRaises(SystemExit):
            ma.main(["s.jsonl", "--selection-json", "x.json"])


if __name__ == "__main__":
    unittest.main()
