#!/usr/bin/python3
"""Tests of the experiment runner: matrix expansion, point keys, tool arguments, launchers per
mode, skipping finished points, every shipped definition, tools named only by a definition
(tb-beff, tb-model, a declared tool, an unknown one) run through fake binaries, and faults: a
store with a cut last line or a partial point, and a runner killed with SIGTERM mid-point."""
import argparse
import glob
import io
import json
import os
import signal
import stat
import subprocess
import sys
import tempfile
import time
import unittest
from contextlib import redirect_stdout
from unittest import mock

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import run  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))


def fake_tool(folder, name, body):
    """An executable shell script `name` in `folder`; "$out" is the file after the last --json,
    --csv or --benchmark_out= option."""
    path = os.path.join(folder, name)
    with open(path, "w") as f:
        f.write("#!/bin/sh\nout=\nwhile [ $# -gt 0 ]; do\n  case $1 in\n"
                "    --json|--csv|--results) out=$2; shift ;;\n    --benchmark_out=*) out=${1#--benchmark_out=} ;;\n"
                "  esac\n  shift\ndone\n" + body + "\n")
    os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR)
    return path


class Expansion(unittest.TestCase):
    def test_matrix_times_ranks(self):
        d = {"name": "t", "tool": "tb-bench", "ranks": [1, 2],
             "matrix": {"--layouts": ["a", "b"], "--x": [1, 2, 3]}, "args": {"-m": "1:4"}}
        points = run.expand(d)
        self.assertEqual(len(points), 2 * 2 * 3)
        self.assertEqual(points[0], {"-m": "1:4", "ranks": 1, "--layouts": "a", "--x": 1})
        self.assertEqual(points[-1], {"-m": "1:4", "ranks": 2, "--layouts": "b", "--x": 3})

    def test_explicit_points_take_the_shared_args(self):
        d = {"name": "t", "tool": "tb-fft", "points": [{"ranks": 1, "--shape": "8,8"}, {"ranks": 2, "--shape": "16,8"}],
             "args": {"--grid": "0"}}
        self.assertEqual(run.expand(d), [{"--grid": "0", "ranks": 1, "--shape": "8,8"},
                                         {"--grid": "0", "ranks": 2, "--shape": "16,8"}])

    def test_bad_definitions(self):
        with self.assertRaises(ValueError):
            run.expand({"name": "t", "tool": "tb-fft", "ranks": [0]})
        with self.assertRaises(ValueError):
            run.expand({"name": "t", "tool": "tb-fft", "points": [{"--shape": "8,8"}]})
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
            json.dump({"name": "t", "tool": "tb-nothing", "ranks": [1]}, f)
        with self.assertRaises(ValueError):
            run.load_definition(f.name)
        os.remove(f.name)

    def test_keys_are_stable_and_distinguish_mode_and_mpi(self):
        d = {"name": "t", "tool": "tb-bench"}
        p = {"ranks": 2, "-m": "1:4"}
        self.assertEqual(run.point_key(d, p, "intra", "mpich"), run.point_key(d, dict(p), "intra", "mpich"))
        self.assertNotEqual(run.point_key(d, p, "intra", "mpich"), run.point_key(d, p, "cliques", "mpich"))
        self.assertNotEqual(run.point_key(d, p, "intra", "mpich"), run.point_key(d, p, "intra", "openmpi"))

    def test_tool_arguments(self):
        self.assertEqual(run.tool_args({"ranks": 2, "-m": "1:4", "--benchmark_min_time": "0.1", "--paper": True}),
                         ["-m", "1:4", "--benchmark_min_time=0.1", "--paper"])


class Launchers(unittest.TestCase):
    def options(self, **kw):
        o = mock.Mock(cliques=None, hosts=2, hostfile=None)
        for k, v in kw.items():
            setattr(o, k, v)
        return o

    def test_intra(self):
        cmd, env = run.launcher("intra", "mpich", 2, self.options())
        self.assertEqual(cmd, ["mpiexec.mpich", "-n", "2"])
        self.assertEqual(env, {})

    def test_cliques_mpich_and_openmpi(self):
        cmd, env = run.launcher("cliques", "mpich", 4, self.options(cliques=2))
        self.assertEqual(env["MPIR_CVAR_NUM_CLIQUES"], "2")
        self.assertEqual(env["UCX_TLS"], "self,tcp")
        self.assertEqual(env["TB_NUM_NODES"], "2")
        cmd, env = run.launcher("cliques", "openmpi", 4, self.options())
        self.assertIn("self,tcp", cmd)
        self.assertEqual(env["TB_NUM_NODES"], "4")

    def test_netns_uses_hydra_into_the_namespaces(self):
        cmd, env = run.launcher("netns", "mpich", 2, self.options(hosts=3))
        self.assertIn("tbhost1,tbhost2,tbhost3", cmd)
        self.assertIn("-launcher-exec", cmd)
        self.assertEqual(env["UCX_TLS"], "self,tcp")
        with self.assertRaises(ValueError):
            run.launcher("netns", "openmpi", 2, self.options())

    def test_cluster_hostfile(self):
        cmd, _ = run.launcher("cluster", "mpich", 8, self.options(hostfile="hosts"))
        self.assertEqual(cmd[:3], ["mpiexec.mpich", "-f", "hosts"])

    def test_the_patched_mpich_starts_with_its_own_hydra_and_cliques(self):
        with tempfile.TemporaryDirectory() as tmp, mock.patch.object(run.launch, "ROOT", tmp):
            with self.assertRaisesRegex(ValueError, "scripts/build.sh mpich-patched"):
                run.launcher("intra", "mpich-patched", 2, self.options())
            os.makedirs(os.path.join(tmp, "build", "mpich-patched"))
            with open(os.path.join(tmp, "build", "mpich-patched", "tb-mpich-prefix"), "w") as f:
                f.write("/cache/key/install\n")
            cmd, env = run.launcher("cliques", "mpich-patched", 2, self.options())
        self.assertEqual(cmd, ["/cache/key/install/bin/mpiexec", "-n", "2"])
        self.assertEqual(env["MPIR_CVAR_NUM_CLIQUES"], "2")


