#!/usr/bin/env bash
# recost.sh DIR HOST OUT: the measurements of a model_validation.sh run (TB_VALIDATION_OUT=DIR, the
# default cubes and sweep) predicted again on the host network HOST, everything else of the run kept;
# the report in OUT. The prediction and report steps of experiments/model_validation.sh, by hand.
set -euo pipefail
cd "$(git rev-parse --show-toplevel)"
d=$1 h=$2 r=$3
mkdir -p "$r/bench-predicted"
launch() { /usr/bin/python3 experiments/launch.py --mpi mpich --bin build/mpich/bin "$@"; }
model() { local csv=$1; shift; launch --out "$csv" tb-model --network "$h" --memory "$d/memory-floors.json" --overheads "$d/overheads.json" "$@" > /dev/null; }
args=()
for n in 8 16 32 64 128 256; do
  model "$r/predicted-$n.csv" --shape "$n,$n,$n" --grid 2 --from-axis 2 --to-axis 0 --type c64
  args+=(--redistribute "$r/predicted-$n.csv" "$d"/measured-$n-rep*.json)
done
/usr/bin/python3 analysis/model_validation.py patterns "$r/bench-patterns.jsonl" --sizes 1K:4M --layouts contiguous,vector64 --ranks 2 |
  while read -r call layout bytes; do model "$r/bench-predicted/$layout-$bytes.csv" --pattern "$d/bench-patterns.jsonl" --call "$call" </dev/null; done
/usr/bin/python3 analysis/model_validation.py report "${args[@]}" --bench "$d/bench.json" "$r/bench-predicted" --min-repetitions 5 \
  --expect-algorithms native,node_leader,pack_alltoallv,pairwise,ucx_zcopy,local_remap --markdown "$r/report.md" --csv "$r/validation.csv" > /dev/null
tail -n 25 "$r/report.md"
