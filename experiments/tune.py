#!/usr/bin/python3
"""The tuner: measures every registered Alltoallw algorithm (except auto) with tb-bench over message
sizes and layout classes, for the node layouts it is given, and writes the tuning table that the
`auto` algorithm reads (TB_TUNING_TABLE; format in collectives/tuning_table.hpp) and the same
decisions as a collective-selection JSON for the patched MPICH (mpich/README.md).

    experiments/tune.py                                  # 2 ranks, 1 node and 2 emulated nodes, build/mpich
    experiments/tune.py --build build/h-auto -m 1:1M --min-time 0.005
    experiments/tune.py --ranks 4 --nodes 1,2,4 --layouts contiguous,vector64,vector4K
    TB_TUNING_TABLE=$PWD/results/tuning/alltoallw-tuning.json mpiexec -n 2 app   # with TB_ALLTOALLW=auto

Node layouts: --nodes K runs the ranks on K nodes of this host, launched the way experiments/run.py
launches its modes (experiments/launch.py): K = 1 is the intra mode (shared memory), K > 1 the
cliques mode with K cliques (TB_NUM_NODES=K; MPICH: MPIR_CVAR_NUM_CLIQUES=K over UCX tcp).

Layout classes: "contiguous" (tb-bench's contiguous layout: every peer's data one block) and, per
vector<B> layout, a band of mean bytes per contiguous block ("block<B>"), bounded halfway (in
log scale) to the next measured B, the largest unbounded. A vector<B> point counts only from 2B
bytes per peer (below that every peer's data is one block, which is the contiguous class).
The slab layout (tb-bench's slab: the FFT's slab redistribution, one side in blocks of 16 B - 1 KiB
that grow with the size) has no class of its own, since auto cannot tell its calls from a vector's
of the same blocks: each slab point joins the band holding its blocks at that size (tb-bench's
counter block_bytes, which every benchmark carries), and where a
band has a slab and a vector<B> point at one size, each algorithm counts with the larger of its two
worst ratios (the choice must not be far behind on either) and the sum of its two medians. The
defaults measure the slab and vector256, the band of its blocks from 64 KiB per peer: decided by
vector64 and vector4K alone, auto ran the slab at up to 2.75x the fastest algorithm
(docs/auto-and-tuning.md).

Measuring: per (node layout, layout) one tb-bench launch with --interleave --passes R (R =
--repetitions, each pass at least --min-time seconds per benchmark): the R-th runs of all
algorithms at one size are timed seconds apart, and each algorithm's time is its median over the
passes. --launches N repeats every launch N times (all node layouts and layouts, then again):
on this kind of host an algorithm can be fast in one process and several times slower in the next
(buffer placement, which core a rank lands on), and one launch cannot show that.

Decision rule: per (node layout, layout class, size) the algorithm whose worst ratio to the fastest
over the launches is smallest ("worst over fastest": with one launch, simply the fastest median;
with several, the algorithm that is never far behind, which is what auto's goals ask). Adjacent
sizes with the same winner merge into one band, the first from 0 bytes, the last unbounded.
--tolerance T keeps the previous size's winner while its worst ratio is within a fraction T of the
best, so that near-ties on a noisy machine do not split bands. Each entry lists the others fastest
first ("alternatives": auto runs the first one its build has) and, per size, each algorithm's
median over launches ("median_s") and worst ratio ("worst_over_fastest").

One algorithm per node layout (--one-algorithm SHARE,WITHIN,WORST, default 0.9,0.1,1.25, the goals
auto is held to): where the table picks more than one algorithm at a node layout, auto must agree
on every call's class (collectives/algorithms/auto.hpp), which between nodes costs a network
allreduce, more than a small Alltoallw. So where one algorithm is within WITHIN of the fastest
(worst over launches) at a SHARE of the node layout's points, and never worse than WORST, that
algorithm takes every class and size there (one unbounded band per class, "rule" says why) and
auto needs no agreement. Of several such, the one with the largest share, then the smallest worst.
The agreement is also priced: one more launch per node layout times auto (with a two-band table,
so that it agrees on every call) beside pairwise, the algorithm it then runs, at 1-64 B per peer;
the median difference is the agreement's cost per call. Where the bands, that cost added to every
call, would be within WITHIN of the fastest at no more points than the best single algorithm alone
(largest share, then smallest worst ratio), that algorithm takes the node layout too, even if it
misses WORST somewhere: the bands then miss it at every small size. "off" keeps the per-size bands
and measures nothing more. The rule is for blocking calls only: where it takes a node layout, the
per-size bands stay in the table as "calls": "prepared" entries, which auto's prepared calls (the
redistribution's and the FFT's, MPI_Alltoallw_init) look up, since they agree once, at prepare.

Prepared forms (--calls blocking,persistent): every tb-bench launch also times each algorithm's
prepared form (<algorithm>:persistent), and the table gets a second set of entries, "calls":
"persistent", decided by the same rule from those times (no one-algorithm rule: a prepared call
agrees once, at prepare). auto's prepared calls look them up first, so no "prepared" entries are
written then. It doubles the tuning time.

MPICH selection (--mpich-json): analysis/mpich_algorithms.py's tree code on the same medians (the
blocking entries), with native as MPICH's own "scattered" and only the algorithms MPICH has in-tree
(pairwise, pack_alltoallv, node_leader); the slab counts there as one more layout. What that tree
cannot say (a layout class, a split between algorithms that send different messages, an algorithm
MPICH lacks, a node layout other than one node or one rank per node) is listed as unmapped, in the
output and in the table's metadata.
"""
import argparse
import datetime
import json
import math
import os
import shlex
import socket
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import launch  # noqa: E402
from launch import ROOT  # noqa: E402

