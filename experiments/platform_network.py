#!/usr/bin/python3
"""A tb-model network (kind "cluster") from a SimGrid platform file, so that the analytic model
and SMPI describe the same machine (docs/cost-model.md, "The cluster network").

  platform_network.py experiments/platforms/xc40-dragonfly.xml [--out FILE]

Reads the platform's one <cluster> (topology FLAT or DRAGONFLY; FAT_TREE and TORUS are refused:
the model has no routes for them) and its <config> props smpi/bw-factor and smpi/lat-factor;
where the file sets none, SMPI 3.32's defaults apply, as they do in the simulation. The barrier
is SMPI 3.32's default MPI_Barrier (ompi_basic_linear), which sets how unevenly the ranks leave
the testbed's timing barrier (tb-model's timing_barrier term); a platform whose props choose
another (smpi/barrier, smpi/coll-selector) gets none, and the network's comment says so. Writes
JSON to FILE or stdout.
"""
import argparse
import json
import re
import sys
import xml.etree.ElementTree as ET

# SMPI 3.32's defaults of smpi/bw-factor and smpi/lat-factor, "threshold:factor;..."
SMPI_BW_FACTOR = ("65472:0.940694;15424:0.697866;9376:0.58729;5776:1.08739;3484:0.77493;"
                  "1426:0.608902;732:0.341987;257:0.338112;0:0.812084")
SMPI_LAT_FACTOR = ("65472:11.6436;15424:3.48845;9376:2.59299;5776:2.18796;3484:1.88101;"
                   "1426:1.61075;732:1.9503;257:1.95341;0:2.01467")

# SimGrid's unit suffixes (decimal prefixes; "i" binary), for bandwidths in bytes or bits per
# second and latencies in seconds.
_PREFIX = {"": 1, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40}
_TIME = {"s": 1, "ms": 1e-3, "us": 1e-6, "ns": 1e-9, "ps": 1e-12, "m": 60, "h": 3600}


# SMPI 3.32's MPI_Barrier when neither smpi/barrier nor smpi/coll-selector chooses another
# (smpi_default_selector.cpp: barrier__default is barrier__ompi_basic_linear).
SMPI_BARRIER = "ompi_basic_linear"


class PlatformError(ValueError):
    pass


def bandwidth(text, what):
    m = re.fullmatch(r"\s*([0-9.eE+-]+)\s*(k|M|G|T|Ki|Mi|Gi|Ti)?(Bps|bps)\s*", text or "")
    if not m:
        raise PlatformError(f"{what}: '{text}' is not a SimGrid bandwidth (e.g. 5.25GBps, 100Gbps)")
    value = float(m.group(1)) * _PREFIX[m.group(2) or ""]
    return value if m.group(3) == "Bps" else value / 8


def latency(text, what):
    m = re.fullmatch(r"\s*([0-9.eE+-]+)\s*(s|ms|us|ns|ps|m|h)\s*", text or "")
    if not m:
        raise PlatformError(f"{what}: '{text}' is not a SimGrid time (e.g. 0.4us)")
    return float(m.group(1)) * _TIME[m.group(2)]


def factor(text, what):
    pairs = []
    for item in text.split(";"):
        try:
            threshold, value = item.split(":")
            pairs.append([float(threshold), float(value)])
        except ValueError:
            raise PlatformError(f"{what}: '{item}' is not threshold:factor") from None
    return sorted(pairs)


def radical_count(text, what):
    count = 0
    for part in text.split(","):
        ends = part.split("-")
        try:
            count += int(ends[-1]) - int(ends[0]) + 1
        except ValueError:
            raise PlatformError(f"{what}: radical '{text}' is not a list of numbers and ranges") from None
    return count


def dragonfly_parameters(text, what):
    try:
        levels = [[int(v) for v in level.split(",")] for level in text.split(";")]
    except ValueError:
        raise PlatformError(f"{what}: topo_parameters '{text}' is not 'G,g;C,c;B,b;N'") from None
    if [len(level) for level in levels] != [2, 2, 2, 1]:
        raise PlatformError(f"{what}: DRAGONFLY topo_parameters '{text}' is not 'G,g;C,c;B,b;N'")
    return levels


