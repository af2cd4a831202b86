#!/usr/bin/python3
"""The calibrated host model (tb-model) against measurement, per algorithm and point.

  model_validation.py report [--redistribute PREDICTED.csv MEASURED.json [MEASURED.json ...]] ...
                             [--bench BENCH.json [BENCH.json ...] PREDICTIONS_DIR] [--markdown OUT.md] [--csv OUT.csv]
                             [--min-repetitions 5] [--expect-algorithms a,b,...] [--state STATE]
                             [--calibrations HOST [HOST ...]] [--min-calibrations 3]
Compares what experiments/model_validation.sh writes:
- one --redistribute per cube: tb-model's CSV for it (--csv, one network: the calibrated host) and
  tb-redistribute's JSON of every repetition. A repetition's figure is its median_s (the median of
  its outer loops, each the MAX over ranks).
- --bench: tb-bench's JSON files, one per launch (--interleave: every algorithm at one size runs
  before the next size; with --passes N, pass K of every algorithm at a size before pass K+1 of
  any), then a folder of tb-model CSVs named <layout>-<bytes>.csv, one per layout and size (the
  pattern each was costed on is written by `patterns`). A pass's figure is its real_time (the mean
  over its iterations, each the MAX over ranks); a point's repetitions are its passes in every file.
The measured time of a point is the MEDIAN over its repetitions (at least --min-repetitions), so
that one lucky or unlucky repetition cannot move it. Per algorithm and point it prints the
measured median, the repetitions' spread, the prediction and the signed error
(predicted - measured) / measured: positive when the model is too slow, negative when too fast.
Then, per algorithm and overall, over the points from 1 KiB per peer: the median and the mean of
|error|, the bias (the mean signed error) and how many points from 64 KiB per peer are within
25 %; and whether the model's ranking of the algorithms (fastest first) is the measured one at
the 256^3 slab and at 1 MiB per peer, where those points were run; last, the machine's state
(state_lines): each launch's, and how many timed rows ran slow. --state fast (or slow) keeps only
the timings made in that state, for a model calibrated in it (host-median --state): each
tb-redistribute row and tb-bench benchmark carries the cross-core handoff ratio its tool took just
before and just after it (row_state; a file from before they did: its launch's start), since the
machine's slow state slows handoffs between the cores about 9x for seconds at a time, and a point
whose repetitions mix the states is a median of two machines. --state vector-fast (or
vector-slow) does the same by the state of the MPI library's path for non-contiguous messages,
whose slow state makes the extra of a 64 KiB vector message several times its usual for seconds
at a time (microbench/machine_state.hpp's VectorPathProbe; it mostly coincides with the handoff's
slow state, but it is what prices messages with a non-contiguous side); the rows carry it as
vector_before and vector_after, the launches and calibrations as vector_path (and
vector_path_after). An algorithm with fewer than --min-repetitions timings in the state at a
point is left out of the figures and named at the end
of the report. The markdown report goes to
stdout (and --markdown), one CSV row per algorithm and point to --csv. --expect-algorithms names
the algorithms every point must have (the costed ones): one missing is an error.

  model_validation.py patterns OUT.jsonl --sizes 1K:4M [--layouts contiguous,vector64] [--ranks 2]
Writes the per-peer pattern of each tb-bench call (layout, bytes per peer), one JSON line each in
the format TB_ALLTOALLW_RECORD writes (tb-model --pattern OUT.jsonl --call K), and prints one line
"K LAYOUT BYTES" per call. tb-bench calls the algorithms directly, not MPI_Alltoallw, so the PMPI
library cannot record them; the lines are what it records for the same arguments (see
bench_pattern).

  model_validation.py memory-from-floors OUT BASE MEASURED [MEASURED ...]
Writes a tb-model memory model (OUT) whose copy bandwidth by size comes from tb-redistribute's
memcpy floors: one memcpy of each rank's local array, timed in the same run, the same way and
with every rank copying at once, as the algorithms' own copies are; and the same for copies with
streaming stores, from its streaming_copy rows. A run's floor is its median_s (the median of its
outer loops, as every measured point's), never its fastest; where several runs (repetitions)
copied the same size, the median bandwidth is used. Only the cost per block is taken from BASE
(tb-model --save-memory).

  model_validation.py host-median [--state STATE] [--min-calibrations 3] OUT HOST [HOST ...]
Writes a tb-model host network (OUT) whose every measured value is the median of that value over
the HOST files, tb-beff --fit-out calibrations made at different moments of one validation (the
script spreads them over its measurements: a tb-beff launch can land in a slow state, pricing a
vector message at 4x what the next launch does, and a minority of such launches does not move the
median). The files must be of one shape: the same curves at the same
sizes, block sizes and traffic sizes, the same strings; anything else is an error naming where
they differ. A number's median is the lower middle value with an even count of files, so that
it is always a value one calibration measured (the states can be 4x apart); the Hockney fit's
alpha and beta get a median each. The calibration block lists every file's timestamp and
cross-core handoff states (the state its launch started and ended in; report's last section).
--state fast (or slow, vector-fast, vector-slow) takes the median over the calibrations in that
state only (slow: started or ended slow), where at least --min-calibrations (3) were made in it;
with fewer it takes the median of all of them (one calibration is one sample, and one outlier
would price every row), and says so on stdout and in the calibration block's "state".
"""
import argparse
import csv
import json
import math
import os
import re
import statistics
import sys
from dataclasses import dataclass, field

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from store import read_json  # noqa: E402


KIB, MIB = 1 << 10, 1 << 20
SUMMARY_FROM_BYTES = KIB        # the summaries count points from 1 KiB per peer
WITHIN_FROM_BYTES = 64 * KIB    # "within 25 %" counts points from 64 KiB per peer
WITHIN = 0.25
RANKING_SHAPE = "256x256x256"   # the slab whose ranking is checked
RANKING_BYTES = MIB             # and every point at this many bytes per peer
SLOW_HANDOFF_RATIO = 3.0       # microbench/machine_state.hpp's kSlowHandoffRatio
SLOW_VECTOR_RATIO = 4.0        # and its kSlowVectorRatio
# The goals, reported (never fitted to, never asserted): median |error|, |bias|.
GOAL_MEDIAN_ABS, GOAL_ABS_BIAS = 0.15, 0.05


# ---------------------------------------------------------------------------------------------
# Reading tb-redistribute, tb-bench and tb-model output
# ---------------------------------------------------------------------------------------------

def load_object(path, what, name=None):
    """A JSON file that must hold one object (`what`: "a calibration object"); the errors name the
    file (as `name` where given: "base FILE")."""
    doc = read_json(path, name)
    if not isinstance(doc, dict):
        raise ValueError(f"{name or path}: not {what}")
    return doc


def is_positive(value):
    """Whether a JSON value is a time or a size a measurement can have: a finite number above 0."""
    return is_number(value) and math.isfinite(value) and value > 0


def result_rows(path):
    """The rows of a tb-redistribute --json file ("results"), each an object."""
    rows = load_object(path, "a tb-redistribute JSON object").get("results")
    if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
        raise ValueError(f'{path}: "results" must be a list of rows')
    return rows


def algorithm_of(method):
    """tb-redistribute's method column as an algorithm name: "alltoallw:node_leader (on-node: ...)"
    -> "node_leader", "local_remap" -> "local_remap"."""
    name = method.split(":", 1)[1] if method.startswith("alltoallw:") else method
    return name.split(" ", 1)[0].split("(", 1)[0]


