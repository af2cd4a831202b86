#!/usr/bin/env bash
# SMPI against this host with the non-contiguous extras timed back to back (tb-beff's default,
# --noncontiguous-timing loop) and timed one exchange at a time (single)
# (docs/results/2026-12-07-smpi-single-extras.md). Each run calibrates this host twice, once per
# timing, in alternating order; both extras platforms take the loop calibration's network, and the
# "single" one the single calibration's extras tables and vector-path state, so the two differ in
# the extras only. The definition is measured once (--mode intra, Debian's MPICH) and simulated on
# three platforms (no extras, loop extras, single extras) into one store.
# Needs scripts/build.sh mpich smpi. Usage: run.sh [OUT] [RUNS]
set -euo pipefail
cd "$(dirname "$0")/../../.."
out=${1:-/tmp/single-extras}
runs=${2:-3}
definition=experiments/definitions/smpi_this_host_check.json
calibrate() {  # calibrate TIMING DIR
  mpiexec.mpich -n 2 build/mpich/bin/tb-beff --noncontiguous-timing "$1" --fit-out "$2/host-$1.json" \
    > "$2/tb-beff-$1.log"
}
for i in $(seq 1 "$runs"); do
  d=$out/run$i; S=$d/store.jsonl; mkdir -p "$d"; rm -f "$S"
  echo "run $i $(date -u +%T) load $(cut -d' ' -f1 /proc/loadavg)"
  if (( i % 2 )); then calibrate loop "$d"; calibrate single "$d"; else calibrate single "$d"; calibrate loop "$d"; fi
  /usr/bin/python3 - "$d" <<'PY'
import json, sys
d = sys.argv[1]
loop, single = (json.load(open(f"{d}/host-{t}.json")) for t in ("loop", "single"))
for key in ("noncontiguous_send_extra_seconds", "noncontiguous_recv_extra_seconds",
            "self_noncontiguous_send_extra_seconds", "self_noncontiguous_recv_extra_seconds"):
    loop["host"][key] = single["host"][key]
for key in ("vector_path", "vector_path_after", "noncontiguous_timing"):
    loop["calibration"][key] = single["calibration"][key]
loop["comment"] = f"{loop.get('comment', '')} (non-contiguous extras from {d}/host-single.json)"
json.dump(loop, open(f"{d}/host-single-extras.json", "w"), indent=1)
PY
  experiments/host_platform.py "$d/host-loop.json" --out "$d/this-host.xml"
  experiments/host_platform.py "$d/host-loop.json" --noncontiguous-extras --out "$d/this-host-loop.xml"
  experiments/host_platform.py "$d/host-single-extras.json" --noncontiguous-extras --out "$d/this-host-single.xml"
  experiments/run.py $definition --mode intra --store "$S" > "$d/intra.log" 2>&1
  for p in this-host this-host-loop this-host-single; do
    experiments/run.py $definition --mode smpi --platform "$d/$p.xml" --compute on --smpi-arrays private \
      --store "$S" > "$d/smpi-$p.log" 2>&1
    /usr/bin/python3 analysis/smpi_vs_measured.py "$S" --platform "$d/$p.xml" --out "$d/$p" > "$d/$p.txt"
  done
done
