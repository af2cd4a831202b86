#!/usr/bin/env bash
# The experiment pipeline on this build: run.py runs tiny definitions (tb-bench, tb-fft, tb-beff
# on 2 ranks and tb-model, which runs without mpiexec) into a fresh store, a second run must skip
# every point, and report.py must write the report and plots.
#   run_experiment_end_to_end.sh SOURCE_DIR BIN_DIR MPI WORK_DIR
set -eu
src=$1 bin=$2 mpi=$3 work=$4
rm -rf "$work" && mkdir -p "$work"
cat > "$work/bench.json" <<'DEF'
{"name": "e2e_sizes", "tool": "tb-bench", "ranks": [2], "matrix": {"--layouts": ["contiguous", "slab"]},
 "args": {"-m": "16:64", "--algorithms": "native,pairwise", "--benchmark_min_time": "0.001"}}
DEF
cat > "$work/fft.json" <<'DEF'
{"name": "e2e_fft", "tool": "tb-fft", "ranks": [1, 2],
 "args": {"--shape": "8,8,8", "--grid": "0", "--method": "native,local_remap", "--planner": "estimate", "--outer": "2"}}
DEF
cat > "$work/beff.json" <<'DEF'
{"name": "e2e_beff", "tool": "tb-beff", "ranks": [2],
 "args": {"--max-exponent": "10", "--loop-divisor": "256", "--repetitions": "2"}}
DEF
cat > "$work/model.json" <<'DEF'
{"name": "e2e_model", "tool": "tb-model", "args": {"--shape": "8,8,8", "--grid": "2", "--algorithm": "native"}}
DEF
run() { /usr/bin/python3 "$src/experiments/run.py" "$1" --mpi "$mpi" --bin "$bin" --store "$work/store.jsonl"; }
run "$work/bench.json"
run "$work/fft.json"
run "$work/beff.json"
run "$work/model.json"
rows() { grep -c "\"experiment\": \"$1\"" "$work/store.jsonl" || true; }
[ "$(rows e2e_beff)" -ge 1 ] || { echo "end-to-end: FAILED (no tb-beff row)"; exit 1; }
[ "$(rows e2e_model)" -ge 1 ] || { echo "end-to-end: FAILED (no tb-model row)"; exit 1; }
again=$(run "$work/bench.json")
echo "$again"
echo "$again" | grep -q "2 points, 2 already in" || { echo "end-to-end: FAILED (finished points ran again)"; exit 1; }
/usr/bin/python3 "$src/analysis/report.py" "$work/store.jsonl" --out "$work/report"
grep -q "## Parallel FFT" "$work/report/report.md" || { echo "end-to-end: FAILED (no FFT section)"; exit 1; }
n=$(ls "$work/report"/*.png | wc -l)
[ "$n" -ge 6 ] || { echo "end-to-end: FAILED (only $n plots)"; exit 1; }
echo "end-to-end: ok ($n plots)"