def measured_rows(path):
    """{algorithm: row} of one tb-redistribute --json file (the floors left out). A row whose
    result failed its check is an error: its time is not a time of the call."""
    rows = {}
    for n, r in enumerate(result_rows(path), 1):
        if not isinstance(r.get("method"), str):
            raise ValueError(f"{path}: result {n} has no method")
        if r["method"] in ("memcpy_floor", "streaming_copy"):
            continue
        if r.get("verified") not in ("yes", "off", None):
            raise ValueError(f"{path}: {r['method']} verified '{r.get('verified')}': a wrong result is not timed")
        for key, valid in (("global_shape", is_text), ("element_type", is_text), ("local_bytes_max", is_positive),
                           ("median_s", is_positive)):
            if not valid(r.get(key)):
                raise ValueError(f"{path}: {r['method']}: {key} is {r.get(key)!r}, not what tb-redistribute writes")
        rows[algorithm_of(r["method"])] = r
    return rows


def is_text(value):
    return isinstance(value, str) and value != ""


def predicted_rows(path):
    """{algorithm: row} of one tb-model --csv file, which must hold one network (a validation
    compares against one: the calibrated host)."""
    with open(path) as f:
        rows = list(csv.DictReader(f))
    for n, r in enumerate(rows, 2):  # line 1 is the header
        if not r.get("network") or not r.get("algorithm"):
            raise ValueError(f"{path}: line {n} has no network or algorithm (not tb-model's --csv?)")
        try:
            total = float(r.get("total_s") or "nan")
        except ValueError:
            total = math.nan
        if not (math.isfinite(total) and total > 0):
            raise ValueError(f"{path}: line {n} ({r['algorithm']}): total_s {r.get('total_s')!r} is not a time above 0")
    networks = sorted({r["network"] for r in rows})
    if len(networks) != 1:
        raise ValueError(f"{path}: predictions for {len(networks)} networks ({', '.join(networks) or 'none'}); "
                         "run tb-model with the one calibrated host network (--network host.json)")
    return {r["algorithm"]: r for r in rows}


@dataclass(frozen=True)
class Point:
    """One validated call: what ran it, its layout, and the bytes each rank sends each peer."""
    source: str          # "tb-redistribute" or "tb-bench"
    layout: str          # "slab 64x64x64 c64", "contiguous", "vector64"
    bytes_per_peer: int

    def label(self):
        return f"{self.source} {self.layout}"


def redistribute_samples(paths, state="all", tally=None):
    """(Point, {algorithm: [seconds per repetition]}) from the tb-redistribute files of one cube's
    repetitions; every file must be the same redistribution. Only the rows timed in `state`
    (row_state), each counted in `tally` (a StateTally) when one is given."""
    if not paths:
        raise ValueError("--redistribute needs tb-redistribute files after its prediction")
    point, samples = None, {}
    for path in paths:
        doc = load_object(path, "a tb-redistribute JSON object")
        launch = launch_ratio(doc, kind_of(state))
        metadata = doc.get("metadata")
        ranks = metadata.get("ranks") if isinstance(metadata, dict) else None
        if not isinstance(ranks, int) or ranks < 1:
            raise ValueError(f"{path}: metadata.ranks is missing (not a tb-redistribute --json file?)")
        rows = measured_rows(path)
        if not rows:
            raise ValueError(f"{path}: no algorithm rows")
        first = next(iter(rows.values()))
        this = Point("tb-redistribute", f"slab {first['global_shape']} {first['element_type']}",
                     first["local_bytes_max"] // ranks)
        if point is not None and this != point:
            raise ValueError(f"{path}: {this.layout} at {this.bytes_per_peer} B per peer, but {paths[0]} is "
                             f"{point.layout} at {point.bytes_per_peer} B: one --redistribute takes one cube's repetitions")
        point = this
        for name, r in rows.items():
            kept = samples.setdefault(name, [])
            if row_in_state(r, launch, state, tally, f"{path}: {name}"):
                kept.append(float(r["median_s"]))
    return point, samples


BENCH_NAME = re.compile(r"^alltoallw/(?P<layout>[^/]+)/(?P<algorithm>[^/]+)/(?P<bytes>\d+)(/pass:(?P<pass>\d+))?/")
TIME_UNIT_S = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}


def bench_samples(path, state="all", tally=None, every=None):
    """{Point: {algorithm: [seconds per pass]}} from a tb-bench --benchmark_out JSON file (the
    alltoallw layouts; Google Benchmark's aggregate rows and the persistent forms left out). Only
    the passes timed in `state` (row_state; every algorithm keeps its key, its list maybe empty),
    each counted in `tally` when one is given; `every`, when given, gets every pass whatever its
    state, in the same shape (one reading of the file for both)."""
    points = {}
    doc = load_object(path, "a tb-bench JSON object")
    launch = launch_ratio(doc, kind_of(state))
    benchmarks = doc.get("benchmarks", [])
    if not isinstance(benchmarks, list) or not all(isinstance(b, dict) and isinstance(b.get("name"), str)
                                                   for b in benchmarks):
        raise ValueError(f'{path}: "benchmarks" must be a list of objects, each with a name')
    for b in benchmarks:
        m = BENCH_NAME.match(b["name"])
        if not m or b.get("run_type", "iteration") != "iteration" or ":" in m["algorithm"]:
            continue
        if b.get("error_occurred"):
            raise ValueError(f"{path}: benchmark {b['name']} failed: {b.get('error_message', 'no message')}")
        unit = b.get("time_unit", "ns")
        if unit not in TIME_UNIT_S:
            raise ValueError(f"{path}: benchmark {b['name']}: unknown time unit '{unit}'")
        if not is_positive(b.get("real_time")):
            raise ValueError(f"{path}: benchmark {b['name']}: real_time {b.get('real_time')} is not a time > 0")
        point = Point("tb-bench", m["layout"], int(m["bytes"]))
        kept = points.setdefault(point, {}).setdefault(m["algorithm"], [])
        seconds = b["real_time"] * TIME_UNIT_S[unit]
        if row_in_state(b, launch, state, tally, f"{path}: {b['name']}"):
            kept.append(seconds)
        if every is not None:
            every.setdefault(point, {}).setdefault(m["algorithm"], []).append(seconds)
    if not points:
        raise ValueError(f"{path}: no alltoallw/<layout>/<algorithm>/<bytes> benchmarks (not tb-bench JSON?)")
    return points


def bench_launches(paths, state="all", tally=None):
    """bench_samples of several tb-bench launches, each point's passes of all of them together; a
    launch whose points or algorithms differ from the first's is an error (the repetitions would
    not be of one sweep)."""
    merged, first = {}, None
    for path in paths:
        points = bench_samples(path, state, tally)
        shape = {point: set(by_algorithm) for point, by_algorithm in points.items()}
        first = first or shape
        if shape != first:
            raise ValueError(f"{path}: its points differ from {paths[0]}'s (launches of one sweep must run the same)")
        for point, by_algorithm in points.items():
            for algorithm, samples in by_algorithm.items():
                merged.setdefault(point, {}).setdefault(algorithm, []).extend(samples)
    return merged


def bench_prediction_path(folder, point):
    return os.path.join(folder, f"{point.layout}-{point.bytes_per_peer}.csv")


# ---------------------------------------------------------------------------------------------
# The comparison
# ---------------------------------------------------------------------------------------------

