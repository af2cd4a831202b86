#!/usr/bin/python3
"""The goals of `auto` and of the persistent (prepared) forms, from tb-bench runs made with
`--algorithms all --calls blocking,persistent --interleave --passes N` (experiments/auto_goals.sh).
Every ratio compares points measured in the same run, milliseconds apart: per pass K the ratio of
the K-th runs of the two sides, and the point's ratio is the median over the passes (a run without
passes is one pass). One noisy pass then moves no figure.

    analysis/auto_goals.py RUN.json [RUN.json ...]

Per run (one MPI library, one node layout) and per point (layout, bytes per peer):
  auto / fastest     auto's blocking time over the fastest blocking algorithm but auto
  auto / native      auto's blocking time over native's
  auto / its choice  auto's blocking time over the algorithm it ran (its label: "auto ... -> X"),
                     blocking, in the same run: what auto's own work costs, apart from whether
                     the table chose well
  persistent / blocking, per algorithm
  prepared auto      auto's persistent (prepared) form over the fastest other algorithm's
                     persistent form
  node_leader:persistent / native at 1 B - 4 KiB per peer
and the summary the goals are stated in: the share of points where auto is within 1.10x of the
fastest, its worst ratio, its worst ratio to native, and the algorithms whose persistent form is
slower than their blocking one somewhere. The goals are stated over the sizes sweep (tb-bench's
alltoallw/ layouts); a run with the redistribution layouts (slab, pencil: redistribute/ rows) gets
their rows and a summary of their own, apart from the goals' (auto's "fastest" there leaves out
local_remap, which is no Alltoallw algorithm auto could run). A file that cannot be read, is not
JSON, or holds no timed alltoallw/ or redistribute/ benchmark (or one without real_time) is an
error that names it. Standard library only.
"""
import argparse
import os
import re
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from alltoallw_sizes import microseconds, read_benchmarks, title_of  # noqa: E402

SUFFIX = ":persistent"
BENCH_NAME = re.compile(r"^(?P<kind>alltoallw|redistribute)/(?P<layout>[^/]+)/(?P<algorithm>[^/]+)/(?P<bytes>\d+)"
                        r"(/pass:(?P<pass>\d+))?/")
NOT_ALLTOALLW = ("local_remap",)  # timed beside the algorithms on the redistribute/ layouts


def load_passes(path):
    """(title, {(layout, bytes per peer): {algorithm: {pass number: us}}}, {algorithm: label},
    {layouts of redistribute/ rows}) from a tb-bench JSON (a run without passes is pass 1); aggregate
    and failed rows are left out. ValueError naming the file if none is left."""
    context, benchmarks = read_benchmarks(path)
    runs, labels, redistributions = {}, {}, set()
    for index, b in enumerate(benchmarks, 1):
        name = BENCH_NAME.match(str(b.get("name", "")))
        if not name or b.get("run_type") == "aggregate" or b.get("error_occurred"):
            continue
        t = microseconds(f"{path}: benchmark {index} ({b['name']!r})", b)
        key = (name["layout"], int(name["bytes"]))
        runs.setdefault(key, {}).setdefault(name["algorithm"], []).append((int(name["pass"] or 1), t))
        labels[name["algorithm"]] = b.get("label", "")
        if name["kind"] == "redistribute":
            redistributions.add(name["layout"])
    if not runs:
        raise ValueError(f"{path}: holds no timed tb-bench benchmarks (alltoallw/ or redistribute/ rows that ran)")
    times = {key: {a: dict(sorted(ps)) for a, ps in by_algorithm.items()} for key, by_algorithm in runs.items()}
    return title_of(context), times, labels, redistributions


def passes(value):
    """A point's times as {pass number: time}: one number is pass 1, a list passes 1, 2, ..."""
    if isinstance(value, dict):
        return value
    return dict(enumerate(value, 1)) if isinstance(value, (list, tuple)) else {1: value}


def paired(numerator, denominators):
    """The median over passes K of numerator[K] / min(d[K] for d in denominators): pass K against
    the K-th runs of the others; a pass some side lacks (a failed run) is left out."""
    numerator = passes(numerator)
    denominators = [passes(d) for d in denominators]
    common = [k for k in numerator if all(k in d for d in denominators)]
    if not common:
        raise ValueError("no pass was timed on both sides")
    return statistics.median(numerator[k] / min(d[k] for d in denominators) for k in common)


