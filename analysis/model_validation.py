#!/usr/bin/python3
"""Predicted (tb-model on the calibrated host) against measured (tb-redistribute) per algorithm.

  model_validation.py MEASURED PREDICTED [MEASURED PREDICTED ...]
Takes pairs of files as experiments/model_validation.sh writes them: measured-<n>.json from
tb-redistribute --json and predicted-<n>.csv from tb-model --csv. Prints one row per size and
algorithm with bytes per peer, the measured fastest time, the prediction, and the error
(predicted - measured) / measured, then the mean absolute error at 1 KiB per peer and above.

  model_validation.py --memory-from-floors OUT BASE MEASURED [MEASURED ...]
Writes a tb-model memory model (OUT) whose copy bandwidth by size comes from tb-redistribute's
memcpy floors: one memcpy of each rank's local array, timed in the same run, the same way and
with every rank copying at once, as the algorithms' own copies are; and the same for copies with
streaming stores, from its streaming_copy rows. Only the cost per block is taken from BASE
(tb-model --save-memory).
"""
import csv
import json
import sys


def measured_rows(path):
    with open(path) as f:
        doc = json.load(f)
    rows = {}
    for r in doc["results"]:
        method = r["method"]
        if method in ("memcpy_floor", "streaming_copy"):
            continue
        name = method.split(":", 1)[1] if method.startswith("alltoallw:") else method
        name = name.split(" ", 1)[0].split("(", 1)[0]
        rows[name] = r
    return rows


def predicted_rows(path):
    with open(path) as f:
        return {r["algorithm"]: r for r in csv.DictReader(f)}


def memory_from_floors(measured_paths, base):
    """The memory model of `base` with its bandwidth tables from the floors of the measured runs:
    bandwidth_by_bytes from memcpy_floor, streaming_bandwidth_by_bytes from streaming_copy (the
    same copy with streaming stores, as the testbed's packer makes large copies)."""
    tables = {"memcpy_floor": {}, "streaming_copy": {}}
    for path in measured_paths:
        with open(path) as f:
            doc = json.load(f)
        for method, points in tables.items():
            rows = [r for r in doc["results"] if r["method"] == method]
            if not rows:
                if method == "memcpy_floor":
                    raise ValueError(f"{path}: no memcpy_floor row")
                continue
            nbytes, seconds = rows[0]["local_bytes_max"], rows[0]["fastest_s"]
            if nbytes <= 0 or seconds <= 0:
                raise ValueError(f"{path}: the {method} row needs bytes and time above 0")
            points[float(nbytes)] = nbytes / seconds
    model = dict(base)
    copy = sorted(tables["memcpy_floor"].items())
    model["bandwidth_by_bytes"] = [[b, bw] for b, bw in copy]
    model["copy_bandwidth_bytes_per_s"] = copy[-1][1]
    if tables["streaming_copy"]:
        model["streaming_bandwidth_by_bytes"] = [[b, bw] for b, bw in sorted(tables["streaming_copy"].items())]
    model["source"] = "tb-redistribute memcpy floors: " + ", ".join(measured_paths)
    return model


def main(argv):
    if len(argv) >= 5 and argv[1] == "--memory-from-floors":
        with open(argv[3]) as f:
            base = json.load(f)
        model = memory_from_floors(argv[4:], base)
        with open(argv[2], "w") as f:
            json.dump(model, f, indent=2)
        return 0
    if len(argv) < 3 or len(argv) % 2 == 0:
        print(__doc__, file=sys.stderr)
        return 2
    print("| shape | bytes per peer | algorithm | measured ms | predicted ms (comm + local + overhead) | error |")
    print("|---|---|---|---|---|---|")
    errors = []
    for measured_path, predicted_path in zip(argv[1::2], argv[2::2]):
        measured = measured_rows(measured_path)
        predicted = predicted_rows(predicted_path)
        for name, m in measured.items():
            p = predicted.get(name)
            if p is None:
                continue
            ranks = 2
            per_peer = m["local_bytes_max"] / ranks
            t_meas = m["fastest_s"]
            t_pred = float(p["total_s"])
            err = (t_pred - t_meas) / t_meas
            if per_peer >= 1024:
                errors.append(abs(err))
            print(f"| {m['global_shape']} | {per_peer / 1024:.0f} KiB | {name} | {t_meas * 1e3:.3f} | "
                  f"{t_pred * 1e3:.3f} ({float(p['communication_s']) * 1e3:.3f} + {float(p['local_s']) * 1e3:.3f} + "
                  f"{float(p.get('overhead_s', 0)) * 1e3:.3f}) | "
                  f"{err * 100:+.0f} % |")
    if errors:
        within = sum(1 for e in errors if e <= 0.2)
        print(f"\nmean |error| at >= 1 KiB per peer: {100 * sum(errors) / len(errors):.0f} % over {len(errors)} points; "
              f"{within} of {len(errors)} within 20 %")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