@dataclass
class Comparison:
    """One algorithm at one point: every repetition's measured time and the prediction (s)."""
    point: Point
    algorithm: str
    samples: list
    predicted_s: float
    parts: dict = field(default_factory=dict)  # PARTS: what tb-model adds up to predicted_s

    @property
    def measured_s(self):
        return statistics.median(self.samples)

    @property
    def spread(self):
        """(slowest - fastest repetition) / median: how far one repetition alone could be off."""
        return (max(self.samples) - min(self.samples)) / self.measured_s

    @property
    def error(self):
        return signed_error(self.predicted_s, self.measured_s)


# tb-model's CSV columns that add up to a prediction's total_s (timing_s: the timing barrier's
# spread, 0 on the host networks validated here; the report shows it only where it is not).
PARTS = ("communication_s", "local_s", "overhead_s", "timing_s")


def signed_error(predicted, measured):
    """(predicted - measured) / measured: > 0 the model is too slow, < 0 too fast."""
    if measured <= 0:
        raise ValueError(f"a measured time of {measured} s: the error needs a time above 0")
    return (predicted - measured) / measured


def compare(point, samples, predicted, min_repetitions, where, left_out=None):
    """Comparisons of every algorithm both measured and predicted at `point`, in the prediction's
    order; too few repetitions is an error naming the point (`where`: its files), or, given a list
    `left_out` (a report of one state, whose repetitions are those timed in it), a (point,
    algorithm, repetitions) entry there and no comparison."""
    out = []
    for name, p in predicted.items():
        if name not in samples:
            continue
        if len(samples[name]) < min_repetitions and left_out is not None:
            left_out.append((point, name, len(samples[name])))
            continue
        if len(samples[name]) < min_repetitions:
            raise ValueError(f"{where}: {name} at {point.label()} {point.bytes_per_peer} B has "
                             f"{len(samples[name])} repetition(s); at least {min_repetitions} are needed")
        bad = [s for s in samples[name] if not (math.isfinite(s) and s > 0)]
        if bad:
            raise ValueError(f"{where}: {name} at {point.label()} {point.bytes_per_peer} B has a measured "
                             f"time of {bad[0]} s; every repetition needs a time above 0")
        parts = {k: float(p.get(k) or 0.0) for k in PARTS}
        out.append(Comparison(point, name, list(samples[name]), float(p["total_s"]), parts))
    return out


@dataclass
class Summary:
    """The errors of a set of comparisons from SUMMARY_FROM_BYTES per peer."""
    points: int
    median_abs: float
    mean_abs: float
    bias: float           # mean signed error
    within: int           # points from WITHIN_FROM_BYTES within WITHIN
    within_of: int


def summarise(comparisons):
    """Summary of `comparisons` at SUMMARY_FROM_BYTES per peer and above; None when there are none."""
    errors = [c.error for c in comparisons if c.point.bytes_per_peer >= SUMMARY_FROM_BYTES]
    if not errors:
        return None
    large = [c.error for c in comparisons if c.point.bytes_per_peer >= WITHIN_FROM_BYTES]
    return Summary(points=len(errors), median_abs=statistics.median(abs(e) for e in errors),
                   mean_abs=statistics.fmean(abs(e) for e in errors), bias=statistics.fmean(errors),
                   within=sum(1 for e in large if abs(e) <= WITHIN), within_of=len(large))


@dataclass
class Ranking:
    point: Point
    measured: list   # algorithm names, fastest first
    predicted: list

    @property
    def matches(self):
        return self.measured == self.predicted


def ranking(comparisons):
    """The algorithms of one point ordered by measured median and by prediction, fastest first."""
    by_measured = sorted(comparisons, key=lambda c: (c.measured_s, c.algorithm))
    by_predicted = sorted(comparisons, key=lambda c: (c.predicted_s, c.algorithm))
    return Ranking(comparisons[0].point, [c.algorithm for c in by_measured], [c.algorithm for c in by_predicted])


def ranking_points(comparisons):
    """The points whose ranking is checked: the 256^3 slab and every point at 1 MiB per peer."""
    chosen = []
    for c in comparisons:
        p = c.point
        if p not in chosen and (RANKING_SHAPE in p.layout.split() or p.bytes_per_peer == RANKING_BYTES):
            chosen.append(p)
    return chosen


def by_point(comparisons):
    out = {}
    for c in comparisons:
        out.setdefault(c.point, []).append(c)
    return out


def algorithms_in_order(comparisons):
    seen = []
    for c in comparisons:
        if c.algorithm not in seen:
            seen.append(c.algorithm)
    return seen


def missing_algorithms(comparisons, expected, left_out=()):
    """["<point>: <algorithm>", ...] for every expected algorithm some point lacks. local_remap is
    expected only where it can run: a redistribution (tb-bench's alltoallw layouts have none); an
    algorithm `left_out` at a point (too few repetitions in one state) is reported there instead."""
    missing = []
    points = by_point(comparisons)
    for point, name, _ in left_out:
        points.setdefault(point, [])
    for point, cs in points.items():
        have = {c.algorithm for c in cs} | {name for p, name, _ in left_out if p == point}
        for name in expected:
            if name == "local_remap" and point.source != "tb-redistribute":
                continue
            if name not in have:
                missing.append(f"{point.label()} {human_bytes(point.bytes_per_peer)}: {name}")
    return missing


# ---------------------------------------------------------------------------------------------
# The report
# ---------------------------------------------------------------------------------------------

def human_bytes(n):
    for unit, scale in (("MiB", MIB), ("KiB", KIB)):
        if n >= scale and n % scale == 0:
            return f"{n // scale} {unit}"
    return f"{n} B"


def pct(x):
    return f"{100 * x:+.1f} %"


def summary_row(name, s):
    if s is None:
        return f"| {name} | 0 | - | - | - | - |"
    return (f"| {name} | {s.points} | {100 * s.median_abs:.1f} % | {100 * s.mean_abs:.1f} % | {pct(s.bias)} | "
            f"{s.within} of {s.within_of} |")


