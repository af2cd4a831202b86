#!/usr/bin/python3
"""SMPI's simulated times against the times measured on this host, point by point.

  smpi_vs_measured.py STORE [--platform experiments/platforms/this-host.xml] [--mpi mpich]
                      [--compute on] [--out DIR]

STORE holds tb-redistribute rows of the same definition run twice by experiments/run.py: once
measured (--mode intra) and once simulated (--mode smpi --platform PLATFORM, normally with
--compute on, so that the copies between MPI calls are charged as timed here). Each simulated
row (of that platform and --compute setting) is set beside the measured row of the same point
(ranks, shape, grid, axes, element type, method) run with --mpi; the error is (smpi - measured) / measured, on the fastest repetition of each (the
store's fastest_s: the paper's statistic, and the one least moved by this shared machine's
drifts; the measured median is printed beside it). Prints one row per pair and a summary per
method over the pairs from 64 KiB to 16 MiB per peer; with --out, also comparison.md,
comparison.csv and comparison.png there. A point stored twice on either side is an error
naming it (which one to compare is the user's choice: keep one store per comparison).

Each measured row's launch recorded the state of MPICH's vector path it started in (metadata
vector_path, microbench/machine_state.hpp), and a platform written by host_platform.py from a
calibration that recorded it carries the calibration's state before and after its non-contiguous
exchanges (property tb_calibration_vector_path). The table shows the measured state; where the
calibration stayed in one state, a second summary covers only the points measured in that state,
since the extras it charges differ several times between the states
(docs/results/2026-12-06-smpi-noncontiguous-extras.md).
"""
import argparse
import csv
import math
import os
import sys
import xml.etree.ElementTree as ElementTree

from model_validation import SLOW_VECTOR_RATIO  # kSlowVectorRatio of microbench/machine_state.hpp
from model_vs_smpi import algorithm_of
from store import read_rows

ELEMENT_BYTES = {"float": 4, "double": 8, "complex<float>": 8, "complex<double>": 16}
GOAL = 0.25                        # issue: SMPI on this host within 25 % of the measured times
GOAL_BYTES = (64 << 10, 16 << 20)  # ... at 64 KiB - 16 MiB per peer
FLOORS = ("memcpy_floor", "streaming_copy")
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class StoreError(Exception):
    pass


def platform_as_stored(path):
    """The platform as experiments/run.py stores it: relative to the repository when inside it."""
    full = os.path.abspath(path)
    return os.path.relpath(full, ROOT) if full.startswith(ROOT + os.sep) else full


def point_key(row):
    return (row["ranks"], row["global_shape"], row["grid"], row["from_axis"], row["to_axis"], row["element_type"],
            algorithm_of(row["method"]))


def bytes_per_peer(row):
    """The bytes one rank sends each peer on average: the whole array over ranks squared."""
    elements = math.prod(int(n) for n in row["global_shape"].split("x"))
    return elements * ELEMENT_BYTES[row["element_type"]] // (row["ranks"] * row["ranks"])


