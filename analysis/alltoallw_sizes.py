#!/usr/bin/env python3
"""Tables of tb-bench results: time per algorithm per bytes per peer, and each algorithm's
ratio to native measured in the same run (same file, or same point of a store). Standard
library only.

    analysis/alltoallw_sizes.py results/node_leader_sizes/mpich-min_time0.05.jsonl   # a run.py store
    analysis/alltoallw_sizes.py old/*.json                # tb-bench --benchmark_out files
A store (*.jsonl, written by experiments/run.py) gives one table per point (its tb-bench rows).
A file that cannot be read, is not JSON, or holds no tb-bench rows (or a row without a field the
table needs) is an error that names it.
"""
import argparse
import json
import math
import os
import sys
from collections import defaultdict

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from store import read_json, read_rows, unreadable  # noqa: E402


UNITS_US = {"ns": 1e-3, "us": 1.0, "ms": 1e3, "s": 1e6}  # tb-bench's time_unit -> microseconds


def read_benchmarks(path):
    """(context, benchmarks) of a tb-bench --benchmark_out file; ValueError naming the file if it is
    not one (read_json's errors, no "benchmarks" list) or holds no benchmarks."""
    data = read_json(path)
    benchmarks = data.get("benchmarks") if isinstance(data, dict) else None
    if not isinstance(benchmarks, list) or not all(isinstance(b, dict) for b in benchmarks):
        raise ValueError(f'{path}: no "benchmarks" list of tb-bench rows')
    if not benchmarks:
        raise ValueError(f"{path}: holds no tb-bench benchmarks")
    context = data.get("context", {})
    return context if isinstance(context, dict) else {}, benchmarks


def number(where, row, field, zero=False):
    """row[field], a finite number > 0 (>= 0 with `zero`: a time of 0 would divide by zero in a
    ratio); ValueError naming `where` (the file and the row) and the field."""
    value = row.get(field)
    if field not in row:
        raise ValueError(f"{where}: no {field}")
    if (isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value)
            or value < 0 or (value == 0 and not zero)):
        raise ValueError(f"{where}: {field} is {value!r}, not a number {'>=' if zero else '>'} 0")
    return value


def microseconds(where, b):
    """A tb-bench benchmark's real_time in microseconds (errors as number's)."""
    unit = b.get("time_unit", "us")
    if unit not in UNITS_US:
        raise ValueError(f"{where}: time_unit {unit!r} is none of {', '.join(UNITS_US)}")
    return number(where, b, "real_time") * UNITS_US[unit]


def title_of(ctx):
    try:
        layout_info = json.loads(ctx.get("node_layout", "{}"))
    except (TypeError, ValueError):
        layout_info = None
    if not isinstance(layout_info, dict):  # a hand-edited context: the title says "?"
        layout_info = {}
    return "{}  |  {} ranks, {} node(s) [{}]  |  {} buffers".format(
        ctx.get("mpi_library", "?"), ctx.get("ranks", "?"), layout_info.get("nodes", "?"),
        layout_info.get("source", "?"), ctx.get("buffers", "?"))


def load(path):
    """(title, environment, {(layout, bytes): {algorithm: us}}, {algorithm: label}) of a tb-bench
    file; failed and aggregate rows are left out (an aggregate would overwrite the time)."""
    ctx, benchmarks = read_benchmarks(path)
    env = ctx.get("environment", "{}")
    times = defaultdict(dict)  # (layout, bytes) -> algorithm -> microseconds
    paths = {}
    for index, b in enumerate(benchmarks, 1):
        if b.get("run_type") == "aggregate" or b.get("error_occurred"):
            continue
        where = f"{path}: benchmark {index} ({b.get('name')!r})"
        name = b["name"].split("/") if isinstance(b.get("name"), str) else []
        if len(name) < 4 or not name[3].isdigit():  # alltoallw/<layout>/<algorithm>/<bytes>/manual_time
            raise ValueError(f"{where}: name is not <kind>/<layout>/<algorithm>/<bytes per peer>/...")
        layout, algorithm, size = name[1], name[2], int(name[3])
        times[(layout, size)][algorithm] = microseconds(where, b)
        paths[algorithm] = b.get("label", "")
    if not times:
        raise ValueError(f"{path}: holds no tb-bench benchmarks that ran (only failed or aggregate rows)")
    return title_of(ctx), env, times, paths


def load_store(path):
    """[(heading, title, env, times, paths)], one per point of the store that ran tb-bench."""
    points = {}  # key -> rows, in the store's order
    try:
        rows = read_rows(path)
    except OSError as e:
        raise unreadable(path, e) from e
    for row in rows:
        if row.get("tool") == "tb-bench":
            points.setdefault(str(row.get("key")), []).append(row)
    if not points:
        raise ValueError(f"{path}: holds no tb-bench rows")
    tables = []
    for key, rows in points.items():
        ctx = rows[0].get("metadata", {})
        ctx = ctx if isinstance(ctx, dict) else {}
        times = defaultdict(dict)
        paths = {}
        for n, r in enumerate(rows, 1):
            where = f"{path}: tb-bench row {n} of point {key}"
            for field in ("layout", "algorithm"):
                if not isinstance(r.get(field), str):
                    raise ValueError(f"{where}: no {field}")
            size = int(number(where, r, "bytes_per_peer", zero=True))
            times[(r["layout"], size)][r["algorithm"]] = number(where, r, "time_s") * 1e6
            paths[r["algorithm"]] = r.get("path", "")
        point = rows[0].get("point")
        options = " ".join(f"{k}={v}" for k, v in (point if isinstance(point, dict) else {}).items() if k != "ranks")
        heading = (f"{path} [{rows[0].get('experiment', '?')} {key}, {rows[0].get('mpi', '?')} "
                   f"{rows[0].get('mode', '?')}] {options}")
        tables.append((heading, title_of(ctx), ctx.get("environment", "{}"), times, paths))
    return tables


def human(n):
    for unit, scale in (("M", 1 << 20), ("K", 1 << 10)):
        if n >= scale:
            return "{}{}".format(n // scale, unit)
    return str(n)


def main(argv=None):
    parser = argparse.ArgumentParser(prog="alltoallw_sizes.py", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("files", nargs="+", metavar="FILE", help="run.py stores (*.jsonl) and tb-bench JSON files")
    tables = []
    try:
        for path in parser.parse_args(argv).files:
            tables += load_store(path) if path.endswith(".jsonl") else [(path,) + load(path)]
    except ValueError as e:
        parser.error(str(e))
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
    return 0


if __name__ == "__main__":
    sys.exit(main())