def report_lines(comparisons, expected=(), left_out=()):
    """The markdown report: every point, the summaries, the rankings and the goals; `expected`:
    the algorithms every point was checked to compare (missing_algorithms), but those `left_out`
    (a report of one state): a point missing one has no ranking."""
    shown = [k for k in PARTS if k != "timing_s" or any(c.parts.get(k, 0) for c in comparisons)]
    names = {"communication_s": "comm", "local_s": "local", "overhead_s": "overhead", "timing_s": "timing"}
    lines = ["| point | bytes per peer | algorithm | reps | measured median ms | rep spread | predicted ms "
             f"({' + '.join(names[k] for k in shown)}) | signed error |",
             "|---|---|---|---|---|---|---|---|"]
    for c in comparisons:
        parts = " + ".join(f"{c.parts.get(k, 0) * 1e3:.4f}" for k in shown)
        lines.append(f"| {c.point.label()} | {human_bytes(c.point.bytes_per_peer)} | {c.algorithm} | {len(c.samples)} | "
                     f"{c.measured_s * 1e3:.4f} | {100 * c.spread:.0f} % | {c.predicted_s * 1e3:.4f} "
                     f"({parts}) | {pct(c.error)} |")
    overall = summarise(comparisons)
    if expected:
        lines += ["", f"every point compares each algorithm tb-model costs: {', '.join(expected)}"
                  + (f", but the {len(left_out)} left out (last sections)" if left_out else "")]
    lines += ["", f"Summary over the points from {human_bytes(SUMMARY_FROM_BYTES)} per peer (signed error = "
              "(predicted - measured) / measured; bias = mean signed error):", "",
              f"| algorithm | points | median \\|error\\| | mean \\|error\\| | bias | within {100 * WITHIN:.0f} % "
              f"from {human_bytes(WITHIN_FROM_BYTES)} per peer |",
              "|---|---|---|---|---|---|"]
    for name in algorithms_in_order(comparisons):
        lines.append(summary_row(name, summarise([c for c in comparisons if c.algorithm == name])))
    lines.append(summary_row("**all**", overall))
    for source in sorted({c.point.source for c in comparisons}):  # the two kinds of point apart
        lines.append(summary_row(f"all, {source} points", summarise([c for c in comparisons if c.point.source == source])))
    lines.append("")
    if overall is None:
        lines.append(f"overall: no points from {human_bytes(SUMMARY_FROM_BYTES)} per peer: no error, no bias")
    else:
        lines.append(f"overall: median |error| {100 * overall.median_abs:.1f} %, mean |error| "
                     f"{100 * overall.mean_abs:.1f} %, bias {pct(overall.bias)} over {overall.points} points; "
                     f"{overall.within} of {overall.within_of} within {100 * WITHIN:.0f} % from "
                     f"{human_bytes(WITHIN_FROM_BYTES)} per peer")
    points = by_point(comparisons)
    incomplete = {point for point, _, _ in left_out}
    rankings = [ranking(points[p]) for p in ranking_points(comparisons) if p not in incomplete]
    lines += ["", "Ranking, fastest first (measured median against tb-model on the calibrated host):", ""]
    for p in ranking_points(comparisons):
        if p in incomplete:
            lines.append(f"ranking at {p.label()} {human_bytes(p.bytes_per_peer)}: not checked (an algorithm "
                         "was left out there)")
    if not rankings:
        lines.append(f"ranking: not checked (neither the {RANKING_SHAPE} slab nor {human_bytes(RANKING_BYTES)} "
                     "per peer is in this run)")
    for r in rankings:
        lines.append(f"ranking at {r.point.label()} {human_bytes(r.point.bytes_per_peer)}: "
                     f"{'matches' if r.matches else 'DIFFERS'}; measured {' < '.join(r.measured)}; "
                     f"predicted {' < '.join(r.predicted)}")
    lines += ["", "Goals (issue 19; reported, not asserted):", ""] + goal_lines(comparisons, overall, rankings)
    return lines


def goal_lines(comparisons, overall, rankings):
    def met(ok):
        return "met" if ok else "NOT met"
    if overall is None:
        return ["- no points from 1 KiB per peer: the goals cannot be judged"]
    large = [c for c in comparisons if c.point.bytes_per_peer >= WITHIN_FROM_BYTES]
    worst = max(large, key=lambda c: abs(c.error), default=None)
    lines = [f"- median |error| <= {100 * GOAL_MEDIAN_ABS:.0f} %: {100 * overall.median_abs:.1f} %, "
             f"{met(overall.median_abs <= GOAL_MEDIAN_ABS)}",
             f"- |bias| <= {100 * GOAL_ABS_BIAS:.0f} %: {pct(overall.bias)}, {met(abs(overall.bias) <= GOAL_ABS_BIAS)}"]
    if worst is None:
        lines.append(f"- every algorithm within {100 * WITHIN:.0f} % from {human_bytes(WITHIN_FROM_BYTES)} per peer: "
                     "no such points in this run")
    else:
        lines.append(f"- every algorithm within {100 * WITHIN:.0f} % from {human_bytes(WITHIN_FROM_BYTES)} per peer: "
                     f"{overall.within} of {overall.within_of}, {met(overall.within == overall.within_of)} (worst: "
                     f"{worst.algorithm} at {worst.point.label()} {human_bytes(worst.point.bytes_per_peer)}, "
                     f"{pct(worst.error)})")
    slab = [r for r in rankings if RANKING_SHAPE in r.point.layout.split()]
    mib = [r for r in rankings if r.point.bytes_per_peer == RANKING_BYTES]
    for what, rs in ((f"the {RANKING_SHAPE} slab", slab), (f"{human_bytes(RANKING_BYTES)} per peer", mib)):
        if not rs:
            lines.append(f"- ranking at {what}: not in this run")
        else:
            same = sum(1 for r in rs if r.matches)
            lines.append(f"- ranking at {what}: {same} of {len(rs)} point(s) match, {met(same == len(rs))}")
    return lines


CSV_COLUMNS = ["source", "layout", "bytes_per_peer", "algorithm", "repetitions", "measured_median_s",
               "measured_min_s", "measured_max_s", "predicted_s", *PARTS, "signed_error"]


def write_csv(path, comparisons):
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(CSV_COLUMNS)
        for c in comparisons:
            w.writerow([c.point.source, c.point.layout, c.point.bytes_per_peer, c.algorithm, len(c.samples),
                        f"{c.measured_s:.9g}", f"{min(c.samples):.9g}", f"{max(c.samples):.9g}",
                        f"{c.predicted_s:.9g}", *(f"{c.parts.get(k, 0):.9g}" for k in PARTS),
                        f"{c.error:.6f}"])


def collect(args, tally, left_out):
    """Every comparison the report's arguments name, redistributions first, then tb-bench's points
    by layout and size, of the rows timed in args.state (counted in `tally`; algorithms with too
    few of them at a point go to `left_out` when it is a list)."""
    comparisons = []
    for group in args.redistribute or []:
        predicted_path, measured_paths = group[0], group[1:]
        point, samples = redistribute_samples(measured_paths, args.state, tally["redistribution rows"])
        comparisons += compare(point, samples, predicted_rows(predicted_path), args.min_repetitions,
                               ", ".join(measured_paths), left_out)
    if args.bench:
        if len(args.bench) < 2:
            raise ValueError("--bench needs tb-bench's JSON file(s), then the folder of predictions")
        *bench_paths, folder = args.bench
        points = bench_launches(bench_paths, args.state, tally["sweep benchmarks"])
        where = ", ".join(bench_paths)
        for point in sorted(points, key=lambda p: (p.layout, p.bytes_per_peer)):
            path = bench_prediction_path(folder, point)
            if not os.path.exists(path):
                raise ValueError(f"{where}: no prediction for {point.layout} at {point.bytes_per_peer} B per "
                                 f"peer ({path} is missing)")
            comparisons += compare(point, points[point], predicted_rows(path), args.min_repetitions, where, left_out)
    return comparisons


def left_out_lines(left_out, state, min_repetitions):
    """The markdown lines naming the algorithms a state's report leaves out at a point."""
    if not left_out:
        return []
    lines = [f"Left out: {len(left_out)} algorithm(s) at a point with fewer than {min_repetitions} repetitions "
             f"timed in the {state} state (not in the figures above):", ""]
    for point, name, count in left_out:
        lines.append(f"- {name} at {point.label()} {human_bytes(point.bytes_per_peer)}: {count}")
    return lines


