#!/usr/bin/python3
"""The MPICH patch series measured against Debian's MPICH and the testbed's PMPI algorithms, and the
collective-selection JSON derived from those measurements. Reads a store written by
experiments/mpich_algorithms.sh (experiments mpich_algorithms, mpich_selection, mpich_slab).

    analysis/mpich_algorithms.py STORE                       # the tables (markdown) on stdout
    analysis/mpich_algorithms.py STORE --selection-json mpich/tuning/alltoallw.json \\
        --generic <MPICH tree>/maint/tuning/coll/mpir/generic.json [--point-args JSON]
                                                             # --point-args: print the arguments of
                                                             # the points that measure that file

Series names, one per measured variant:
  debian:native        MPI_Alltoallw of Debian's MPICH (its own selection: scattered)
  mpich:default        MPI_Alltoallw of the patched MPICH, MPICH's own selection (scattered)
  mpich:<algorithm>    the same with MPIR_CVAR_ALLTOALLW_INTRA_ALGORITHM=<algorithm>
  mpich:json           the same with the selection JSON (MPIR_CVAR_COLL_SELECTION_TUNING_JSON_FILE)
  pmpi:<algorithm>     the testbed's algorithm above MPI, in the patched build
  debian:pmpi:<alg.>   the same in the Debian build

The selection. MPICH evaluates a selection tree on every rank separately, and the only size a tree
can test for MPI_Alltoallw is total_msg_size, the bytes THIS rank sends (csel.c has no avg_msg_size
for alltoallw). Ranks whose totals fall on different sides of a threshold then run different
algorithms. That is harmless between algorithms that send the same messages (scattered and
pairwise: one message per ordered pair, tag MPIR_ALLTOALLW_TAG, the user's datatypes; MPI's
ordering matches them whatever each rank's schedule), and a hang between any others (node_leader
waits in a node barrier, pack_alltoallv in an Alltoallv). So, per measured node layout, the tree
picks one base algorithm and splits by size only among algorithms that send the same messages as
that base. The base is the algorithm with the smallest total time over all measured points (sizes
and layouts): what a program calling once at every point would spend. A geometric mean of time /
fastest, the rule before, counts a 1-byte point as much as a 16 MiB one: it picked pairwise on
one node, which takes many times node_leader's time on large slabs (the dataloop engine on
subarray messages; docs/results/2026-12-01-mpich-patch-series.md). The geometric means are still
printed. --uniform
(every rank of every call sends the same total: balanced redistributions, Alltoall-like calls)
allows size thresholds among all algorithms.
"""
import argparse
import copy
import hashlib
import json
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from store import read_json, read_rows  # noqa: E402

# MPIR_CVAR_ALLTOALLW_INTRA_ALGORITHM value -> the csel container's JSON name.
CSEL_NAMES = {
    "scattered": "MPIR_Alltoallw_intra_scattered",
    "pairwise": "MPIR_Alltoallw_intra_pairwise",
    "pack_alltoallv": "MPIR_Alltoallw_intra_pack_alltoallv",
    "node_leader": "MPIR_Alltoallw_intra_node_leader",
}
# Algorithms that send the same messages (one per ordered pair of ranks, same tag, the user's
# datatypes), so ranks may mix them within one call.
SAME_MESSAGES = [{"scattered", "pairwise"}]
# The node layouts the campaign measures, and the csel test that tells them apart.
NODE_LAYOUTS = {"intra": ("one node", "comm_size=node_comm_size"),
                "cliques": ("one rank per node", "comm_size=any")}
EXPERIMENTS = ("mpich_algorithms", "mpich_selection", "mpich_slab", "mpich_pack")
# csel.c reads a "total_msg_size<=B" bound with atoi into an int.
CSEL_MAX_BOUND = 2**31 - 1


# {tool: (the fields this script reads of its rows, those of them that must be > 0)}; check_rows.
ROW_FIELDS = {"tb-bench": (("mode", "mpi", "ranks", "layout", "algorithm"), ("time_s",)),
              "tb-redistribute": (("mode", "mpi", "ranks", "global_shape", "method"),
                                  ("fastest_s", "median_s", "fastest_over_floor")),
              "tb-bench-pack": (("name", "mpi", "bytes_per_second"), ())}


