#!/usr/bin/env bash
# auto on the slab redistribution with a tuning table without and with the vector256 class
# (docs/results/2026-12-06-auto-slab-block-class.md). From the repository root, build/mpich built:
#   docs/results/2026-12-06-auto-slab-block-class/run.sh OUT
set -euo pipefail
out=${1:?usage: run.sh OUT}
mkdir -p "$out"
# The slab beside vector<B> layouts of its block sizes, every algorithm, one launch.
mpiexec.mpich -n 2 build/mpich/bin/tb-bench --algorithms all --layouts slab,vector64,vector256,vector1K -m 1K:4M \
  --interleave --passes 3 --benchmark_min_time=0.01 --benchmark_out="$out/layouts-side-by-side.json" \
  --benchmark_out_format=json > /dev/null
# Two tables of one node layout: the old default classes, then with vector256.
common=(--nodes 1 -m 1K:4M --launches 3 --repetitions 3 --tolerance 0.1 --mpich-json none)
/usr/bin/python3 experiments/tune.py "${common[@]}" --layouts contiguous,vector64,vector4K \
  -o "$out/tuning-without-vector256.json"
/usr/bin/python3 experiments/tune.py "${common[@]}" --layouts contiguous,vector64,vector256,vector4K \
  -o "$out/tuning-with-vector256.json"
# auto on the slab with each table, alternating, every algorithm beside it.
run=0
for table in without with without with; do
  run=$((run + 1))
  TB_TUNING_TABLE="$out/tuning-$table-vector256.json" mpiexec.mpich -n 2 build/mpich/bin/tb-bench --algorithms all \
    --layouts slab --interleave --passes 5 -m 1K:4M --benchmark_min_time=0.005 \
    --benchmark_out="$out/run$run-$table.json" --benchmark_out_format=json > /dev/null
done
/usr/bin/python3 analysis/auto_goals.py "$out"/run*.json