def report(args):
    tally = {"redistribution rows": StateTally(), "sweep benchmarks": StateTally()}
    left_out = [] if args.state != "all" else None
    comparisons = collect(args, tally, left_out)
    if not comparisons and left_out:
        raise ValueError(f"no algorithm has {args.min_repetitions} repetitions timed in the {args.state} state at "
                         f"any point ({len(left_out)} left out; the last section of an --state all report counts "
                         "the slow rows)")
    if not comparisons:
        raise ValueError("nothing to compare: give --redistribute and/or --bench")
    expected = [a for a in (args.expect_algorithms or "").split(",") if a]
    missing = missing_algorithms(comparisons, expected, left_out or ())
    if missing:
        raise ValueError("not both measured and predicted at every point: " + "; ".join(missing))
    lines = report_lines(comparisons, expected, left_out or ())
    if args.state != "all":
        lines = [f"Only the timings made in the {args.state} state (--state {args.state}): each tb-redistribute "
                 f"row and tb-bench benchmark is counted as slow when the {kind_of(args.state).name} ratio its tool "
                 "took before or after it is above the threshold (a file from before rows recorded it: its launch's "
                 f"start); each point the median of at least {args.min_repetitions} of them. The last sections "
                 "count them and name what was left out.", ""] + lines
        lines += [""] + left_out_lines(left_out, args.state, args.min_repetitions) if left_out else []
    if args.without:
        lines = [f"The model judged here has these terms switched off: {args.without} (tb-model --without).", ""] + lines
    if args.calibrations:
        kept, which = state_calibrations(args.calibrations, args.state, args.min_calibrations)
        lines += ["", f"The host network is {which}."] + [""] + spread_lines(kept)
    launches = [("calibrations", args.calibrations or []),
                ("redistributions", [p for group in args.redistribute or [] for p in group[1:]]),
                ("sweep launches", (args.bench or [])[:-1])]
    launches = [(kind, paths) for kind, paths in launches if paths]
    if launches:
        lines += [""] + state_lines(launches, args.state, tally)
    text = "\n".join(lines) + "\n"
    sys.stdout.write(text)
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(text)
    if args.csv:
        write_csv(args.csv, comparisons)
    return 0


# ---------------------------------------------------------------------------------------------
# tb-bench's patterns for tb-model
# ---------------------------------------------------------------------------------------------

def parse_size(text):
    """"64", "4K", "16M" -> bytes (tb-bench's -m sizes)."""
    m = re.fullmatch(r"(\d+)([KkMm]?)", text)
    if not m or int(m[1]) < 1:
        raise ValueError(f"'{text}' is not a size in bytes (e.g. 1024, 4K, 16M)")
    return int(m[1]) * {"": 1, "K": KIB, "M": MIB}[m[2].upper()]


def sweep_sizes(text):
    """tb-bench's -m MIN:MAX: the powers of two from MIN to MAX."""
    lo, _, hi = text.partition(":")
    try:
        lo, hi = parse_size(lo), parse_size(hi or lo)
    except ValueError as e:
        raise ValueError(f"--sizes {text}: {e}") from None
    if lo & (lo - 1) or hi < lo:
        raise ValueError(f"--sizes {text}: MIN must be a power of two and MAX at least MIN")
    sizes = []
    while lo <= hi:
        sizes.append(lo)
        lo *= 2
    return sizes


def vector_block(layout):
    """vector<B>'s block bytes B (a power of two; K and M suffixes), as tb-bench reads it."""
    try:
        b = parse_size(layout[len("vector"):])
    except ValueError as e:
        raise ValueError(f"layout '{layout}': B {e}") from None
    if b & (b - 1):
        raise ValueError(f"layout '{layout}': B must be a power of two (vector64, vector4K)")
    return b


def bench_pattern(layout, nbytes, ranks):
    """The pattern of tb-bench's call at `nbytes` per peer, as TB_ALLTOALLW_RECORD writes it:
    [src, dst, bytes, send blocks, receive blocks] for every pair, the self pair included. Each
    rank receives nbytes of MPI_BYTE (one block); it sends nbytes of MPI_BYTE (contiguous: one
    block) or one MPI_Type_vector of nbytes / B blocks of B = min(B, nbytes) bytes at a 2B
    stride (vector<B>: nbytes / B blocks, one below B bytes)."""
    if layout == "contiguous":
        send_blocks = 1
    elif layout.startswith("vector"):
        block = min(vector_block(layout), nbytes)
        send_blocks = nbytes // block
    else:
        raise ValueError(f"layout '{layout}': only contiguous and vector<B> are Alltoallw patterns of tb-bench")
    pairs = [[s, d, nbytes, send_blocks, 1] for s in range(ranks) for d in range(ranks)]
    return {"ranks": ranks, "description": f"tb-bench alltoallw/{layout} {human_bytes(nbytes)} per peer "
            f"({nbytes} B), {ranks} ranks", "pairs": pairs}


# tb-model's largest pattern (fpga_transport/pattern.cpp's kMaxPatternRanks): ranks x ranks pairs.
MAX_PATTERN_RANKS = 4096


def patterns(args):
    layouts = [l for l in args.layouts.split(",") if l]
    if not layouts:
        raise ValueError(f"--layouts '{args.layouts}': no layout given")
    if args.ranks < 1:
        raise ValueError(f"--ranks {args.ranks}: at least 1")
    if args.ranks > MAX_PATTERN_RANKS:
        raise ValueError(f"--ranks {args.ranks}: at most {MAX_PATTERN_RANKS} ranks (tb-model's limit on a pattern)")
    for layout in layouts:  # every layout checked before any pattern is built
        try:
            bench_pattern(layout, 1, 1)
        except ValueError as e:
            raise ValueError(f"--layouts {args.layouts}: {e}") from None
    calls = [(layout, n) for layout in layouts for n in sweep_sizes(args.sizes)]
    lines = [json.dumps(bench_pattern(layout, n, args.ranks)) for layout, n in calls]
    with open(args.out, "w") as f:
        f.write("\n".join(lines) + "\n")
    for k, (layout, n) in enumerate(calls):
        print(k, layout, n)
    return 0


# ---------------------------------------------------------------------------------------------
# The memory model from tb-redistribute's floors
# ---------------------------------------------------------------------------------------------

def memory_from_floors(measured_paths, base):
    """The memory model of `base` with its bandwidth tables from the floors of the measured runs:
    bandwidth_by_bytes from memcpy_floor, streaming_bandwidth_by_bytes from streaming_copy (the
    same copy with streaming stores, as the testbed's packer makes large copies). A floor's time
    is its row's median_s, as the algorithms' measured times are (redistribute_samples); a row
    without one is an error, not a fall back to its fastest. Runs of the same size (repetitions)
    give the median of their bandwidths."""
    tables = {"memcpy_floor": {}, "streaming_copy": {}}  # method -> bytes -> [bandwidth per run]
    for path in measured_paths:
        results = result_rows(path)
        for method, points in tables.items():
            rows = [r for r in results if r.get("method") == method]
            if not rows:
                if method == "memcpy_floor":
                    raise ValueError(f"{path}: no memcpy_floor row")
                continue
            if "median_s" not in rows[0]:
                raise ValueError(f"{path}: the {method} row has no median_s (the floor is taken as a median, "
                                 "as every measured time)")
            nbytes, seconds = rows[0].get("local_bytes_max"), rows[0]["median_s"]
            if not (is_positive(nbytes) and is_positive(seconds)):
                raise ValueError(f"{path}: the {method} row needs finite bytes and time above 0 (local_bytes_max "
                                 f"{nbytes}, median_s {seconds})")
            points.setdefault(float(nbytes), []).append(nbytes / seconds)
    model = dict(base)
    model.pop("source", None)
    copy = [[b, statistics.median(bw)] for b, bw in sorted(tables["memcpy_floor"].items())]
    model["bandwidth_by_bytes"] = copy
    model["copy_bandwidth_bytes_per_s"] = copy[-1][1]
    if tables["streaming_copy"]:
        model["streaming_bandwidth_by_bytes"] = [[b, statistics.median(bw)]
                                                 for b, bw in sorted(tables["streaming_copy"].items())]
    return model  # tb-model reads exactly its schema's keys: the provenance is the script's file names


