#!/usr/bin/env bash
# The validation script's two other modes, each against what it must produce:
#   check_model_validation.sh recost RUN_DIR OUT_DIR
#     re-costs a finished run (TB_VALIDATION_RECOST=RUN_DIR): the same model on the same
#     measurements must give the run's validation.csv byte for byte, its report the spread of every
#     calibration the run made (host-K.json) and the state of each calibration (its start or end)
#     and sweep launch, and the run's rows must carry their own states (handoff_ and vector_before/after); re-costed on one of them (TB_VALIDATION_NETWORK) the
#     report names that file and shows no spread; re-costed with TB_VALIDATION_WITHOUT the report
#     and run.txt name the term and the predictions change, and an unknown term is refused by name
#     before the output folder's earlier files are removed; RUN_DIR is left as it was (its file
#     list and validation.csv).
#   check_model_validation.sh state RUN_DIR OUT_DIR
#     re-costs a copy of the run with TB_VALIDATION_STATE=fast after setting every recorded state
#     to fast except the first calibration's and the native row of one repetition (made slow):
#     host-fast.json must be the median of the other calibrations, overheads-fast.json of the
#     overhead launches but the first (made slow), the native point of that cube
#     left out (4 of 5 repetitions timed fast) and named, and the report must count the slow rows
#     (the smoke run's 6 calibrations leave 5 fast, at least the 3 a state's network needs). A
#     second re-cost into OUT_DIR-few asks for as many fast calibrations as the run has: the
#     network must then be the median of all of them, and run.txt and the report must say so.
#   check_model_validation.sh once OUT_DIR
#     TB_VALIDATION_CALIBRATIONS=once (8^3 slab, no sweep): one tb-beff calibration, host-1.json
#     only, and host.json is its median of 1.
# Prints "check_model_validation: ok" or FAILED with the reason. Needs the environment of the
# smoke test (TB_VALIDATION_BIN and the shortened tb-beff).
set -euo pipefail
script=$(dirname "$0")/../experiments/model_validation.sh
fail() { echo "check_model_validation: FAILED: $*"; exit 1; }
case ${1:-} in
  recost)
    run=$2 out=$3
    before=$(cd "$run" && find . -type f | sort | md5sum)
    TB_VALIDATION_RECOST=$run TB_VALIDATION_OUT=$out "$script" mpich > "$out.log" 2>&1 || { tail -n 20 "$out.log"; fail "re-costing exited $?"; }
    cmp -s "$run/validation.csv" "$out/validation.csv" || fail "the re-costed validation.csv differs from the run's"
    hosts=$(find "$run" -maxdepth 1 -name 'host-[0-9]*.json' | wc -l)
    [ "$hosts" -ge 2 ] || fail "the run made $hosts calibration(s); the smoke test spreads them"
    grep -q "^Calibration spread: $hosts tb-beff calibration(s)" "$out/report.md" || fail "no spread of $hosts calibrations in the report"
    grep -Eq "^- calibrations: [0-9]+ of $hosts slow \([0-9.]+(, [0-9.]+)*\)$" "$out/report.md" ||
      fail "the report does not give the state each of the $hosts calibrations started in"
    grep -Eq "^- sweep launches: [0-9]+ of [0-9]+ slow " "$out/report.md" || fail "no state per sweep launch in the report"
    /usr/bin/python3 - "$run" <<'EOF' || fail "the run's rows do not carry their own states"
import glob, json, os, sys
STATES = ("handoff_before", "handoff_after", "vector_before", "vector_after")
def numeric(row):
    return all(isinstance(row.get(k), (int, float)) and row[k] > 0 for k in STATES)
for path in glob.glob(os.path.join(sys.argv[1], "measured-*-rep*.json")):
    rows = [r for r in json.load(open(path))["results"] if r["method"] not in ("memcpy_floor", "streaming_copy")]
    if not rows or not all(map(numeric, rows)):
        sys.exit(f"{path}: a row without {'/'.join(STATES)}")
for path in glob.glob(os.path.join(sys.argv[1], "bench-rep*.json")) + glob.glob(os.path.join(sys.argv[1], "overheads.json")) + \
        glob.glob(os.path.join(sys.argv[1], "overheads-rep*.json")):
    if not all(map(numeric, json.load(open(path))["benchmarks"])):
        sys.exit(f"{path}: a benchmark without {'/'.join(STATES)}")
