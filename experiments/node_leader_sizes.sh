#!/usr/bin/env bash
# node_leader against the other algorithms per message size, on one node and on two virtual
# nodes (TB_NUM_NODES=2: the inter-node phase through the leaders), with private and with
# node-shared buffers. 2 ranks (this machine has 2 cores); tb-bench runs every registered
# algorithm, 1 B to 16 MiB per peer, contiguous and vector64 send layouts.
#
#   experiments/node_leader_sizes.sh [mpich|openmpi] [min_time_s]
# Writes results/node_leader_sizes/<mpi>-<nodes>-<buffers>.json and prints the comparison.
set -euo pipefail
cd "$(dirname "$0")/.."
mpi=${1:-mpich}
min_time=${2:-0.05}
source experiments/launcher.sh
tb_launcher "$mpi" tb-bench "$0 [mpich|openmpi] [min_time_s]"
out=results/node_leader_sizes
mkdir -p "$out"
files=()
for nodes in 1 2; do
  for buffers in private shared; do
    f=$out/$mpi-${nodes}node-$buffers.json
    echo "== $mpi, $nodes node(s), $buffers buffers -> $f"
    TB_NUM_NODES=$nodes "${run[@]}" "$bin/tb-bench" -m 1:16M --buffers "$buffers" \
      --benchmark_min_time="$min_time" --benchmark_out="$f" --benchmark_out_format=json >/dev/null
    files+=("$f")
  done
done
/usr/bin/python3 analysis/alltoallw_sizes.py "${files[@]}"
