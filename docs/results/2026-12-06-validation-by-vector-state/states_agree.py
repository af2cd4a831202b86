#!/usr/bin/python3
"""How often the two recorded states agree on the timed rows of a model_validation.sh run: every
tb-redistribute row (measured-*-rep*.json) and tb-bench benchmark (bench-rep*.json) that carries
both the handoff ratio (slow above 3, kSlowHandoffRatio) and the vector path's (slow above 4,
kSlowVectorRatio) just before and after it, each counted slow when either side was.
  states_agree.py RUN_DIR [RUN_DIR ...]"""
import glob
import json
import os
import sys


def rows(run):
    for path in glob.glob(os.path.join(run, "measured-*-rep*.json")):
        yield from json.load(open(path))["results"]
    for path in glob.glob(os.path.join(run, "bench-rep*.json")):
        yield from json.load(open(path))["benchmarks"]


for run in sys.argv[1:]:
    counts = {}
    for row in rows(run):
        if not all(k in row for k in ("handoff_before", "handoff_after", "vector_before", "vector_after")):
            continue
        handoff = max(row["handoff_before"], row["handoff_after"]) > 3.0
        vector = max(row["vector_before"], row["vector_after"]) > 4.0
        counts[handoff, vector] = counts.get((handoff, vector), 0) + 1
    print(f"{run}: both fast {counts.get((False, False), 0)}, handoff slow only {counts.get((True, False), 0)}, "
          f"vector slow only {counts.get((False, True), 0)}, both slow {counts.get((True, True), 0)}")
