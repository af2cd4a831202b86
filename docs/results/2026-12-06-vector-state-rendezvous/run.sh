#!/usr/bin/env bash
# Where the vector path's slow state lives: experiments/probes/vector_state.c (a 64 or 256 KiB
# message whose send side is a vector of 1 KiB blocks, against the same bytes contiguous, one
# sample per second) in launches that alternate UCX's defaults, its rendezvous scheme forced to
# get_zcopy, and its rendezvous threshold raised past the message (UCX_RNDV_THRESH=inf: the message
# goes eagerly), ROUNDS rounds of each size. Writes <round>-<bytes>-<setting>.txt here, then the
# summary (summary.txt).
#   docs/results/2026-12-06-vector-state-rendezvous/run.sh [ROUNDS]     (default 3)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
rounds=${1:-3}
mpicc.mpich -O2 -o /tmp/vector_state "$here/../../../experiments/probes/vector_state.c"
for round in $(seq 1 "$rounds"); do
  for bytes in 65536 262144; do
    for setting in default get_zcopy eager; do
      case $setting in
        default) env=() ;;
        get_zcopy) env=(UCX_RNDV_SCHEME=get_zcopy) ;;
        eager) env=(UCX_RNDV_THRESH=inf) ;;
      esac
      env "${env[@]}" mpiexec.mpich -n 2 /tmp/vector_state 1 25 "$bytes" > "$here/$round-$bytes-$setting.txt"
    done
  done
done
/usr/bin/python3 "$here/summary.py" "$here" | tee "$here/summary.txt"