sys.path.insert(0, os.path.join(ROOT, "analysis"))
import mpich_algorithms  # noqa: E402

FORMAT = "tb-alltoallw-tuning"
VERSION = 1
CONTIGUOUS = "contiguous"
SLAB = "slab"
# MPICH's in-tree name of each testbed algorithm (native is MPICH's own choice, scattered).
MPICH_NAMES = {"native": "scattered", "pairwise": "pairwise", "pack_alltoallv": "pack_alltoallv",
               "node_leader": "node_leader"}
GENERIC_JSON = ("/var/cache/tb-mpich/current/src/maint/tuning/coll/mpir/generic.json",
                os.path.join(ROOT, "mpich", "tuning", "alltoallw.json"))


# --- what to measure ------------------------------------------------------------------------------

def block_bytes(layout):
    """vector<B> -> B in bytes (vector64, vector4K); None for contiguous."""
    if layout == CONTIGUOUS:
        return None
    if not layout.startswith("vector"):
        raise ValueError(f"layout {layout!r}: the tuner measures contiguous, vector<B> and slab layouts")
    text = layout[len("vector"):]
    scale = {"K": 1 << 10, "M": 1 << 20}.get(text[-1:], 1)
    digits = text[:-1] if scale != 1 else text
    if not digits.isdigit() or int(digits) < 1:
        raise ValueError(f"layout {layout!r}: use vector<B>, B a power of two (vector64, vector4K)")
    return int(digits) * scale


def class_name(layout):
    return CONTIGUOUS if layout == CONTIGUOUS else "block" + layout[len("vector"):]


def vector_layouts(layouts):
    return [x for x in layouts if x not in (CONTIGUOUS, SLAB)]


def layout_classes(layouts):
    """The table's layout_classes for the measured layouts: contiguous, then the block bands of the
    vector<B> layouts (the slab has none of its own: its points join the band of their blocks)."""
    classes = [{"name": CONTIGUOUS, "contiguous": True}] if CONTIGUOUS in layouts else []
    blocks = sorted({block_bytes(x) for x in vector_layouts(layouts)})
    by_block = {block_bytes(x): x for x in vector_layouts(layouts)}
    for i, b in enumerate(blocks):
        bound = int(math.sqrt(b * blocks[i + 1])) if i + 1 < len(blocks) else None
        classes.append({"name": class_name(by_block[b]), "max_block_bytes": bound, "measured_block_bytes": b})
    return classes


def registered_algorithms(bin_dir, mpi):
    """Every registered algorithm but auto, as tb-model --list-algorithms lists them (the registry)."""
    program = launch.check_binary("tb-model", mpi, bin_dir)
    out = subprocess.run([program, "--list-algorithms"], capture_output=True, text=True, check=True).stdout
    names = [line.split()[0] for line in out.splitlines() if line.strip()]
    return [n for n in names if n not in ("auto", "local_remap")]


# --- measuring ------------------------------------------------------------------------------------

def bench_args(options, algorithms, layout, out, sizes=None, calls="blocking"):
    """tb-bench's arguments. The machine-state probes are off: the tuner does not read them, and on one
    node they took three quarters of every launch's time."""
    return ["--algorithms", ",".join(algorithms), "--layouts", layout, "-m", sizes or options.sizes, "--interleave",
            "--passes", str(options.repetitions), "--calls", calls, f"--benchmark_min_time={options.min_time}",
            "--state-probes", "off", f"--benchmark_out={out}", "--benchmark_out_format=json"]


PERSISTENT = ":persistent"


def split_calls(times):
    """{(algorithm, size): s} with tb-bench's <algorithm>:persistent names -> (blocking, persistent),
    each {(algorithm, size): s} under the plain algorithm name."""
    blocking, persistent = {}, {}
    for (algorithm, size), seconds in times.items():
        if algorithm.endswith(PERSISTENT):
            persistent[(algorithm[:-len(PERSISTENT)], size)] = seconds
        else:
            blocking[(algorithm, size)] = seconds
    return blocking, persistent


def run_bench(options, nodes, algorithms, layout, sizes=None, env=None, calls="blocking"):
    """One tb-bench run: its parsed JSON and its wall seconds. Raises RuntimeError with its output."""
    mode = "intra" if nodes == 1 else "cliques"
    spec = launch.tool_spec("tb-bench")
    program = launch.check_binary("tb-bench", options.mpi, options.bin)
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "bench.json")
        launch_options = argparse.Namespace(cliques=nodes, hosts=nodes, hostfile=None)
        cmd, env = launch.command(spec, program, bench_args(options, algorithms, layout, out, sizes, calls), mode,
                                  options.mpi, options.ranks, launch_options, env)
        started = time.time()
        with open(os.path.join(tmp, "log"), "w") as log:
            status, hang = launch.run_command(cmd, env, watch=out, timeout=options.timeout, finalize_grace=5.0,
                                              stdout=log, stderr=subprocess.STDOUT)
        seconds = time.time() - started
        if (status != 0 and not hang) or not launch.complete_json(out):
            with open(os.path.join(tmp, "log")) as log:
                raise RuntimeError(f"{' '.join(shlex.quote(c) for c in cmd)} failed ({status}):\n{log.read()[-3000:]}")
        with open(out) as f:
            return json.load(f), seconds, cmd, env


def timed_rows(doc):
    """tb-bench's iteration rows (aggregates and failed runs left out) as (algorithm, bytes per peer,
    pass name or "", seconds); names are alltoallw/<layout>/<algorithm>/<bytes>[/pass:K]/manual_time."""
    for b in doc["benchmarks"]:
        if b.get("run_type") == "aggregate" or b.get("error_occurred"):
            continue
        parts = b.get("run_name", b["name"]).split("/")
        unit = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}[b.get("time_unit", "ns")]
        yield parts[2], int(parts[3]), parts[4] if len(parts) > 5 else "", b["real_time"] * unit