class PointsPerMpi(unittest.TestCase):
    def test_a_point_naming_its_mpi_builds_runs_only_with_them(self):
        points = [{"ranks": 2}, {"ranks": 2, "env:X": "1", "mpi": ["mpich-patched"]}]
        self.assertEqual(run.for_mpi(points, "mpich"), [{"ranks": 2}])
        self.assertEqual(run.for_mpi(points, "mpich-patched"), points)

    def test_an_unknown_build_is_an_error(self):
        with self.assertRaisesRegex(ValueError, "list of MPI builds"):
            run.for_mpi([{"ranks": 2, "mpi": "mpich"}], "mpich")
        with self.assertRaisesRegex(ValueError, "list of MPI builds"):
            run.for_mpi([{"ranks": 2, "mpi": ["mvapich"]}], "mpich")


class Store(unittest.TestCase):
    def test_finished_points_are_skipped(self):
        with tempfile.TemporaryDirectory() as tmp:
            definition = os.path.join(tmp, "d.json")
            with open(definition, "w") as f:
                json.dump({"name": "t", "tool": "tb-bench", "ranks": [1, 2, 3]}, f)
            store = os.path.join(tmp, "store.jsonl")
            fake_tool(tmp, "tb-bench", "exit 0")  # run.py checks that the binary exists
            calls = []

            def fake(defn, point, mode, mpi, options):
                calls.append(point["ranks"])
                return [{"time_s": 1.0}], 0.0, ["x"], {}

            with mock.patch.object(run, "run_point", fake), redirect_stdout(io.StringIO()):
                self.assertEqual(run.main([definition, "--store", store, "--bin", tmp]), 0)
                self.assertEqual(calls, [1, 2, 3])
                # drop the last point's row: a re-run only runs that one
                with open(store) as f:
                    lines = f.readlines()
                with open(store, "w") as f:
                    f.writelines(lines[:2])
                calls.clear()
                self.assertEqual(run.main([definition, "--store", store, "--bin", tmp]), 0)
                self.assertEqual(calls, [3])
            with open(store) as f:
                rows = [json.loads(line) for line in f]
            self.assertEqual([r["ranks"] for r in rows], [1, 2, 3])
            self.assertTrue(all(r["experiment"] == "t" and r["mode"] == "intra" for r in rows))

    def test_slurm_script(self):
        with tempfile.TemporaryDirectory() as tmp:
            script = os.path.join(tmp, "job.sbatch")
            with redirect_stdout(io.StringIO()):
                run.main([os.path.join(HERE, "definitions", "cluster", "fig7_pencil_strong.json"), "--mode", "cluster",
                          "--slurm", script])
            with open(script) as f:
                text = f.read()
            self.assertIn("#SBATCH --ntasks=4096", text)
            self.assertIn("--mode cluster", text)
            self.assertNotIn("--args", text)
            with redirect_stdout(io.StringIO()):
                run.main([os.path.join(HERE, "definitions", "cluster", "fig7_pencil_strong.json"), "--mode", "cluster",
                          "--slurm", script, "--args", '{"--max-seconds": "5"}'])
            with open(script) as f:
                self.assertIn("""--args '{"--max-seconds": "5"}'""", f.read())


class ShippedDefinitions(unittest.TestCase):
    def test_every_definition_loads_and_expands(self):
        paths = glob.glob(os.path.join(HERE, "definitions", "*.json")) + glob.glob(
            os.path.join(HERE, "definitions", "cluster", "*.json"))
        self.assertGreaterEqual(len(paths), 12)
        for p in paths:
            d = run.load_definition(p)
            self.assertTrue(run.expand(d), p)