def auto_choices(path):
    """{(layout, bytes per peer): the algorithm auto ran} from the blocking auto's labels."""
    choices = {}
    for b in read_benchmarks(path)[1]:
        name = BENCH_NAME.match(str(b.get("name", "")))
        found = re.search(r"-> ([A-Za-z0-9_]+)", str(b.get("label", "")))
        if name and name["algorithm"] == "auto" and found:
            choices[(name["layout"], int(name["bytes"]))] = found.group(1)
    return choices


def point_ratios(times, choices=None):
    """Per point: auto / fastest other blocking algorithm, auto / native, auto / the algorithm it
    ran (where `choices` names it), and each algorithm's persistent / blocking, each the median
    over passes of the ratio within a pass (`times` holds a number or a list of passes per
    algorithm); points without auto or native give no auto ratios."""
    choices = choices or {}
    rows = []
    for (layout, size), by_algorithm in sorted(times.items()):
        blocking = {a: t for a, t in by_algorithm.items() if not a.endswith(SUFFIX)}
        others = [t for a, t in blocking.items() if a != "auto" and a not in NOT_ALLTOALLW]
        row = {"layout": layout, "bytes": size, "persistent": {}}
        if "auto" in blocking and others:
            row["auto_fastest"] = paired(blocking["auto"], others)
        if "auto" in blocking and "native" in blocking:
            row["auto_native"] = paired(blocking["auto"], [blocking["native"]])
        chosen = choices.get((layout, size))
        if "auto" in blocking and chosen in blocking:
            row["auto_chosen"] = paired(blocking["auto"], [blocking[chosen]])
        for algorithm, t in by_algorithm.items():
            base = algorithm[:-len(SUFFIX)] if algorithm.endswith(SUFFIX) else None
            if base in blocking:
                row["persistent"][base] = paired(t, [blocking[base]])
        prepared_others = [t for a, t in by_algorithm.items() if a.endswith(SUFFIX) and a != "auto" + SUFFIX]
        if "auto" + SUFFIX in by_algorithm and prepared_others:
            row["prepared_auto_fastest"] = paired(by_algorithm["auto" + SUFFIX], prepared_others)
        if "node_leader" + SUFFIX in by_algorithm and "native" in blocking and size <= 4096:
            row["leader_persistent_native"] = paired(by_algorithm["node_leader" + SUFFIX], [blocking["native"]])
        rows.append(row)
    return rows


def sweep_and_redistributions(rows, redistributions):
    """The rows split into the sizes sweep's (the goals' points) and those of the layouts named in
    `redistributions` (tb-bench's redistribute/ rows: load_passes)."""
    return ([r for r in rows if r["layout"] not in redistributions],
            [r for r in rows if r["layout"] in redistributions])


