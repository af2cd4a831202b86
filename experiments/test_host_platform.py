"""experiments/host_platform.py: a platform of this host whose SMPI factors reproduce measured messages."""
import contextlib
import io
import json
import os
import sys
import tempfile
import unittest

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, here)
import host_platform  # noqa: E402
import platform_network  # noqa: E402

# A measured curve with what real ones have: a latency-bound start, a size slower than the
# Hockney line (out of cache) and one faster than the line through its neighbours.
CURVE = [[1, 0.52e-6], [64, 0.50e-6], [1024, 0.74e-6], [65536, 6.1e-6], [1048576, 57e-6], [16777216, 3173e-6]]
ENGINE_PROP = '<prop id="tb_datatype_engine_bandwidth_by_bytes"'


def calibration(curve=CURVE):
    return {"host": {"message_seconds_by_bytes": curve},
            "calibration": {"mpi_library": "MPICH 4.0.2 (ch4:ucx)", "timestamp_utc": "2026-12-03T22:55:02Z"},
            "library": {"copy_bandwidth_bytes_per_s": 1.4e9}}


def written(directory, name, document):
    """The path of `document` written as JSON into directory/name."""
    path = os.path.join(directory, name)
    with open(path, "w") as f:
        json.dump(document, f)
    return path


def with_extras(calibration, path):
    """The platform as host_platform.py --noncontiguous-extras writes it."""
    return host_platform.platform(calibration, path, 2, "cmd", extras=host_platform.extras_table(calibration, path))


