#!/usr/bin/env bash
# tb-beff --fit-out end to end: the host network it writes holds the measured message curve
# (host.message_seconds_by_bytes) with one point per measured size, each of b_eff's sizes the
# size's exchange median_s / 2 from the same run's --json, then the sizes beyond b_eff's in 2x
# steps (--messages-max-bytes), each a positive time; tb-model then names the measured messages in its
# header, and the Hockney fit with --without measured_messages. The same file holds the measured
# self messages (host.self_message_seconds_by_bytes), one positive time per measured size, which
# tb-model names too, and not with --without self_messages; and the non-contiguous messages' extra
# times (host.noncontiguous_{send,recv}_extra_seconds), per block size, every size of at least 4
# blocks, timed back to back (calibration.noncontiguous_timing "loop"), which tb-model names too, and not with --without noncontiguous_messages; and the node
# handoffs (host.node_handoff_extra_seconds_by_bytes), one extra >= 0 per size up to
# --pairs-max-bytes (65536 here), named by tb-model, and not with --without node_handoff; and the
# same handoffs in 64-byte pieces (host.node_handoff_piece_extra_seconds_by_bytes), named by
# tb-model, and not with --without node_handoff_pieces or --without node_handoff; and the
# fresh messages' extras (host.fresh_message_extra_seconds_by_bytes) likewise, named by tb-model, and
# not with --without fresh_messages; and where
# the testbed has UCX the zero-copy gets (host.get_seconds_by_bytes), one positive time per size
# 64 B - 64 KiB, named by tb-model, and not with --without zero_copy_gets (without UCX: no such key);
# and the cold messages' extras (host.cold_message_extra_seconds), per traffic size 256 KiB - 64 MiB
# one extra >= 0 per size 4-64 KiB, named by tb-model, and not with --without cold_messages; and
# the cold self messages' (host.cold_self_message_extra_seconds) likewise, and not with --without
# cold_self_messages.
#   run_beff_fit_out.sh OUT_DIR TB_MODEL MEMORY_JSON MPIEXEC [mpiexec args...] TB_BEFF [tb-beff args...]
set -euo pipefail
out=$1 model=$2 memory=$3
shift 3
mkdir -p "$out"
rm -f "$out/beff.json" "$out/host.json"
"$@" --json "$out/beff.json" --fit-out "$out/host.json"
/usr/bin/python3 - "$out/beff.json" "$out/host.json" <<'EOF'
import json, sys
rows = json.load(open(sys.argv[1]))["results"]
curve = json.load(open(sys.argv[2]))["host"]["message_seconds_by_bytes"]
if [b for b, _ in curve[:len(rows)]] != [r["bytes"] for r in rows]:
    sys.exit(f"run_beff_fit_out: FAILED: the curve's sizes {[b for b, _ in curve]} do not start with b_eff's")
for (b, s), r in zip(curve, rows):
    if abs(s - r["median_s"] / 2) > 1e-12 * max(1.0, s):
        sys.exit(f"run_beff_fit_out: FAILED: at {b} B the curve has {s} s, the exchange median / 2 is {r['median_s'] / 2}")
beyond = curve[len(rows):]
if [b for b, _ in beyond] != [rows[-1]["bytes"] << k for k in range(1, len(beyond) + 1)] or any(s <= 0 for _, s in beyond):
    sys.exit(f"run_beff_fit_out: FAILED: the sizes beyond b_eff's {beyond} are not 2x steps with positive times")
print(f"run_beff_fit_out: host.message_seconds_by_bytes has {len(curve)} points, one per measured size "
      f"({len(beyond)} beyond b_eff's)")
self_curve = json.load(open(sys.argv[2]))["host"]["self_message_seconds_by_bytes"]
if [b for b, _ in self_curve] != [b for b, _ in curve] or not all(s > 0 for _, s in self_curve):
    sys.exit(f"run_beff_fit_out: FAILED: the self-message curve {self_curve} is not one positive time per measured size")
print(f"run_beff_fit_out: host.self_message_seconds_by_bytes has {len(self_curve)} points")
host = json.load(open(sys.argv[2]))["host"]
blocks = {}
for side in ("send", "recv"):
    table = host[f"noncontiguous_{side}_extra_seconds"]
    blocks[side] = [int(e["block_bytes"]) for e in table]
    for e in table:
        points = e["seconds_by_bytes"]
        if not points or any(b < 4 * e["block_bytes"] or s < 0 for b, s in points):
            sys.exit(f"run_beff_fit_out: FAILED: {side} extra for {e['block_bytes']} B blocks: {points} "
                     "(every size needs at least 4 blocks and an extra >= 0)")
if blocks["send"] != blocks["recv"]:
    sys.exit(f"run_beff_fit_out: FAILED: the send and receive tables differ in block sizes: {blocks}")
# Blocks 4x apart up to 1 KiB, sizes 2x apart up to 64 KiB (the protocol change lies there).
if blocks["send"] != [64, 256, 1024, 16384]:
    sys.exit(f"run_beff_fit_out: FAILED: non-contiguous block sizes {blocks['send']}, not 64, 256, 1024, 16384 "
             "(256 KiB blocks need sizes from 1 MiB, above this test's 64 KiB)")
