"""experiments/platform_network.py: a tb-model cluster network from a SimGrid platform file."""
import os
import sys
import tempfile
import unittest

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, here)
import platform_network  # noqa: E402

PLATFORMS = os.path.join(here, "platforms")


class PlatformNetwork(unittest.TestCase):
    def test_the_dragonfly_platform_with_smpi_default_factors(self):
        doc = platform_network.network(os.path.join(PLATFORMS, "xc40-dragonfly.xml"))
        c = doc["cluster"]
        self.assertEqual(doc["kind"], "cluster")
        self.assertEqual((c["topology"], c["nodes"], c["cores_per_node"]), ("DRAGONFLY", 768, 32))
        self.assertEqual(c["topo_parameters"], [[2, 10], [6, 3], [16, 1], [4]])
        self.assertAlmostEqual(c["bandwidth_bytes_per_s"], 5.25e9)
        self.assertAlmostEqual(c["latency_s"], 0.4e-6)
        self.assertAlmostEqual(c["loopback_bandwidth_bytes_per_s"], 68e9)
        self.assertIn([65472.0, 0.940694], c["bandwidth_factor"])
        self.assertIn([0.0, 2.01467], c["latency_factor"])

    def test_factors_set_by_the_file_replace_the_defaults(self):
        c = platform_network.network(os.path.join(PLATFORMS, "this-host.xml"))["cluster"]
        self.assertEqual((c["topology"], c["nodes"], c["cores_per_node"]), ("FLAT", 1, 2))
        props = {p.get("id"): p.get("value")
                 for p in platform_network.ET.parse(os.path.join(PLATFORMS, "this-host.xml")).findall("./config/prop")}
        for key, prop in (("bandwidth_factor", "smpi/bw-factor"), ("latency_factor", "smpi/lat-factor")):
            written = sorted([float(v) for v in pair.split(":")] for pair in props[prop].split(";"))
            self.assertEqual(c[key], written)
            self.assertNotEqual(c[key], platform_network.factor(platform_network.SMPI_BW_FACTOR, "defaults"))

    def test_the_barrier_is_smpi_default_unless_the_platform_chooses_another(self):
        doc = platform_network.network(os.path.join(PLATFORMS, "xc40-dragonfly.xml"))
        self.assertEqual(doc["cluster"]["barrier"], "ompi_basic_linear")
        def with_prop(prop, value):
            with tempfile.NamedTemporaryFile("w", suffix=".xml") as f:
                f.write(f'<platform version="4.1"><config><prop id="{prop}" value="{value}"/></config>'
                        '<cluster id="c" prefix="n" suffix="" radical="0-1" speed="1Gf" bw="1GBps" lat="1us" '
                        'loopback_bw="10GBps" loopback_lat="1us"/></platform>')
                f.flush()
                return platform_network.network(f.name)
        for prop, value, named in (("smpi/barrier", "mvapich2_pair", "mvapich2_pair"),
                                   ("smpi/coll-selector", "mpich", "the mpich selector's")):
            doc = with_prop(prop, value)
            self.assertNotIn("barrier", doc["cluster"])
            self.assertIn(f"barrier {named}: not modelled", doc["comment"])
        # SimGrid's names for the same linear barrier: its default, and an empty selector
        for prop, value in (("smpi/barrier", "default"), ("smpi/barrier", "ompi_basic_linear"),
                            ("smpi/coll-selector", ""), ("smpi/coll-selector", "default")):
            self.assertEqual(with_prop(prop, value)["cluster"]["barrier"], "ompi_basic_linear", (prop, value))

    def test_units(self):
        self.assertAlmostEqual(platform_network.bandwidth("100Gbps", "x"), 12.5e9)
        self.assertAlmostEqual(platform_network.bandwidth("1GiBps", "x"), 2**30)
        self.assertAlmostEqual(platform_network.latency("2ms", "x"), 2e-3)
        with self.assertRaisesRegex(platform_network.PlatformError, "not a SimGrid bandwidth"):
            platform_network.bandwidth("fast", "x")

    def test_topologies_without_routes_and_bad_files_are_refused_by_name(self):
        for name, message in (("torus.xml", "TORUS"), ("fat-tree.xml", "FAT_TREE"),
                              ("smpi-ci-cluster.xml", "loopback_bw")):
            with self.assertRaisesRegex(platform_network.PlatformError, message):
                platform_network.network(os.path.join(PLATFORMS, name))
        with tempfile.NamedTemporaryFile("w", suffix=".xml") as f:
            f.write("<platform")
            f.flush()
            with self.assertRaisesRegex(platform_network.PlatformError, "not a readable platform"):
                platform_network.network(f.name)


if __name__ == "__main__":
    unittest.main()
