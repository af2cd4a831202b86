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
  /usr/bin/python3 - "$out/host-$k.json" <<'PY'
import json, math, sys
host = json.load(open(sys.argv[1]))["host"]
self_curve = dict((int(b), s) for b, s in host["self_message_seconds_by_bytes"])
def curve_at(points, x):  # linear between sizes, as tb-model reads a curve
    points = sorted(points)
    if x <= points[0][0]:
        return points[0][1] * x / points[0][0]
    for (x0, y0), (x1, y1) in zip(points, points[1:]):
        if x <= x1:
            return y0 + (y1 - y0) * (x - x0) / (x1 - x0)
    (x0, y0), (x1, y1) = points[-2:]
    return y1 + (y1 - y0) * (x - x1) / (x1 - x0)
def cold_at(table, bytes_, traffic):  # per traffic size, then log-interpolated on T
    rows = sorted((e["traffic_bytes"], curve_at(e["seconds_by_bytes"], bytes_)) for e in table)
    if traffic <= rows[0][0]:
        return rows[0][1]
    for (t0, c0), (t1, c1) in zip(rows, rows[1:]):
        if traffic <= t1:
            w = math.log(traffic / t0) / math.log(t1 / t0)
            return c0 + w * (c1 - c0)
    return rows[-1][1]
table = host["cold_self_message_extra_seconds"]
for kib in (128, 256, 512, 1024, 2048, 4096, 8192):
    b = kib << 10
    print(f"{kib:8d} s(L) {self_curve[b] * 1e6:8.1f}  cs(L, 3L) {cold_at(table, b, 3 * b) * 1e6:8.1f}")
PY
  mpiexec.mpich -n 2 "$out/native_self_in_call"
done
