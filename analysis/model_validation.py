#!/usr/bin/python3
"""Predicted (tb-model on the calibrated host) against measured (tb-redistribute) per algorithm.

Takes pairs of files as experiments/model_validation.sh writes them: measured-<n>.json from
tb-redistribute --json and predicted-<n>.csv from tb-model --csv. Prints one row per size and
algorithm with bytes per peer, the measured fastest time, the prediction, and the error
(predicted - measured) / measured, then the mean absolute error at 1 KiB per peer and above.
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


def main(argv):
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
