#!/usr/bin/env bash
# SMPI against this host with and without the library's datatype engine, three stores one after
# another (docs/results/2026-12-04-smpi-datatype-engine.md). Needs scripts/build.sh mpich smpi.
# On 2026-12-04 the engine's platform was experiments/platforms/this-host.xml itself (commit
# 2cddb0f wrote the property there); host_platform.py now writes it only with --datatype-engine.
set -euo pipefail
cd "$(dirname "$0")/../../.."
out=${1:-/tmp/check}
mkdir -p "$out"
calibration=docs/results/2026-12-03-this-host-calibration.json
experiments/host_platform.py $calibration --datatype-engine --out "$out/this-host-engine.xml"
experiments/host_platform.py $calibration --out "$out/this-host-no-engine.xml"
definition=experiments/definitions/smpi_this_host_check.json
for i in 1 2 3; do
  S=$out/run$i/store.jsonl; mkdir -p "$out/run$i"; rm -f "$S"
  echo "run $i $(date -u +%T) load $(cut -d' ' -f1 /proc/loadavg)"
  experiments/run.py $definition --mode intra --store "$S" > "$out/run$i/intra.log" 2>&1
  for p in engine no-engine; do
    experiments/run.py $definition --mode smpi --platform "$out/this-host-$p.xml" --compute on --smpi-arrays private \
      --store "$S" > "$out/run$i/smpi-$p.log" 2>&1
    /usr/bin/python3 analysis/smpi_vs_measured.py "$S" --platform "$out/this-host-$p.xml" --out "$out/run$i/$p" \
      > "$out/run$i/$p.txt"
  done
done