sizes = [int(b) for b, _ in host["noncontiguous_send_extra_seconds"][0]["seconds_by_bytes"]]
if sizes != [4096, 8192, 16384, 32768, 65536]:
    sys.exit(f"run_beff_fit_out: FAILED: the 64 B blocks' extra is measured at {sizes}, not 4-64 KiB in steps of 2x")
timing = json.load(open(sys.argv[2]))["calibration"].get("noncontiguous_timing")
if timing != "loop":
    sys.exit(f"run_beff_fit_out: FAILED: the calibration records the non-contiguous timing as {timing!r}, "
             "not tb-beff's default 'loop'")
print("run_beff_fit_out: non-contiguous extras for blocks " + ", ".join(map(str, blocks["send"])) +
      ", timed back to back")
handoff = host["node_handoff_extra_seconds_by_bytes"]
if [b for b, _ in handoff] != [4096, 16384, 65536] or any(s < 0 for _, s in handoff):
    sys.exit(f"run_beff_fit_out: FAILED: the node handoffs {handoff} are not one extra >= 0 per size 4-64 KiB")
print(f"run_beff_fit_out: node handoffs at {len(handoff)} sizes")
pieces = host["node_handoff_piece_extra_seconds_by_bytes"]
if [b for b, _ in pieces] != [4096, 16384, 65536] or any(s < 0 for _, s in pieces):
    sys.exit(f"run_beff_fit_out: FAILED: the node handoffs in pieces {pieces} are not one extra >= 0 per size 4-64 KiB")
print(f"run_beff_fit_out: node handoffs in 64-byte pieces at {len(pieces)} sizes")
fresh = host["fresh_message_extra_seconds_by_bytes"]
if [b for b, _ in fresh] != [4096, 16384, 65536] or any(s < 0 for _, s in fresh):
    sys.exit(f"run_beff_fit_out: FAILED: the fresh messages {fresh} are not one extra >= 0 per size 4-64 KiB")
print(f"run_beff_fit_out: fresh messages at {len(fresh)} sizes")
gets = host.get("get_seconds_by_bytes")
if gets is None:
    print("run_beff_fit_out: zero-copy gets not measured")
elif [b for b, _ in gets] != [64, 256, 1024, 4096, 16384, 65536] or any(s <= 0 for _, s in gets):
    sys.exit(f"run_beff_fit_out: FAILED: the zero-copy gets {gets} are not one positive time per size 64 B - 64 KiB")
else:
    print(f"run_beff_fit_out: zero-copy gets at {len(gets)} sizes")
for key, what in (("cold_message_extra_seconds", "cold messages"), ("cold_self_message_extra_seconds", "cold self messages")):
    cold = host[key]
    traffic = [int(e["traffic_bytes"]) for e in cold]
    if traffic != [262144, 1 << 20, 4 << 20, 16 << 20, 64 << 20] or any(
            [b for b, _ in e["seconds_by_bytes"]] != [4096, 16384, 65536] or any(s < 0 for _, s in e["seconds_by_bytes"])
            for e in cold):
        sys.exit(f"run_beff_fit_out: FAILED: the {what} {cold} are not one extra >= 0 per size 4-64 KiB "
                 "for traffic 256 KiB - 64 MiB")
    print(f"run_beff_fit_out: {what} after {len(traffic)} traffic sizes")
EOF
# tb-model's header for the written network (extra arguments appended).
header() { "$model" --network "$out/host.json" --shape 8,8,8 --grid 2 --memory "$memory" "$@"; }
# The header names a term (an extended regex) and, with --without TERM, no longer does (fixed text).
names_term() {
  local term=$1 named=$2 text=$3
  header | grep -E "$named"
  if header --without "$term" | grep -q "$text"; then
    echo "run_beff_fit_out: FAILED: --without $term still names the $text"
    exit 1
  fi
}
header | grep -E "host measured messages \(tb-beff exchange medians / 2, [0-9]+ sizes\)"
header --without measured_messages | grep -E "host Hockney, alpha"
names_term self_messages "measured self messages \(tb-beff self exchange medians, [0-9]+ sizes\)" "measured self messages"
names_term noncontiguous_messages "non-contiguous messages measured \(tb-beff, [0-9]+ block sizes\)" \
  "non-contiguous messages measured"
names_term node_handoff "node handoffs measured \(tb-beff, [0-9]+ sizes\)" "node handoffs measured"
names_term node_handoff_pieces "node handoffs in 64 B pieces measured \(tb-beff, [0-9]+ sizes\)" \
  "node handoffs in 64 B pieces measured"
if header --without node_handoff | grep -q "node handoffs in 64 B pieces measured"; then
  echo "run_beff_fit_out: FAILED: --without node_handoff still names the node handoffs in pieces"
  exit 1
fi
names_term fresh_messages "fresh messages measured \(tb-beff, [0-9]+ sizes\)" "fresh messages measured"
names_term cold_messages "; cold messages measured \(tb-beff, [0-9]+ traffic sizes\)" "; cold messages measured"
names_term cold_self_messages "cold self messages measured \(tb-beff, [0-9]+ traffic sizes\)" "cold self messages measured"
if grep -q get_seconds_by_bytes "$out/host.json"; then
  names_term zero_copy_gets "zero-copy gets measured \(tb-beff, [0-9]+ sizes\)" "zero-copy gets measured"
fi
echo "run_beff_fit_out: ok"
