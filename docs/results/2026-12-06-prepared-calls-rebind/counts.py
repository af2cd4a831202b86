#!/usr/bin/python3
"""Per run in ratios.txt files (ratios.py's output): the points where an algorithm's prepared form
is more than 1.05x its blocking one, per algorithm, and the worst ratio.
Usage: counts.py LABEL=ratios.txt ..."""
import re
import sys

ALGORITHMS = ("native", "node_leader", "pack_alltoallv", "pairwise")


def tables(path):
    found, name = {}, None
    for line in open(path):
        m = re.match(r"(\S+)\.json: persistent", line)
        if m:
            name = m.group(1)
            found[name] = []
        elif name and line.startswith("| ") and not line.startswith("| bytes"):
            found[name].append([float(c) for c in line.strip().strip("|").split("|")[1:]])
    return found


print("| ratios | run | " + " | ".join(ALGORITHMS) + " | all (of 36) | worst |")
print("|---|---|" + "---|" * (len(ALGORITHMS) + 2))
for arg in sys.argv[1:]:
    label, path = arg.split("=", 1)
    for name, rows in tables(path).items():
        over = [sum(r[k] > 1.05 for r in rows) for k in range(len(ALGORITHMS))]
        print(f"| {label} | {name} | " + " | ".join(map(str, over)) + f" | {sum(over)} | {max(max(r) for r in rows):.2f} |")
