#!/usr/bin/env bash
# The goals of auto and of the persistent (prepared) forms in one campaign: per MPI library, a
# tuning table for this machine (experiments/tune.py: 1 and 2 emulated nodes), then per node
# layout (intra: one node; cliques: one rank per node) ONE tb-bench run of every algorithm, auto
# with that table, blocking and persistent, interleaved per size and gone through 5 times (tb-bench
# --passes 5: each ratio is the median over the passes of the ratio within a pass), on the sizes
# sweep's contiguous and vector64 layouts and on the FFT's slab redistribution; then the goal
# tables (analysis/auto_goals.py; the slab's rows get a summary of their own). 2 ranks: this
# machine has 2 cores.
#
#   experiments/auto_goals.sh [-o DIR] [-m SIZES] [-a AGREEMENT] [-q]
#     -o  where the tables, runs and report go (default results/auto_goals)
#     -m  bytes per peer, min:max (default 1:8M)
#     -a  TB_AUTO_AGREEMENT for the tb-bench runs: each-call (default), each-call-allreduce or
#         assume-same (tb-bench's calls pass the same counts and types on every rank, so the
#         assertion holds)
#     -p  tune the prepared forms too (tune.py --calls blocking,persistent: the table's persistent
#         entries, which auto's prepared calls follow; doubles the tuning time)
#     -q  quick: 1 to 64 B per peer, short timing (a smoke run)
# The tables are tuned in 3 separate launches of 3 interleaved passes of 10 ms per point: per point
# the algorithm whose worst ratio to the launch's fastest is smallest wins (an algorithm that is
# fast in one process and slow in the next loses to one that is never far behind), and a 10 %
# tolerance keeps the previous size's winner through near-ties.
# Needs build/mpich and build/openmpi (scripts/build.sh mpich openmpi builds what is missing).
set -euo pipefail
cd "$(dirname "$0")/.."
out=results/auto_goals
sizes=1:8M
min_time=0.005
passes=5
tune_min_time=0.01
agreement=each-call
calls=blocking
while getopts "o:m:a:pq" opt; do
  case $opt in
    o) out=$OPTARG ;;
    m) sizes=$OPTARG ;;
    a) agreement=$OPTARG ;;
    p) calls=blocking,persistent ;;
    q) sizes=1:64; min_time=0.001; tune_min_time=0.001; passes=2 ;;
    *) echo "usage: $0 [-o DIR] [-m SIZES] [-a each-call|each-call-allreduce|assume-same] [-p] [-q]" >&2; exit 2 ;;
  esac
done
mkdir -p "$out"
out=$(cd "$out" && pwd)
for mpi in mpich openmpi; do
  [ -x "build/$mpi/bin/tb-bench" ] || scripts/build.sh "$mpi"
  echo "auto_goals: $mpi: tuning table" >&2
  selection=none  # the patched MPICH's selection JSON, from the MPICH build's table
  [ "$mpi" = mpich ] && selection=$out/mpich-selection.json
  /usr/bin/python3 experiments/tune.py --build "build/$mpi" -m "$sizes" --min-time "$tune_min_time" \
    --launches 3 --repetitions 3 --tolerance 0.1 --calls "$calls" -o "$out/$mpi-tuning.json" --mpich-json "$selection"
  for mode in intra cliques; do
    echo "auto_goals: $mpi $mode: every algorithm, blocking and persistent" >&2
    /usr/bin/python3 experiments/launch.py --mpi "$mpi" --mode "$mode" -n 2 \
      --env "TB_TUNING_TABLE=$out/$mpi-tuning.json" --env "TB_AUTO_AGREEMENT=$agreement" --out "$out/$mpi-$mode.json" \
      tb-bench --algorithms all --calls blocking,persistent --interleave --passes "$passes" -m "$sizes" \
      --layouts contiguous,vector64,slab "--benchmark_min_time=$min_time"
  done
done
/usr/bin/python3 analysis/auto_goals.py "$out"/{mpich,openmpi}-{intra,cliques}.json | tee "$out/report.md"
echo "auto_goals: report $out/report.md" >&2
