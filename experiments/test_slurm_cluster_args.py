"""scripts/slurm-cluster.sh: bad arguments and settings are refused before anything runs (bad ones only:
these tests never start a cluster, and stop or ask the status of a fresh empty folder at most)."""
import os
import subprocess
import tempfile
import unittest

SCRIPT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "scripts", "slurm-cluster.sh")
USAGE = "usage: " + SCRIPT + " start|stop|status [DIR]"


class SlurmClusterArguments(unittest.TestCase):
    def run_script(self, *args, **settings):
        """The script's exit status and stderr, run in a fresh empty folder (that must stay empty)
        with TB_SLURM_DIR in another."""
        with tempfile.TemporaryDirectory() as cwd, tempfile.TemporaryDirectory() as d:
            env = dict(os.environ, **{"TB_SLURM_DIR": os.path.join(d, "cluster"), **settings})
            for name in ("TB_SLURM_WAIT", "TB_SLURM_PORT", "TB_SLURM_CPUS"):
                if name not in settings:
                    env.pop(name, None)
            done = subprocess.run(["bash", SCRIPT, *args], cwd=cwd, env=env, capture_output=True, text=True,
                                  timeout=30)
            self.assertEqual((os.listdir(cwd), os.listdir(d)), ([], []))
        return done.returncode, done.stderr

    def test_an_option_is_never_taken_for_dir(self):
        for args, option in [(("stop", "--bogus"), "--bogus"), (("status", "-x"), "-x"), (("--bogus",), "--bogus"),
                             (("stop", "--bogus", "more"), "--bogus")]:
            rc, stderr = self.run_script(*args)
            self.assertEqual(rc, 2, args)
            self.assertIn(f"slurm-cluster: unknown option '{option}'", stderr)
            self.assertIn(USAGE, stderr)

    def test_extra_arguments_and_unknown_actions_are_refused(self):
        rc, stderr = self.run_script("stop", "/tmp/tb-slurm-none", "extra")
        self.assertEqual(rc, 2)
        self.assertIn("slurm-cluster: unexpected argument 'extra' (one DIR at most)", stderr)
        self.assertIn(USAGE, stderr)
        rc, stderr = self.run_script("restart")
        self.assertEqual(rc, 2)
        self.assertIn("slurm-cluster: unknown action 'restart'", stderr)

    def test_the_root_is_no_dir(self):
        for args, settings in [(("status", "/"), {}), (("status", "//"), {}), (("status", "/tmp/.."), {}),
                               (("status",), {"TB_SLURM_DIR": "/"})]:
            rc, stderr = self.run_script(*args, **settings)
            self.assertEqual(rc, 2, args)
            self.assertIn("slurm-cluster: DIR must not be /", stderr)

    def test_settings_must_be_whole_numbers(self):
        for name, value, message in [("TB_SLURM_WAIT", "abc", "TB_SLURM_WAIT='abc': use seconds > 0"),
                                     ("TB_SLURM_WAIT", "0", "TB_SLURM_WAIT='0': use seconds > 0"),
                                     ("TB_SLURM_PORT", "abc", "TB_SLURM_PORT='abc': use a port from 1 to 65534"),
                                     ("TB_SLURM_PORT", "65535", "TB_SLURM_PORT='65535': use a port"),
                                     ("TB_SLURM_CPUS", "two", "TB_SLURM_CPUS='two': use a CPU count > 0")]:
            rc, stderr = self.run_script("status", **{name: value})
            self.assertEqual(rc, 2, name)
            self.assertIn("slurm-cluster: " + message, stderr)

    def test_stop_of_a_missing_dir_still_stops_nothing(self):
        # Valid settings pass (leading zeros are decimal, not octal).
        rc, stderr = self.run_script("stop", TB_SLURM_WAIT="010", TB_SLURM_PORT="06917", TB_SLURM_CPUS="2")
        self.assertEqual((rc, stderr), (0, ""))


if __name__ == "__main__":
    unittest.main()
