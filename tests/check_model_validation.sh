#!/usr/bin/env bash
# The validation script's two other modes, each against what it must produce:
#   check_model_validation.sh recost RUN_DIR OUT_DIR
#     re-costs a finished run (TB_VALIDATION_RECOST=RUN_DIR): the same model on the same
#     measurements must give the run's validation.csv byte for byte, its report the spread of every
#     calibration the run made (host-K.json) and the state each calibration and sweep launch started
#     in; re-costed on one of them (TB_VALIDATION_NETWORK) the
#     report names that file and shows no spread; RUN_DIR is left as it was (its file list and
#     validation.csv).
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
    TB_VALIDATION_RECOST=$run TB_VALIDATION_NETWORK=$run/host-1.json TB_VALIDATION_OUT=$out-host1 "$script" mpich \
      > "$out-host1.log" 2>&1 || { tail -n 20 "$out-host1.log"; fail "re-costing on host-1.json exited $?"; }
    grep -q "^re-costing the measurements of $run on $run/host-1.json" "$out-host1/run.txt" || fail "run.txt does not name host-1.json"
    ! grep -q "Calibration spread" "$out-host1/report.md" || fail "a single network's report shows a spread"
    grep -q "^overall: median |error|" "$out-host1/report.md" || fail "no overall line on host-1.json"
    [ "$(cd "$run" && find . -type f | sort | md5sum)" = "$before" ] || fail "re-costing changed $run"
    echo "check_model_validation: ok (re-costed; $hosts calibrations' spread; host-1.json alone)"
    ;;
  once)
    out=$2
    TB_VALIDATION_CALIBRATIONS=once TB_VALIDATION_SWEEP=none TB_VALIDATION_OUT=$out "$script" mpich 8 > "$out.log" 2>&1 ||
      { tail -n 20 "$out.log"; fail "the run exited $?"; }
    [ "$(find "$out" -maxdepth 1 -name 'host-[0-9]*.json' | wc -l)" -eq 1 ] && [ -f "$out/host-1.json" ] ||
      fail "not exactly one calibration: $(ls "$out")"
    grep -q "^calibration: host.json is the median of 1 tb-beff calibration(s)" "$out/run.txt" || fail "run.txt counts other calibrations"
    grep -q "^Calibration spread: 1 tb-beff calibration(s)" "$out/report.md" || fail "the report does not show the one calibration"
    echo "check_model_validation: ok (one calibration)"
    ;;
  *) echo "usage: $0 recost RUN_DIR OUT_DIR | once OUT_DIR" >&2; exit 2 ;;
esac