def load(store):
    numbered = [(n, r) for n, r in enumerate(read_rows(store), 1) if r.get("experiment") in EXPERIMENTS]
    if not numbered:
        raise ValueError(f"{store} holds no results of {', '.join(EXPERIMENTS)} (experiments/mpich_algorithms.sh)")
    # tb-bench rows without bytes_per_peer (other benchmarks than the sizes') are no points here: size_times
    check_rows(store, [(n, r) for n, r in numbered if r.get("tool") != "tb-bench" or "bytes_per_peer" in r],
               ROW_FIELDS)
    return [r for _, r in numbered]


def is_positive(value):
    """Whether `value` is a finite number > 0 (a time): NaN, 0, negatives, strings and booleans are not."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value > 0


def row_text(r):
    """A row's point for messages: "intra, contiguous, mpich:pairwise, 1 B" (the campaign's series
    names), "intra, contiguous, mpich pairwise, 1 B" (other experiments')."""
    parts = [str(r[k]) for k in ("mode", "layout", "global_shape", "name") if k in r]
    what = r.get("algorithm", r.get("method"))
    tool = r.get("tool")
    if r.get("experiment") in EXPERIMENTS and (tool == "tb-bench" or tool == "tb-redistribute" and
                                               redistribute_algorithm(r)):
        parts.append(series(r))
    elif what is not None:
        parts.append(f"{r.get('mpi')} {what}")
    return ", ".join(parts + ([f"{r['bytes_per_peer']} B"] if "bytes_per_peer" in r else []))


def check_rows(store, numbered, fields):
    """ValueError naming the first of `numbered` ([(row number in the store, row)]) that lacks a
    field `fields` ({tool: (fields read, fields that must be > 0)}; "*": of every row) names, or
    holds a value that is not > 0 there: a damaged or hand-edited row, which would otherwise stop
    the tables with a traceback or put NaN and negative times into them and the selection."""
    for n, r in numbered:
        label = f"{r['tool']} row {n}" if isinstance(r.get("tool"), str) else f"row {n}"
        common, _ = fields.get("*", ((), ()))
        needed, positive = fields.get(r.get("tool"), ((), ()))
        for field in common + needed + positive:
            if field not in r:
                raise ValueError(f"{store}: {label} has no {field}"
                                 + (" (not a row of experiments/run.py)" if field in common else ""))
        for field in positive:
            if not is_positive(r[field]):
                value = r[field]
                shown = f"{value:.3g}" if isinstance(value, (int, float)) and not isinstance(value, bool) \
                    else repr(value)
                what = "a time" if field.endswith("_s") else "a number"
                raise ValueError(f"{store}: {label} ({row_text(r)}): {field} {shown} is not {what} > 0")


def redistribute_algorithm(row):
    """tb-redistribute's method "alltoallw:<algorithm> (<path>)" -> <algorithm>; None for its
    reference rows (memcpy_floor, streaming_copy) and the local remap."""
    method = row["method"]
    if not method.startswith("alltoallw:"):
        return None
    return method[len("alltoallw:"):].split(" (")[0]


def forced_selection(point):
    """What a point made the patched MPICH select: the algorithm it forced
    (MPIR_CVAR_ALLTOALLW_INTRA_ALGORITHM), "json" for a selection file, None for MPICH's own."""
    point = point if isinstance(point, dict) else {}
    forced = point.get("env:MPIR_CVAR_ALLTOALLW_INTRA_ALGORITHM")
    if forced:
        return forced
    return "json" if point.get("env:MPIR_CVAR_COLL_SELECTION_TUNING_JSON_FILE") else None


def selection_point_args(args, path):
    """experiments/run.py's --args JSON `args` for points that measure the selection file at `path`:
    the file by its absolute path, and a hash of its contents, so that a rewritten file is measured
    again where its path alone would let a store's rows of the old file stand."""
    point = point_args(args)
    path = os.path.abspath(path)
    with open(path, "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()[:16]
    point["env:MPIR_CVAR_COLL_SELECTION_TUNING_JSON_FILE"] = path
    point["env:TB_SELECTION_FILE_SHA256"] = digest
    return point


def point_args(text):
    """--point-args' JSON object; ValueError naming the option where it is not one."""
    try:
        point = json.loads(text)
    except ValueError as e:
        raise ValueError(f"--point-args {text!r}: not JSON ({e})") from None
    if not isinstance(point, dict):
        raise ValueError(f"--point-args {text}: not a JSON object (experiments/run.py's --args)")
    return point


def write_selection(path, tree):
    """Writes `tree` to `path` through PATH.partial, renamed when complete (never a half-written
    file); the partial file is removed where writing fails."""
    partial = path + ".partial"
    try:
        with open(partial, "w") as f:
            json.dump(tree, f, indent=2)
            f.write("\n")
        os.replace(partial, path)
    except OSError as e:
        if os.path.lexists(partial) and not os.path.isdir(partial):
            os.unlink(partial)
        raise ValueError(f"--selection-json {path}: cannot be written ({e.strerror})") from None


def series(row):
    """The variant a result row measured (see the module's docstring)."""
    algorithm = redistribute_algorithm(row) if row.get("tool") == "tb-redistribute" else row["algorithm"]
    point = row.get("point") or {}
    debian = row["mpi"] == "mpich"
    if algorithm != "native":
        return f"{'debian:' if debian else ''}pmpi:{algorithm}"
    if debian:
        return "debian:native"
    return f"mpich:{forced_selection(point) or 'default'}"


def size_times(rows):
    """{(mode, layout): {bytes_per_peer: {series: seconds}}} of the tb-bench rows (the last of each)."""
    out = {}
    for r in rows:
        if r.get("tool") != "tb-bench" or "bytes_per_peer" not in r:
            continue
        out.setdefault((r["mode"], r["layout"]), {}).setdefault(int(r["bytes_per_peer"]), {})[series(r)] = r["time_s"]
    return out


def in_mpich_times(by_size):
    """{bytes: {algorithm: seconds}} of the in-MPICH algorithms; MPICH's default is scattered."""
    out = {}
    for size, t in by_size.items():
        row = {name[len("mpich:"):]: s for name, s in t.items()
               if name.startswith("mpich:") and name[len("mpich:"):] in CSEL_NAMES}
        if "mpich:default" in t:
            row.setdefault("scattered", t["mpich:default"])
        if row:
            out[size] = row
    return out


def geometric_mean(values):
    return math.exp(sum(math.log(v) for v in values) / len(values))


def slowdowns(points):
    """{algorithm: geometric mean of time / fastest} over `points` ([{algorithm: seconds}]),
    counting only algorithms measured at every point."""
    common = set.intersection(*(set(p) for p in points))
    return {a: geometric_mean([p[a] / min(p[b] for b in common) for p in points]) for a in sorted(common)}


def compatible(base):
    for group in SAME_MESSAGES:
        if base in group:
            return group
    return {base}


def size_bands(per_layout, candidates, ranks):
    """[(total_msg_size upper bound or None, algorithm)]: per size the candidate with the smallest
    geometric mean over the layouts, consecutive sizes with one choice merged."""
    sizes = sorted(set.intersection(*(set(t) for t in per_layout.values())))
    choice = []
    for size in sizes:
        points = [t[size] for t in per_layout.values()]
        ratios = slowdowns([{a: p[a] for a in candidates if a in p} for p in points])
        choice.append((size, min(ratios, key=ratios.get)))
    bands = []
    for i, (size, algorithm) in enumerate(choice):
        last = i + 1 == len(choice) or choice[i + 1][1] != algorithm
        if last:
            bound = size * ranks if i + 1 < len(choice) else None
            if bound is not None and bound > CSEL_MAX_BOUND:
                raise ValueError(f"a total_msg_size bound of {bound} B ({size} B per peer x {ranks} ranks) is more "
                                 f"than MPICH's selection parses (a C int, {CSEL_MAX_BOUND}); measure smaller sizes "
                                 f"at {ranks} ranks")
            bands.append((bound, algorithm))
    return bands


def decide(times, ranks, uniform=False):
    """The decision for each measured node layout: {mode: {"base", "slowdowns", "bands"}}.
    `times` is size_times()'s result; `ranks` the rank count measured."""
    decisions = {}
    for mode in NODE_LAYOUTS:
        per_layout = {layout: in_mpich_times(t) for (m, layout), t in times.items() if m == mode}
        per_layout = {k: v for k, v in per_layout.items() if v}
        if not per_layout:
            continue
        points = [p for t in per_layout.values() for p in t.values()]
        ratios = slowdowns(points)
        if not ratios:
            raise ValueError(f"{mode}: no in-MPICH algorithm was measured at every size")
        totals = {a: sum(p[a] for p in points) for a in ratios}
        base = min(totals, key=totals.get)
        candidates = set(ratios) if uniform else compatible(base) & set(ratios)
        decisions[mode] = {"base": base, "totals": totals, "slowdowns": ratios,
                           "bands": size_bands(per_layout, candidates, ranks)}
    if not decisions:
        raise ValueError("no in-MPICH measurements (mpich:<algorithm> or mpich:default) in intra or cliques mode")
    return decisions


def band_tree(bands):
    tree = {}
    for bound, algorithm in bands:
        key = f"total_msg_size<={bound}" if bound is not None else "total_msg_size=any"
        tree[key] = {f"algorithm={CSEL_NAMES[algorithm]}": {}}
    return tree


def by_rank_count(rows):
    """{ranks: the tb-bench rows at that rank count}, ascending."""
    out = {}
    for r in rows:
        if r.get("tool") == "tb-bench":
            out.setdefault(r["ranks"], []).append(r)
    return dict(sorted(out.items()))


def decide_by_ranks(rows, uniform=False):
    """{ranks: decide(...)} for every rank count the store's tb-bench points measured."""
    groups = by_rank_count(rows)
    if not groups:
        raise ValueError("no tb-bench points to derive a selection from")
    return {ranks: decide(size_times(group), ranks, uniform) for ranks, group in groups.items()}


def node_layout_tree(decisions, kept=None):
    """The subtree of one measured rank count: its node layouts, in NODE_LAYOUTS' order (one node
    is tested first). A layout not measured keeps `kept`'s (the same rank count's subtree in an
    earlier file), else MPICH's own choice (scattered)."""
    kept = kept or {}
    tree = {}
    for mode, (_, test) in NODE_LAYOUTS.items():
        if mode in decisions:
            tree[test] = band_tree(decisions[mode]["bands"])
        elif test in kept:
            tree[test] = kept[test]
    tree.setdefault("comm_size=any", {f"algorithm={CSEL_NAMES['scattered']}": {}})
    return tree


def selection_tree(by_ranks, kept=None):
    """The alltoallw intra, out-of-place subtree: one "comm_size<=N" branch per measured rank
    count N, ascending, so that N's measurements decide for the communicator sizes above the next
    smaller measured count up to N; MPICH's own choice (scattered) above the largest. `kept`: the
    branches of an earlier file (previous_branches), kept for rank counts, and for node layouts of
    a rank count, not measured now.
    A branch's total_msg_size bounds are N times the bytes per peer where the winner changed, so
    a smaller communicator in that branch (n ranks) switches at N/n times those bytes per peer."""
    kept = kept or {}
    branches = {ranks: node_layout_tree(d, kept.get(ranks)) for ranks, d in by_ranks.items()}
    for ranks, subtree in kept.items():
        branches.setdefault(ranks, subtree)
    tree = {f"comm_size<={ranks}": branches[ranks] for ranks in sorted(branches)}
    tree["comm_size=any"] = {f"algorithm={CSEL_NAMES['scattered']}": {}}
    return tree


def alltoallw_branch(tree, what):
    """The dict holding the alltoallw intra "is_sendbuf_inplace=no" key of a selection tree."""
    try:
        intra = tree["collective=alltoallw"]["comm_type=intra"]
        if "is_sendbuf_inplace=no" not in intra:
            raise KeyError("is_sendbuf_inplace=no")
    except (KeyError, TypeError) as e:
        raise ValueError(f"{what} has no alltoallw intra branch ({e})") from None
    return intra


def previous_branches(tree, path):
    """{ranks: subtree} of the "comm_size<=N" branches of an earlier selection file (this
    script's output), to keep where the new store does not measure N."""
    branch = alltoallw_branch(tree, path)["is_sendbuf_inplace=no"]
    kept = {}
    for key, subtree in branch.items():
        if key.startswith("comm_size<="):
            try:
                kept[int(key[len("comm_size<="):])] = subtree
            except ValueError:
                raise ValueError(f"{path}: alltoallw branch key {key!r} is not comm_size<=<ranks>") from None
    return kept


def selection_json(generic, by_ranks, kept=None):
    """MPICH's generic tree (every collective: the file replaces the whole built-in tree) with the
    alltoallw intra out-of-place branch replaced by selection_tree(by_ranks, kept)."""
    tree = copy.deepcopy(generic)
    alltoallw_branch(tree, "the generic selection JSON")["is_sendbuf_inplace=no"] = selection_tree(by_ranks, kept)
    return tree


def decision_lines(decisions, ranks=None):
    lines = []
    for mode, d in decisions.items():
        where = NODE_LAYOUTS[mode][0]
        totals = ", ".join(f"{a} {t * 1e3:.1f} ms" for a, t in sorted(d["totals"].items(), key=lambda x: x[1]))
        ratios = ", ".join(f"{a} {r:.2f}" for a, r in sorted(d["slowdowns"].items(), key=lambda x: x[1]))
        bands = "; ".join(f"{a} up to {b} B sent per rank" if b is not None else f"{a} above"
                          for b, a in d["bands"])
        lines.append(f"- {f'{ranks} ranks, ' if ranks else ''}{mode} ({where}): base {d['base']} (total time over the points: {totals}; "
                     f"geometric mean of time / fastest: {ratios}); by size: {bands}")
    return lines


def ratio(a, b):
    return f"{a / b:.2f}" if a and b else "-"


def size_tables(times, title_suffix=""):
    """Markdown: per mode and layout, time per call (us) of every series and the ratios the
    issue asks for: each in-MPICH algorithm against its PMPI version, and the selection against
    Debian's native. `title_suffix` tells rank counts apart (", 16 ranks")."""
    md = []
    for (mode, layout), by_size in sorted(times.items()):
        names = sorted({n for t in by_size.values() for n in t})
        pairs = [a for a in ("pairwise", "pack_alltoallv", "node_leader")
                 if f"mpich:{a}" in names and f"pmpi:{a}" in names]
        head = ["bytes/peer"] + names + [f"mpich/pmpi {a}" for a in pairs]
        if "mpich:json" in names and "debian:native" in names:
            head.append("json/debian")
        md += [f"### {layout}, {mode}{title_suffix}", "", "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        for size, t in sorted(by_size.items()):
            cells = [str(size)] + [f"{t[n] * 1e6:.3g}" if n in t else "-" for n in names]
            cells += [ratio(t.get(f"mpich:{a}"), t.get(f"pmpi:{a}")) for a in pairs]
            if "json/debian" in head:
                cells.append(ratio(t.get("mpich:json"), t.get("debian:native")))
            md.append("| " + " | ".join(cells) + " |")
        md.append("")
    return md


def slab_table(rows):
    """Markdown: the slab's Alltoallw rows per series, with each run's own memcpy floor (the
    tool's fastest_over_floor) and the ratios of the issue's goal, all from the same campaign."""
    slab = [r for r in rows if r.get("tool") == "tb-redistribute" and redistribute_algorithm(r)]
    if not slab:
        return []
    best = {}
    for r in slab:  # points at other rank counts or process grids measure other things
        best[(r["mode"], r["ranks"], r["global_shape"], str(r.get("grid", "")), series(r))] = r
    md = ["### Slab redistribution (tb-redistribute)", "",
          "Fastest of the timed loops (MAX over ranks); / floor: against that run's memcpy of the local array.", "",
          "| mode | ranks | shape | grid | series | fastest ms | median ms | / floor | debian:native / this | this / pmpi:node_leader |",
          "|---|---|---|---|---|---|---|---|---|---|"]
    for (mode, ranks, shape, grid, name), r in sorted(best.items()):
        debian = best.get((mode, ranks, shape, grid, "debian:native"))
        pmpi = best.get((mode, ranks, shape, grid, "pmpi:node_leader"))
        md.append(f"| {mode} | {ranks} | {shape} | {grid} | {name} | {r['fastest_s'] * 1e3:.2f} | {r['median_s'] * 1e3:.2f} | "
                  f"{r['fastest_over_floor']:.2f} | {ratio(debian['fastest_s'], r['fastest_s']) if debian else '-'} | "
                  f"{ratio(r['fastest_s'], pmpi['fastest_s']) if pmpi else '-'} |")
    return md + [""]


def pack_table(rows):
    """Markdown: GB/s of the testbed's packer and of MPI_Pack (Debian's yaksa engine, the patched
    build's dataloop engine) per block size, from tb-bench-pack's names BM_<Op>/block:B/gap:G."""
    rate = {}
    for r in rows:
        if r.get("tool") != "tb-bench-pack" or "bytes_per_second" not in r:
            continue
        op, _, shape = r["name"].partition("/")
        build = "debian" if r["mpi"] == "mpich" else "patched"
        rate[(shape or "-", f"{op[3:]} ({build})")] = r["bytes_per_second"] / 1e9
    if not rate:
        return []
    ops = ["Pack (patched)", "MpiPack (patched)", "MpiPack (debian)", "Unpack (patched)", "MpiUnpack (patched)",
           "MpiUnpack (debian)"]
    md = ["### Packing: the testbed's packer against MPICH's pack engines (tb-bench-pack, GB/s)", "",
          "| layout | " + " | ".join(ops) + " | Pack / MpiPack (patched) |", "|---|" + "---|" * (len(ops) + 1)]
    memcpy = rate.get(("-", "Memcpy (patched)"))
    if memcpy:
        md.append(f"| memcpy | {memcpy:.2f} |" + " |" * len(ops))
    shapes = sorted({s for s, o in rate if s != "-" and o.startswith("MpiPack")}, key=lambda s: [int(x.split(":")[1]) for x in s.split("/")])
    for shape in shapes:
        cells = [f"{rate[(shape, o)]:.2f}" if (shape, o) in rate else "-" for o in ops]
        md.append(f"| {shape} | " + " | ".join(cells) + f" | {ratio(rate.get((shape, 'Pack (patched)')), rate.get((shape, 'MpiPack (patched)')))} |")
    return md + [""]


def report(rows, by_ranks=None):
    """Markdown of a campaign; by_ranks: decide_by_ranks()'s result, or None."""
    md = ["## The MPICH patch series (experiments/mpich_algorithms.sh)", "",
          "Time per MPI_Alltoallw call (us, MAX over ranks); series names: analysis/mpich_algorithms.py.", ""]
    if by_ranks:
        md += ["Selection derived from these points:", ""]
        for ranks, decisions in by_ranks.items():
            md += decision_lines(decisions, ranks)
        md += [""]
    md += slab_table(rows) + pack_table(rows)
    groups = by_rank_count(rows)
    for ranks, group in groups.items():
        md += size_tables(size_times(group), f", {ranks} ranks" if len(groups) > 1 else "")
    return md


def main(argv=None):
    parser = argparse.ArgumentParser(description="Tables of the MPICH patch series and the selection JSON derived from them.")
    parser.add_argument("store")
    parser.add_argument("--selection-json", help="write the selection JSON here (needs --generic)")
    parser.add_argument("--generic", help="MPICH's maint/tuning/coll/mpir/generic.json of the patched tree")
    parser.add_argument("--merge", metavar="FILE",
                        help="keep FILE's (an earlier selection JSON's) branches for rank counts, and node layouts of a "
                             "rank count, this store does not measure, e.g. 2 ranks measured here and 16 on a "
                             "bigger host")
    parser.add_argument("--point-args", metavar="JSON",
                        help="with --selection-json: print, instead of the tables, JSON (experiments/run.py's --args) "
                             "with the written file and a hash of its contents added, for the points that measure it")
    parser.add_argument("--uniform", action="store_true",
                        help="size thresholds among all algorithms (only for calls where every rank sends the same total)")
    args = parser.parse_args(argv)
    if args.selection_json and not args.generic:
        parser.error("--selection-json needs --generic")
    if args.point_args is not None and not args.selection_json:
        parser.error("--point-args needs --selection-json")
    if args.selection_json and os.path.isdir(args.selection_json):  # checked before anything is written
        parser.error(f"--selection-json {args.selection_json}: is a directory; name the file to write")
    if args.point_args is not None:
        try:
            point_args(args.point_args)
        except ValueError as e:
            parser.error(str(e))
    try:
        rows = load(args.store)
        by_ranks = decide_by_ranks(rows, args.uniform) if by_rank_count(rows) else None
        if args.selection_json:
            if by_ranks is None:
                raise ValueError("no tb-bench points to derive a selection from")
            generic = read_json(args.generic, f"--generic {args.generic}")
            kept = previous_branches(read_json(args.merge, f"--merge {args.merge}"), args.merge) if args.merge else None
            write_selection(args.selection_json, selection_json(generic, by_ranks, kept))
            print(f"mpich_algorithms.py: wrote {args.selection_json}", file=sys.stderr)
            if args.point_args is not None:
                print(json.dumps(selection_point_args(args.point_args, args.selection_json)))
                return 0
    except (OSError, ValueError) as e:
        print(f"mpich_algorithms.py: error: {e}", file=sys.stderr)
        return 2
    print("\n".join(report(rows, by_ranks)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
