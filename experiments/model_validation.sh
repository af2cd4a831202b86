#!/usr/bin/env bash
# The calibrated host model against measurement on this machine (fpga_transport issue, item 6).
# 1. tb-beff on 2 ranks fits the host network (Hockney alpha, beta) -> host.json
# 2. tb-model measures the memory model (copy bandwidth, cost per block) -> memory.json, and
#    tb-bench at 1 B per peer gives each algorithm's fixed overhead per call -> overheads.json
# 3. for each cube size, tb-redistribute times every algorithm and local_remap (slab, c64,
#    axis 2 -> 0, 2 ranks) and the memcpy floor of its local array; the floors give the memory
#    model's copy bandwidth by size (memory-floors.json), and tb-model predicts each call on
#    host.json + memory-floors.json
# 4. analysis/model_validation.py prints predicted against measured, with the error.
#
#   experiments/model_validation.sh [mpich|openmpi] [sizes...]    default: mpich 8 16 32 64 128
# Writes results/model_validation/<mpi>/ (JSON, CSV) and prints the table.
# Every tool starts through experiments/launch.py, the launcher experiments/run.py uses (2 ranks
# in its intra mode; tb-model is not an MPI program and runs as one process).
set -euo pipefail
cd "$(dirname "$0")/.."
mpi=${1:-mpich}
shift || true
sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(8 16 32 64 128)
case $mpi in
  mpich | openmpi) ;;
  *) echo "usage: $0 [mpich|openmpi] [sizes...]" >&2; exit 2 ;;
esac
bin=build/$mpi/bin
for tool in tb-beff tb-model tb-bench tb-redistribute; do
  [ -x "$bin/$tool" ] || { ./scripts/build.sh "$mpi"; break; }
done
launch() { /usr/bin/python3 experiments/launch.py --mpi "$mpi" --bin "$bin" "$@"; }
out=results/model_validation/$mpi
mkdir -p "$out"
echo "== calibration: tb-beff (host network) and the memory model"
launch -n 2 --out "$out/beff.json" tb-beff --fit-out "$out/host.json" | tail -2
# Two measurements at once, as the 2 ranks of a redistribution copy at once (shared caches and
# memory bandwidth); the first one's figures are used.
launch tb-model --shape 8,8,8 --grid 2 --network "$out/host.json" --save-memory "$out/memory.json" >/dev/null &
launch tb-model --shape 8,8,8 --grid 2 --network "$out/host.json" --save-memory "$out/memory-twin.json" >/dev/null
wait $!  # the first one's memory model is used: its failure stops the script
# Fixed per-call overheads: every algorithm at 1 B per peer (tb-bench), a separate measurement
# from the validation points below.
launch -n 2 --out "$out/overheads.json" tb-bench -m 1:1 --layouts contiguous --benchmark_min_time=0.2 >/dev/null
for n in "${sizes[@]}"; do
  echo "== ${n}^3: measured (tb-redistribute)"
  launch -n 2 --out "$out/measured-$n.json" tb-redistribute --shape "$n,$n,$n" --grid 2 --from-axis 2 --to-axis 0 \
    --type c64 --method all --max-seconds 5 >/dev/null
done
# Copy bandwidth by size from the runs' own memcpy floors (same moment, same timing, both ranks
# copying at once); the cost per block stays tb-model's measurement.
measured=()
for n in "${sizes[@]}"; do measured+=("$out/measured-$n.json"); done
/usr/bin/python3 analysis/model_validation.py --memory-from-floors "$out/memory-floors.json" "$out/memory.json" "${measured[@]}"
files=()
for n in "${sizes[@]}"; do
  echo "== ${n}^3: predicted (tb-model)"
  launch --out "$out/predicted-$n.csv" tb-model --shape "$n,$n,$n" --grid 2 --from-axis 2 --to-axis 0 --type c64 \
    --network "$out/host.json" --memory "$out/memory-floors.json" --overheads "$out/overheads.json" >/dev/null
  files+=("$out/measured-$n.json" "$out/predicted-$n.csv")
done
/usr/bin/python3 analysis/model_validation.py "${files[@]}"
