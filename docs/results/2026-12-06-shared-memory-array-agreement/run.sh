#!/usr/bin/env bash
# native's prepared form against its blocking one on the slab, on one node, with the
# redistribution's agreement on the arrays through shared memory (each-call), through
# MPI_Allreduce (each-call-allreduce) and without it (assume-same), interleaved per repetition
# (docs/results/2026-12-06-shared-memory-array-agreement.md). From the repository root, build/mpich built:
#   docs/results/2026-12-06-shared-memory-array-agreement/run.sh OUT [REPETITIONS]
set -euo pipefail
out=${1:?usage: run.sh OUT [REPETITIONS]}
repetitions=${2:-3}
here=$(dirname "$0")
mkdir -p "$out"
bench() {  # AGREEMENT RUN
  /usr/bin/python3 experiments/launch.py --mpi mpich --mode intra -n 2 \
    --env TB_REDISTRIBUTION_AGREEMENT="$1" tb-bench --algorithms native \
    --layouts slab --calls blocking,persistent --interleave --passes 5 -m 1K:256K --benchmark_min_time=0.005 \
    --benchmark_out="$out/$2-$1.json" --benchmark_out_format=json > /dev/null 2>&1
}
for i in $(seq 1 "$repetitions"); do
  for agreement in each-call each-call-allreduce assume-same; do bench "$agreement" "run$i"; done
done
/usr/bin/python3 "$here/../2026-12-06-redistribution-agreement/ratios.py" "$out"/*.json | tee "$out/ratios.txt"
"$here/counts.py" "$out"/*.json | tee "$out/counts.txt"