EOF
    TB_VALIDATION_RECOST=$run TB_VALIDATION_NETWORK=$run/host-1.json TB_VALIDATION_OUT=$out-host1 "$script" mpich \
      > "$out-host1.log" 2>&1 || { tail -n 20 "$out-host1.log"; fail "re-costing on host-1.json exited $?"; }
    grep -q "^re-costing the measurements of $run on $run/host-1.json" "$out-host1/run.txt" || fail "run.txt does not name host-1.json"
    ! grep -q "Calibration spread" "$out-host1/report.md" || fail "a single network's report shows a spread"
    grep -q "^overall: median |error|" "$out-host1/report.md" || fail "no overall line on host-1.json"
    TB_VALIDATION_RECOST=$run TB_VALIDATION_WITHOUT=measured_messages TB_VALIDATION_OUT=$out-without "$script" mpich \
      > "$out-without.log" 2>&1 || { tail -n 20 "$out-without.log"; fail "re-costing without measured_messages exited $?"; }
    grep -q "^The model judged here has these terms switched off: measured_messages" "$out-without/report.md" ||
      fail "the report without measured_messages does not say so"
    grep -q "TB_VALIDATION_WITHOUT=measured_messages" "$out-without/run.txt" || fail "run.txt does not record the terms"
    ! cmp -s "$run/validation.csv" "$out-without/validation.csv" ||
      fail "without measured_messages every prediction is the run's (the term reached no tb-model call)"
    # An unknown term: refused by name before the output folder's earlier files are touched.
    mkdir -p "$out-bad" && echo earlier > "$out-bad/report.md"
    if TB_VALIDATION_RECOST=$run TB_VALIDATION_WITHOUT=cache_fairies TB_VALIDATION_OUT=$out-bad "$script" mpich \
      > "$out-bad.log" 2>&1; then
      fail "an unknown term was accepted"
    fi
    grep -q "TB_VALIDATION_WITHOUT: 'cache_fairies' is not a switchable model term" "$out-bad.log" ||
      fail "an unknown term's error does not name it: $(tail -n 3 "$out-bad.log")"
    [ "$(cat "$out-bad/report.md")" = earlier ] || fail "an unknown term's run removed the output folder's report"
    [ "$(cd "$run" && find . -type f | sort | md5sum)" = "$before" ] || fail "re-costing changed $run"
    echo "check_model_validation: ok (re-costed; $hosts calibrations' spread; host-1.json alone; without a term)"
    ;;
  state)
    run=$2 out=$3
    copy=$out-run
    rm -rf "$copy" && cp -r "$run" "$copy"
    hosts=$(find "$copy" -maxdepth 1 -name 'host-[0-9]*.json' | wc -l)
    /usr/bin/python3 - "$copy" <<'EOF'
import glob, json, os, sys
run = sys.argv[1]
def state(ratio):
    return {"bytes": 1 << 20, "handoff_us": 50.0 * ratio, "private_us": 50.0, "ratio": ratio}
def rewrite(path, change):
    with open(path) as f:
        doc = json.load(f)
    change(doc)
    with open(path, "w") as f:
        json.dump(doc, f)
def calibration(doc, ratio):
    doc["calibration"].update(cross_core_handoff=state(ratio), cross_core_handoff_after=state(1.0))
def rows(doc, slow_method):
    doc["metadata"]["cross_core_handoff"] = state(1.0)
    for row in doc["results"]:
        row.update(handoff_before=1.0, handoff_after=9.0 if row["method"] == slow_method else 1.0)
def benchmarks(doc, ratio=1.0):
    doc["context"]["cross_core_handoff"] = json.dumps(state(1.0))
    for b in doc["benchmarks"]:
        b.update(handoff_before=1.0, handoff_after=ratio)
for path in glob.glob(os.path.join(run, "host-[0-9]*.json")):
    rewrite(path, lambda doc, slow=path.endswith("/host-1.json"): calibration(doc, 9.0 if slow else 1.0))
for path in glob.glob(os.path.join(run, "measured-*-rep*.json")):
    rewrite(path, lambda doc, slow=path.endswith("-rep2.json"): rows(doc, "alltoallw:native" if slow else None))
for path in glob.glob(os.path.join(run, "bench-rep*.json")):
    rewrite(path, benchmarks)
for path in glob.glob(os.path.join(run, "overheads.json")) + glob.glob(os.path.join(run, "overheads-rep*.json")):
    rewrite(path, lambda doc, slow=path.endswith("/overheads.json"): benchmarks(doc, 9.0 if slow else 1.0))