class ToolAgnostic(unittest.TestCase):
    """Any tool a definition names: the table's tools, declared ones, results shapes."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp()
        self.store = os.path.join(self.tmp, "store.jsonl")

    def tearDown(self):
        import shutil
        shutil.rmtree(self.tmp)

    def definition(self, **d):
        path = os.path.join(self.tmp, "d.json")
        with open(path, "w") as f:
            json.dump({"name": "t", **d}, f)
        return path

    def run_main(self, *argv):
        """run.main with the fake tools in self.tmp; MPI jobs start without mpiexec (the launcher's
        prefix is dropped, its environment kept)."""
        real = run.launch.launcher

        def no_mpiexec(mode, mpi, ranks, options):
            return [], real(mode, mpi, ranks, options)[1]
        no_mpiexec_patch = mock.patch.object(run.launch, "launcher", no_mpiexec)
        out, err = io.StringIO(), io.StringIO()
        with no_mpiexec_patch, redirect_stdout(out), mock.patch.object(sys, "stderr", err):
            status = run.main(list(argv) + ["--store", self.store, "--bin", self.tmp])
        return status, out.getvalue(), err.getvalue()

    def rows(self):
        with open(self.store) as f:
            return [json.loads(line) for line in f]

    def test_the_table_covers_every_tool_of_the_build(self):
        for tool in ("tb-bench", "tb-redistribute", "tb-fft", "tb-fftw-mpi", "tb-beff", "tb-ptrans", "tb-model"):
            spec = run.launch.tool_spec(tool)
            self.assertIn(spec["format"], run.launch.FORMATS, tool)
        self.assertEqual(run.launch.tool_spec("tb-bench")["format"], "benchmark")
        self.assertFalse(run.launch.tool_spec("tb-model")["mpi"])
        self.assertEqual(run.launch.output_args(run.launch.tool_spec("tb-bench"), "f"),
                         ["--benchmark_out=f", "--benchmark_out_format=json"])
        self.assertEqual(run.launch.output_args(run.launch.tool_spec("tb-beff"), "f"), ["--json", "f"])

    def test_unknown_tool_is_a_clear_error(self):
        path = self.definition(tool="tb-nothing", ranks=[1])
        with self.assertRaisesRegex(ValueError, r"unknown tool 'tb-nothing'.*tb-beff.*\"output\": \"--json\""):
            run.load_definition(path)
        status, _, err = self.run_main(path)
        self.assertEqual(status, 2)
        self.assertIn("unknown tool 'tb-nothing'", err)

    def test_a_missing_binary_is_a_clear_error(self):
        status, out, err = self.run_main(self.definition(tool="tb-ptrans", ranks=[1]))
        self.assertEqual(status, 2)
        self.assertIn("tb-ptrans: no executable", err)
        self.assertIn("scripts/build.sh mpich", err)
        self.assertFalse(os.path.exists(self.store))
        # --list needs no binary
        status, out, _ = self.run_main(self.definition(tool="tb-ptrans", ranks=[1]), "--list")
        self.assertEqual(status, 0)
        self.assertIn("[to run]", out)

    def test_beff_rows_per_message_size(self):
        fake_tool(self.tmp, "tb-beff", """cat > "$out" <<'J'
{"metadata": {"mpi_library": "fake"}, "results": [
 {"tool": "tb-beff", "bytes": 1, "fastest_s": 1e-6, "samples_s": [1e-6], "beff_bytes_per_s": 1e9},
 {"tool": "tb-beff", "bytes": 2, "fastest_s": 2e-6, "samples_s": [2e-6], "beff_bytes_per_s": 1e9}]}
