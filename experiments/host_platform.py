#!/usr/bin/python3
"""A SimGrid platform of this host from its measured MPI messages, for comparing SMPI with
measurements made here (docs/simulation.md, "SMPI against this host").

  mpiexec.mpich -n 2 build/mpich/bin/tb-beff --fit-out host.json
  host_platform.py host.json --out this-host.xml [--cores N]

tb-beff's key host.message_seconds_by_bytes is the measured time t(L) of one MPI message of L
bytes between two ranks of this host, 1 B to 16 MiB. The platform is one node whose loopback
link (what two ranks on one host talk through in SMPI) has the latency t of the smallest size
and the highest bandwidth any size reached, and SMPI's piecewise factors (smpi/lat-factor,
smpi/bw-factor: a message of L bytes takes lat * lat-factor(L) + L / (bw * bw-factor(L)),
each factor that of the largest threshold <= L) are chosen so that a message of each measured
size takes exactly its measured time. Sizes between two measured ones take the smaller one's
factors.

SMPI itself charges no time for datatype processing inside MPI calls (packing and unpacking
non-contiguous types), which MPICH spends. tb-beff measures it two ways, and the platform may
carry one of them as a zone property that the smpi build charges for the non-contiguous sides
that native and pairwise hand to MPI (collectives/simulated_datatype_engine.hpp):
- --noncontiguous-extras: the property tb_noncontiguous_extra_seconds, tb-beff's measured extra
  time of a message with a non-contiguous send or receive side over the same message contiguous,
  per block size (keys host.noncontiguous_{send,recv}_extra_seconds): what a platform whose
  messages are fitted to contiguous ones misses, the same quantity as tb-model's
  noncontiguous_messages term; and, where the calibration has them, the extras of a rank's message
  to itself (host.self_noncontiguous_{send,recv}_extra_seconds), charged for native's own block as
  tb-model's noncontiguous_self_messages term charges them.
- --datatype-engine: the property tb_datatype_engine_bandwidth_by_bytes, one full MPI_Pack pass
  at its measured rate (key library.bandwidth_by_bytes, or library.copy_bandwidth_bytes_per_s).
  An experiment: on this host's slab redistributions it made SMPI 1.6-4.1x too slow for native at
  64 KiB - 1 MiB per peer (docs/results/2026-12-04-smpi-datatype-engine.md), since the platform's
  messages already include the copy a pack would replace.
Without either, SMPI charges nothing for that work.
"""
import argparse
import json
import math
import sys
from xml.sax.saxutils import quoteattr

# A size whose measured time is within this fraction of latency plus bytes over the bandwidth is
# matched by the latency factor alone (its bandwidth term is too small to fit).
LATENCY_BOUND = 1.05
# --cores: the node is this one host, which has at most as many CPUs as an x86-64 Linux kernel
# supports (NR_CPUS with MAXSMP).
MAX_CORES = 8192


class CalibrationError(ValueError):
    pass


def number(value):
    """A JSON number as a float; ValueError for anything else (JSON's true and false included)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"{value!r} is not a number")
    return float(value)


def checked_table(points, name, unit, path, values="times"):
    """points, a calibration's table `name` as sorted [(bytes, value in unit)], if every size and value
    is finite and > 0 and no size is listed twice; an error naming the first that is not."""
    for size, value in points:
        if not (math.isfinite(size) and math.isfinite(value) and size > 0 and value > 0):
            raise CalibrationError(f"{path}: {name} has {value:g} {unit} at {size:g} B; sizes and {values} must be "
                                   f"finite and > 0")
    for (size, _), (next_size, _) in zip(points, points[1:]):
        if size == next_size:
            raise CalibrationError(f"{path}: {name} lists {size:g} B twice")
    return points


def message_curve(calibration, path):
    try:
        curve = calibration["host"]["message_seconds_by_bytes"]
    except (KeyError, TypeError):
        raise CalibrationError(f"{path}: no host.message_seconds_by_bytes (write it with tb-beff --fit-out)") from None
    try:
        points = sorted((number(size), number(seconds)) for size, seconds in curve)
    except (TypeError, ValueError):
        raise CalibrationError(f"{path}: host.message_seconds_by_bytes must be [[bytes, s], ...], "
                               f"all numbers") from None
    if len(points) < 2:
        raise CalibrationError(f"{path}: host.message_seconds_by_bytes needs at least 2 sizes, it has {len(points)}")
    return checked_table(points, "host.message_seconds_by_bytes", "s", path)


def fit(points):
    """The loopback's latency and bandwidth and the per-size factors that reproduce points."""
    latency = points[0][1]
    bandwidth = max(size / seconds for size, seconds in points)
    lat_factor, bw_factor = [], []
    for i, (size, seconds) in enumerate(points):
        threshold = 0 if i == 0 else int(size)
        transfer = seconds - latency
        if transfer * bandwidth > size / LATENCY_BOUND:
            lat_factor.append((threshold, 1.0))
            bw_factor.append((threshold, size / (bandwidth * transfer)))
        else:
            lat_factor.append((threshold, (seconds - size / bandwidth) / latency))
            bw_factor.append((threshold, 1.0))
    return latency, bandwidth, lat_factor, bw_factor