def block_sizes(doc):
    """{bytes per peer: bytes per contiguous block of the send side} of tb-bench's benchmarks (its
    counter block_bytes). Every algorithm at one size runs the same layout, so benchmarks that
    disagree there are an error that names both."""
    sizes, seen = {}, {}
    for b in doc["benchmarks"]:
        if b.get("run_type") == "aggregate" or b.get("error_occurred"):
            continue
        if "block_bytes" not in b:
            raise ValueError(f"tb-bench's benchmark {b.get('name')!r} has no counter block_bytes (a tb-bench "
                             "older than this tuner?)")
        size, block = int(b.get("run_name", b["name"]).split("/")[3]), int(b["block_bytes"])
        if sizes.setdefault(size, block) != block:
            raise ValueError(f"tb-bench's benchmarks at {size} B per peer disagree on block_bytes: {seen[size]!r} has "
                             f"{sizes[size]}, {b.get('name')!r} {block}")
        seen.setdefault(size, b.get("name"))
    return sizes


def medians(doc):
    """{(algorithm, bytes per peer): median seconds} of tb-bench's passes or repetitions (its
    iteration rows)."""
    times = {}
    for algorithm, size, _, seconds in timed_rows(doc):
        times.setdefault((algorithm, size), []).append(seconds)
    return {key: median(values) for key, values in times.items()}


def median(values):
    values = sorted(values)
    mid = len(values) // 2
    return values[mid] if len(values) % 2 else (values[mid - 1] + values[mid]) / 2