J""")
        status, out, err = self.run_main(self.definition(tool="tb-beff", ranks=[2], args={"--max-exponent": 4}))
        self.assertEqual(status, 0, err)
        rows = self.rows()
        self.assertEqual([r["bytes"] for r in rows], [1, 2])
        self.assertNotIn("samples_s", rows[0])
        self.assertEqual(rows[0]["beff_bytes_per_s"], 1e9)
        self.assertEqual(rows[0]["metadata"], {"mpi_library": "fake"})
        self.assertEqual(rows[0]["tool"], "tb-beff")
        self.assertIn("--max-exponent 4 --json", rows[0]["command"])

    def test_results_shapes(self):
        meta = {"m": 1}
        self.assertEqual(run.json_rows({"metadata": meta, "results": [{"a": 1, "samples_s": [1]}, {"a": 2}]}),
                         [{"a": 1, "metadata": meta}, {"a": 2, "metadata": meta}])
        for bad in ({"metadata": meta}, {"results": 3}, {"results": [1, 2]}, {"results": {"a": 1}}):
            with self.assertRaises(RuntimeError):
                run.json_rows(bad)

    def test_benchmark_rows_of_tb_bench_and_of_another_benchmark(self):
        doc = {"context": {"c": 1}, "benchmarks": [
            {"name": "alltoallw/contiguous/native/64/manual_time", "real_time": 2.0, "cpu_time": 1.0, "time_unit": "us",
             "bytes_per_second": 5.0, "label": "p"},
            {"name": "BM_Pack/64", "real_time": 3.0, "cpu_time": 3.0, "time_unit": "ms", "bytes_per_second": 7.0,
             "iterations": 10},
            {"name": "BM_Pack/64_mean", "run_type": "aggregate", "real_time": 3.0, "cpu_time": 3.0}]}
        rows = run.benchmark_rows(doc)
        self.assertEqual(len(rows), 2)
        self.assertEqual(rows[0], {"kind": "alltoallw", "layout": "contiguous", "algorithm": "native",
                                   "bytes_per_peer": 64, "time_s": 2e-6, "median_s": None, "bytes_per_second": 5.0,
                                   "path": "p", "metadata": {"c": 1}})
        self.assertEqual(rows[1]["name"], "BM_Pack/64")
        self.assertAlmostEqual(rows[1]["time_s"], 3e-3)
        self.assertEqual(rows[1]["iterations"], 10)

    def test_model_runs_without_mpiexec_and_its_csv_becomes_rows(self):
        fake_tool(self.tmp, "tb-model", """printf 'pattern,ranks,algorithm,total_s\\n"a, b",2,native,1.5e-06\\n' > "$out" """)
        path = self.definition(tool="tb-model", matrix={"--shape": ["8,8,8", "16,16,16"]}, args={"--grid": 2})
        d = run.load_definition(path)
        self.assertEqual([p["ranks"] for p in run.expand(d)], [1, 1])
        cmd, env = run.launch.command(run.tool_spec(d), "tb-model", ["--grid", "2"], "cliques", "mpich", 1,
                                      mock.Mock(cliques=None))
        self.assertEqual((cmd, env), (["tb-model", "--grid", "2"], {}))
        status, out, err = self.run_main(path)
        self.assertEqual(status, 0, err)
        rows = self.rows()
        self.assertEqual(len(rows), 2)
        self.assertEqual(rows[0]["algorithm"], "native")
        self.assertEqual(rows[0]["pattern"], "a, b")
        self.assertEqual(rows[0]["total_s"], 1.5e-6)
        self.assertEqual(rows[0]["ranks"], 2)  # the tool's own column; the store's is the point's
        self.assertEqual(rows[0]["point"]["ranks"], 1)
        self.assertTrue(rows[0]["command"].startswith(os.path.join(self.tmp, "tb-model")))
        with self.assertRaisesRegex(ValueError, "not an MPI program"):
            run.expand({"name": "t", "tool": "tb-model", "ranks": [2]})

    def test_a_declared_tool_with_env_and_overrides(self):
        fake_tool(self.tmp, "my-tool", """echo "{\\"metadata\\": {}, \\"results\\": [{\\"nodes\\": \\"$TB_NUM_NODES\\"}]}" > "$out" """)
        path = self.definition(tool="my-tool", output="--results", mpi=True, ranks=[2],
                               matrix={"env:TB_NUM_NODES": [1, 2]}, args={"-m": "1:16M"})
        status, out, err = self.run_main(path, "--mode", "cliques", "--args", '{"-m": "1:64"}')
        self.assertEqual(status, 0, err)
        rows = self.rows()
        self.assertEqual([r["nodes"] for r in rows], ["1", "2"])  # the point's env wins over the mode's
        self.assertEqual(rows[0]["environment"]["TB_NUM_NODES"], "1")
        self.assertEqual(rows[0]["environment"]["MPIR_CVAR_NUM_CLIQUES"], "2")
        self.assertEqual(rows[0]["point"]["-m"], "1:64")
        self.assertIn("--results", rows[0]["command"])
        # an override that makes points equal runs them once
        d = run.load_definition(path)
        self.assertEqual(len(run.expand(d, {"env:TB_NUM_NODES": 1})), 1)

    def test_ranks_runs_every_point_at_each_given_rank_count(self):
        d = {"name": "t", "tool": "tb-bench", "points": [{"ranks": 2, "-m": "1:4"},
                                                         {"ranks": 2, "-m": "1:4", "env:X": "1", "mpi": ["mpich"]}]}
        points = run.expand(d, None, [4, 16])
        self.assertEqual([(p["ranks"], "env:X" in p) for p in points], [(4, False), (4, True), (16, False), (16, True)])
        self.assertEqual(run.for_mpi(points, "openmpi"), [points[0], points[2]])
        self.assertEqual(run.expand(d, None, [2]), run.expand(d))
        with self.assertRaisesRegex(ValueError, "--ranks does not apply"):
            run.expand({"name": "t", "tool": "tb-model"}, None, [2])
        with self.assertRaisesRegex(ValueError, "several rank counts"):
            run.expand({"name": "w", "tool": "tb-bench", "points": [{"ranks": 2, "-m": "1:4"}, {"ranks": 4, "-m": "1:8"}]},
                       None, [16])
        for bad in ("0", "2,2", "two", "4,"):
            with self.assertRaises(argparse.ArgumentTypeError, msg=bad):
                run.rank_list(bad)
        self.assertEqual(run.rank_list("16,4"), [16, 4])

    def test_bad_declarations(self):
        for bad in ({"output": "json"}, {"output": "--json", "mpi": "no"}, {"output": "--json", "format": "xml"}):
            with self.assertRaises(ValueError):
                run.launch.tool_spec("my-tool", bad)

    def test_a_failing_tool_fails_its_point_only(self):
        fake_tool(self.tmp, "tb-ptrans", 'echo broken >&2; exit 3')
        status, out, err = self.run_main(self.definition(tool="tb-ptrans", ranks=[1, 2]))
        self.assertEqual(status, 1)
        self.assertIn("failed (3)", err)
        self.assertIn("broken", err)
        self.assertIn("2 failed point(s)", out)


    def test_results_of_the_wrong_shape_fail_the_point(self):
        fake_tool(self.tmp, "tb-redistribute", """echo '{"metadata": {}}' > "$out" """)
        fake_tool(self.tmp, "tb-bench", """echo '{"context": {}}' > "$out" """)
        status, _, err = self.run_main(self.definition(tool="tb-redistribute", ranks=[1]))
        self.assertEqual(status, 1)
        self.assertIn("has no 'results'", err)
        status, _, err = self.run_main(self.definition(tool="tb-bench", ranks=[1]))
        self.assertEqual(status, 1)
        self.assertIn("not the benchmark it should be", err)
        self.assertFalse(os.path.exists(self.store))


class FinalizeHang(unittest.TestCase):
    def test_complete_results_then_a_hang_is_stopped_and_marked(self):
        with tempfile.TemporaryDirectory() as tmp:
            fake_tool(tmp, "tb-fft", """echo '{"metadata": {}, "results": [{"a": 1}]}' > "$out"; sleep 60""")
            definition = os.path.join(tmp, "d.json")
            with open(definition, "w") as f:
                json.dump({"name": "t", "tool": "tb-fft", "ranks": [1]}, f)
            store = os.path.join(tmp, "store.jsonl")
            with mock.patch.object(run.launch, "launcher", lambda *a: ([], {})), redirect_stdout(io.StringIO()):
                self.assertEqual(run.main([definition, "--store", store, "--bin", tmp, "--finalize-grace", "0.5"]), 0)
            with open(store) as f:
                rows = [json.loads(line) for line in f]
            self.assertEqual(rows[0]["finalize_hang"], True)

    def test_timeout(self):
        with self.assertRaises(subprocess.TimeoutExpired):
            run.launch.run_command(["sleep", "30"], {}, timeout=0.3)


def group_alive(pgid):
    """Whether a process of group `pgid` is still running (zombies waiting for a reaper do not count)."""
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":
            return True
    return False


def wait_until(predicate, seconds):
    deadline = time.time() + seconds
    while time.time() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return predicate()


class StoreFaults(unittest.TestCase):
    """A store damaged by a killed runner: a cut last line, a point with only some of its rows."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp()
        self.store = os.path.join(self.tmp, "store.jsonl")
        self.definition = os.path.join(self.tmp, "d.json")
        with open(self.definition, "w") as f:
            json.dump({"name": "t", "tool": "tb-bench", "ranks": [1, 2, 3]}, f)
        fake_tool(self.tmp, "tb-bench", "exit 0")  # run.py checks that the binary exists
        self.calls = []

    def tearDown(self):
        import shutil
        shutil.rmtree(self.tmp)

    def run_main(self, *argv):
        """run.main with a fake run_point that gives two rows per point."""
        def fake(defn, point, mode, mpi, options):
            self.calls.append(point["ranks"])
            return [{"time_s": 1.0, "row": 0}, {"time_s": 2.0, "row": 1}], 0.0, ["x"], {}

        out, err = io.StringIO(), io.StringIO()
        with mock.patch.object(run, "run_point", fake), redirect_stdout(out), mock.patch.object(sys, "stderr", err):
            status = run.main([self.definition, "--store", self.store, "--bin", self.tmp] + list(argv))
        return status, out.getvalue(), err.getvalue()

    def lines(self):
        with open(self.store) as f:
            return f.readlines()

    def test_rows_carry_their_point_size_and_append(self):
        self.assertEqual(self.run_main()[0], 0)
        rows = [json.loads(line) for line in self.lines()]
        self.assertEqual(len(rows), 6)
        self.assertEqual({r["rows_in_point"] for r in rows}, {2})
        self.assertEqual(rows[0]["point_run"], rows[1]["point_run"])
        self.assertNotEqual(rows[1]["point_run"], rows[2]["point_run"])
        self.assertEqual(len(run.done_keys(self.store)), 3)

    def test_a_cut_last_line_is_reported_skipped_and_its_point_rerun(self):
        self.run_main()
        with open(self.store, "rb+") as f:  # a runner killed while writing: the last line cut short
            f.truncate(os.path.getsize(self.store) - 25)
        status, out, err = self.run_main("--list")
        self.assertEqual(status, 0)
        self.assertIn(f"{self.store}:6: skipped, not JSON", err)
        self.assertNotIn("Traceback", err)
        self.assertEqual(out.count("[done]"), 2)
        self.assertEqual(out.count("[partial, to run]"), 1)
        self.calls.clear()
        status, out, err = self.run_main()
        self.assertEqual(status, 0, err)
        self.assertEqual(self.calls, [3])
        self.assertIn(f"{self.store}:6: skipped", err)
        # the new rows start on a line of their own: the cut line stays the one bad line
        lines = self.lines()
        self.assertEqual(len(lines), 8)
        self.assertEqual([json.loads(line)["ranks"] for line in lines[6:]], [3, 3])
        self.assertEqual(len(run.done_keys(self.store, quiet=True)), 3)
        self.calls.clear()
        self.assertEqual(self.run_main()[0], 0)
        self.assertEqual(self.calls, [])

    def test_a_partial_point_is_rerun(self):
        self.run_main()
        lines = self.lines()
        with open(self.store, "w") as f:  # point 2 lost its second row
            f.writelines(lines[:3] + lines[4:])
        self.assertEqual(len(run.done_keys(self.store)), 2)
        self.calls.clear()
        status, out, err = self.run_main()
        self.assertEqual(status, 0, err)
        self.assertIn("1 only partly there", out)
        self.assertEqual(self.calls, [2])
        self.assertEqual(len(run.done_keys(self.store)), 3)

    def test_rows_of_an_older_store_count_as_before(self):
        self.run_main()
        old = []
        for line in self.lines()[:3]:  # points 1 and 2 (one row of it) without the new fields
            row = json.loads(line)
            del row["rows_in_point"], row["point_run"]
            old.append(json.dumps(row) + "\n")
        with open(self.store, "w") as f:
            f.writelines(old)
        self.calls.clear()
        self.assertEqual(self.run_main()[0], 0)
        self.assertEqual(self.calls, [3])

    def test_the_report_skips_cut_lines_and_partial_points(self):
        try:
            sys.path.insert(0, os.path.join(os.path.dirname(HERE), "analysis"))
            import report
        except ImportError as e:  # pandas and matplotlib: Debian's /usr/bin/python3
            self.skipTest(f"analysis/report.py needs {e.name}")
        finally:
            sys.path.pop(0)
        self.run_main()
        with open(self.store, "rb+") as f:
            f.truncate(os.path.getsize(self.store) - 25)
        with open(self.store, "a") as f:
            f.write("\n[1, 2]\n")
        err = io.StringIO()
        with mock.patch.object(sys, "stderr", err):
            df = report.load(self.store)
        self.assertEqual(sorted(df["ranks"]), [1, 1, 2, 2])  # point 3 has one of its two rows: left out
        self.assertIn(f"{self.store}:6: skipped, not JSON", err.getvalue())
        self.assertIn(f"{self.store}:7: skipped, not a JSON object", err.getvalue())
        self.assertIn("1 point(s) stored only partly", err.getvalue())


