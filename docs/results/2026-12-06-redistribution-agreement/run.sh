#!/usr/bin/env bash
# The redistribution's per-call agreement on its arrays, with and without
# TB_REDISTRIBUTION_AGREEMENT=assume-same (docs/results/2026-12-06-redistribution-agreement.md).
# From the repository root, build/mpich built:
#   docs/results/2026-12-06-redistribution-agreement/run.sh OUT [PAIRS]
set -euo pipefail
out=${1:?usage: run.sh OUT [PAIRS]}
pairs=${2:-2}
mkdir -p "$out"
bench() {  # MODE AGREEMENT RUN: four algorithms' blocking and prepared forms on the slab
  local nodes=1
  [ "$1" = cliques ] && nodes=2
  /usr/bin/python3 experiments/launch.py --mpi mpich --mode "$1" --cliques "$nodes" -n 2 \
    --env TB_REDISTRIBUTION_AGREEMENT="$2" tb-bench --algorithms native,node_leader,pack_alltoallv,pairwise \
    --layouts slab --calls blocking,persistent --interleave --passes 5 -m 1K:256K --benchmark_min_time=0.005 \
    --benchmark_out="$out/$1-$3-$2.json" --benchmark_out_format=json > /dev/null 2>&1
}
for i in $(seq 1 "$pairs"); do
  for mode in cliques intra; do
    bench "$mode" each-call "run$i"
    bench "$mode" assume-same "run$i"
  done
done
/usr/bin/python3 "$(dirname "$0")/ratios.py" "$out"/*.json | tee "$out/ratios.txt"