def node_layout_of(context, ranks, nodes):
    """The node layout as auto keys it: ranks, the virtual nodes tb-bench saw, the largest node."""
    seen = context.get("node_layout")
    if isinstance(seen, str):
        seen = json.loads(seen)
    count = int(seen["nodes"]) if isinstance(seen, dict) and "nodes" in seen else nodes
    return {"ranks": ranks, "nodes": count, "ranks_per_node": -(-ranks // count)}


# --- deciding -------------------------------------------------------------------------------------

def point_class(layout, size, classes, slab_block=None):
    """The class a point of `layout` at `size` bytes per peer counts for (see the docstring), or None:
    a vector<B> layout's own band from 2B bytes per peer; a slab point, whose blocks are
    `slab_block` bytes (tb-bench's counter), the band holding its blocks, from two blocks per peer
    (below, its one block is contiguous data)."""
    if layout == CONTIGUOUS:
        return CONTIGUOUS
    if layout == SLAB and slab_block is None:
        raise ValueError(f"the slab's point at {size} B per peer has no block size (tb-bench's counter block_bytes)")
    block = slab_block if layout == SLAB else block_bytes(layout)
    if size < 2 * block:
        return None
    if layout != SLAB:
        return class_name(layout)
    bands = [c for c in classes if not c.get("contiguous")]
    return next((c["name"] for c in bands if c["max_block_bytes"] is None or block <= c["max_block_bytes"]), None)


def merge_point(points):
    """One class's point at one size from several layouts' [(medians {algorithm: s}, worst ratios)]:
    per algorithm measured in all of them, the sum of the medians and the largest worst ratio, so
    that the winner is the algorithm never far behind on any of the layouts."""
    common = set.intersection(*(set(times) for times, _ in points))
    return ({a: sum(times[a] for times, _ in points) for a in common},
            {a: max(worst[a] for _, worst in points) for a in common})


def winners(by_size, tolerance=0.0):
    """The winner per size (ascending): the lowest value (a median time or a worst ratio), except
    that the previous size's winner stays while its value is within `tolerance` (a fraction) of the
    lowest: near-ties on a noisy machine then do not split a band."""
    out = []
    for s in sorted(by_size):
        times = by_size[s]
        best = min(times, key=times.get)
        if out and out[-1] in times and times[out[-1]] <= (1 + tolerance) * times[best]:
            best = out[-1]
        out.append(best)
    return out


def bands(by_size, tolerance=0.0, worst=None):
    """by_size: {size: {algorithm: median s}}, worst: {size: {algorithm: worst over fastest}} (default:
    each time over the size's fastest) -> entries' bands: [{"bytes_per_peer": [lo, hi|None],
    "algorithm", "alternatives", "sizes", "median_s", "worst_over_fastest"}], the winner per size the
    lowest worst ratio, adjacent sizes with one winner merged."""
    sizes = sorted(by_size)
    worst = worst or {s: over_fastest(by_size[s]) for s in sizes}
    winners_ = winners(worst, tolerance)
    out, start = [], 0
    for i, size in enumerate(sizes):
        if i + 1 < len(sizes) and winners_[i + 1] == winners_[i]:
            continue
        covered = sizes[start:i + 1]
        totals = {}
        for s in covered:
            for a, t in by_size[s].items():
                totals[a] = totals.get(a, 0.0) + t
        others = sorted((a for a in totals if a != winners_[i]), key=totals.get)
        low = 0 if not out else out[-1]["bytes_per_peer"][1] + 1
        high = size if i + 1 < len(sizes) else None
        out.append({"bytes_per_peer": [low, high], "algorithm": winners_[i], "alternatives": others,
                    "sizes": covered,
                    "median_s": {a: [by_size[s].get(a) for s in covered] for a in sorted(totals)},
                    "worst_over_fastest": {a: [rounded(worst[s].get(a)) for s in covered] for a in sorted(totals)}})
        start = i + 1
    return out


def over_fastest(times):
    """{algorithm: s} -> {algorithm: s / the fastest's s}."""
    fastest = min(times.values())
    return {a: t / fastest for a, t in times.items()}


def rounded(x):
    return None if x is None else round(x, 3)


def launches_of(times):
    """A measurement's launches: a list of {(algorithm, size): s}, or one such dict (one launch)."""
    return times if isinstance(times, list) else [times]


def combined(times):
    """One measurement's launches -> ({(algorithm, size): median s over the launches},
    {(algorithm, size): worst over the launches of s / that launch's fastest at the size})."""
    launches = launches_of(times)
    medians_, worst = {}, {}
    for key in sorted(set().union(*launches)):
        medians_[key] = median([run[key] for run in launches if key in run])
    for run in launches:
        by_size = {}
        for (algorithm, size), seconds in run.items():
            by_size.setdefault(size, {})[algorithm] = seconds
        for size, times_at in by_size.items():
            for algorithm, ratio in over_fastest(times_at).items():
                worst[(algorithm, size)] = max(ratio, worst.get((algorithm, size), 0.0))
    return medians_, worst


def one_algorithm(classes, share, within, worst_bound):
    """classes: [(layout, by_size, worst)] of one node layout -> (algorithm, its share of points within
    `within` of the fastest, its worst ratio), the algorithm that may take the whole node layout (see
    the docstring), or None."""
    ratios, points = {}, set()
    for layout, _, worst in classes:
        for size, at_size in worst.items():
            points.add((layout, size))
            for algorithm, ratio in at_size.items():
                ratios.setdefault(algorithm, {})[(layout, size)] = ratio
    candidates = []
    for algorithm, at in ratios.items():
        if set(at) != points:
            continue  # not measured everywhere
        rs = list(at.values())
        fraction = sum(1 for r in rs if r <= 1 + within) / len(points)
        if fraction >= share and max(rs) <= worst_bound:
            candidates.append((-fraction, max(rs), algorithm))
    if not candidates:
        return None
    fraction, worst, algorithm = min(candidates)
    return algorithm, -fraction, worst


def whole_band(by_size, worst, algorithm, rule):
    """One unbounded band of `algorithm` over every measured size, with the evidence."""
    sizes = sorted(by_size)
    totals = {}
    for s in sizes:
        for a, t in by_size[s].items():
            totals[a] = totals.get(a, 0.0) + t
    return {"bytes_per_peer": [0, None], "algorithm": algorithm,
            "alternatives": sorted((a for a in totals if a != algorithm), key=totals.get), "sizes": sizes,
            "median_s": {a: [by_size[s].get(a) for s in sizes] for a in sorted(totals)},
            "worst_over_fastest": {a: [rounded(worst[s].get(a)) for s in sizes] for a in sorted(totals)},
            "rule": rule}


def share_within(ratios, within):
    return sum(1 for r in ratios if r <= 1 + within) / len(ratios) if ratios else 0.0


def bands_with_agreement(classes, tolerance, within, agreement_s):
    """The share of a node layout's points at which its per-size bands stay within `within` of the
    fastest (medians) once auto's agreement, `agreement_s` per call, is added to every call."""
    ratios = []
    for _, by_size, worst in classes:
        for band in bands(by_size, tolerance, worst):
            for size in band["sizes"]:
                times = by_size[size]
                ratios.append((times[band["algorithm"]] + agreement_s) / min(times.values()))
    return share_within(ratios, within)


def best_single(classes, within):
    """(algorithm, share of points within `within` of the fastest by medians, worst ratio) of the
    algorithm with the largest such share (then the smallest worst ratio) among those measured at
    every point of the node layout; or None."""
    ratios, points = {}, set()
    for layout, by_size, _ in classes:
        for size, times in by_size.items():
            points.add((layout, size))
            fastest = min(times.values())
            for algorithm, t in times.items():
                ratios.setdefault(algorithm, {})[(layout, size)] = t / fastest
    scored = [(share_within(list(at.values()), within), -max(at.values()), a)
              for a, at in ratios.items() if set(at) == points]
    if not scored:
        return None
    share, worst, algorithm = max(scored)
    return algorithm, share, -worst


PREPARED_BANDS_RULE = ("per-size bands of the blocking measurements, for prepared calls: they agree once, at "
                       "prepare, so the one-algorithm rule that took this node layout's blocking calls does not "
                       "hold for them")


def table_entries(measured, tolerance=0.0, one=None, agreements=None, prepared_bands=False, blocks=None):
    """measured: {(node layout key tuple, layout): {(algorithm, size): s}, or a list of those, one per
    launch} -> the table's entries. `one`: (share, within, worst) of the one-algorithm rule, or None;
    `agreements`: {node layout key: seconds auto's per-call agreement costs there} (measured), with
    which a node layout also gets one algorithm where its bands, agreement added, would be within
    `within` of the fastest at no more points than the best single algorithm alone (a tie goes to
    the one algorithm, which needs no agreement). `prepared_bands`: where the rule takes a node
    layout, also keep its per-size bands as "calls": "prepared" entries, for prepared calls, which
    agree once at prepare and so do not pay what the rule saves (without persistent measurements,
    the best a prepared call has). `blocks`: as class_points takes it (the slab's points need it)."""
    per_node_layout = {}
    for key, classes in class_points(measured, blocks).items():
        for name, at_size in sorted(classes.items()):
            merged = {size: merge_point(points) for size, points in at_size.items()}
            by_size = {size: times for size, (times, _) in merged.items() if times}
            worst = {size: ratios for size, (_, ratios) in merged.items() if ratios}
            if by_size:
                per_node_layout.setdefault(key, []).append((name, by_size, worst))
    entries = []
    for key, classes in per_node_layout.items():
        ranks, nodes, per_node = key
        single = one_algorithm(classes, *one) if one else None
        rule = None
        if single:
            algorithm, fraction, worst_ratio = single
            rule = (f"one algorithm for the node layout: within {1 + one[1]:.2f}x of the fastest at "
                    f"{fraction:.0%} of its points, worst {worst_ratio:.2f}x")
        elif one and agreements and key in agreements:
            alone = best_single(classes, one[1])
            banded = bands_with_agreement(classes, tolerance, one[1], agreements[key])
            if alone and alone[1] >= banded:
                algorithm, fraction, worst_ratio = alone
                rule = (f"one algorithm for the node layout: within {1 + one[1]:.2f}x of the fastest (medians) at "
                        f"{fraction:.0%} of its points, worst {worst_ratio:.2f}x; per-size bands would be at "
                        f"{banded:.0%} once auto's agreement ({agreements[key] * 1e6:.2f} us per call, measured) "
                        "is added")
        node_layout = {"ranks": ranks, "nodes": nodes, "ranks_per_node": per_node}
        for name, by_size, worst in classes:
            if rule:
                class_bands = [whole_band(by_size, worst, algorithm, rule)]
            else:
                class_bands = bands(by_size, tolerance, worst)
            entries += [{"node_layout": node_layout, "layout_class": name, **band} for band in class_bands]
            if rule and prepared_bands:
                entries += [{"node_layout": node_layout, "layout_class": name, **band, "calls": "prepared",
                             "rule": PREPARED_BANDS_RULE} for band in bands(by_size, tolerance, worst)]
    return entries


def class_points(measured, blocks=None):
    """measured (as table_entries takes it) -> {node layout key: {class: {size: [(medians {algorithm:
    s}, worst ratios {algorithm: r}) of each layout with a point of that class there]}}}; `blocks`:
    {layout: block_sizes() of its runs}, which the slab's points need."""
    classes = layout_classes(sorted({layout for _, layout in measured}))
    out = {}
    for (key, layout), times in sorted(measured.items()):
        medians_, worst_ratios = combined(times)
        at = {}
        for (algorithm, size), seconds in medians_.items():
            at.setdefault(size, ({}, {}))
            at[size][0][algorithm] = seconds
            at[size][1][algorithm] = worst_ratios[(algorithm, size)]
        for size, point in at.items():
            name = point_class(layout, size, classes, (blocks or {}).get(layout, {}).get(size))
            if name is not None:
                out.setdefault(key, {}).setdefault(name, {}).setdefault(size, []).append(point)
    return out


def tuning_table(entries, classes, metadata):
    return {"format": FORMAT, "version": VERSION, "metadata": metadata, "layout_classes": classes,
            "entries": entries}


def decision_lines(entries):
    lines = []
    for e in entries:
        n = e["node_layout"]
        lo, hi = e["bytes_per_peer"]
        size = f"{lo}-{hi} B" if hi is not None else f">= {lo} B"
        calls = {"persistent": "prepared calls, ", "prepared": "prepared calls (blocking measurements), "}.get(
            e.get("calls"), "")
        lines.append(f"  {calls}{n['ranks']} ranks, {n['nodes']} node(s), {e['layout_class']}, {size} per peer: "
                     f"{e['algorithm']}" + (f" (then {', '.join(e['alternatives'])})" if e["alternatives"] else ""))
    return lines


# --- the MPICH selection --------------------------------------------------------------------------

def mpich_mode(node_layout):
    """analysis/mpich_algorithms.py's node layout of a table key, or None where its tree has none."""
    if node_layout["nodes"] == 1:
        return "intra"
    if node_layout["ranks_per_node"] == 1:
        return "cliques"
    return None


def mpich_times(measured):
    """The medians as mpich_algorithms.size_times() gives them: {(mode, layout): {size: {"mpich:<a>": s}}},
    algorithms MPICH lacks left out; plus the list of what was left out."""
    times, left_out = {}, set()
    for (key, layout), launches in measured.items():
        points = combined(launches)[0]
        mode = mpich_mode({"ranks": key[0], "nodes": key[1], "ranks_per_node": key[2]})
        if mode is None:
            left_out.add(f"node layout {key[0]} ranks on {key[1]} nodes (MPICH's tree tells only one node from one rank per node)")
            continue
        for (algorithm, size), seconds in points.items():
            if algorithm not in MPICH_NAMES:
                left_out.add(f"{algorithm} (not in MPICH)")
                continue
            times.setdefault((mode, layout), {}).setdefault(size, {})[f"mpich:{MPICH_NAMES[algorithm]}"] = seconds
    return times, sorted(left_out)


def mpich_choice(decisions, mode, total_bytes):
    """The in-MPICH algorithm the derived tree runs for a rank sending `total_bytes`."""
    for bound, algorithm in decisions[mode]["bands"]:
        if bound is None or total_bytes <= bound:
            return algorithm
    return None


def unmapped_decisions(entries, decisions):
    """The table's decisions the MPICH tree does not take, each with why."""
    notes = []
    for e in entries:
        n = e["node_layout"]
        mode = mpich_mode(n)
        where = f"{n['ranks']} ranks on {n['nodes']} node(s), {e['layout_class']}, from {e['bytes_per_peer'][0]} B per peer"
        if mode is None or mode not in decisions:
            notes.append(f"{where}: {e['algorithm']} (no tree for this node layout)")
            continue
        if e["algorithm"] not in MPICH_NAMES:
            notes.append(f"{where}: {e['algorithm']} is not in MPICH")
            continue
        taken = mpich_choice(decisions, mode, max(e["bytes_per_peer"][0], 1) * n["ranks"])
        if taken != MPICH_NAMES[e["algorithm"]]:
            notes.append(f"{where}: {e['algorithm']}, MPICH's tree runs {taken} (it tests only the bytes a rank "
                         "sends, not the layout class, and splits sizes only between algorithms that send the "
                         "same messages)")
    return notes


def load_generic(options):
    """(path, document) of MPICH's generic.json for the selection JSON, read before anything is
    measured; errors name the file."""
    path = options.generic or next((p for p in GENERIC_JSON if os.path.isfile(p)), None)
    if path is None:
        raise ValueError("no MPICH generic.json found: pass --generic, or --mpich-json none")
    try:
        with open(path) as f:
            return path, json.load(f)
    except OSError as e:
        raise ValueError(f"--generic {path}: cannot be read: {e.strerror}") from e
    except json.JSONDecodeError as e:
        raise ValueError(f"--generic {path}: not JSON: {e}") from e


def write_mpich_selection(path, generic_path, generic, measured, entries, ranks, uniform):
    """Writes the selection JSON; returns the notes on what it could not map."""
    times, left_out = mpich_times(measured)
    if not times:
        raise ValueError("no measurements MPICH's tree can use (one node or one rank per node)")
    decisions = mpich_algorithms.decide(times, ranks, uniform)
    write_json(path, mpich_algorithms.selection_json(generic, {ranks: decisions}))
    return {"file": path, "generic": generic_path, "decisions": mpich_algorithms.decision_lines(decisions),
            "left_out": left_out, "unmapped": unmapped_decisions(entries, decisions)}


# --- metadata and files ---------------------------------------------------------------------------

def git_commit():
    try:
        commit = subprocess.run(["git", "-C", ROOT, "rev-parse", "HEAD"], capture_output=True, text=True,
                                check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", ROOT, "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True).stdout.strip()
        return commit + ("-dirty" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def metadata(options, context, runs, algorithms, argv):
    return {"date_utc": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "git_commit": git_commit(), "mpi": options.mpi, "mpi_library": context.get("mpi_library"),
            "host": socket.gethostname(), "hwloc": context.get("hwloc"),
            "command": " ".join(shlex.quote(a) for a in ["experiments/tune.py"] + list(argv)),
            "build": options.build, "ranks": options.ranks, "nodes": options.nodes, "sizes": options.sizes,
            "layouts": options.layouts, "algorithms": algorithms, "min_time_s": options.min_time,
            "repetitions": options.repetitions, "launches": options.launches, "tolerance": options.tolerance,
            "calls": options.calls,
            "one_algorithm": options.one_algorithm,
            "rule": "per (node layout, layout class, size) the smallest worst ratio to the fastest over the "
                    "launches (one launch: the fastest median; the previous size's winner kept within the "
                    "tolerance); adjacent sizes with one winner merged; one algorithm for a whole node layout "
                    "where it meets one_algorithm (share, within, worst)",
            "runs": runs}


def write_json(path, doc):
    """Writes `path` whole or not at all, with the mode a plain open() would give it (a temporary
    file is private to its owner)."""
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    with tempfile.NamedTemporaryFile("w", dir=folder, delete=False, suffix=".tmp") as f:
        try:
            json.dump(doc, f, indent=1, allow_nan=False)  # NaN is not JSON: the readers would refuse the file
            f.write("\n")
        except ValueError:
            os.unlink(f.name)
            raise
    try:
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(f.name, 0o666 & ~umask)
        os.replace(f.name, path)
    except OSError:
        os.unlink(f.name)
        raise


# --- the run --------------------------------------------------------------------------------------

def parse(argv):
    parser = argparse.ArgumentParser(description="Measure every Alltoallw algorithm and write auto's tuning table "
                                                 "(and the patched MPICH's selection JSON).")
    parser.add_argument("--build", default=os.path.join(ROOT, "build", "mpich"),
                        help="the build folder whose bin/tb-bench runs (default build/mpich)")
    parser.add_argument("--mpi", choices=launch.MPIS, help="its MPI library (default: mpich, or openmpi for a "
                                                           "build folder named *openmpi*/*ompi*)")
    parser.add_argument("-n", "--ranks", type=int, default=2)
    parser.add_argument("--nodes", default="1,2", help="node layouts: emulated node counts, comma-separated")
    parser.add_argument("-m", "--sizes", default="1:16M", help="bytes per peer, min:max (tb-bench -m)")
    parser.add_argument("--layouts", default="contiguous,vector64,vector256,vector4K,slab",
                        help="tb-bench layouts: contiguous and vector<B> (layout classes), and slab (its points "
                             "join the vector bands of its blocks)")
    parser.add_argument("--algorithms", help="comma-separated (default: every registered one but auto)")
    parser.add_argument("--min-time", type=float, default=0.01, help="seconds per pass (Google Benchmark)")
    parser.add_argument("--repetitions", type=int, default=3,
                        help="interleaved passes per launch (tb-bench --passes); each algorithm's median counts")
    parser.add_argument("--launches", type=int, default=1,
                        help="separate launches of every run; the smallest worst ratio to the fastest decides")
    parser.add_argument("--tolerance", type=float, default=0.0,
                        help="keep the previous size's winner while within this fraction of the fastest "
                             "(e.g. 0.1; default 0: the fastest median at every size)")
    parser.add_argument("--one-algorithm", default="0.9,0.1,1.25",
                        help="SHARE,WITHIN,WORST: one algorithm takes a whole node layout where it is within "
                             "WITHIN of the fastest at SHARE of its points and never worse than WORST (auto then "
                             "needs no per-call agreement there); 'off' keeps per-size bands")
    parser.add_argument("--calls", default="blocking", choices=["blocking", "blocking,persistent"],
                        help="blocking,persistent: also time the prepared forms and write persistent entries")
    parser.add_argument("--timeout", type=float, default=600, help="seconds one tb-bench run may take")
    parser.add_argument("-o", "--out", default=os.path.join(ROOT, "results", "tuning", "alltoallw-tuning.json"))
    parser.add_argument("--mpich-json", help="the MPICH selection JSON (default: beside --out, mpich-selection.json; "
                                             "'none' to skip)")
    parser.add_argument("--generic", help="MPICH's generic.json to put the alltoallw branch into (default: the "
                                          "patched MPICH's source, else mpich/tuning/alltoallw.json)")
    parser.add_argument("--uniform", action="store_true",
                        help="MPICH tree: size splits among all algorithms (calls where every rank sends the same)")
    options = parser.parse_args(argv)
    if min(options.ranks, options.repetitions, options.launches) < 1 or not 0 < options.min_time < math.inf \
            or not 0 <= options.tolerance < math.inf or not 0 < options.timeout < math.inf:
        parser.error("--ranks, --repetitions and --launches must be at least 1, --min-time and --timeout finite and "
                     "above 0, --tolerance finite and at least 0")
    if options.algorithms is not None and (not options.algorithms or "" in options.algorithms.split(",")):
        parser.error(f"--algorithms: an empty name in '{options.algorithms}' (leave the option out for every one)")
    for flag, path in (("-o", options.out), ("--mpich-json", options.mpich_json)):
        if path and os.path.isdir(path):
            parser.error(f"{flag} {path}: is a directory; name the file to write")
    try:
        options.nodes = [node_count(k) for k in options.nodes.split(",")]
        options.layouts = options.layouts.split(",")
        for layout in options.layouts:
            if layout != SLAB:
                block_bytes(layout)
    except ValueError as e:
        parser.error(str(e))
    if SLAB in options.layouts and not vector_layouts(options.layouts):
        parser.error("--layouts: the slab's points join the bands of the vector<B> layouts (their blocks' class); "
                     "add at least one (e.g. vector64,vector256)")
    if options.one_algorithm == "off":
        options.one_algorithm = None
    else:
        try:
            options.one_algorithm = tuple(float(x) for x in options.one_algorithm.split(","))
        except ValueError:
            options.one_algorithm = ()
        if len(options.one_algorithm) != 3 or not all(math.isfinite(x) for x in options.one_algorithm) \
                or not 0 < options.one_algorithm[0] <= 1 \
                or options.one_algorithm[1] < 0 or options.one_algorithm[2] < 1:
            parser.error("--one-algorithm: SHARE,WITHIN,WORST with SHARE in (0, 1], WITHIN >= 0 and WORST >= 1 "
                         "(e.g. 0.9,0.1,1.25), or off")
    if any(k < 1 or k > options.ranks for k in options.nodes):
        parser.error(f"--nodes: each count must be from 1 to --ranks ({options.ranks})")
    if options.mpi is None:
        base = os.path.basename(os.path.normpath(options.build))
        options.mpi = "openmpi" if "openmpi" in base or "ompi" in base else ("mpich-patched" if "patched" in base else "mpich")
    options.bin = os.path.join(options.build, "bin")
    if options.mpich_json is None:
        options.mpich_json = os.path.join(os.path.dirname(os.path.abspath(options.out)), "mpich-selection.json")
    return options


def node_count(text):
    """One entry of --nodes: a whole number (the range is checked against --ranks)."""
    try:
        return int(text)
    except ValueError:
        raise ValueError(f"--nodes: '{text}' is not a node count") from None


def busy_compilers():
    """How many compiler processes (cc1, cc1plus) run on this host: timings taken beside them on a
    2-core machine read milliseconds for microsecond calls."""
    count = 0
    for pid in os.listdir("/proc") if os.path.isdir("/proc") else []:
        try:
            with open(f"/proc/{pid}/comm") as f:
                count += f.read().strip() in ("cc1", "cc1plus")
        except OSError:
            pass
    return count


def measure(options, algorithms):
    """Every (node layout, layout) run, --launches times over, one progress line each. Returns the
    medians of the blocking forms ({(node layout, layout): [per launch {(algorithm, size): s}]}), the
    same of the prepared forms (empty unless --calls has persistent), each layout's block sizes
    ({layout: block_sizes()}), the last run's tb-bench context, the runs' records and {node count
    asked for: node layout key}."""
    measured, prepared, blocks, runs, context, keys = {}, {}, {}, [], {}, {}
    total = options.launches * len(options.nodes) * len(options.layouts)
    started = time.time()
    if busy_compilers():
        print(f"tune.py: warning: {busy_compilers()} compiler processes are running; the timings will be noisy",
              file=sys.stderr)
    for launch_number in range(1, options.launches + 1):
        for nodes in options.nodes:
            for layout in options.layouts:
                print(f"[{len(runs) + 1}/{total}] launch {launch_number}: {options.ranks} ranks on {nodes} node(s), "
                      f"{layout}, {len(algorithms)} algorithms, {options.sizes} B per peer ...", end="", flush=True)
                doc, seconds, cmd, env = run_bench(options, nodes, algorithms, layout, calls=options.calls)
                context = doc.get("context", {})
                layout_key = node_layout_of(context, options.ranks, nodes)
                key = (layout_key["ranks"], layout_key["nodes"], layout_key["ranks_per_node"])
                keys[nodes] = key
                blocking, persistent = split_calls(medians(doc))
                blocks.setdefault(layout, {}).update(block_sizes(doc))
                measured.setdefault((key, layout), []).append(blocking)
                if persistent:
                    prepared.setdefault((key, layout), []).append(persistent)
                print(f" {seconds:.1f} s (elapsed {time.time() - started:.1f} s)", flush=True)
                runs.append({"launch": launch_number, "node_layout": layout_key, "layout": layout,
                             "seconds": round(seconds, 2), "compilers_running_after": busy_compilers(),
                             "command": " ".join(shlex.quote(c) for c in cmd), "environment": env})
    return measured, prepared, blocks, context, runs, keys


AGREEMENT_SIZES = "1:64"


def agreement_table(path, key):
    """Writes a table with two bands at node layout `key` (contiguous: pairwise to 64 B per peer,
    native above), so that auto agrees on every call there and then runs pairwise at 1-64 B."""
    layout = {"ranks": key[0], "nodes": key[1], "ranks_per_node": key[2]}
    write_json(path, tuning_table([{"node_layout": layout, "layout_class": CONTIGUOUS, "bytes_per_peer": [0, 64],
                                    "algorithm": "pairwise"},
                                   {"node_layout": layout, "layout_class": CONTIGUOUS, "bytes_per_peer": [65, None],
                                    "algorithm": "native"}], layout_classes([CONTIGUOUS]), {"purpose": "agreement"}))


def agreement_cost(doc):
    """Seconds auto's agreement adds per call: per size the median over passes of auto - pairwise
    (the pass's two runs paired), then the median over sizes."""
    runs = {}
    for algorithm, size, pass_name, seconds in timed_rows(doc):
        runs.setdefault((size, pass_name), {})[algorithm] = seconds
    by_size = {}
    for (size, _), pair in runs.items():
        if "auto" in pair and "pairwise" in pair:
            by_size.setdefault(size, []).append(pair["auto"] - pair["pairwise"])
    if not by_size:
        raise RuntimeError("the agreement run timed no auto and pairwise pair")
    return max(0.0, median([median(d) for d in by_size.values()]))


def measure_agreements(options, keys):
    """{node layout key: seconds} of auto's per-call agreement there (see agreement_table), one
    launch per node layout, with the default TB_AUTO_AGREEMENT (each-call)."""
    costs = {}
    for nodes, key in keys.items():
        if key[0] < 2:
            continue  # one rank agrees with no one
        with tempfile.TemporaryDirectory() as tmp:
            table = os.path.join(tmp, "table.json")
            agreement_table(table, key)
            print(f"agreement: {key[0]} ranks on {nodes} node(s), auto and pairwise, {AGREEMENT_SIZES} B per peer ...",
                  end="", flush=True)
            doc, seconds, _, _ = run_bench(options, nodes, ["auto", "pairwise"], CONTIGUOUS, AGREEMENT_SIZES,
                                           {"TB_TUNING_TABLE": table, "TB_AUTO_AGREEMENT": "each-call"})
        costs[key] = agreement_cost(doc)
        print(f" {costs[key] * 1e6:.2f} us per call ({seconds:.1f} s)", flush=True)
    return costs


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    options = parse(argv)
    with launch.sigterm_interrupts():  # a kill stops the running tb-bench job too, as Ctrl-C does
        return tune(options, argv)


def tune(options, argv):
    """The measurements, the table and the MPICH selection JSON; the exit status."""
    started = time.time()
    try:
        algorithms = options.algorithms.split(",") if options.algorithms else registered_algorithms(options.bin, options.mpi)
        if "auto" in algorithms:
            raise ValueError("--algorithms: auto cannot be measured for its own table")
        generic_path, generic = load_generic(options) if options.mpich_json != "none" else (None, None)
        measured, prepared, blocks, context, runs, keys = measure(options, algorithms)
        agreements = measure_agreements(options, keys) if options.one_algorithm else {}
        entries = table_entries(measured, options.tolerance, options.one_algorithm, agreements,
                                prepared_bands=not prepared, blocks=blocks)
        entries += [{**e, "calls": "persistent"} for e in table_entries(prepared, options.tolerance, blocks=blocks)]
        meta = metadata(options, context, runs, algorithms, argv)
        meta["agreement_s"] = {f"{k[0]} ranks, {k[1]} nodes": round(s, 9) for k, s in agreements.items()}
        if generic is not None:
            blocking = [e for e in entries if e.get("calls", "blocking") == "blocking"]
            meta["mpich_selection"] = write_mpich_selection(options.mpich_json, generic_path, generic, measured,
                                                            blocking, options.ranks, options.uniform)
        meta["wall_s"] = round(time.time() - started, 1)
        write_json(options.out, tuning_table(entries, layout_classes(options.layouts), meta))
    except subprocess.TimeoutExpired as e:
        print(f"\ntune.py: error: a tb-bench run took more than --timeout {options.timeout:g} s (stopped): "
              f"{' '.join(shlex.quote(c) for c in e.cmd)}", file=sys.stderr)
        return 2
    except (OSError, ValueError, RuntimeError, subprocess.CalledProcessError) as e:
        print(f"\ntune.py: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("\ntune.py: interrupted; nothing written", file=sys.stderr)
        return 130
    print(f"tune.py: wrote {options.out} ({len(entries)} entries, {meta['wall_s']} s):")
    print("\n".join(decision_lines(entries)))
    if "mpich_selection" in meta:
        sel = meta["mpich_selection"]
        print(f"tune.py: wrote {sel['file']} (MPICH selection; MPIR_CVAR_COLL_SELECTION_TUNING_JSON_FILE):")
        print("\n".join("  " + line[2:] for line in sel["decisions"]))
        for what in sel["left_out"]:
            print(f"  left out: {what}")
        for note in sel["unmapped"]:
            print(f"  not mapped: {note}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