class Interrupt(unittest.TestCase):
    """SIGTERM to a running runner: its job's process group and temporary directory go, nothing
    partial counts as done, and a rerun finishes."""

    def test_sigterm_stops_the_job_and_a_rerun_completes(self):
        with tempfile.TemporaryDirectory() as tmp:
            tool = fake_tool(tmp, "slow-tool", """
if [ "$SLOW" = 1 ] && [ ! -e "$TB_TEST_NOSLEEP" ]; then echo $$ > "$TB_TEST_PIDFILE"; sleep 30 & wait; fi
echo '{"metadata": {}, "results": [{"a": 1}, {"a": 2}, {"a": 3}]}' > "$out" """)
            definition = os.path.join(tmp, "d.json")
            with open(definition, "w") as f:
                json.dump({"name": "fault", "tool": tool, "output": "--json", "mpi": False,
                           "points": [{"env:SLOW": 0}, {"env:SLOW": 1}]}, f)
            store = os.path.join(tmp, "store.jsonl")
            tmpdir = os.path.join(tmp, "tmpdir")
            os.mkdir(tmpdir)
            pidfile, nosleep = os.path.join(tmp, "pid"), os.path.join(tmp, "nosleep")
            env = {**os.environ, "TMPDIR": tmpdir, "TB_TEST_PIDFILE": pidfile, "TB_TEST_NOSLEEP": nosleep}
            argv = [sys.executable, os.path.join(HERE, "run.py"), definition, "--store", store]
            proc = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            try:
                self.assertTrue(wait_until(lambda: os.path.exists(pidfile) and os.path.getsize(pidfile) > 0, 5),
                                "the slow point did not start")
                with open(pidfile) as f:
                    pgid = int(f.read())  # the tool leads its own process group
                self.assertTrue(group_alive(pgid))
                proc.send_signal(signal.SIGTERM)
                out, err = proc.communicate(timeout=8)
            finally:
                if proc.poll() is None:
                    proc.kill()
                    proc.wait()
            self.assertEqual(proc.returncode, 128 + signal.SIGTERM, err)
            self.assertIn("interrupted (SIGTERM) during point [2/2] env:SLOW=1", err)
            self.assertNotIn("Traceback", err)
            self.assertTrue(wait_until(lambda: not group_alive(pgid), 10),  # SIGKILLed: slow only on a loaded host
                            "the job's process group is still running")
            self.assertEqual(os.listdir(tmpdir), [])
            points = run.expand(run.load_definition(definition))
            keys = [run.point_key(run.load_definition(definition), p, "intra", "mpich") for p in points]
            done, partial = run.store_state(store)
            self.assertEqual((done, partial), ({keys[0]}, set()))
            # the rerun runs only the interrupted point
            open(nosleep, "w").close()
            rerun = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=10)
            self.assertEqual(rerun.returncode, 0, rerun.stderr)
            self.assertIn("1 already in", rerun.stdout)
            self.assertEqual(run.done_keys(store), set(keys))
            self.assertEqual(os.listdir(tmpdir), [])

    def test_a_signal_during_the_append_waits_until_the_rows_are_on_disk(self):
        with tempfile.TemporaryDirectory() as tmp:
            store = os.path.join(tmp, "store.jsonl")
            real_write = os.write

            def write_after_a_kill(fd, data):
                os.kill(os.getpid(), signal.SIGTERM)  # held back until the append is done
                return real_write(fd, data)

            rows = [{"key": "k", "rows_in_point": 3, "point_run": "r", "i": i, "pad": "x" * 100000} for i in range(3)]
            with run.launch.sigterm_interrupts(), mock.patch.object(run.os, "write", write_after_a_kill):
                with self.assertRaises(KeyboardInterrupt):
                    run.append_rows(store, rows)
            self.assertEqual(run.done_keys(store), {"k"})

    def test_a_job_that_ignores_sigterm_is_killed(self):
        with tempfile.TemporaryDirectory() as tmp:
            pidfile = os.path.join(tmp, "pid")
            cmd = ["sh", "-c", f"trap '' TERM; echo $$ > {pidfile}; sleep 30 & wait"]
            with mock.patch.object(run.launch, "STOP_GRACE", 0.5):
                started = time.time()
                with self.assertRaises(subprocess.TimeoutExpired):
                    run.launch.run_command(cmd, {}, timeout=0.5)
            self.assertLess(time.time() - started, 5)
            with open(pidfile) as f:
                pgid = int(f.read())
            self.assertTrue(wait_until(lambda: not group_alive(pgid), 3))