def summary(rows):
    """The goal figures over the rows of one run (of the sweep: see sweep_and_redistributions)."""
    auto = [r["auto_fastest"] for r in rows if "auto_fastest" in r]
    to_native = [r["auto_native"] for r in rows if "auto_native" in r]
    to_chosen = [r["auto_chosen"] for r in rows if "auto_chosen" in r]
    leader = [r["leader_persistent_native"] for r in rows if "leader_persistent_native" in r]
    prepared = [r["prepared_auto_fastest"] for r in rows if "prepared_auto_fastest" in r]
    slower = {}
    for r in rows:
        for algorithm, ratio in r["persistent"].items():
            if ratio > 1.0:
                slower.setdefault(algorithm, []).append((r["layout"], r["bytes"], ratio))
    return {
        "points": len(auto),
        "auto_within_1.10": sum(1 for x in auto if x <= 1.10) / len(auto) if auto else None,
        "auto_worst": max(auto) if auto else None,
        "auto_native_worst": max(to_native) if to_native else None,
        "auto_native_over_1.05": sum(1 for x in to_native if x > 1.05),
        "auto_chosen_points": len(to_chosen),
        "auto_chosen_within_1.10": sum(1 for x in to_chosen if x <= 1.10),
        "auto_chosen_median": sorted(to_chosen)[len(to_chosen) // 2] if to_chosen else None,
        "auto_chosen_worst": max(to_chosen) if to_chosen else None,
        "leader_persistent_native_worst": max(leader) if leader else None,
        "prepared_auto_points": len(prepared),
        "prepared_auto_within_1.10": sum(1 for x in prepared if x <= 1.10),
        "prepared_auto_worst": max(prepared) if prepared else None,
        "persistent_slower": slower,
    }


def fmt(x):
    return "-" if x is None else "{:.2f}".format(x)


def print_persistent_slower(s, prefix=""):
    """One line per algorithm whose persistent form was slower than its blocking one somewhere."""
    for algorithm, points in sorted(s["persistent_slower"].items()):
        worst = max(points, key=lambda p: p[2])
        print("{}{}: persistent slower than blocking at {} points (worst {:.2f} at {} {} B)".format(
            prefix, algorithm, len(points), worst[2], worst[0], worst[1]))


def report(path):
    title, times, paths, redistribution_layouts = load_passes(path)
    count = max((len(passes(t)) for row in times.values() for t in row.values()), default=0)  # passes per point
    rows = point_ratios(times, auto_choices(path))
    sweep, redistributions = sweep_and_redistributions(rows, redistribution_layouts)
    s = summary(sweep)
    print("## {}\n\n{}\n\nEach ratio: the median over {} pass(es) of the ratio within a pass.\n".format(
        os.path.basename(path), title, count))
    print("| layout | bytes/peer | auto/fastest | auto/native | auto/its choice | node_leader persistent/native "
          "| persistent/blocking |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        per = ", ".join("{} {:.2f}".format(a, x) for a, x in sorted(r["persistent"].items()))
        print("| {} | {} | {} | {} | {} | {} | {} |".format(r["layout"], r["bytes"], fmt(r.get("auto_fastest")),
                                                           fmt(r.get("auto_native")), fmt(r.get("auto_chosen")),
                                                           fmt(r.get("leader_persistent_native")), per))
    share = s["auto_within_1.10"]
    print("\nauto within 1.10x of the fastest at {} of {} points ({}); worst {}; worst vs native {} "
          "({} points above 1.05)".format(
              "-" if share is None else round(share * s["points"]), s["points"],
              "-" if share is None else "{:.0%}".format(share), fmt(s["auto_worst"]),
              fmt(s["auto_native_worst"]), s["auto_native_over_1.05"]))
    print("auto / the algorithm it ran, in this run: within 1.10x at {} of {} points; median {}; worst {}".format(
        s["auto_chosen_within_1.10"], s["auto_chosen_points"], fmt(s["auto_chosen_median"]),
        fmt(s["auto_chosen_worst"])))
    print("prepared auto / the fastest other prepared form: within 1.10x at {} of {} points; worst {}".format(
        s["prepared_auto_within_1.10"], s["prepared_auto_points"], fmt(s["prepared_auto_worst"])))
    print("node_leader persistent / native at 1 B - 4 KiB: worst {}".format(fmt(s["leader_persistent_native_worst"])))
    print_persistent_slower(s)
    if redistributions:
        r = summary(redistributions)
        share = r["auto_within_1.10"]
        print("redistributions ({}; rows above, not among the goals' points): auto within 1.10x of the fastest "
              "Alltoallw algorithm at {} of {} points; worst {}; worst vs native {}".format(
                  ", ".join(sorted({x["layout"] for x in redistributions})),
                  "-" if share is None else round(share * r["points"]), r["points"], fmt(r["auto_worst"]),
                  fmt(r["auto_native_worst"])))
        print("redistributions, prepared auto / the fastest other prepared form: within 1.10x at {} of {} points; "
              "worst {}".format(r["prepared_auto_within_1.10"], r["prepared_auto_points"], fmt(r["prepared_auto_worst"])))
        print_persistent_slower(r, "redistributions, ")
    print("auto's paths: {}\n".format(paths.get("auto", "-")))


def main(argv=None):
    parser = argparse.ArgumentParser(prog="auto_goals.py", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("runs", nargs="+", metavar="RUN.json", help="tb-bench --benchmark_out files")
    for path in parser.parse_args(argv).runs:
        try:
            report(path)
        except ValueError as e:  # paired's error does not name the file; the readers' do
            parser.error(str(e) if str(e).startswith(f"{path}: ") else f"{path}: {e}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
