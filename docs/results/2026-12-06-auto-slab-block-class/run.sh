#!/usr/bin/env bash
# auto on the slab redistribution with tuning tables of three sets of layouts
# (docs/results/2026-12-06-auto-slab-block-class.md). From the repository root, build/mpich built:
#   docs/results/2026-12-06-auto-slab-block-class/run.sh OUT
set -euo pipefail
out=${1:?usage: run.sh OUT}
mkdir -p "$out"
bench() {  # TABLE OUTPUT: every algorithm on the slab, auto following TABLE
  TB_TUNING_TABLE="$out/tuning-$1.json" mpiexec.mpich -n 2 build/mpich/bin/tb-bench --algorithms all --layouts slab \
    --interleave --passes 5 -m 1K:4M --benchmark_min_time=0.005 --benchmark_out="$out/$2.json" \
    --benchmark_out_format=json > /dev/null
}
# The slab beside vector<B> layouts of its block sizes, every algorithm, one launch, no table.
mpiexec.mpich -n 2 build/mpich/bin/tb-bench --algorithms all --layouts slab,vector64,vector256,vector1K -m 1K:4M \
  --interleave --passes 3 --benchmark_min_time=0.01 --benchmark_out="$out/layouts-side-by-side.json" \
  --benchmark_out_format=json > /dev/null
# Tables of the one-node layout: the old default classes, with vector256, with vector256 and the slab.
common=(--nodes 1 -m 1K:4M --launches 3 --repetitions 3 --tolerance 0.1 --mpich-json none)
/usr/bin/python3 experiments/tune.py "${common[@]}" --layouts contiguous,vector64,vector4K -o "$out/tuning-without-vector256.json"
/usr/bin/python3 experiments/tune.py "${common[@]}" --layouts contiguous,vector64,vector256,vector4K \
  -o "$out/tuning-with-vector256.json"
# auto with the first two, alternating (run1-4), before the tuner measured the slab.
bench without-vector256 run1-without; bench with-vector256 run2-with
bench without-vector256 run3-without; bench with-vector256 run4-with
/usr/bin/python3 experiments/tune.py "${common[@]}" --layouts contiguous,vector64,vector256,vector4K,slab \
  -o "$out/tuning-with-slab.json"
bench with-vector256 run5-with; bench with-slab run6-with-slab
bench with-vector256 run7-with; bench with-slab run8-with-slab
/usr/bin/python3 analysis/auto_goals.py "$out"/run*.json
