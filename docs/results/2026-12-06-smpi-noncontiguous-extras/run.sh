#!/usr/bin/env bash
# SMPI against this host with and without the measured non-contiguous extras charged
# (docs/results/2026-12-06-smpi-noncontiguous-extras.md). Each run calibrates this host afresh
# (tb-beff --fit-out), writes both platforms from that calibration, measures the definition once
# (--mode intra, Debian's MPICH) and simulates it on both into the same store.
# Needs scripts/build.sh mpich smpi. Usage: run.sh [OUT] [RUNS]
set -euo pipefail
cd "$(dirname "$0")/../../.."
out=${1:-/tmp/check}
runs=${2:-3}
definition=experiments/definitions/smpi_this_host_check.json
for i in $(seq 1 "$runs"); do
  d=$out/run$i; S=$d/store.jsonl; mkdir -p "$d"; rm -f "$S"
  echo "run $i $(date -u +%T) load $(cut -d' ' -f1 /proc/loadavg)"
  mpiexec.mpich -n 2 build/mpich/bin/tb-beff --fit-out "$d/host.json" > "$d/tb-beff.log"
  experiments/host_platform.py "$d/host.json" --out "$d/this-host.xml"
  experiments/host_platform.py "$d/host.json" --noncontiguous-extras --out "$d/this-host-extras.xml"
  experiments/run.py $definition --mode intra --store "$S" > "$d/intra.log" 2>&1
  for p in this-host this-host-extras; do
    experiments/run.py $definition --mode smpi --platform "$d/$p.xml" --compute on --smpi-arrays private \
      --store "$S" > "$d/smpi-$p.log" 2>&1
    /usr/bin/python3 analysis/smpi_vs_measured.py "$S" --platform "$d/$p.xml" --out "$d/$p" > "$d/$p.txt"
  done
done
