#!/usr/bin/python3
"""Per size, each layout's algorithms fastest first, as time / that layout's fastest (the median over
tb-bench's passes; local_remap left out: auto cannot run it).

    side_by_side.py layouts-side-by-side.json[.gz]
"""
import gzip
import json
import statistics
import sys

UNIT = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}


def times(doc):
    """{(layout, bytes per peer): {algorithm: [seconds per pass]}} of tb-bench's iteration rows."""
    out = {}
    for b in doc["benchmarks"]:
        if b.get("run_type") == "aggregate" or b.get("error_occurred"):
            continue
        _, layout, algorithm, size = b["run_name"].split("/")[:4]
        if algorithm != "local_remap":
            out.setdefault((layout, int(size)), {}).setdefault(algorithm, []).append(b["real_time"] * UNIT[b["time_unit"]])
    return out


def main(path):
    with (gzip.open if path.endswith(".gz") else open)(path, "rt") as f:
        by_point = times(json.load(f))
    layouts = sorted({layout for layout, _ in by_point})
    print("| bytes per peer | " + " | ".join(layouts) + " |")
    print("|---" * (len(layouts) + 1) + "|")
    for size in sorted({s for _, s in by_point}):
        cells = []
        for layout in layouts:
            medians = {a: statistics.median(v) for a, v in by_point.get((layout, size), {}).items()}
            fastest = min(medians.values())
            cells.append(", ".join(f"{a} {medians[a] / fastest:.2f}" for a in sorted(medians, key=medians.get)[:3]))
        print(f"| {size} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main(sys.argv[1])
