#!/usr/bin/python3
"""Prepared auto over the fastest other prepared form per slab size, one column per tb-bench run
(analysis/auto_goals.py's ratio: the median over passes of the ratio within a pass), with the
algorithm auto's prepared form ran. Usage: per_point.py RUN.json ..."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../../analysis"))
import auto_goals  # noqa: E402


def prepared_paths(path):
    """{bytes per peer: the algorithm auto's prepared form ran} from the runs' labels."""
    import json
    with open(path) as f:
        doc = json.load(f)
    out = {}
    for b in doc["benchmarks"]:
        parts = b["name"].split("/")
        if len(parts) > 3 and parts[2] == "auto:persistent" and "label" in b:
            out[int(parts[3])] = b["label"].split("-> ")[-1].split(" ")[0]
    return out


def main(paths):
    columns = []
    for path in paths:
        rows = auto_goals.point_ratios(auto_goals.load_passes(path)[1])
        columns.append(({r["bytes"]: r.get("prepared_auto_fastest") for r in rows}, prepared_paths(path)))
    sizes = sorted(set().union(*(c[0] for c in columns)))
    print("| bytes/peer | " + " | ".join(os.path.basename(p)[:-5] for p in paths) + " |")
    print("|---|" + "---|" * len(paths))
    for size in sizes:
        cells = [f"{c[0][size]:.2f} ({c[1].get(size, '?')})" if c[0].get(size) else "-" for c in columns]
        print(f"| {size} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main(sys.argv[1:])