class LaunchCommandLine(unittest.TestCase):
    """experiments/launch.py, the entry point of the campaign scripts."""

    def launch(self, *argv):
        out, err = io.StringIO(), io.StringIO()
        with redirect_stdout(out), mock.patch.object(sys, "stderr", err):
            status = run.launch.main(list(argv))
        return status, out.getvalue().strip(), err.getvalue()

    def test_print_the_command_of_each_kind_of_tool(self):
        with tempfile.TemporaryDirectory() as tmp:
            for name in ("tb-bench", "tb-beff", "tb-model"):
                fake_tool(tmp, name, "exit 0")
            status, out, _ = self.launch("--print", "--bin", tmp, "-n", "2", "--out", "o.json", "tb-bench", "-m", "1:1")
            self.assertEqual(status, 0)
            self.assertEqual(out, f"mpiexec.mpich -n 2 {tmp}/tb-bench -m 1:1 --benchmark_out=o.json "
                                  "--benchmark_out_format=json")
            _, out, _ = self.launch("--print", "--bin", tmp, "--mpi", "openmpi", "-n", "2", "--env", "TB_NUM_NODES=2",
                                    "--out", "b.json", "tb-beff", "--fit-out", "h.json")
            self.assertIn("TB_NUM_NODES=2", out)
            self.assertIn("OMPI_ALLOW_RUN_AS_ROOT=1", out)
            self.assertTrue(out.endswith(f"mpiexec.openmpi --oversubscribe -n 2 {tmp}/tb-beff --fit-out h.json "
                                         "--json b.json"), out)
            _, out, _ = self.launch("--print", "--bin", tmp, "--out", "p.csv", "tb-model", "--shape", "8,8,8")
            self.assertEqual(out, f"{tmp}/tb-model --shape 8,8,8 --csv p.csv")
            status, _, err = self.launch("--print", "--bin", tmp, "-n", "2", "tb-model")
            self.assertEqual(status, 2)
            self.assertIn("not an MPI program", err)
            _, out, _ = self.launch("--print", "-n", "2", "--output=--json", "--out", "f.json", "/usr/bin/python3",
                                    "bench.py", "--shape", "8,8,8")
            self.assertEqual(out, "mpiexec.mpich -n 2 /usr/bin/python3 bench.py --shape 8,8,8 --json f.json")
            status, _, err = self.launch("--print", "--bin", tmp, "tb-missing")
            self.assertEqual(status, 2)
            self.assertIn("no executable", err)

    def test_runs_a_tool_and_returns_its_status(self):
        with tempfile.TemporaryDirectory() as tmp:
            fake_tool(tmp, "tb-model", 'echo "a,b" > "$out"; exit 0')
            fake_tool(tmp, "tb-ptrans", "exit 5")
            out = os.path.join(tmp, "m.csv")
            self.assertEqual(self.launch("--bin", tmp, "--out", out, "tb-model")[0], 0)
            self.assertTrue(os.path.exists(out))
            self.assertEqual(self.launch("--bin", tmp, "--no-mpi", "tb-ptrans")[0], 5)


