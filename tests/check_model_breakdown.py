#!/usr/bin/env python3
"""tb-model --breakdown against tb-model --without: for every switchable term (tb-model
--list-terms), on every network and algorithm, the value the breakdown prints (0 where it prints
none) must be the total minus the total of a run with --without TERM (both read from the runs'
--csv), within the printout's 0.01 us. A term switched off already must not appear.

The networks are a tb-beff calibration with every measured host term, with fixed overheads from a
made-up tb-bench file (so the overhead is recalibrated without each term), the PCIe+MPI network
(node contention) and the XC40-like SMPI platform as a cluster network (its timing barrier, at 64
ranks over two nodes); the memory model is measured now (--save-memory), so its per-block,
per-piece and working-set tables are on. The terms that must move some total there are named in
REQUIRED: their effect follows from the inputs' structure, not from measured values that may be 0.
  check_model_breakdown.py TB_MODEL HOST_NETWORK_JSON OUT_DIR
"""
import csv
import json
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PATTERN = ["--shape", "128,128,128", "--grid", "64", "--type", "c64"]
REQUIRED = {"node_contention", "timing_barrier", "measured_messages", "packer_blocks", "local_work"}


def fail(message):
    sys.exit(f"check_model_breakdown: FAILED: {message}")


def run(args):
    done = subprocess.run(args, capture_output=True, text=True, timeout=120)
    if done.returncode != 0:
        fail(f"{' '.join(args)} exited {done.returncode}: {done.stderr.strip()}")
    return done.stdout


def model(tool, common, csv_path, *extra):
    """The printout and {(network, algorithm): total seconds} of one run."""
    stdout = run([tool, *common, "--csv", csv_path, *extra])
    with open(csv_path) as f:
        totals = {(row["network"], row["algorithm"]): float(row["total_s"]) for row in csv.DictReader(f)}
    return stdout, totals


def breakdown(stdout):
    """{(network, algorithm): {term: us}} from the printout's lines under the breakdown's heading."""
    _, found, rest = stdout.partition("what each term adds to the total")
    if not found:
        fail(f"no breakdown in the printout:\n{stdout}")
    table, network = {}, None
    for line in rest.splitlines()[1:]:
        if re.match(r"^    \S+$", line):
            network = line.strip()
            continue
        m = re.match(r"^      ([a-z_]+)\s+total [0-9.]+((\s+[a-z_]+ [-+][0-9.]+)*)$", line)
        if not m or network is None:
            fail(f"a breakdown line not understood: {line!r}")
        table[(network, m.group(1))] = {t: float(v) for t, v in re.findall(r"([a-z_]+) ([-+][0-9.]+)", m.group(2))}
    return table


def inputs(tool, host, out):
    """tb-model's options common to every run: the three networks, the memory model, overheads."""
    memory, overheads, cluster = (os.path.join(out, f) for f in ("memory.json", "overheads.json", "xc40.json"))
    run([tool, "--shape", "8,8,8", "--grid", "2", "--save-memory", memory])
    run(["/usr/bin/python3", os.path.join(ROOT, "experiments", "platform_network.py"),
         os.path.join(ROOT, "experiments", "platforms", "xc40-dragonfly.xml"), "--out", cluster])
    one_byte = [{"name": f"alltoallw/contiguous/{a}/1/manual_time", "real_time": us, "time_unit": "us"}
                for a, us in (("native", 900.0), ("pairwise", 800.0), ("pack_alltoallv", 1200.0), ("node_leader", 1500.0))]
    with open(overheads, "w") as f:
        json.dump({"benchmarks": one_byte}, f)
    pcie = os.path.join(ROOT, "fpga_transport", "networks", "pcie_mpi_520n_measured.json")
    return ["--network", f"{host},{pcie},{cluster}", "--memory", memory, "--overheads", overheads, *PATTERN]


def main():
    tool, host, out = sys.argv[1:4]
    os.makedirs(out, exist_ok=True)
    common = inputs(tool, host, out)
    terms = re.findall(r"^([a-z_]+) ", run([tool, "--list-terms"]), re.M)
    stdout, totals = model(tool, common, f"{out}/all.csv", "--breakdown")
    table = breakdown(stdout)
    if set(table) != set(totals):
        fail(f"the breakdown covers {sorted(table)}, the table {sorted(totals)}")
    moved = set()
    for term in terms:
        _, less = model(tool, common, f"{out}/without-{term}.csv", "--without", term)
        for key, row in table.items():
            expected = (totals[key] - less[key]) * 1e6
            printed = row.get(term, 0.0)
            if abs(printed - expected) > 0.006:
                fail(f"{key}: {term} adds {printed:+.2f} us in the breakdown, the totals differ by {expected:+.4f}")
            moved |= {term} if term in row else set()
    if not REQUIRED <= moved:
        fail(f"these terms moved no total: {sorted(REQUIRED - moved)}")
    off, _ = model(tool, common, f"{out}/off.csv", "--breakdown", "--without", "measured_messages")
    if any("measured_messages" in row for row in breakdown(off).values()):
        fail("--without measured_messages: the breakdown still prices it")
    print(f"check_model_breakdown: ok: {len(terms)} terms over {len(table)} (network, algorithm) pairs match their "
          f"--without totals; {len(moved)} of them move some total ({', '.join(sorted(moved))})")


if __name__ == "__main__":
    main()