def positive(value):
    """Whether `value` is a finite number > 0 (a time, a rank count): NaN, 0, negatives and strings are not."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value > 0


def check_point(row, key, what, fields):
    """StoreError naming the point where one of `fields` (the ranks and the times this script
    divides by or prints) is missing or not > 0: a damaged or hand-edited row."""
    for field in ("ranks",) + fields:
        value = row.get(field)
        if not positive(value):
            shown = f"{value:g}" if isinstance(value, (int, float)) and not isinstance(value, bool) else repr(value)
            raise StoreError(f"the {what} point {key} has {field} {shown} (must be > 0)" if field in row
                             else f"the {what} point {key} has no {field}")


def keep_once(side, row, what):
    key = point_key(row)
    check_point(row, key, what, ("fastest_s", "median_s") if what == "measured" else ("fastest_s",))
    if key in side:
        raise StoreError(f"the {what} point {key} is stored twice (keys {side[key].get('key')} and {row.get('key')}); "
                         "compare one run of each side")
    side[key] = row


def pairs(rows, platform, mpi="mpich", compute="on"):
    measured, simulated = {}, {}
    for r in rows:
        if r.get("tool") != "tb-redistribute" or r.get("method") in FLOORS:
            continue
        if r.get("mode") == "intra" and r.get("mpi") == mpi:
            keep_once(measured, r, "measured")
        elif r.get("mode") == "smpi" and r.get("platform") == platform and r.get("smpi_compute") == compute:
            keep_once(simulated, r, "simulated")
    out = []
    for key in sorted(simulated.keys() & measured.keys()):
        m, s = measured[key], simulated[key]
        out.append({"ranks": key[0], "shape": key[1], "grid": key[2], "redistribution": f"{key[3]}->{key[4]}",
                    "algorithm": key[6], "bytes_per_peer": bytes_per_peer(m), "mpi": m.get("mpi", ""),
                    "smpi_compute": s.get("smpi_compute", ""), "measured_s": m["fastest_s"],
                    "measured_median_s": m["median_s"], "smpi_s": s["fastest_s"],
                    "error": (s["fastest_s"] - m["fastest_s"]) / m["fastest_s"],
                    "measured_vector_ratio": vector_ratio(m)})
    return out


def vector_ratio(row):
    """The vector path's ratio the row's launch started in, or None where it was not recorded."""
    state = (row.get("metadata") or {}).get("vector_path")
    return state.get("ratio") if isinstance(state, dict) else None


def is_slow(ratio):
    return ratio > SLOW_VECTOR_RATIO


def state_text(ratio):
    return "-" if ratio is None else f"{ratio:.1f}x" + (" SLOW" if is_slow(ratio) else "")


def calibration_vector_path(platform_path):
    """The platform's calibration's vector path ratios (before, after its non-contiguous
    exchanges), or None where the platform does not carry them or its file is not here (the
    store names it; it may have been written elsewhere). A file that is not XML is an error."""
    try:
        root = ElementTree.parse(platform_path).getroot()
    except OSError:
        return None
    except ElementTree.ParseError as e:
        raise StoreError(f"{platform_path}: not a platform file ({e})") from None
    for prop in root.iter("prop"):
        if prop.get("id") == "tb_calibration_vector_path":
            try:
                before, after = (float(x) for x in prop.get("value", "").split(","))
            except ValueError:
                raise StoreError(f"{platform_path}: property tb_calibration_vector_path is "
                                 f"{prop.get('value')!r}, not BEFORE,AFTER ratios") from None
            return before, after
    return None


def calibration_state_lines(rows, states):
    """What the calibration's vector path says of the comparison (see the module's text)."""
    if states is None:
        return []
    before, after = states
    if is_slow(before) != is_slow(after):
        return ["", f"The calibration's vector path changed state during its non-contiguous exchanges "
                    f"({state_text(before)} -> {state_text(after)}): no points are paired by it."]
    name = "slow" if is_slow(before) else "fast"
    alike = [r for r in rows
             if r["measured_vector_ratio"] is not None and is_slow(r["measured_vector_ratio"]) == is_slow(before)]
    head = (f"The calibration's vector path: {state_text(before)} before and {state_text(after)} after its non-contiguous "
            f"exchanges ({name}); the points whose measured launch started in the {name} state too:")
    return ["", head, ""] + (summary(alike) if alike else ["(none)"])


def in_goal_range(p):
    return GOAL_BYTES[0] <= p["bytes_per_peer"] <= GOAL_BYTES[1]


def table(rows):
    lines = ["| ranks | shape | axes | bytes/peer | algorithm | measured ms (median) | SMPI ms | error | "
             "measured vector path |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in sorted(rows, key=lambda r: (r["algorithm"], r["bytes_per_peer"])):
        lines.append(f"| {r['ranks']} | {r['shape']} | {r['redistribution']} | {r['bytes_per_peer']} | {r['algorithm']} | "
                     f"{r['measured_s'] * 1e3:.4f} ({r['measured_median_s'] * 1e3:.4f}) | {r['smpi_s'] * 1e3:.4f} | "
                     f"{r['error'] * 100:+.1f} % | {state_text(r.get('measured_vector_ratio'))} |")
    return lines


def summary(rows):
    lines = [f"| algorithm | points at 64 KiB-16 MiB per peer | within {GOAL:.0%} | largest error | mean error |",
             "|---|---|---|---|---|"]
    for algorithm in sorted({r["algorithm"] for r in rows}):
        mine = [r for r in rows if r["algorithm"] == algorithm and in_goal_range(r)]
        if not mine:
            continue
        worst = max(mine, key=lambda r: abs(r["error"]))
        within = sum(abs(r["error"]) <= GOAL for r in mine)
        mean = sum(r["error"] for r in mine) / len(mine)
        lines.append(f"| {algorithm} | {len(mine)} | {within} | {worst['error'] * 100:+.1f} % "
                     f"({worst['bytes_per_peer']} B/peer) | {mean * 100:+.1f} % |")
    return lines


def plot(rows, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for algorithm in sorted({r["algorithm"] for r in rows}):
        mine = sorted((r for r in rows if r["algorithm"] == algorithm), key=lambda r: r["bytes_per_peer"])
        x = [r["bytes_per_peer"] for r in mine]
        line, = ax.plot(x, [r["measured_s"] * 1e3 for r in mine], "o-", label=f"{algorithm} measured")
        ax.plot(x, [r["smpi_s"] * 1e3 for r in mine], "x--", color=line.get_color(), label=f"{algorithm} SMPI")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("bytes per peer")
    ax.set_ylabel("ms per redistribution (fastest repetition)")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("store")
    parser.add_argument("--platform", default="experiments/platforms/this-host.xml",
                        help="the simulated rows' platform file, as the store names it")
    parser.add_argument("--mpi", default="mpich", help="the measured rows' MPI build (run.py --mpi)")
    parser.add_argument("--compute", default="on", choices=("on", "off"), help="the simulated rows' run.py --compute")
    parser.add_argument("--out", help="folder for comparison.md, comparison.csv and comparison.png")
    args = parser.parse_args(argv)
    if args.out and os.path.exists(args.out) and not os.path.isdir(args.out):
        parser.error(f"--out {args.out}: not a folder")
    platform = platform_as_stored(args.platform)
    try:
        rows = pairs(read_rows(args.store), platform, args.mpi, args.compute)
        states = calibration_vector_path(args.platform)
    except StoreError as e:
        print(f"smpi_vs_measured.py: error: {args.store}: {e}", file=sys.stderr)
        return 2
    except (OSError, KeyError, TypeError, ValueError) as e:
        print(f"smpi_vs_measured.py: error: {args.store}: not a readable store of run.py rows: {e!r}", file=sys.stderr)
        return 2
    if not rows:
        print(f"smpi_vs_measured.py: error: {args.store} has no tb-redistribute point both measured (--mode intra, "
              f"--mpi {args.mpi}) and simulated on {platform} with --compute {args.compute}", file=sys.stderr)
        return 2
    text = table(rows) + [""] + summary(rows) + calibration_state_lines(rows, states)
    print("\n".join(text))
    if args.out:
        try:
            os.makedirs(args.out, exist_ok=True)
        except OSError as e:
            parser.error(f"--out {args.out}: cannot be made ({e.strerror})")
        with open(os.path.join(args.out, "comparison.md"), "w") as f:
            f.write("\n".join(text) + "\n")
        with open(os.path.join(args.out, "comparison.csv"), "w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)
        plot(rows, os.path.join(args.out, "comparison.png"))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