class HostPlatform(unittest.TestCase):
    def test_every_measured_size_takes_its_measured_time(self):
        latency, bandwidth, lat_factor, bw_factor = host_platform.fit(host_platform.message_curve(calibration(), "c"))
        self.assertEqual(latency, 0.52e-6)
        self.assertEqual([t for t, _ in bw_factor], [0, 64, 1024, 65536, 1048576, 16777216])
        for size, seconds in CURVE:
            self.assertAlmostEqual(host_platform.simulated_seconds(size, latency, bandwidth, lat_factor, bw_factor)
                                   / seconds, 1.0, places=9, msg=f"{size} B")
        # Between two measured sizes a message takes the smaller one's factors.
        between = host_platform.simulated_seconds(4 << 20, latency, bandwidth, lat_factor, bw_factor)
        self.assertGreater(between, 57e-6)
        self.assertLess(between, 3173e-6)

    def test_the_platform_is_read_back_by_the_model_with_the_same_factors(self):
        with tempfile.TemporaryDirectory() as d:
            path, out = written(d, "c.json", calibration()), os.path.join(d, "p.xml")
            self.assertEqual(host_platform.main([path, "--out", out, "--cores", "4"]), 0)
            c = platform_network.network(out)["cluster"]
        latency, bandwidth, lat_factor, bw_factor = host_platform.fit(host_platform.message_curve(calibration(), "c"))
        self.assertEqual((c["topology"], c["nodes"], c["cores_per_node"]), ("FLAT", 1, 4))
        self.assertAlmostEqual(c["loopback_latency_s"] / latency, 1.0, places=4)
        self.assertAlmostEqual(c["loopback_bandwidth_bytes_per_s"] / bandwidth, 1.0, places=4)
        self.assertEqual([t for t, _ in c["bandwidth_factor"]], [t for t, _ in bw_factor])
        for (_, read), (_, fitted) in zip(c["bandwidth_factor"] + c["latency_factor"], bw_factor + lat_factor):
            self.assertAlmostEqual(read / fitted, 1.0, places=5)

    def test_bad_calibrations_are_refused_by_name(self):
        with self.assertRaisesRegex(host_platform.CalibrationError, "no host.message_seconds_by_bytes"):
            host_platform.message_curve({"host": {}}, "c.json")
        with self.assertRaisesRegex(host_platform.CalibrationError, "at least 2 sizes"):
            host_platform.message_curve(calibration([[1, 1e-6]]), "c.json")
        with self.assertRaisesRegex(host_platform.CalibrationError, "has 0 s at 64 B; sizes and times must be finite"):
            host_platform.message_curve(calibration([[1, 1e-6], [64, 0]]), "c.json")
        with tempfile.TemporaryDirectory() as d:
            self.assertEqual(host_platform.main([os.path.join(d, "missing.json"), "--out", os.path.join(d, "p.xml")]), 2)
            self.assertFalse(os.path.exists(os.path.join(d, "p.xml")))

    def test_a_malformed_message_curve_is_refused_by_name_and_nothing_written(self):
        for curve, message in [([[64, float("nan")], [4096, 2e-6], [65536, 1e-5]],
                                "c.json: host.message_seconds_by_bytes has nan s at 64 B; sizes and times must be "
                                "finite and > 0"),
                               ([[64, 1e-6], [4096, float("inf")], [65536, 1e-5]], "has inf s at 4096 B"),
                               ([[float("inf"), 1e-6], [64, 1e-6]], "has 1e-06 s at inf B"),
                               ([[64, 1e-6], [64, 2e-6]], "c.json: host.message_seconds_by_bytes lists 64 B twice"),
                               ([[True, 1e-6], [4096, 2e-6]], r"must be \[\[bytes, s\], ...\], all numbers"),
                               ([["64", 1e-6], [4096, 2e-6]], "all numbers")]:
            with tempfile.TemporaryDirectory() as d:
                path, out = written(d, "c.json", calibration(curve)), os.path.join(d, "p.xml")
                stderr = io.StringIO()
                with contextlib.redirect_stderr(stderr):
                    self.assertEqual(host_platform.main([path, "--out", out]), 2)
                self.assertRegex(stderr.getvalue(), "host_platform.py: .*" + message)
                self.assertFalse(os.path.exists(out))

    def test_an_unwritable_out_or_a_bad_core_count_is_refused_by_name(self):
        with tempfile.TemporaryDirectory() as d:
            path = written(d, "c.json", calibration())
            for out, why in [(os.path.join(d, "missing", "p.xml"), "No such file"), (d, "Is a directory")]:
                stderr = io.StringIO()
                with contextlib.redirect_stderr(stderr):
                    self.assertEqual(host_platform.main([path, "--out", out]), 2)
                self.assertIn(f"host_platform.py: --out {out}: cannot be written ({why}", stderr.getvalue())
            self.assertEqual(os.listdir(d), ["c.json"])
            for cores in ("0", "100000000"):
                stderr = io.StringIO()
                with contextlib.redirect_stderr(stderr), self.assertRaises(SystemExit) as exit:
                    host_platform.main([path, "--out", os.path.join(d, "p.xml"), "--cores", cores])
                self.assertEqual(exit.exception.code, 2)
                self.assertIn(f"--cores must be from 1 to 8192 (one host's CPUs), not {cores}", stderr.getvalue())
            self.assertEqual(host_platform.main([path, "--out", os.path.join(d, "p.xml"), "--cores", "8192"]), 0)
            stderr = io.StringIO()
            with contextlib.redirect_stderr(stderr):
                self.assertEqual(host_platform.main([written(d, "list.json", [1]), "--out", os.path.join(d, "q.xml"),
                                                     "--noncontiguous-extras"]), 2)
            self.assertIn("list.json: not a JSON object", stderr.getvalue())

    def test_the_library_engine_is_a_zone_property_when_asked_for(self):
        with_table = calibration()
        with_table["library"]["bandwidth_by_bytes"] = [[262144, 1.45e9], [65536, 1.37e9]]
        text = host_platform.platform(with_table, "c", 2, "cmd", datatype_engine=True)
        self.assertIn('<prop id="tb_datatype_engine_bandwidth_by_bytes" value="65536:1.37e+09;262144:1.45e+09"/>', text)
        self.assertIn('value="1:1.4e+09"/>', host_platform.platform(calibration(), "c", 2, "cmd", datatype_engine=True))
        self.assertNotIn(ENGINE_PROP, host_platform.platform(with_table, "c", 2, "cmd"))
        no_library = calibration()
        del no_library["library"]
        self.assertNotIn(ENGINE_PROP, host_platform.platform(no_library, "c", 2, "cmd"))
        with self.assertRaisesRegex(host_platform.CalibrationError, "no library.bandwidth_by_bytes"):
            host_platform.platform(no_library, "c", 2, "cmd", datatype_engine=True)
        with tempfile.TemporaryDirectory() as d:  # the model's reader takes the platform with it
            path, out = written(d, "c.json", with_table), os.path.join(d, "p.xml")
            self.assertEqual(host_platform.main([path, "--out", out, "--datatype-engine"]), 0)
            with open(out) as f:
                self.assertIn(ENGINE_PROP, f.read())
            self.assertEqual(platform_network.network(out)["cluster"]["nodes"], 1)

    def test_a_bad_library_engine_is_refused_by_name(self):
        rates = "sizes and rates must be finite and > 0"
        for library, message in [({"bandwidth_by_bytes": [[65536, 0]]}, rates),
                                 ({"bandwidth_by_bytes": [[65536, float("inf")]]}, "has inf B/s at 65536 B; " + rates),
                                 ({"bandwidth_by_bytes": [[65536, 1e9], [65536, 2e9]]}, "lists 65536 B twice"),
                                 ({"bandwidth_by_bytes": [[True, 1e9]]}, r"must be \[\[bytes, bytes/s\], ...\]"),
                                 ({"copy_bandwidth_bytes_per_s": float("nan")}, "copy_bandwidth_bytes_per_s has nan"),
                                 ({"bandwidth_by_bytes": [[65536]]}, r"must be \[\[bytes, bytes/s\], ...\]"),
                                 ({"per_block_s": 0}, "no library.bandwidth_by_bytes"),
                                 ("fast", "no library.bandwidth_by_bytes")]:
            bad = calibration()
            bad["library"] = library
            with self.assertRaisesRegex(host_platform.CalibrationError, message):
                host_platform.platform(bad, "c.json", 2, "cmd", datatype_engine=True)

    def test_the_noncontiguous_extras_are_a_zone_property_when_asked_for(self):
        extras = calibration()
        send = [{"block_bytes": 64, "seconds_by_bytes": [[4096, 2e-6], [65536, 4.4e-5]]},
                {"block_bytes": 1024, "seconds_by_bytes": [[4096, 0], [65536, 1e-6]]}]
        recv = [{"block_bytes": 64, "seconds_by_bytes": [[4096, 1e-6]]}]
        extras["host"].update(noncontiguous_send_extra_seconds=send, noncontiguous_recv_extra_seconds=recv)
        text = with_extras(extras, "c")
        value = text.split('<prop id="tb_noncontiguous_extra_seconds" value=\'')[1].split("'/>")[0]
        self.assertEqual(json.loads(value), {
            "send": [{"block_bytes": 64.0, "seconds_by_bytes": [[4096.0, 2e-6], [65536.0, 4.4e-5]]},
                     {"block_bytes": 1024.0, "seconds_by_bytes": [[4096.0, 0.0], [65536.0, 1e-6]]}],
            "recv": [{"block_bytes": 64.0, "seconds_by_bytes": [[4096.0, 1e-6]]}]})
        self.assertNotIn(ENGINE_PROP, text)
        self.assertNotIn("tb_noncontiguous_extra_seconds\"", host_platform.platform(extras, "c", 2, "cmd"))
        with tempfile.TemporaryDirectory() as d:
            path, out = written(d, "c.json", extras), os.path.join(d, "p.xml")
            self.assertEqual(host_platform.main([path, "--out", out, "--noncontiguous-extras"]), 0)
            self.assertEqual(platform_network.network(out)["cluster"]["nodes"], 1)
            with self.assertRaises(SystemExit):  # one price per platform
                host_platform.main([path, "--out", out, "--noncontiguous-extras", "--datatype-engine"])

    def test_the_extras_of_a_message_to_itself_go_with_them_where_measured(self):
        extras = calibration()
        rows = [{"block_bytes": 64, "seconds_by_bytes": [[4096, 1e-6]]}]
        self_rows = [{"block_bytes": 64, "seconds_by_bytes": [[4096, 3e-7], [65536, 9e-6]]}]
        extras["host"].update(noncontiguous_send_extra_seconds=rows, noncontiguous_recv_extra_seconds=rows,
                              self_noncontiguous_send_extra_seconds=self_rows,
                              self_noncontiguous_recv_extra_seconds=self_rows)
        text = with_extras(extras, "c")
        value = json.loads(text.split('<prop id="tb_noncontiguous_extra_seconds" value=\'')[1].split("'/>")[0])
        self.assertEqual(sorted(value), ["recv", "self_recv", "self_send", "send"])
        self.assertEqual(value["self_send"], [{"block_bytes": 64.0, "seconds_by_bytes": [[4096.0, 3e-7], [65536.0, 9e-6]]}])
        del extras["host"]["self_noncontiguous_recv_extra_seconds"]
        with self.assertRaisesRegex(host_platform.CalibrationError, "self_noncontiguous_send_extra_seconds without its other side"):
            with_extras(extras, "c.json")
        extras["host"]["self_noncontiguous_recv_extra_seconds"] = [{"block_bytes": 64}]
        with self.assertRaisesRegex(host_platform.CalibrationError, "self_noncontiguous_recv_extra_seconds must be"):
            with_extras(extras, "c.json")

    def test_the_calibrations_vector_path_state_is_a_zone_property_where_recorded(self):
        recorded = calibration()
        recorded["calibration"].update(vector_path={"ratio": 5.61234}, vector_path_after={"ratio": 1.9})
        self.assertIn('<prop id="tb_calibration_vector_path" value="5.612,1.9"/>',
                      host_platform.platform(recorded, "c", 2, "cmd"))
        recorded["calibration"]["vector_path_after"] = None  # no partner at the end: not a state pair
        self.assertNotIn('"tb_calibration_vector_path"', host_platform.platform(recorded, "c", 2, "cmd"))
        self.assertNotIn('"tb_calibration_vector_path"', host_platform.platform(calibration(), "c", 2, "cmd"))
        for ratio in (float("nan"), True, 0, None):
            recorded["calibration"]["vector_path_after"] = {"ratio": ratio}
            message = f"c.json: calibration.vector_path_after.ratio is {ratio!r}; it must be a finite"
            with self.assertRaisesRegex(host_platform.CalibrationError, message):
                host_platform.platform(recorded, "c.json", 2, "cmd")

    def test_bad_noncontiguous_extras_are_refused_by_name(self):
        good = [{"block_bytes": 64, "seconds_by_bytes": [[4096, 1e-6]]}]

        def row(block, size, seconds):
            return [{"block_bytes": block, "seconds_by_bytes": [[size, seconds]]}]
        for send, message in [(None, "no host.noncontiguous_send_extra_seconds"),
                              ([{"block_bytes": 64}], "must be \\[\\{block_bytes"),
                              ([{"block_bytes": 64, "seconds_by_bytes": [[4096, -1e-6]]}], "seconds finite and >= 0"),
                              ([{"block_bytes": 64, "seconds_by_bytes": [[8192, 1e-6], [4096, 1e-6]]}], "ascending"),
                              (row(64, 4096, float("nan")), "seconds finite"),
                              (row(64, float("inf"), 1e-6), "sizes must be finite"),
                              (row(True, 4096, 1e-6), "must be \\[\\{block_bytes"),
                              (row(64, 4096, False), "must be \\[\\{block_bytes"),
                              (row(float("nan"), 4096, 1e-6), "block sizes must be finite"),
                              (good + good, "block sizes must be finite, > 0 and ascending")]:
            bad = calibration()
            bad["host"]["noncontiguous_recv_extra_seconds"] = good
            if send is not None:
                bad["host"]["noncontiguous_send_extra_seconds"] = send
            with self.assertRaisesRegex(host_platform.CalibrationError, message):
                with_extras(bad, "c.json")

    def test_a_path_with_two_dashes_keeps_the_comment_valid(self):
        with tempfile.TemporaryDirectory() as d:
            path, out = written(d, "run--1.json", calibration()), os.path.join(d, "p.xml")
            self.assertEqual(host_platform.main([path, "--out", out]), 0)
            self.assertEqual(platform_network.network(out)["cluster"]["nodes"], 1)
            no_library = calibration()
            del no_library["library"]
            path = written(d, "run--2.json", no_library)
            self.assertEqual(host_platform.main([path, "--out", out, "--datatype-engine"]), 2)


if __name__ == "__main__":
    unittest.main()
