"""analysis/model_validation.py: the memory model from tb-redistribute's memcpy floors."""
import json
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import model_validation  # noqa: E402


def measured(tmp, name, floor_bytes, floor_s, with_floor=True, streaming_s=None):
    rows = [{"method": "alltoallw:native", "local_bytes_max": floor_bytes, "fastest_s": 10 * floor_s}]
    if with_floor:
        rows.append({"method": "memcpy_floor", "local_bytes_max": floor_bytes, "fastest_s": floor_s})
    if streaming_s is not None:
        rows.append({"method": "streaming_copy", "local_bytes_max": floor_bytes, "fastest_s": streaming_s})
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

    def test_a_run_without_a_floor_is_an_error_naming_the_file(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = measured(tmp, "no-floor.json", 4096, 1e-7, with_floor=False)
            with self.assertRaisesRegex(ValueError, "no-floor.json: no memcpy_floor row"):
                model_validation.memory_from_floors([path], {})


if __name__ == "__main__":
    unittest.main()