PLATFORMS = os.path.join(HERE, "platforms")


class SmpiPlatforms(unittest.TestCase):
    """smpi mode's platform reading and hostfiles (experiments/launch.py)."""

    def test_the_shipped_platforms_have_their_hosts_and_cores(self):
        expected = {"xc40-dragonfly.xml": (768, 32), "fat-tree.xml": (512, 32), "torus.xml": (512, 32),
                    "this-host.xml": (1, 2), "smpi-ci-cluster.xml": (2, 2)}
        for name, (hosts, cores) in expected.items():
            found = run.launch.platform_hosts(os.path.join(PLATFORMS, name))
            self.assertEqual(len(found), hosts, name)
            self.assertEqual({c for _, c in found}, {cores}, name)
            self.assertEqual(found[0][0], "node-0", name)

    def test_hostfile_fills_nodes_in_order_and_refuses_what_does_not_fit(self):
        text = run.launch.smpi_hostfile(os.path.join(PLATFORMS, "xc40-dragonfly.xml"), 36)
        self.assertEqual(text.splitlines(), ["node-0"] * 32 + ["node-1"] * 4)
        with self.assertRaisesRegex(ValueError, "3 ranks do not fit on its 2 cores"):
            run.launch.smpi_hostfile(os.path.join(PLATFORMS, "this-host.xml"), 3)
        text = run.launch.smpi_hostfile(os.path.join(PLATFORMS, "torus.xml"), 3, per_node=1)
        self.assertEqual(text.split(), ["node-0", "node-1", "node-2"])
        with self.assertRaisesRegex(ValueError, "2 ranks do not fit on its 1 cores at 1 per node"):
            run.launch.smpi_hostfile(os.path.join(PLATFORMS, "this-host.xml"), 2, per_node=1)

    def test_radicals_and_bad_files(self):
        self.assertEqual(run.launch.expand_radical("0-2,5"), [0, 1, 2, 5])
        with self.assertRaisesRegex(ValueError, "radical"):
            run.launch.expand_radical("a-b")
        with self.assertRaisesRegex(ValueError, "cannot be read"):
            run.launch.platform_hosts(os.path.join(PLATFORMS, "no-such.xml"))
        with tempfile.NamedTemporaryFile("w", suffix=".xml") as f:
            f.write("<platform><zone id='z'/></platform>")
            f.flush()
            with self.assertRaisesRegex(ValueError, "no <cluster> or <host>"):
                run.launch.platform_hosts(f.name)
            f.write("<oops")
            f.flush()
            with self.assertRaisesRegex(ValueError, "not an XML platform file"):
                run.launch.platform_hosts(f.name)

    def test_launcher_writes_the_hostfile_and_skips_compute_on_request(self):
        with tempfile.TemporaryDirectory() as tmp:
            options = mock.Mock(platform=os.path.join(PLATFORMS, "fat-tree.xml"), compute="off", smpi_dir=tmp,
                                bin=tmp, ranks_per_node=None)
            with self.assertRaisesRegex(ValueError, "scripts/build.sh smpi"):
                run.launcher("smpi", "smpi", 40, options)
            fake_tool(tmp, "tb-smpirun", "exit 0")
            cmd, env = run.launcher("smpi", "smpi", 40, options)
            self.assertEqual(cmd, [os.path.join(tmp, "tb-smpirun"), "--cfg=smpi/simulate-computation:no", "-np", "40"])
            self.assertEqual(env["TB_SMPI_PLATFORM"], options.platform)
            with open(env["TB_SMPI_HOSTFILE"]) as f:
                self.assertEqual(f.read().split(), ["node-0"] * 32 + ["node-1"] * 8)
            with self.assertRaisesRegex(ValueError, "smpi mode only"):
                run.launcher("intra", "smpi", 2, options)
            with self.assertRaisesRegex(ValueError, "smpi mode only"):
                run.launcher("smpi", "mpich", 2, options)

    def test_a_point_on_another_platform_is_another_point(self):
        d, p = {"name": "t", "tool": "tb-redistribute"}, {"ranks": 4}
        a = run.point_key(d, p, "smpi", "smpi", {"platform": "a.xml"})
        self.assertNotEqual(a, run.point_key(d, p, "smpi", "smpi", {"platform": "b.xml"}))
        self.assertEqual(run.point_key(d, p, "intra", "mpich", {}), run.point_key(d, p, "intra", "mpich"))


