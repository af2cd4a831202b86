#!/usr/bin/python3
"""Tests of the experiment runner: matrix expansion, point keys, tool arguments, launchers per
mode, skipping finished points, and every shipped definition."""
import glob
import io
import json
import os
import sys
import tempfile
import unittest
from contextlib import redirect_stdout
from unittest import mock

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import run  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))


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


class Store(unittest.TestCase):
    def test_finished_points_are_skipped(self):
        with tempfile.TemporaryDirectory() as tmp:
            definition = os.path.join(tmp, "d.json")
            with open(definition, "w") as f:
                json.dump({"name": "t", "tool": "tb-bench", "ranks": [1, 2, 3]}, f)
            store = os.path.join(tmp, "store.jsonl")
            calls = []

            def fake(defn, point, mode, mpi, options):
                calls.append(point["ranks"])
                return [{"time_s": 1.0}], 0.0, ["x"], {}

            with mock.patch.object(run, "run_point", fake), redirect_stdout(io.StringIO()):
                self.assertEqual(run.main([definition, "--store", store]), 0)
                self.assertEqual(calls, [1, 2, 3])
                # drop the last point's row: a re-run only runs that one
                with open(store) as f:
                    lines = f.readlines()
                with open(store, "w") as f:
                    f.writelines(lines[:2])
                calls.clear()
                self.assertEqual(run.main([definition, "--store", store]), 0)
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
            text = open(script).read()
            self.assertIn("#SBATCH --ntasks=4096", text)
            self.assertIn("--mode cluster", text)


class ShippedDefinitions(unittest.TestCase):
    def test_every_definition_loads_and_expands(self):
        paths = glob.glob(os.path.join(HERE, "definitions", "*.json")) + glob.glob(
            os.path.join(HERE, "definitions", "cluster", "*.json"))
        self.assertGreaterEqual(len(paths), 12)
        for p in paths:
            d = run.load_definition(p)
            self.assertTrue(run.expand(d), p)


if __name__ == "__main__":
    unittest.main()