EOF
    TB_VALIDATION_RECOST=$copy TB_VALIDATION_STATE=fast TB_VALIDATION_MIN_REPETITIONS=5 TB_VALIDATION_OUT=$out \
      "$script" mpich > "$out.log" 2>&1 || { tail -n 20 "$out.log"; fail "re-costing in the fast state exited $?"; }
    grep -q "^state: fast; $out/host-fast.json: the median of the $((hosts - 1)) calibration(s) made in the fast state" "$out/run.txt" ||
      fail "run.txt does not name host-fast.json"
    median_of=$(/usr/bin/python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["calibration"]["median_of"])' "$out/host-fast.json")
    [ "$median_of" = $((hosts - 1)) ] || fail "host-fast.json is the median of $median_of calibrations, not the $((hosts - 1)) fast ones"
    grep -q "^Only the timings made in the fast state" "$out/report.md" || fail "the report does not say it keeps the fast state"
    grep -Eq "^- native at tb-redistribute slab .*: 4$" "$out/report.md" ||
      fail "the native point with 4 fast repetitions is not named as left out"
    ! grep -Eq "^\| tb-redistribute [^|]+ \| [^|]+ \| native \|" "$out/report.md" || fail "the left-out native point is in the figures"
    grep -Eq "^- redistribution rows timed: 1 of [0-9]+ slow$" "$out/report.md" || fail "the slow row is not counted"
    grep -Eq "^- calibrations: 1 of $hosts slow " "$out/report.md" || fail "the slow calibration is not counted"
    launches=$(find "$copy" -maxdepth 1 \( -name overheads.json -o -name 'overheads-rep[0-9]*.json' \) | wc -l)
    [ "$launches" -ge 2 ] || fail "the run measured the overheads in $launches launch(es), not once per repetition too"
    samples=$(/usr/bin/python3 -c 'import json, sys
print(sorted({b["samples"] for b in json.load(open(sys.argv[1]))["benchmarks"]}))' "$out/overheads-fast.json")
    [ "$samples" = "[$((launches - 1))]" ] ||
      fail "overheads-fast.json's medians are of $samples benchmarks, not of the $((launches - 1)) fast launches'"
    grep -q "^overheads: $out/overheads-fast.json" "$out/run.txt" || fail "run.txt does not name overheads-fast.json"
    # Fewer fast calibrations than asked for: the network is the median of all of them, and says so.
    TB_VALIDATION_RECOST=$copy TB_VALIDATION_STATE=fast TB_VALIDATION_MIN_REPETITIONS=5 TB_VALIDATION_MIN_CALIBRATIONS=$hosts \
      TB_VALIDATION_OUT=$out-few "$script" mpich > "$out-few.log" 2>&1 || { tail -n 20 "$out-few.log"; fail "re-costing with too few fast calibrations exited $?"; }
    said="the median of all $hosts calibration(s), since only $((hosts - 1)) were made in the fast state (fewer than $hosts"
    grep -qF "state: fast; $out-few/host-fast.json: $said" "$out-few/run.txt" || fail "run.txt does not say the fast network fell back to all calibrations"
    grep -qF "The host network is $said" "$out-few/report.md" || fail "the report does not say the fast network fell back to all calibrations"
    median_of=$(/usr/bin/python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["calibration"]["median_of"])' "$out-few/host-fast.json")
    [ "$median_of" = "$hosts" ] || fail "with too few fast calibrations host-fast.json is the median of $median_of, not all $hosts"
    echo "check_model_validation: ok (fast state: $((hosts - 1)) calibrations, $((launches - 1)) overhead launches, one row left out; all $hosts with too few)"
    ;;
  once)
    out=$2
    TB_VALIDATION_CALIBRATIONS=once TB_VALIDATION_SWEEP=none TB_VALIDATION_OUT=$out "$script" mpich 8 > "$out.log" 2>&1 ||
      { tail -n 20 "$out.log"; fail "the run exited $?"; }
    [ "$(find "$out" -maxdepth 1 -name 'host-[0-9]*.json' | wc -l)" -eq 1 ] && [ -f "$out/host-1.json" ] ||
      fail "not exactly one calibration: $(ls "$out")"
    grep -qF "calibration: $out/host.json: the median of 1 calibration(s)" "$out/run.txt" || fail "run.txt counts other calibrations"
    grep -q "^Calibration spread: 1 tb-beff calibration(s)" "$out/report.md" || fail "the report does not show the one calibration"
    echo "check_model_validation: ok (one calibration)"
    ;;
  *) echo "usage: $0 recost RUN_DIR OUT_DIR | state RUN_DIR OUT_DIR | once OUT_DIR" >&2; exit 2 ;;
esac
