#!/usr/bin/env bash
# Re-costs one finished validation run with and without the cold self messages, on all rows and
# on each vector-path state's rows, and prints each report's summary lines.
#   docs/results/2026-12-07-cold-self-messages/recost.sh RUN_DIR OUT_DIR
# RUN_DIR: a TB_VALIDATION_OUT of experiments/model_validation.sh mpich (run with this term's
# tb-beff, so its calibrations hold host.cold_self_message_extra_seconds).
set -euo pipefail
run=$1 out=$2
cd "$(dirname "$0")/../../.."
mkdir -p "$out"
# NETWORK without the term's key -> FILE.
without() { /usr/bin/python3 - "$1" "$2" <<'PY'
import json, sys
n = json.load(open(sys.argv[1]))
del n["host"]["cold_self_message_extra_seconds"]
json.dump(n, open(sys.argv[2], "w"), indent=2)
PY
}
for state in all vector-fast vector-slow; do
  TB_VALIDATION_RECOST=$run TB_VALIDATION_STATE=$state TB_VALIDATION_OUT=$out/$state-with \
    experiments/model_validation.sh mpich > "$out/$state-with.log" 2>&1
  network=$out/$state-with/host-$state.json
  [ "$state" != all ] || network=$run/host.json
  without "$network" "$out/$state-host-without.json"
  TB_VALIDATION_RECOST=$run TB_VALIDATION_STATE=$state TB_VALIDATION_NETWORK=$out/$state-host-without.json \
    TB_VALIDATION_OUT=$out/$state-without experiments/model_validation.sh mpich > "$out/$state-without.log" 2>&1
  for variant in with without; do
    echo "== $state, $variant the cold self messages"
    grep -E "^\| all, |^- (median \|error\||\|bias\||every algorithm|ranking at)" "$out/$state-$variant/report.md" || true
  done
done
# The points the term moves (native's own block, local_remap's self part) from 16 KiB per peer:
# signed error without -> with, per state.
/usr/bin/python3 - "$out" <<'PY'
import csv, sys
def rows(path):
    key = lambda r: (r["algorithm"], r["source"], r["layout"], int(r["bytes_per_peer"]))
    return {key(r): float(r["signed_error"]) for r in csv.DictReader(open(path))}
for state in ("all", "vector-fast", "vector-slow"):
    with_, without = (rows(f"{sys.argv[1]}/{state}-{v}/validation.csv") for v in ("with", "without"))
    print(f"== {state}: signed error without -> with the cold self messages")
    for k in sorted(with_):
        if k[0] in ("native", "local_remap") and k[3] >= 16384 and k in without:
            print(f"{k[0]:12s} {k[1]:16s} {k[2]:30s} {k[3]:>8d} B {without[k]:+7.1%} -> {with_[k]:+7.1%}")
PY
