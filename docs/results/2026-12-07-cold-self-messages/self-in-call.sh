#!/usr/bin/env bash
# native's self block inside the call (experiments/probes/native_self_in_call.c) beside tb-beff's
# self message and cold self extra, N alternating pairs of launches: a calibration, then the probe.
# Prints, per pair, the calibration's s(L) and cs(L, 3L) (the traffic tb-model gives native's
# contiguous call: the self block, the peer's block sent and received) beside the probe's table.
#   docs/results/2026-12-07-cold-self-messages/self-in-call.sh OUT_DIR [N=3]
set -euo pipefail
out=$1 n=${2:-3}
cd "$(dirname "$0")/../../.."
mkdir -p "$out"
mpicc.mpich -O2 -o "$out/native_self_in_call" experiments/probes/native_self_in_call.c
for k in $(seq "$n"); do
  mpiexec.mpich -n 2 build/mpich/bin/tb-beff --fit-out "$out/host-$k.json" > "$out/beff-$k.log"
  echo "== pair $k, $(date -u +%H:%M:%S) UTC: tb-beff's s(L) and cs(L, 3L), us"
  for kib in 128 256 512 1024 2048 4096 8192; do  # tb-model reads the curves as the model does
    b=$((kib << 10))
    build/mpich/bin/tb-model --network "$out/host-$k.json" --values-at "$b" --traffic $((3 * b)) |
      awk -v kib="$kib" '$1 == "self_messages" {s = $(NF-1)} $1 == "cold_self_messages" {c = $(NF-1)}
                         END {printf "%8d s(L) %8.1f  cs(L, 3L) %8.1f\n", kib, s, c}'
  done
  mpiexec.mpich -n 2 "$out/native_self_in_call"
done
