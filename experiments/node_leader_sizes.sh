#!/usr/bin/env bash
# node_leader against the other algorithms per message size, on one node and on two virtual
# nodes (TB_NUM_NODES=2: the inter-node phase through the leaders), with private and with
# node-shared buffers. 2 ranks (this machine has 2 cores); tb-bench runs every registered
# algorithm, 1 B to 16 MiB per peer, contiguous and vector64 send layouts.
# The campaign is the definition experiments/definitions/node_leader_sizes.json; this script runs
# it with experiments/run.py (intra mode) and prints the tables (analysis/alltoallw_sizes.py).
#
#   experiments/node_leader_sizes.sh [mpich|openmpi] [min_time_s]
# The same as
#   experiments/run.py experiments/definitions/node_leader_sizes.json --mpi MPI \
#     --args '{"--benchmark_min_time": "MIN_TIME"}' --store results/node_leader_sizes/MPI-min_timeMIN_TIME.jsonl
#   analysis/alltoallw_sizes.py results/node_leader_sizes/MPI-min_timeMIN_TIME.jsonl
# Results go to that store (one per MPI build and min_time); points already in it are not run
# again, so an interrupted campaign continues and a finished one only prints its tables. Delete
# the store to measure anew. (Before run.py ran it, this script wrote one tb-bench JSON file per
# point, results/node_leader_sizes/<mpi>-<nodes>-<buffers>.json; alltoallw_sizes.py still reads those.)
set -euo pipefail
cd "$(dirname "$0")/.."
mpi=${1:-mpich}
min_time=${2:-0.05}
case $mpi in
  mpich | openmpi) ;;
  *) echo "usage: $0 [mpich|openmpi] [min_time_s]" >&2; exit 2 ;;
esac
[ -x "build/$mpi/bin/tb-bench" ] || ./scripts/build.sh "$mpi"
store=results/node_leader_sizes/$mpi-min_time$min_time.jsonl
/usr/bin/python3 experiments/run.py experiments/definitions/node_leader_sizes.json --mpi "$mpi" \
  --args "{\"--benchmark_min_time\": \"$min_time\"}" --store "$store"
/usr/bin/python3 analysis/alltoallw_sizes.py "$store"