class SmpiMode(ToolAgnostic):
    """run.py --mode smpi end to end with a fake tb-smpirun that runs the program itself."""

    def setUp(self):
        super().setUp()
        # The fake tb-smpirun drops its options and -np N and runs the program with its arguments.
        fake_tool(self.tmp, "tb-smpirun", "")
        with open(os.path.join(self.tmp, "tb-smpirun"), "w") as f:
            f.write('#!/bin/sh\nwhile [ "$1" != -np ]; do shift; done\nshift 2\nexec "$@"\n')
        fake_tool(self.tmp, "tb-redistribute", 'echo "$TB_SMPI_PLATFORM $*" > "$out.args"; '
                  'echo \'{"metadata": {}, "results": [{"method": "native", "verified": "off"}]}\' > "$out"; '
                  'cp "$out.args" "$out.args.kept"; cat "$TB_SMPI_HOSTFILE" | wc -l >> "$out.args.kept"')
        self.platform = os.path.join(PLATFORMS, "xc40-dragonfly.xml")

    def run_smpi(self, *argv):
        out, err = io.StringIO(), io.StringIO()
        with redirect_stdout(out), mock.patch.object(sys, "stderr", err):
            status = run.main(list(argv) + ["--store", self.store, "--bin", self.tmp])
        return status, out.getvalue(), err.getvalue()

    def test_rows_carry_the_mode_the_platform_and_verification_off(self):
        d = self.definition(tool="tb-redistribute", ranks=[4, 40], args={"--shape": "8,8"})
        status, out, err = self.run_smpi(d, "--mode", "smpi", "--platform", self.platform, "--compute", "off")
        self.assertEqual(status, 0, err)
        rows = self.rows()
        self.assertEqual([r["ranks"] for r in rows], [4, 40])
        for r in rows:
            self.assertEqual((r["mode"], r["mpi"], r["platform"]), ("smpi", "smpi", "experiments/platforms/xc40-dragonfly.xml"))
            self.assertEqual((r["smpi_compute"], r["smpi_arrays"], r["verification"]), ("off", "shared", "off"))
            self.assertIn("--smpi-shared-arrays", r["command"])
            self.assertIn("--cfg=smpi/simulate-computation:no", r["command"])
        self.assertIn("platform experiments/platforms/xc40-dragonfly.xml", out)
        # Private arrays are other points, verified, without the flag.
        status, _, err = self.run_smpi(d, "--mode", "smpi", "--platform", self.platform, "--smpi-arrays", "private")
        self.assertEqual(status, 0, err)
        private = self.rows()[2:]
        self.assertEqual([(r["smpi_arrays"], r["verification"]) for r in private], [("private", "on")] * 2)
        self.assertNotIn("--smpi-shared-arrays", private[0]["command"])
        # One rank per node: other points again, the setting in the rows.
        status, _, err = self.run_smpi(d, "--mode", "smpi", "--platform", self.platform, "--ranks-per-node", "1")
        self.assertEqual(status, 0, err)
        self.assertEqual([r.get("smpi_ranks_per_node") for r in self.rows()[4:]], [1, 1])

    def test_bad_smpi_options_are_clear_errors(self):
        d = self.definition(tool="tb-redistribute", ranks=[4], args={})
        for argv, message in [((), "smpi mode needs --platform"),
                              (("--platform", "nowhere.xml"), "nowhere.xml: no such platform file"),
                              (("--platform", self.platform, "--mpi", "mpich"), "smpi mode runs the smpi build")]:
            with self.assertRaises(SystemExit), mock.patch.object(sys, "stderr", io.StringIO()) as err:
                run.main([d, "--mode", "smpi", *argv, "--store", self.store])
            self.assertIn(message, err.getvalue())
        with self.assertRaises(SystemExit), mock.patch.object(sys, "stderr", io.StringIO()) as err:
            run.main([d, "--platform", self.platform, "--store", self.store])
        self.assertIn("--platform and --ranks-per-node are for smpi mode", err.getvalue())
        big = self.definition(tool="tb-redistribute", ranks=[3], args={})
        status, _, err = self.run_smpi(big, "--mode", "smpi", "--platform", os.path.join(PLATFORMS, "this-host.xml"))
        self.assertEqual(status, 2)
        self.assertIn("3 ranks do not fit", err)

    def test_the_report_keeps_simulated_rows_apart(self):
        sys.path.insert(0, os.path.join(run.ROOT, "analysis"))
        import pandas as pd
        import report
        df = report.with_platform_modes(pd.DataFrame([
            {"mode": "intra", "platform": None}, {"mode": "smpi", "platform": "experiments/platforms/torus.xml"},
            {"mode": "smpi", "platform": "/x/this-host.xml"}]))
        self.assertEqual(list(df["mode"]), ["intra", "smpi:torus", "smpi:this-host"])


if __name__ == "__main__":
    unittest.main()