def memory(args):
    model = memory_from_floors(args.measured, load_object(args.base, "a memory model object", f"base {args.base}"))
    with open(args.out, "w") as f:
        json.dump(model, f, indent=2)
    return 0


# Keys whose numbers are coordinates of a table, not measurements: equal in every calibration.
HOST_COORDINATES = {"block_bytes", "traffic_bytes", "ranks", "streaming_from_bytes"}


def is_number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def is_curve(value):
    """Whether `value` is a measured curve: [[x, y], ...] of numbers, x its coordinate."""
    return isinstance(value, list) and bool(value) and all(
        isinstance(p, list) and len(p) == 2 and all(is_number(v) for v in p) for p in value)


def check_measured(value, path, where):
    """Refuses a calibration's number that no measurement gives: tb-beff writes times, sizes and
    bandwidths, each finite and >= 0 (its extras are clamped at 0, and so is the Hockney fit)."""
    if is_number(value):
        if not (math.isfinite(value) and value >= 0):
            raise ValueError(f"{path}: {where} is {value} (must be finite and >= 0)")
    elif isinstance(value, dict):
        for key, inner in value.items():
            check_measured(inner, path, f"{where}.{key}" if where else key)
    elif isinstance(value, list):
        for i, inner in enumerate(value):
            check_measured(inner, path, f"{where}[{i}]")


def median_of(values, paths, where):
    """The element-wise median of JSON values of one shape, values[i] from paths[i] (see
    host-median). A number's median is median_low: with an even count of calibrations of two
    states it is a value one of them measured, never the mean of the two states."""
    first = values[0]

    def refuse(what):
        odd = next(i for i, v in enumerate(values) if what(v))
        return ValueError(f"{where}: {paths[odd]} differs from {paths[0]}")

    if is_number(first):
        if not all(is_number(v) for v in values):
            raise refuse(lambda v: not is_number(v))
        return statistics.median_low(values)
    if isinstance(first, dict):
        if any(not isinstance(v, dict) or v.keys() != first.keys() for v in values):
            odd = next(i for i, v in enumerate(values) if not isinstance(v, dict) or v.keys() != first.keys())
            keys = set(values[odd]) if isinstance(values[odd], dict) else set()
            raise ValueError(f"{where}: {paths[odd]} has other keys than {paths[0]} "
                             f"(only in one of them: {sorted(keys ^ set(first))})")
        merged = {}
        for key in first:
            parts = [v[key] for v in values]
            if key in HOST_COORDINATES and any(p != parts[0] for p in parts):
                raise refuse(lambda v, k=key, p0=parts[0]: v[k] != p0)
            merged[key] = median_of(parts, paths, f"{where}.{key}")
        return merged
    if isinstance(first, list):
        if any(not isinstance(v, list) or len(v) != len(first) for v in values):
            raise refuse(lambda v: not isinstance(v, list) or len(v) != len(first))
        if is_curve(first):
            if not all(is_curve(v) and [p[0] for p in v] == [p[0] for p in first] for v in values):
                raise refuse(lambda v: not is_curve(v) or [p[0] for p in v] != [p[0] for p in first])
            return [[p[0], statistics.median_low(v[i][1] for v in values)] for i, p in enumerate(first)]
        return [median_of([v[i] for v in values], paths, f"{where}[{i}]") for i in range(len(first))]
    if any(v != first for v in values):
        raise refuse(lambda v: v != first)
    return first


def host_median(hosts):
    """One host network from several tb-beff calibrations: the median of each measured value."""
    if not hosts:
        raise ValueError("host-median needs at least one calibration")
    specs = [load_object(path, "a calibration object") for path in hosts]
    calibrations = [spec.pop("calibration", {}) for spec in specs]
    for path, spec, c in zip(hosts, specs, calibrations):
        if not isinstance(c, dict):
            raise ValueError(f'{path}: "calibration" must be an object (tb-beff --fit-out\'s block)')
        check_measured(spec, path, "")
    stamps = [c.pop("timestamp_utc", None) for c in calibrations]
    states = [c.pop("cross_core_handoff", None) for c in calibrations]  # each launch's own
    ends = [c.pop("cross_core_handoff_after", None) for c in calibrations]
    vectors = [(c.pop("vector_path", None), c.pop("vector_path_after", None)) for c in calibrations]
    for path, c in zip(hosts, calibrations):
        if c != calibrations[0]:  # another commit, library or rank count
            raise ValueError(f"{path}: its calibration block {c} differs from {hosts[0]}'s {calibrations[0]}")
    merged = median_of(specs, hosts, "network")
    calibration = calibrations[0]
    calibration["timestamps_utc"] = stamps
    calibration["cross_core_handoffs"] = states
    if any(e is not None for e in ends):
        calibration["cross_core_handoffs_after"] = ends
    if any(v != (None, None) for v in vectors):  # the vector path's state around each launch's extras
        calibration["vector_paths"] = [before for before, _ in vectors]
        calibration["vector_paths_after"] = [after for _, after in vectors]
    calibration["median_of"] = len(hosts)
    merged["calibration"] = calibration
    if isinstance(merged.get("comment"), str):
        merged["comment"] = merged["comment"].rstrip(". ") + (
            f". Each value: the median over {len(hosts)} such calibrations (model_validation.py host-median).")
    return merged


def spread_points(values, name, points):
    """Appends (curve, x, [value per calibration]) to `points` for every measured number of one
    network section, walked across the calibrations in step (host_median has checked their
    shape). A curve is named by its key and the coordinates of its entry (block and traffic
    sizes); x is a curve point's message size, None for a single number."""
    first = values[0]
    if is_number(first):
        points.append((name, None, list(values)))
    elif isinstance(first, dict):
        coordinates = [f"{key.removesuffix('_bytes').replace('_', ' ')} {human_bytes(first[key])}"
                       for key in first if key in HOST_COORDINATES and is_number(first[key])]
        label = f"{name} ({', '.join(coordinates)})" if coordinates else name
        for key in first:
            if key not in HOST_COORDINATES:
                inner = label if key == "seconds_by_bytes" else f"{label} {key}".strip()
                spread_points([v[key] for v in values], inner, points)
    elif isinstance(first, list):
        if is_curve(first):
            for i, p in enumerate(first):
                points.append((name, p[0], [v[i][1] for v in values]))
        else:
            for i in range(len(first)):
                spread_points([v[i] for v in values], name, points)


def calibration_spread(hosts):
    """How far the calibrations of one validation run spread: per curve of the host network (and
    per single value), the point where the calibrations differ most relative to their largest
    value, (max - min) / max, with its min, median and max. A list of rows
    (curve, x, minimum, median, maximum); the curves in the files' order."""
    host_median(hosts)  # the files must be of one shape: the same errors as host-median
    specs = [read_json(path) for path in hosts]
    points = []
    for section in ("host", "library"):
        if all(isinstance(spec.get(section), dict) for spec in specs):
            for key in specs[0][section]:
                name = key.removesuffix("_seconds_by_bytes").removesuffix("_seconds").replace("_", " ")
                spread_points([spec[section][key] for spec in specs], f"{section}: {name}", points)

    def relative(values):
        top = max(values)
        return (top - min(values)) / top if top > 0 else 0.0

    widest = {}
    for name, x, values in points:
        if name not in widest or relative(values) > relative(widest[name][1]):
            widest[name] = (x, values)
    return [(name, x, min(v), statistics.median_low(v), max(v)) for name, (x, v) in widest.items()]


