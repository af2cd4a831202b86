#!/usr/bin/env python3
"""Tables of tb-bench results: time per algorithm per bytes per peer, and each algorithm's
ratio to native measured in the same run (same file). Standard library only.

    analysis/alltoallw_sizes.py results/node_leader_sizes/*.json
"""
import json
import sys
from collections import defaultdict


def load(path):
    with open(path) as f:
        data = json.load(f)
    ctx = data.get("context", {})
    env = ctx.get("environment", "{}")
    layout_info = json.loads(ctx.get("node_layout", "{}"))
    title = "{}  |  {} ranks, {} node(s) [{}]  |  {} buffers".format(
        ctx.get("mpi_library", "?"), ctx.get("ranks", "?"), layout_info.get("nodes", "?"),
        layout_info.get("source", "?"), ctx.get("buffers", "?"))
    times = defaultdict(dict)  # (layout, bytes) -> algorithm -> microseconds
    paths = {}
    for b in data["benchmarks"]:
        name = b["name"].split("/")  # alltoallw/<layout>/<algorithm>/<bytes>/manual_time
        layout, algorithm, size = name[1], name[2], int(name[3])
        scale = {"ns": 1e-3, "us": 1.0, "ms": 1e3, "s": 1e6}[b.get("time_unit", "us")]
        times[(layout, size)][algorithm] = b["real_time"] * scale
        paths[algorithm] = b.get("label", "")
    return title, env, times, paths


def human(n):
    for unit, scale in (("M", 1 << 20), ("K", 1 << 10)):
        if n >= scale:
            return "{}{}".format(n // scale, unit)
    return str(n)


def main(paths):
    for path in paths:
        title, env, times, labels = load(path)
        algorithms = sorted({a for row in times.values() for a in row}, key=lambda a: (a != "native", a))
        print("\n" + path)
        print(title)
        for layout in sorted({k[0] for k in times}):
            print("\n  layout {}: time in us (ratio to native in this run)".format(layout))
            print("  {:>8} ".format("bytes") + "".join("{:>24}".format(a) for a in algorithms))
            for size in sorted(s for (l, s) in times if l == layout):
                row = times[(layout, size)]
                native = row.get("native")
                cells = []
                for a in algorithms:
                    t = row.get(a)
                    if t is None:
                        cells.append("{:>24}".format("-"))
                    elif native and a != "native":
                        cells.append("{:>24}".format("{:.1f} ({:.2f})".format(t, t / native)))
                    else:
                        cells.append("{:>24}".format("{:.1f}".format(t)))
                print("  {:>8} ".format(human(size)) + "".join(cells))
        print("\n  paths of the last call: " + "; ".join("{}: {}".format(a, labels[a]) for a in algorithms))


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    main(sys.argv[1:])