def network(path):
    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError) as e:
        raise PlatformError(f"{path}: not a readable platform file: {e}") from None
    clusters = root.findall(".//cluster")
    if len(clusters) != 1:
        raise PlatformError(f"{path}: the model reads platforms of one <cluster>, this one has {len(clusters)}")
    c = clusters[0]
    where = f"{path}: cluster {c.get('id')}"
    props = {p.get("id"): p.get("value") for p in root.findall("./config/prop")}
    topology = c.get("topology", "FLAT")
    if topology not in ("FLAT", "DRAGONFLY"):
        raise PlatformError(f"{where}: topology {topology}: the model has routes for FLAT and DRAGONFLY only")
    if c.get("loopback_bw") is None or c.get("loopback_lat") is None:
        raise PlatformError(f"{where}: the model needs loopback_bw and loopback_lat (messages within a node)")
    if c.get("sharing_policy", "SPLITDUPLEX") != "SPLITDUPLEX":
        raise PlatformError(f"{where}: sharing_policy {c.get('sharing_policy')}: the model has SPLITDUPLEX only")
    if c.get("bb_sharing_policy", "SHARED") != "SHARED":
        raise PlatformError(f"{where}: bb_sharing_policy {c.get('bb_sharing_policy')}: the model has a SHARED backbone only")
    if c.get("limiter_link") is not None:
        raise PlatformError(f"{where}: limiter_link is not modelled")
    fabric = {
        "topology": topology,
        "nodes": radical_count(c.get("radical", ""), where),
        "cores_per_node": int(c.get("core", "1")),
        "bandwidth_bytes_per_s": bandwidth(c.get("bw"), f"{where} bw"),
        "latency_s": latency(c.get("lat"), f"{where} lat"),
        "loopback_bandwidth_bytes_per_s": bandwidth(c.get("loopback_bw"), f"{where} loopback_bw"),
        "loopback_latency_s": latency(c.get("loopback_lat"), f"{where} loopback_lat"),
        "bandwidth_factor": factor(props.get("smpi/bw-factor", SMPI_BW_FACTOR), f"{path} smpi/bw-factor"),
        "latency_factor": factor(props.get("smpi/lat-factor", SMPI_LAT_FACTOR), f"{path} smpi/lat-factor"),
        "source": path,
    }
    selector = props.get("smpi/coll-selector") or "default"  # SimGrid reads an empty one as the default
    barrier = props.get("smpi/barrier") or (SMPI_BARRIER if selector == "default" else f"the {selector} selector's")
    barrier = SMPI_BARRIER if barrier == "default" else barrier  # barrier__default is the linear one
    if barrier == SMPI_BARRIER:
        fabric["barrier"] = barrier
    if topology == "DRAGONFLY":
        fabric["topo_parameters"] = dragonfly_parameters(c.get("topo_parameters", ""), where)
    elif c.get("bb_bw") is not None:
        fabric["backbone_bandwidth_bytes_per_s"] = bandwidth(c.get("bb_bw"), f"{where} bb_bw")
        fabric["backbone_latency_s"] = latency(c.get("bb_lat", "0s"), f"{where} bb_lat")
    return {
        "name": "smpi:" + c.get("id", "cluster"),
        "comment": f"written by experiments/platform_network.py from {path}; SMPI factors: "
                   + ("from the file" if "smpi/bw-factor" in props else "SMPI 3.32's defaults")
                   + ("" if barrier == SMPI_BARRIER else f"; barrier {barrier}: not modelled (no timing barrier term)"),
        "kind": "cluster",
        "cluster": fabric,
    }


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("platform")
    parser.add_argument("--out", help="write the network here (default: stdout)")
    args = parser.parse_args(argv)
    try:
        doc = network(args.platform)
    except PlatformError as e:
        print(f"platform_network.py: error: {e}", file=sys.stderr)
        return 2
    text = json.dumps(doc, indent=1) + "\n"
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
