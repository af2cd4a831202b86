#!/usr/bin/env python3
"""tb-model --breakdown against tb-model --without: for every term the breakdown prints for an
algorithm, the value it prints must be that algorithm's total minus its total in a run with
--without TERM (both read from the runs' --csv), within the printout's 0.01 us. A term switched
off already must not appear. The network is a tb-beff calibration with every measured term, so
the host terms each move some algorithm.
  check_model_breakdown.py TB_MODEL NETWORK_JSON MEMORY_JSON OUT_DIR
"""
import csv
import os
import re
import subprocess
import sys

PATTERN = ["--shape", "32,32,32", "--grid", "2", "--type", "c64"]


def fail(message):
    sys.exit(f"check_model_breakdown: FAILED: {message}")


def model(tool, network, memory, csv_path, *extra):
    args = [tool, "--network", network, "--memory", memory, *PATTERN, "--csv", csv_path, *extra]
    run = subprocess.run(args, capture_output=True, text=True, timeout=60)
    if run.returncode != 0:
        fail(f"{' '.join(args)} exited {run.returncode}: {run.stderr.strip()}")
    with open(csv_path) as f:
        totals = {row["algorithm"]: float(row["total_s"]) for row in csv.DictReader(f)}
    return run.stdout, totals


def breakdown(stdout):
    """{algorithm: {term: us}} from the printout's lines under the breakdown's heading."""
    _, found, rest = stdout.partition("what each term adds to the total")
    if not found:
        fail(f"no breakdown in the printout:\n{stdout}")
    table = {}
    for line in rest.splitlines():
        m = re.match(r"\s+([a-z_]+)\s+total [0-9.]+((\s+[a-z_]+ [-+][0-9.]+)*)$", line)
        if m:
            table[m.group(1)] = {t: float(v) for t, v in re.findall(r"([a-z_]+) ([-+][0-9.]+)", m.group(2))}
    return table


def main():
    tool, network, memory, out = sys.argv[1:5]
    os.makedirs(out, exist_ok=True)
    stdout, totals = model(tool, network, memory, f"{out}/all.csv", "--breakdown")
    table = breakdown(stdout)
    if set(table) != set(totals):
        fail(f"the breakdown covers {sorted(table)}, the table {sorted(totals)}")
    terms = sorted({t for row in table.values() for t in row})
    for term in terms:
        _, less = model(tool, network, memory, f"{out}/without-{term}.csv", "--without", term)
        for algorithm, row in table.items():
            expected = (totals[algorithm] - less[algorithm]) * 1e6
            printed = row.get(term, 0.0)
            if abs(printed - expected) > 0.006:
                fail(f"{algorithm}: {term} adds {printed:+.2f} us in the breakdown, the totals differ by {expected:+.4f}")
    needed = {"measured_messages", "self_messages", "cold_messages", "cold_self_messages", "local_work"}
    if not needed <= set(table["native"]):
        fail(f"native's breakdown names {sorted(table['native'])}, not all of {sorted(needed)}")
    off, _ = model(tool, network, memory, f"{out}/off.csv", "--breakdown", "--without", "cold_self_messages")
    if any("cold_self_messages" in row for row in breakdown(off).values()):
        fail("--without cold_self_messages: the breakdown still prices it")
    print(f"check_model_breakdown: ok: {len(terms)} terms over {len(table)} algorithms match their --without totals")


if __name__ == "__main__":
    main()