@dataclass(frozen=True)
class StateKind:
    """One of the machine's two states the tools record (microbench/machine_state.hpp): where a
    launch records it (at its start; a tb-beff calibration also at its end), where each timed row
    does (just before and just after it), and the ratio above which it is slow."""
    name: str
    launch_keys: tuple
    row_keys: tuple
    slow_ratio: float


HANDOFF = StateKind("cross-core handoff", ("cross_core_handoff", "cross_core_handoff_after"),
                    ("handoff_before", "handoff_after"), SLOW_HANDOFF_RATIO)
VECTOR = StateKind("vector path", ("vector_path", "vector_path_after"),
                   ("vector_before", "vector_after"), SLOW_VECTOR_RATIO)
# all, then each kind's states: fast and slow are the handoff's (as before the vector path's were
# recorded), vector-fast and vector-slow the vector path's.
STATES = ("all", "fast", "slow", "vector-fast", "vector-slow")


def kind_of(state):
    """The StateKind a --state names ("all": the handoff's, whose slow rows the report counts)."""
    return VECTOR if state.startswith("vector-") else HANDOFF


def launch_ratio(doc, kind=HANDOFF):
    """The ratio of `kind` (microbench/machine_state.hpp) a tool recorded for its launch: when it
    started (tb-redistribute's metadata, tb-bench's context, a JSON string there), and for a tb-beff
    calibration the larger of its start and end (one launch measures for many seconds); None where
    it recorded none (an older file, one rank per node)."""
    def ratio(state):
        if isinstance(state, str):
            state = json.loads(state)
        return state.get("ratio") if isinstance(state, dict) else None
    start, end = kind.launch_keys
    for holder in (doc.get("metadata"), doc.get("context"), doc.get("calibration")):
        if isinstance(holder, dict) and start in holder:
            ratios = [ratio(holder[start]), ratio(holder.get(end))]
            known = [r for r in ratios if r is not None]
            return max(known) if known else None
    return None


def is_slow(ratio, kind=HANDOFF):
    """Whether a recorded ratio of `kind` is its slow state's."""
    return ratio > kind.slow_ratio


def in_state(ratio, state):
    """Whether a known ratio (of kind_of(state)) is in `state` (fast or slow, either kind's)."""
    return is_slow(ratio, kind_of(state)) == state.endswith("slow")


def row_state(row, launch, kind=HANDOFF):
    """The ratio of `kind` a timed row ran in: the larger of the two its tool took just before and
    just after it (tb-redistribute's rows, tb-bench's counters), or, for a row from before the tools
    recorded them, its launch's (`launch`, its launch_ratio)."""
    around = [row.get(key) for key in kind.row_keys]
    if all(isinstance(r, (int, float)) and r >= 0 for r in around):
        return max(around)
    return launch


@dataclass
class StateTally:
    """How many timed rows a report read and how many of them ran in the slow state."""
    rows: int = 0
    slow: int = 0
    unknown: int = 0


def row_in_state(row, launch, state, tally, where):
    """Whether a timed row ran in `state` (row_state of its kind: slow above the kind's ratio; the
    launch's ratio of that kind is `launch`), counted in `tally`; a row whose state is unknown
    cannot be sorted into fast or slow: an error naming it."""
    kind = kind_of(state)
    ratio = row_state(row, launch, kind)
    if tally is not None:
        tally.rows += 1
        tally.unknown += ratio is None
        tally.slow += ratio is not None and is_slow(ratio, kind)
    if state == "all":
        return True
    if ratio is None:
        raise ValueError(f"{where}: no {kind.name} state recorded (a file from before the tools recorded it, "
                         f"or no node with two ranks), so it cannot be counted as {state}")
    return in_state(ratio, state)




def launches_in(paths, state):
    """The launches (tool output files) in `state`: every one for "all", else those whose
    launch_ratio of the state's kind (its start; a calibration's start or end) is at most (fast)
    or above (slow) the kind's ratio. A file that recorded no state cannot be sorted: an error
    naming it."""
    if state == "all":
        return list(paths)
    kept, kind = [], kind_of(state)
    key = kind.launch_keys[0]
    for path in paths:
        doc = load_object(path, "a calibration object")  # state_calibrations: tb-beff calibrations
        ratio = launch_ratio(doc, kind)
        if ratio is None:
            recorded = any(isinstance(h, dict) and h.get(key) in (None, "null") and
                           key in h for h in (doc.get("metadata"), doc.get("context"), doc.get("calibration")))
            why = ("its launch had no node with two ranks (or ran under SMPI)" if recorded else
                   f"no {key} recorded: a file from before the tools recorded it")
            raise ValueError(f"{path}: {why}, so it cannot be counted as {state}")
        if in_state(ratio, state):
            kept.append(path)
    return kept


def state_lines(launches, state="all", tally=None):
    """The markdown section on the machine's state per launch (`launches`: [(kind, [paths])]) and,
    from `tally` ({kind: StateTally}), per timed row."""
    mixed = ("A point's median mixes the states." if state == "all" else
             f"The figures above keep the rows timed in the {state} state.")
    kind = kind_of(state)
    what = (f"a 1 MiB handoff between the two cores over a copy within one, as a ratio; above "
            f"{kind.slow_ratio:g}x the machine is in the slow state, in which node_leader's handoffs and "
            f"ucx_zcopy's gets take several times their usual time" if kind is HANDOFF else
            f"the vector path: a 64 KiB message sent as a vector of 1 KiB blocks over the same bytes contiguous, "
            f"as a ratio; above {kind.slow_ratio:g}x the MPI library's path for non-contiguous messages is in its "
            f"slow state, in which their extra cost is several times its usual (native's and pairwise's "
            f"non-contiguous sides)")
    lines = [f"Machine state ({kind.name}): {what}. The tools record it when a launch starts "
             f"(tb-beff also when it ends: the larger is shown) and before and after each timed row (the state "
             f"can change within a launch). {mixed}", ""]
    for source, paths in launches:
        ratios = [launch_ratio(read_json(p), kind) for p in paths]
        known = [r for r in ratios if r is not None]
        slow = sum(1 for r in known if is_slow(r, kind))
        text = ", ".join("-" if r is None else f"{r:.1f}" for r in ratios)
        lines.append(f"- {source}: {slow} of {len(known)} slow ({text})" if known else f"- {source}: not recorded")
    for source, t in (tally or {}).items():
        if t.rows:
            unknown = f", {t.unknown} not recorded" if t.unknown else ""
            lines.append(f"- {source} timed: {t.slow} of {t.rows} slow{unknown}")
    return lines


