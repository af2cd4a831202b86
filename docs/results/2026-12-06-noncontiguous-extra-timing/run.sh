#!/usr/bin/env bash
# The same validation rows costed with tb-beff's non-contiguous extras timed two ways: one exchange
# per barrier (single) and back to back (loop, tb-beff's default). Calibrations of
# both kinds alternate (N each), so that both see the same machine; per state the median of each
# kind is taken (model_validation.py host-median --state) and its four non-contiguous keys replace
# those of the run's own network for that state; then the run's rows are re-costed on each.
#   run.sh RUN OUT [N]   RUN: a finished experiments/model_validation.sh mpich output directory
set -euo pipefail
cd "$(dirname "$0")/../../.."
run=$1 out=$2 n=${3:-4}
mkdir -p "$out"
validation() { /usr/bin/python3 analysis/model_validation.py "$@"; }
for i in $(seq 1 "$n"); do
  for timing in single loop; do
    echo "run.sh: calibration $i/$n, $timing" >&2
    mpiexec.mpich -n 2 build/mpich/bin/tb-beff --noncontiguous-timing "$timing" --fit-out "$out/$timing-$i.json" \
      > "$out/$timing-$i.log"
  done
done
keys='noncontiguous_send_extra_seconds noncontiguous_recv_extra_seconds self_noncontiguous_send_extra_seconds self_noncontiguous_recv_extra_seconds'
for state in vector-fast vector-slow all; do
  if [ "$state" = all ]; then base=$run/host.json; else
    base=$out/run-$state.json
    validation host-median --state "$state" --min-calibrations 2 "$base" $(find "$run" -maxdepth 1 -name 'host-[0-9]*.json' | sort -V) >&2
  fi
  for timing in single loop; do
    validation host-median --state "$state" --min-calibrations 2 "$out/$timing-median-$state.json" "$out/$timing"-[0-9]*.json >&2
    /usr/bin/python3 - "$base" "$out/$timing-median-$state.json" "$out/network-$timing-$state.json" $keys <<'PY'
import json, sys
base, extras, target, keys = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
network, measured = json.load(open(base)), json.load(open(extras))
for key in keys:
    network["host"][key] = measured["host"][key]
network["comment"] += f" The non-contiguous extras ({', '.join(keys)}) from {extras}."
json.dump(network, open(target, "w"), indent=2)
PY
    TB_VALIDATION_RECOST=$run TB_VALIDATION_NETWORK=$out/network-$timing-$state.json TB_VALIDATION_STATE=$state \
      TB_VALIDATION_OUT=$out/recost-$timing-$state experiments/model_validation.sh mpich > "$out/recost-$timing-$state.log" 2>&1
    echo "== $state, extras timed $timing:"
    grep -E '^overall|NOT met|, met' "$out/recost-$timing-$state/report.md"
  done
done