def simulated_seconds(size, latency, bandwidth, lat_factor, bw_factor):
    """What SMPI's factors make of one message of size bytes (the rule fit() inverts)."""
    def at(factors):
        return [f for threshold, f in factors if threshold <= size][-1]
    return latency * at(lat_factor) + size / (bandwidth * at(bw_factor))


def engine_table(calibration, path):
    """The library's datatype engine, [(bytes, bytes per second)] ascending; an error without one."""
    library = calibration.get("library")
    if not isinstance(library, dict) or not (library.get("bandwidth_by_bytes") or library.get("copy_bandwidth_bytes_per_s")):
        raise CalibrationError(f"{path}: no library.bandwidth_by_bytes or library.copy_bandwidth_bytes_per_s "
                               f"(tb-beff --fit-out writes them) for --datatype-engine")
    try:
        if library.get("bandwidth_by_bytes"):
            name = "library.bandwidth_by_bytes"
            table = sorted((number(size), number(rate)) for size, rate in library["bandwidth_by_bytes"])
        else:
            name = "library.copy_bandwidth_bytes_per_s"
            table = [(1.0, number(library["copy_bandwidth_bytes_per_s"]))]
    except (TypeError, ValueError):
        raise CalibrationError(f"{path}: library.bandwidth_by_bytes must be [[bytes, bytes/s], ...] and "
                               f"library.copy_bandwidth_bytes_per_s a number") from None
    return checked_table(table, name, "B/s", path, values="rates")


def extras_rows(host, key, path):
    """One of tb-beff's extras tables, host.<key>, checked: [{block_bytes, seconds_by_bytes}, ...]."""
    try:
        rows = [{"block_bytes": number(row["block_bytes"]),
                 "seconds_by_bytes": [[number(size), number(seconds)] for size, seconds in row["seconds_by_bytes"]]}
                for row in host[key]]
    except (KeyError, TypeError, ValueError):
        raise CalibrationError(f"{path}: host.{key} must be [{{block_bytes, seconds_by_bytes: [[bytes, s], ...]}}, ...]") from None
    blocks = [row["block_bytes"] for row in rows]
    for row in rows:
        sizes = [size for size, _ in row["seconds_by_bytes"]]
        # A block's extra may be 0 (as fast as the contiguous message); sizes and blocks may not.
        if not sizes or sizes != sorted(set(sizes)) or sizes[0] <= 0 or not all(map(math.isfinite, sizes)) or \
                any(not (math.isfinite(s) and s >= 0) for _, s in row["seconds_by_bytes"]):
            raise CalibrationError(f"{path}: host.{key}, block {row['block_bytes']:g} B: sizes must be finite, > 0 "
                                   f"and ascending, seconds finite and >= 0")
    if blocks != sorted(set(blocks)) or blocks[0] <= 0 or not all(map(math.isfinite, blocks)):
        raise CalibrationError(f"{path}: host.{key}: block sizes must be finite, > 0 and ascending")
    return rows


