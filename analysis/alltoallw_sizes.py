#!/usr/bin/env python3
"""Tables of tb-bench results: time per algorithm per bytes per peer, and each algorithm's
ratio to native measured in the same run (same file, or same point of a store). Standard
library only.

    analysis/alltoallw_sizes.py results/node_leader_sizes/mpich-min_time0.05.jsonl   # a run.py store
    analysis/alltoallw_sizes.py old/*.json                # tb-bench --benchmark_out files
A store (*.jsonl, written by experiments/run.py) gives one table per point (its tb-bench rows).
"""
import json
import os
import sys
from collections import defaultdict

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from store import read_rows  # noqa: E402


def title_of(ctx):
    layout_info = json.loads(ctx.get("node_layout", "{}"))
    return "{}  |  {} ranks, {} node(s) [{}]  |  {} buffers".format(
        ctx.get("mpi_library", "?"), ctx.get("ranks", "?"), layout_info.get("nodes", "?"),
        layout_info.get("source", "?"), ctx.get("buffers", "?"))


def load(path):
    with open(path) as f:
        data = json.load(f)
    ctx = data.get("context", {})
    env = ctx.get("environment", "{}")
    times = defaultdict(dict)  # (layout, bytes) -> algorithm -> microseconds
    paths = {}
    for b in data["benchmarks"]:
        name = b["name"].split("/")  # alltoallw/<layout>/<algorithm>/<bytes>/manual_time
        layout, algorithm, size = name[1], name[2], int(name[3])
        scale = {"ns": 1e-3, "us": 1.0, "ms": 1e3, "s": 1e6}[b.get("time_unit", "us")]
        times[(layout, size)][algorithm] = b["real_time"] * scale
        paths[algorithm] = b.get("label", "")
    return title_of(ctx), env, times, paths


def load_store(path):
    """[(heading, title, env, times, paths)], one per point of the store that ran tb-bench."""
    points = {}  # key -> rows, in the store's order
    for row in read_rows(path):
        if row.get("tool") == "tb-bench":
            points.setdefault(row["key"], []).append(row)
    tables = []
    for key, rows in points.items():
        ctx = rows[0].get("metadata", {})
        times = defaultdict(dict)
        paths = {}
        for r in rows:
            times[(r["layout"], int(r["bytes_per_peer"]))][r["algorithm"]] = r["time_s"] * 1e6
            paths[r["algorithm"]] = r.get("path", "")
        options = " ".join(f"{k}={v}" for k, v in rows[0].get("point", {}).items() if k != "ranks")
        heading = f"{path} [{rows[0].get('experiment', '?')} {key}, {rows[0].get('mpi', '?')} {rows[0].get('mode', '?')}] {options}"
        tables.append((heading, title_of(ctx), ctx.get("environment", "{}"), times, paths))
    return tables


def human(n):
    for unit, scale in (("M", 1 << 20), ("K", 1 << 10)):
        if n >= scale:
            return "{}{}".format(n // scale, unit)
    return str(n)


def main(paths):
    tables = []
    for path in paths:
        tables += load_store(path) if path.endswith(".jsonl") else [(path,) + load(path)]
    for heading, title, env, times, labels in tables:
        algorithms = sorted({a for row in times.values() for a in row}, key=lambda a: (a != "native", a))
        print("\n" + heading)
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