def spread_lines(hosts):
    """The markdown section on the calibrations' spread (calibration_spread)."""
    rows = calibration_spread(hosts)
    lines = [f"Calibration spread: {len(hosts)} tb-beff calibration(s); the model uses the median of each value "
             "(host-median). Per curve, the point where they differ most:", "",
             "| value | at | unit | min | median | max | max / min |", "|---|---|---|---|---|---|---|"]
    for name, x, lo, mid, hi in rows:
        unit = "B/s" if "bandwidth" in name else "s/B" if name.endswith("per byte") else "B" if name.endswith("bytes") else "s"
        ratio = f"{hi / lo:.2f}" if lo > 0 else ("1.00" if hi == 0 else "min 0")
        at = "-" if x is None else human_bytes(x)
        lines.append(f"| {name} | {at} | {unit} | {lo:.4g} | {mid:.4g} | {hi:.4g} | {ratio} |")
    return lines


MIN_STATE_CALIBRATIONS = 3  # a median that can outvote one outlying calibration


def positive_count(text):
    """argparse type of --min-calibrations: an integer of at least 1."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text}: at least 1")
    return value


def state_calibrations(paths, state, min_calibrations=MIN_STATE_CALIBRATIONS):
    """The calibrations a network for `state` is the median of, and a sentence saying which: those
    made in the state (launches_in), or, where fewer than `min_calibrations` were, every one of
    them. One calibration in a state is one sample, and one outlying calibration would price every
    row of the state (docs/results/2026-12-05-state-network-minimum.md)."""
    kept = launches_in(paths, state)
    if state == "all":
        return kept, f"the median of {len(kept)} calibration(s)"
    if len(kept) >= min_calibrations:
        return kept, f"the median of the {len(kept)} calibration(s) made in the {state} state"
    made = "none was" if not kept else f"only {len(kept)} {'was' if len(kept) == 1 else 'were'}"
    return list(paths), (f"the median of all {len(paths)} calibration(s), since {made} made in the {state} state "
                         f"(fewer than {min_calibrations}; --min-calibrations)")


def host(args):
    hosts, which = state_calibrations(args.hosts, args.state, args.min_calibrations)
    merged = host_median(hosts)  # before OUT is opened: a refused merge leaves no file behind
    merged["calibration"]["state"] = {"asked": args.state, "network": which}
    with open(args.out, "w") as f:
        json.dump(merged, f, indent=2)
    print(f"{args.out}: {which}")
    return 0


# ---------------------------------------------------------------------------------------------
# The fixed overheads per call, per state
# ---------------------------------------------------------------------------------------------

def overhead_samples(paths, state):
    """{algorithm: ([seconds per call timed in `state`], [seconds in any state])} of tb-bench's
    contiguous benchmarks at 1 B per peer, over the launches `paths` (model_validation.sh measures
    them once before the repetitions and once in each)."""
    samples = {}
    for path in paths:
        every = {}
        kept = bench_samples(path, state, every=every)
        for point, by_algorithm in every.items():
            if point.layout != "contiguous" or point.bytes_per_peer != 1:
                continue
            for algorithm, seconds in by_algorithm.items():
                in_state_s, every_s = samples.setdefault(algorithm, ([], []))
                in_state_s.extend(kept[point][algorithm])
                every_s.extend(seconds)
    if not samples:
        raise ValueError(f"no tb-bench benchmark at 1 B per peer, contiguous, in {', '.join(paths)}")
    return samples


def overheads(args):
    """Each algorithm's time per call at 1 B per peer as tb-model --overheads reads it: the median
    over the launches' benchmarks timed in the state. An algorithm none of whose benchmarks ran in
    the state takes the median over all of them, and that is said on stderr and in the file
    ("fell_back"): the slow state's overheads are several times the fast state's, so a single
    launch at the start of a run must not set both."""
    samples = overhead_samples(args.launches, args.state)
    benchmarks, fell_back = [], []
    for algorithm, (in_state_s, every_s) in sorted(samples.items()):
        chosen = in_state_s or every_s
        if not in_state_s:
            fell_back.append(algorithm)
            print(f"model_validation.py overheads: no 1 B benchmark of {algorithm} timed in the {args.state} state; "
                  f"its overhead is the median of all {len(every_s)}", file=sys.stderr)
        benchmarks.append({"name": f"alltoallw/contiguous/{algorithm}/1/manual_time", "run_type": "iteration",
                           "real_time": statistics.median(chosen), "time_unit": "s", "samples": len(chosen)})
    with open(args.out, "w") as f:
        json.dump({"context": {"state": args.state, "launches": args.launches, "fell_back": fell_back},
                   "benchmarks": benchmarks}, f, indent=2)
    return 0


def parser():
    p = argparse.ArgumentParser(prog="model_validation.py", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)
    r = sub.add_parser("report", help="predicted against measured: errors, bias, rankings")
    r.add_argument("--redistribute", nargs="+", action="append", metavar="FILE",
                   help="PREDICTED.csv then every repetition's tb-redistribute JSON of one cube")
    r.add_argument("--bench", nargs="+", metavar="FILE",
                   help="tb-bench's JSON of every launch of the sweep, then the folder of tb-model CSVs")
    r.add_argument("--markdown", help="also write the report here")
    r.add_argument("--csv", help="one row per algorithm and point")
    r.add_argument("--min-repetitions", type=int, default=5)
    r.add_argument("--without", default="", help="the model terms the predictions were made without (stated only)")
    r.add_argument("--expect-algorithms", help="comma-separated: each point must compare every one")
    r.add_argument("--calibrations", nargs="+", metavar="HOST",
                   help="the run's tb-beff calibrations (host-K.json): their spread closes the report")
    r.add_argument("--min-calibrations", type=positive_count, default=MIN_STATE_CALIBRATIONS,
                   help="as host-median's: which calibrations the state's network is the median of")
    r.add_argument("--state", choices=STATES, default="all",
                   help="keep the timings (redistribution rows, sweep benchmarks) made in this state and the "
                        "calibrations in it")
    r.set_defaults(run=report)
    t = sub.add_parser("patterns", help="tb-bench's calls as TB_ALLTOALLW_RECORD lines")
    t.add_argument("out")
    t.add_argument("--sizes", required=True, help="MIN:MAX bytes per peer, powers of two (1K:4M)")
    t.add_argument("--layouts", default="contiguous,vector64")
    t.add_argument("--ranks", type=int, default=2)
    t.set_defaults(run=patterns)
    m = sub.add_parser("memory-from-floors", help="tb-model's memory model from tb-redistribute's floors")
    m.add_argument("out")
    m.add_argument("base")
    m.add_argument("measured", nargs="+")
    m.set_defaults(run=memory)
    h = sub.add_parser("host-median", help="one host network: the median of several tb-beff calibrations")
    h.add_argument("out")
    h.add_argument("hosts", nargs="+")
    h.add_argument("--state", choices=STATES, default="all",
                   help="the median over the calibrations in this state only (slow: started or ended slow)")
    h.add_argument("--min-calibrations", type=positive_count, default=MIN_STATE_CALIBRATIONS,
                   help="with a state: fewer calibrations made in it than this, and the median is of all of them")
    h.set_defaults(run=host)
    o = sub.add_parser("overheads", help="each algorithm's fixed overhead per call: the median of its 1 B benchmarks "
                                         "timed in a state")
    o.add_argument("out")
    o.add_argument("launches", nargs="+", help="tb-bench JSON files of -m 1:1 --layouts contiguous")
    o.add_argument("--state", choices=STATES, default="all")
    o.set_defaults(run=overheads)
    return p


def main(argv):
    args = parser().parse_args(argv[1:])
    try:
        return args.run(args)
    except (ValueError, KeyError, OSError) as e:
        what = f"missing key {e}" if isinstance(e, KeyError) else str(e)
        print(f"model_validation.py {args.command}: error: {what}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