def extras_table(calibration, path):
    """tb-beff's non-contiguous extras, {"send": [...], "recv": [...]}, and where the calibration
    has them its extras of a rank's message to itself, "self_send" and "self_recv" (native's own
    block); an error without the first two, or with one of the last two alone."""
    host = calibration.get("host") if isinstance(calibration.get("host"), dict) else {}
    table = {}
    for side in ("send", "recv"):
        key = f"noncontiguous_{side}_extra_seconds"
        if not host.get(key):
            raise CalibrationError(f"{path}: no host.{key} (tb-beff --fit-out at 2 ranks writes it) for --noncontiguous-extras")
        table[side] = extras_rows(host, key, path)
    self_keys = {f"self_{side}": f"self_noncontiguous_{side}_extra_seconds" for side in ("send", "recv")}
    present = [key for key in self_keys.values() if host.get(key)]
    if len(present) == 1:
        raise CalibrationError(f"{path}: host.{present[0]} without its other side; a calibration has both or neither")
    for side, key in self_keys.items():
        if present:
            table[side] = extras_rows(host, key, path)
    return table


def factor_text(factors):
    return ";".join(f"{threshold}:{value:.6g}" for threshold, value in factors)


def engine_property(table):
    value = ";".join(f"{size:.15g}:{rate:.6g}" for size, rate in table)
    return f"""
    <prop id="tb_datatype_engine_bandwidth_by_bytes" value={quoteattr(value)}/>"""


def extras_property(table):
    value = json.dumps(table, separators=(",", ":"))
    return f"""
    <prop id="tb_noncontiguous_extra_seconds" value={quoteattr(value)}/>"""


def vector_path_property(calibration, path):
    """The calibration's vector path state around its non-contiguous exchanges (tb-beff's
    calibration.vector_path and vector_path_after) as a zone property for
    analysis/smpi_vs_measured.py; "" where the calibration did not record both, an error where a
    recorded ratio (vector message time over contiguous) is not a finite number > 0."""
    measured = calibration.get("calibration") if isinstance(calibration.get("calibration"), dict) else {}
    keys = ("vector_path", "vector_path_after")
    states = [measured.get(key) for key in keys]
    if not all(isinstance(state, dict) and "ratio" in state for state in states):
        return ""
    for key, state in zip(keys, states):
        ratio = state["ratio"]
        if isinstance(ratio, bool) or not isinstance(ratio, (int, float)) or not 0 < ratio < math.inf:
            raise CalibrationError(f"{path}: calibration.{key}.ratio is {ratio!r}; it must be a finite number > 0")
    value = ",".join(f"{state['ratio']:.4g}" for state in states)
    return f"""
    <prop id="tb_calibration_vector_path" value={quoteattr(value)}/>"""


def comment_text(text):
    """Text that may stand inside an XML comment, which must not hold '--'."""
    return str(text).replace("--", "- -")


