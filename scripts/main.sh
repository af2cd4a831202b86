#!/usr/bin/env bash
# The main job: installs what is missing, builds the MPICH variant, runs the default experiment
# (experiments/definitions/default.json: every algorithm, and local_remap for the FFT's slab
# redistribution, 16 B to 256 KiB per peer, 2 ranks) in the intra mode (shared memory) and in the
# cliques mode (MPICH cliques with UCX over tcp: the network path), with auto following a tuning
# table measured first (experiments/tune.py), then writes the report with its plots and prints
# where everything is. Points already in the store are not run again.
#   scripts/main.sh [STORE]     default store results/main/store.jsonl
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh mpich
store=${1:-results/main/store.jsonl}
report=$(dirname "$store")/report
# auto's tuning table for this machine, made once beside the store (experiments/tune.py: the
# default experiment's sizes, both node layouts, two to three minutes); every point runs with it,
# so the report's auto follows measurements of this machine, not the built-in rule. The slab is
# measured too, and its points join the bands of its blocks (vector64's, and vector256's, which
# they reach at these sizes), since the experiment's redistribution calls auto with them.
table=$(dirname "$store")/tuning.json
if [ ! -f "$table" ]; then
  mkdir -p "$(dirname "$table")"
  /usr/bin/python3 experiments/tune.py --build build/mpich -m 16:256K --layouts contiguous,vector64,vector256,slab \
    --min-time 0.01 --tolerance 0.1 -o "$table" --mpich-json none
fi
table=$(cd "$(dirname "$table")" && pwd)/$(basename "$table")
for mode in intra cliques; do
  /usr/bin/python3 experiments/run.py experiments/definitions/default.json --mode "$mode" --mpi mpich --store "$store" \
    --args "{\"env:TB_TUNING_TABLE\": \"$table\"}"
done
/usr/bin/python3 analysis/report.py "$store" --out "$report"
echo
echo "main: results store  $store"
echo "main: report         $report/report.md"
echo "main: plots          $report/*.png ($(ls "$report"/*.png | wc -l) files)"
