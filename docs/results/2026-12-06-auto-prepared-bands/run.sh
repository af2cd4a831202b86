#!/usr/bin/env bash
# auto's prepared calls on the slab with the main job's tuning table, with and without the per-size
# bands tune.py keeps for prepared calls (docs/results/2026-12-06-auto-prepared-bands.md).
# From the repository root, build/mpich built:
#   docs/results/2026-12-06-auto-prepared-bands/run.sh OUT [PAIRS]
set -euo pipefail
out=${1:?usage: run.sh OUT [PAIRS]}
pairs=${2:-2}
mkdir -p "$out"
# The main job's tuning (scripts/main.sh), with the bands for prepared calls.
[ -f "$out/tuning-with-bands.json" ] ||
  /usr/bin/python3 experiments/tune.py --build build/mpich -m 16:256K --layouts contiguous,vector64,vector256,slab \
    --min-time 0.01 --tolerance 0.1 -o "$out/tuning-with-bands.json" --mpich-json none | tee "$out/tune.txt"
# The same table as before the bands: its "calls": "prepared" entries removed.
/usr/bin/python3 - "$out/tuning-with-bands.json" "$out/tuning-without-bands.json" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
doc["entries"] = [e for e in doc["entries"] if e.get("calls") != "prepared"]
json.dump(doc, open(sys.argv[2], "w"), indent=1)
PY
bench() {  # MODE TABLE RUN: every algorithm's blocking and prepared form on the slab, auto following TABLE
  local nodes=1
  [ "$1" = cliques ] && nodes=2
  /usr/bin/python3 experiments/launch.py --mpi mpich --mode "$1" --cliques "$nodes" -n 2 \
    --env TB_TUNING_TABLE="$out/tuning-$2.json" tb-bench --algorithms all --layouts slab --calls blocking,persistent --interleave \
    --passes 5 -m 1K:256K --benchmark_min_time=0.005 --benchmark_out="$out/$1-$3-$2.json" \
    --benchmark_out_format=json > /dev/null
}
for i in $(seq 1 "$pairs"); do
  for mode in cliques intra; do
    bench "$mode" without-bands "run$i"
    bench "$mode" with-bands "run$i"
  done
done
for mode in cliques intra; do
  for table in without-bands with-bands; do
    echo "== $mode, $table"
    /usr/bin/python3 analysis/auto_goals.py "$out/$mode"-run*-"$table".json
  done
done | tee "$out/summary.txt"