def platform(calibration, path, cores, command, datatype_engine=False, extras=None):
    """The platform XML; `extras`: extras_table's table to carry (--noncontiguous-extras), or None."""
    latency, bandwidth, lat_factor, bw_factor = fit(message_curve(calibration, path))
    engine = engine_property(engine_table(calibration, path)) if datatype_engine else ""
    if extras is not None:
        engine = extras_property(extras)
    engine += vector_path_property(calibration, path)
    measured = calibration.get("calibration") if isinstance(calibration.get("calibration"), dict) else {}
    library = comment_text(measured.get("mpi_library", "the MPI library tb-beff ran on"))
    when = comment_text(measured.get("timestamp_utc", "an unrecorded time"))
    lat_us = f"{latency * 1e6:.4f}us"
    bw = f"{bandwidth / 1e9:.4f}GBps"
    return f"""<?xml version='1.0'?>
<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">
<!-- This host as SMPI sees it, written by experiments/host_platform.py from {comment_text(path)}: one node
     (node-0) of {cores} cores whose loopback link stands for {library}'s transport between two
     ranks of one host, measured by tb-beff at {when} (the command is the property
     tb_messages_measured_by below). Loopback latency: the smallest message's time; bandwidth:
     the highest any measured size reached; smpi/lat-factor and smpi/bw-factor per size make
     each measured size take its measured time (docs/simulation.md). Where present (host_platform.py
     was asked for it), the property tb_noncontiguous_extra_seconds holds the same calibration's
     extra time of a non-contiguous message side per block size, or tb_datatype_engine_bandwidth_by_bytes
     its MPI_Pack rate per message size: the smpi build charges it for each non-contiguous side
     that native and pairwise hand to MPI. tb_calibration_vector_path, where present, is the
     calibration's state of the library's vector path (vector message over contiguous, before and
     after its non-contiguous exchanges), which analysis/smpi_vs_measured.py pairs rows by.
     speed 1 Gf with tb-smpirun's smpi/host-speed of 1 Gf: a compute burst that SMPI times here
     takes the same simulated time (when smpi/simulate-computation is on). -->
<platform version="4.1">
  <config>
    <prop id="smpi/bw-factor" value={quoteattr(factor_text(bw_factor))}/>
    <prop id="smpi/lat-factor" value={quoteattr(factor_text(lat_factor))}/>
  </config>
  <cluster id="thishost" prefix="node-" suffix="" radical="0-0" speed="1Gf" core="{cores}"
           bw="{bw}" lat="{lat_us}" loopback_bw="{bw}" loopback_lat="{lat_us}">
    <prop id="tb_messages_measured_by" value={quoteattr(command)}/>{engine}
  </cluster>
</platform>
"""


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("calibration", help="tb-beff --fit-out's JSON")
    parser.add_argument("--out", required=True, help="the platform file to write")
    parser.add_argument("--cores", type=int, default=2,
                        help=f"cores of the node, 1 to {MAX_CORES}: the most CPUs an x86-64 Linux kernel supports "
                             f"(NR_CPUS with MAXSMP), since the node is one host (default 2)")
    parser.add_argument("--measured-by", default="mpiexec.mpich -n 2 build/mpich/bin/tb-beff --fit-out host.json",
                        help="the command that wrote the calibration, recorded in the platform")
    price = parser.add_mutually_exclusive_group()
    price.add_argument("--noncontiguous-extras", action="store_true",
                       help="add tb-beff's measured extra time of a non-contiguous message side per block size, which "
                            "the smpi build then charges for native's and pairwise's non-contiguous sides (native's own "
                            "block: the extras of a message to itself, where the calibration has them)")
    price.add_argument("--datatype-engine", action="store_true",
                       help="add the library's datatype engine (one MPI_Pack pass at its measured rate) instead, an "
                            "experiment (docs/results/2026-12-04-smpi-datatype-engine.md)")
    args = parser.parse_args(argv)
    if not 1 <= args.cores <= MAX_CORES:
        parser.error(f"--cores must be from 1 to {MAX_CORES} (one host's CPUs), not {args.cores}")
    try:
        with open(args.calibration) as f:
            calibration = json.load(f)
        if not isinstance(calibration, dict):
            raise CalibrationError(f"{args.calibration}: not a JSON object (write it with tb-beff --fit-out)")
        extras = extras_table(calibration, args.calibration) if args.noncontiguous_extras else None
        text = platform(calibration, args.calibration, args.cores, args.measured_by,
                        datatype_engine=args.datatype_engine, extras=extras)
    except (OSError, json.JSONDecodeError, CalibrationError) as e:
        print(f"host_platform.py: {e}", file=sys.stderr)
        return 2
    try:
        with open(args.out, "w") as f:
            f.write(text)
    except OSError as e:
        print(f"host_platform.py: --out {args.out}: cannot be written ({e.strerror})", file=sys.stderr)
        return 2
    if extras is not None:
        mine = "with" if "self_send" in extras else "without"
        print(f"host_platform.py: wrote {args.out}, with the measured non-contiguous extras, {mine} those of a "
              f"message to itself")
    elif args.datatype_engine:
        print(f"host_platform.py: wrote {args.out}, with the library's datatype engine")
    else:
        print(f"host_platform.py: wrote {args.out}; the library's datatype work left out (see --noncontiguous-extras): "
              f"SMPI charges nothing for it")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
