#!/usr/bin/env bash
# The calibrated host model against measurement on this machine (fpga_transport issue, item 6;
# issue 19, item 2: a validation that one lucky run cannot fool).
# 1. Calibration: tb-beff on 2 ranks measures the host network (one message per size: the
#    exchange median / 2, and the Hockney fit's beta beyond the largest size; self messages,
#    the extra of non-contiguous messages, node handoffs; docs/cost-model.md), once before the
#    measurements and once after each repetition (host-K.json), and host.json holds the median
#    of each value over those calibrations (model_validation.py host-median): one tb-beff launch can land in a slow state (on the AMD
#    VM a vector send's extra 4-5x in 3 of 7 launches of one run), and the median of launches
#    spread over the run is not moved by a minority of them (TB_VALIDATION_CALIBRATIONS=once:
#    only the first, as before);
#    tb-model measures the memory model (copy bandwidth, cost per block) -> memory.json, and
#    tb-bench at 1 B per peer gives each algorithm's fixed overhead per call -> overheads.json,
#    measured again in each repetition (overheads-repK.json); the model takes per algorithm the
#    median of those timed in the judged state (overheads-<state>.json; model_validation.py
#    overheads), since the slow state's overheads are a multiple of the fast state's.
# 2. Measured, every algorithm tb-model can cost (tb-model --list-algorithms), each point the
#    median of REPETITIONS (>= 5) interleaved repetitions:
#    - the redistributions: per repetition, tb-redistribute once per cube size (slab, c64,
#      axis 2 -> 0, 2 ranks), the algorithms in an order rotated by one per repetition, so that
#      the repetitions of one point lie a whole sweep apart and no algorithm always runs first;
#    - the per-size sweep: tb-bench over SWEEP bytes per peer, contiguous and vector64 layouts,
#      2 ranks, --interleave (every algorithm at a size runs before the next size), one launch
#      per repetition after its redistributions (bench-repK.json): a launch can land in a slow
#      state as a calibration can, and passes within one launch would all share it.
# 3. Predicted: the memcpy floors of the tb-redistribute runs give the memory model's copy
#    bandwidth by size (memory-floors.json); tb-model costs each cube, and each tb-bench point
#    from its per-peer pattern (one line per layout and size in bench-patterns.jsonl, the format
#    TB_ALLTOALLW_RECORD writes; tb-model --pattern FILE --call K), on host.json.
# 4. analysis/model_validation.py report: per algorithm and point the measured median, the
#    prediction and the signed error; per algorithm and overall the median and mean |error|,
#    the bias and the points within 25 %; the rankings at the 256^3 slab and at 1 MiB per peer.
#    It fails if an algorithm tb-model costs is missing at any point.
#
# 5. The report closes with the calibrations' spread: per curve of the host network, how far the
#    calibrations lay apart where they differ most (model_validation.py report --calibrations).
#
#   experiments/model_validation.sh [mpich|openmpi] [sizes...]    default: mpich 8 16 32 64 128
#
# Re-costing (TB_VALIDATION_RECOST=DIR): steps 3-5 only, on the measurements a previous run wrote
# to DIR (its cubes, repetitions, sweep and layouts, memory model and overheads), on DIR's
# host.json or on TB_VALIDATION_NETWORK: a changed model or another calibration judged against the
# same measurements in seconds. Only tb-model runs; DIR is read, never written.
# Environment knobs (defaults in brackets):
#   TB_VALIDATION_BIN [build/<mpi>/bin]         the tools (the build is made if they are missing
#                                                and this is not set)
#   TB_VALIDATION_OUT [results/model_validation/<mpi>]   where everything is written
#   TB_VALIDATION_REPETITIONS [5]               repetitions per point, at least 5
#   TB_VALIDATION_SWEEP [1K:4M]                 tb-bench's bytes per peer (powers of two); "none": no sweep
#   TB_VALIDATION_LAYOUTS [contiguous,vector64] tb-bench's layouts
#   TB_VALIDATION_MAX_SECONDS [5]               tb-redistribute's time limit per method and run
#   TB_VALIDATION_MIN_TIME [0.05]               tb-bench's --benchmark_min_time per benchmark and launch
#   TB_VALIDATION_BEFF_ARGS []                  extra tb-beff options (the CI test shortens its loops)
#   TB_VALIDATION_CALIBRATIONS [spread]         spread: tb-beff before, between and after the
#                                                measurements, the median of each value; once: before only
#   TB_VALIDATION_RECOST []                     a previous run's TB_VALIDATION_OUT: re-cost it (above);
#                                                TB_VALIDATION_OUT then defaults to results/model_validation/<mpi>-recost
#   TB_VALIDATION_NETWORK [DIR/host.json]       re-costing only: the host network to cost on
#   TB_VALIDATION_STATE [all]                   all, fast or slow: judge the model only on the timings
#                                                made in that cross-core handoff state (the tools take it
#                                                before and after each row they time), the network the
#                                                median of that state's calibrations (host-<state>.json;
#                                                a re-costing's TB_VALIDATION_NETWORK replaces it);
#                                                vector-fast or vector-slow: the same by the state of the
#                                                library's path for non-contiguous messages (recorded
#                                                beside the other). A measuring run with a state writes
#                                                only that state's report: re-cost it for the others.
#   TB_VALIDATION_WITHOUT []                    model terms to switch off (comma-separated, as tb-model
#                                                --without takes them; tb-model --list-terms): the model
#                                                judged without them, in a measuring run or a re-costing
#   TB_VALIDATION_MIN_REPETITIONS [5; 3 with a state]  repetitions each point's median needs
#   TB_VALIDATION_MIN_CALIBRATIONS [3]          with a state: fewer calibrations made in it than this, and
#                                                its network is the median of all of them (run.txt and the
#                                                report say which)
# Writes $TB_VALIDATION_OUT: report.md (also printed), validation.csv, run.txt (the command, the
# times and the load averages) and every tool's own output.
# Every tool starts through experiments/launch.py, the launcher experiments/run.py uses (2 ranks
# in its intra mode; tb-model is not an MPI program and runs as one process).
set -euo pipefail
cd "$(dirname "$0")/.."
mpi=${1:-mpich}
shift || true
sizes=("$@")
case $mpi in
  mpich | openmpi) ;;
  *) echo "usage: $0 [mpich|openmpi] [sizes...]" >&2; exit 2 ;;
esac
recost=${TB_VALIDATION_RECOST:-}
if [ -n "$recost" ]; then
  [ -f "$recost/run.txt" ] || {
    echo "model_validation: TB_VALIDATION_RECOST=$recost: no run.txt there (not the output of a validation run)" >&2
    exit 2
  }
  # The previous run's settings, from the command line its run.txt records.
  setting() { sed -n "s/^command: .*$1=\([^ ]*\).*/\1/p" "$recost/run.txt"; }
  [ ${#sizes[@]} -gt 0 ] || read -r -a sizes <<< "$(sed -n 's/^command: .*model_validation.sh [a-z]* *//p' "$recost/run.txt")"
fi
[ ${#sizes[@]} -gt 0 ] || sizes=(8 16 32 64 128)
for n in "${sizes[@]}"; do
  [[ $n =~ ^[1-9][0-9]*$ ]] || { echo "model_validation: cube size '$n' is not a positive integer" >&2; exit 2; }
done
reps=${TB_VALIDATION_REPETITIONS:-5}
[[ $reps =~ ^[0-9]+$ ]] && [ "$reps" -ge 5 ] || {
  echo "model_validation: TB_VALIDATION_REPETITIONS=$reps: at least 5 (each point is a median of >= 5 repetitions)" >&2
  exit 2
}
sweep=${TB_VALIDATION_SWEEP:-1K:4M}
layouts=${TB_VALIDATION_LAYOUTS:-contiguous,vector64}
if [ -n "$recost" ]; then
  sweep=$(setting TB_VALIDATION_SWEEP)
  layouts=$(setting TB_VALIDATION_LAYOUTS)
  [ -n "$sweep" ] && [ -n "$layouts" ] || {
    echo "model_validation: $recost/run.txt names no TB_VALIDATION_SWEEP and TB_VALIDATION_LAYOUTS" >&2
    exit 2
  }
fi
state=${TB_VALIDATION_STATE:-all}
case $state in
  all | fast | slow | vector-fast | vector-slow) ;;
  *) echo "model_validation: TB_VALIDATION_STATE=$state: all, fast, slow, vector-fast or vector-slow" >&2; exit 2 ;;
esac
if [ "$state" = all ]; then min_reps=${TB_VALIDATION_MIN_REPETITIONS:-5}; else min_reps=${TB_VALIDATION_MIN_REPETITIONS:-3}; fi
[[ $min_reps =~ ^[1-9][0-9]*$ ]] || {
  echo "model_validation: TB_VALIDATION_MIN_REPETITIONS=$min_reps: a positive integer" >&2
  exit 2
}
min_calibrations=${TB_VALIDATION_MIN_CALIBRATIONS:-3}
[[ $min_calibrations =~ ^[1-9][0-9]*$ ]] || {
  echo "model_validation: TB_VALIDATION_MIN_CALIBRATIONS=$min_calibrations: a positive integer" >&2
  exit 2
}
if [ -z "$recost" ] && [ "$min_reps" -gt "$reps" ]; then
  echo "model_validation: TB_VALIDATION_MIN_REPETITIONS=$min_reps is more than the $reps repetitions" \
    "TB_VALIDATION_REPETITIONS makes" >&2
  exit 2
fi
without=${TB_VALIDATION_WITHOUT:-}
[[ -z $without || $without =~ ^[a-z_]+(,[a-z_]+)*$ ]] || {
  echo "model_validation: TB_VALIDATION_WITHOUT=$without: term names separated by commas (tb-model --list-terms)" >&2
  exit 2
}
max_s=${TB_VALIDATION_MAX_SECONDS:-5}
min_time=${TB_VALIDATION_MIN_TIME:-0.05}
read -r -a beff_args <<< "${TB_VALIDATION_BEFF_ARGS:-}"
calibrations=${TB_VALIDATION_CALIBRATIONS:-spread}
case $calibrations in
  spread | once) ;;
  *) echo "model_validation: TB_VALIDATION_CALIBRATIONS=$calibrations: spread or once" >&2; exit 2 ;;
esac
bin=${TB_VALIDATION_BIN:-build/$mpi/bin}
tools=(tb-beff tb-model tb-bench tb-redistribute)
[ -z "$recost" ] || tools=(tb-model)
for tool in "${tools[@]}"; do
  [ -x "$bin/$tool" ] && continue
  if [ -n "${TB_VALIDATION_BIN:-}" ]; then
    echo "model_validation: $bin/$tool is missing (TB_VALIDATION_BIN=$TB_VALIDATION_BIN)" >&2
    exit 2
  fi
  ./scripts/build.sh "$mpi"
  break
done
launch() { /usr/bin/python3 experiments/launch.py --mpi "$mpi" --bin "$bin" "$@"; }
validation() { /usr/bin/python3 analysis/model_validation.py "$@"; }
# quiet LOG COMMAND...: the command's output to LOG; on failure its last lines and the log's name.
quiet() {
  local log=$1
  shift
  "$@" >"$log" 2>&1 || {
    local rc=$?
    tail -n 20 "$log" >&2
    echo "model_validation: failed (exit status $rc): $*; its output: $log" >&2
    return "$rc"
  }
}
# TB_VALIDATION_WITHOUT's names, checked before anything of a previous run is removed.
without_args=()
if [ -n "$without" ]; then
  terms=$(launch tb-model --list-terms | awk '/^[a-z_]+ /{print $1}')
  for term in ${without//,/ }; do
    grep -qx "$term" <<< "$terms" || {
      echo "model_validation: TB_VALIDATION_WITHOUT: '$term' is not a switchable model term (known: $(echo $terms | tr ' ' ,))" >&2
      exit 2
    }
  done
  without_args=(--without "$without")
fi
if [ -n "$recost" ]; then
  out=${TB_VALIDATION_OUT:-results/model_validation/$mpi-recost}
else
  out=${TB_VALIDATION_OUT:-results/model_validation/$mpi}
fi
if [ -n "$recost" ] && [ "$(realpath -m "$out")" = "$(realpath -m "$recost")" ]; then
  echo "model_validation: TB_VALIDATION_OUT is TB_VALIDATION_RECOST ($recost): re-costing writes elsewhere" >&2
  exit 2
fi
mkdir -p "$out/logs"
# A previous run's files would be read as this run's repetitions: start clean.
rm -rf "$out"/measured-*.json "$out"/predicted-*.csv "$out/bench.json" "$out"/bench-rep*.json "$out/bench-patterns.jsonl" \
  "$out"/host-*.json "$out/host.json" "$out"/beff-*.json "$out/beff.json" "$out"/overheads*.json \
  "$out/bench-predicted" "$out/report.md" "$out/validation.csv" "$out"/logs/*.log
loadavg() { cut -d' ' -f1-3 /proc/loadavg; }
{
  if [ -n "$recost" ]; then
    network_setting=
    [ -z "${TB_VALIDATION_NETWORK:-}" ] || network_setting="TB_VALIDATION_NETWORK=$TB_VALIDATION_NETWORK "
    echo "command: TB_VALIDATION_RECOST=$recost ${network_setting}TB_VALIDATION_STATE=$state TB_VALIDATION_WITHOUT=$without" \
      "TB_VALIDATION_MIN_REPETITIONS=$min_reps TB_VALIDATION_MIN_CALIBRATIONS=$min_calibrations $0 $mpi ${sizes[*]}"
  else
    echo "command: TB_VALIDATION_REPETITIONS=$reps TB_VALIDATION_SWEEP=$sweep TB_VALIDATION_LAYOUTS=$layouts" \
      "TB_VALIDATION_MAX_SECONDS=$max_s TB_VALIDATION_MIN_TIME=$min_time TB_VALIDATION_CALIBRATIONS=$calibrations" \
      "TB_VALIDATION_STATE=$state TB_VALIDATION_WITHOUT=$without TB_VALIDATION_MIN_REPETITIONS=$min_reps" \
      "TB_VALIDATION_MIN_CALIBRATIONS=$min_calibrations $0 $mpi ${sizes[*]}"
  fi
  echo "git commit: $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
  echo "start: $(date -u '+%F %T') UTC, load average $(loadavg)"
} > "$out/run.txt"
cat "$out/run.txt"

# The algorithms tb-model costs (those with a schedule; local_remap among them): every one is
# measured and must be in the report.
listing=$(launch tb-model --list-algorithms)  # its own failure stops the script here
mapfile -t costed < <(awk '$2 == "schedule" { print $1 }' <<< "$listing")
[ ${#costed[@]} -gt 0 ] || { echo "model_validation: tb-model --list-algorithms names no costed algorithm" >&2; exit 1; }
if [ -n "$without" ]; then
  echo "terms switched off in every prediction: $without" | tee -a "$out/run.txt"
fi
alltoallw=()
for a in "${costed[@]}"; do [ "$a" = local_remap ] || alltoallw+=("$a"); done
if [ "$sweep" != none ] && [ ${#alltoallw[@]} -eq 0 ]; then
  echo "model_validation: tb-model costs no Alltoallw algorithm (only local_remap) for the per-size sweep;" \
    "set TB_VALIDATION_SWEEP=none" >&2
  exit 1
fi
join() { local IFS=,; echo "$*"; }
# The algorithms of the array named $2 (default costed) rotated left by $1 places: repetition k
# starts with the k-th.
rotated() {
  local -n list=${2:-costed}
  [ ${#list[@]} -gt 0 ] || return 0
  local k=$(($1 % ${#list[@]}))
  join "${list[@]:k}" "${list[@]:0:k}"
}
echo "algorithms: $(join "${costed[@]}")"

# measure: steps 1 and 2 into $out, with host.json (the median of the calibrations) and
# memory-floors.json; sets calibrated (their count).
measure() {
  # calibrate K: tb-beff's host network, the K-th calibration (host-K.json).
  calibrate() {
    quiet "$out/logs/beff-$1.log" launch -n 2 --out "$out/beff-$1.json" tb-beff --fit-out "$out/host-$1.json" "${beff_args[@]}"
  }
  # overheads NAME: every algorithm at 1 B per peer (tb-bench) -> NAME.json.
  overheads() {
    quiet "$out/logs/$1.log" launch -n 2 --out "$out/$1.json" tb-bench -m 1:1 --layouts contiguous \
      --benchmark_min_time=0.2
  }
  calibrated=1
  # calibrate_again: the next calibration, unless TB_VALIDATION_CALIBRATIONS=once.
  calibrate_again() {
    [ "$calibrations" = spread ] || return 0
    calibrated=$((calibrated + 1))
    echo "== calibration $calibrated: tb-beff"
    calibrate "$calibrated"
  }

  echo "== calibration 1: tb-beff (host network) and the memory model"
  calibrate 1
  tail -n 2 "$out/logs/beff-1.log"
  # Two measurements at once, as the 2 ranks of a redistribution copy at once (shared caches and
  # memory bandwidth); the first one's figures are used.
  quiet "$out/logs/memory.log" launch tb-model --shape 8,8,8 --grid 2 --network "$out/host-1.json" \
    --save-memory "$out/memory.json" &
  twin=$!
  quiet "$out/logs/memory-twin.log" launch tb-model --shape 8,8,8 --grid 2 --network "$out/host-1.json" \
    --save-memory "$out/memory-twin.json" || { wait "$twin" || true; exit 1; }
  wait "$twin"  # the first one's memory model is used: its failure stops the script
  # Fixed per-call overheads: every algorithm at 1 B per peer (tb-bench), a separate measurement
  # from the validation points below, here and in each repetition (overheads-repK.json), so that
  # each state has its own (model_validation.py overheads).
  overheads overheads

  for ((rep = 1; rep <= reps; rep++)); do
    echo "== repetition $rep of $reps: tb-redistribute at ${sizes[*]} (cubes), methods $(rotated $((rep - 1)))"
    for n in "${sizes[@]}"; do
      quiet "$out/logs/measured-$n-rep$rep.log" launch -n 2 --out "$out/measured-$n-rep$rep.json" tb-redistribute \
        --shape "$n,$n,$n" --grid 2 --from-axis 2 --to-axis 0 --type c64 --method "$(rotated $((rep - 1)))" \
        --max-seconds "$max_s"
    done
    if [ "$sweep" != none ]; then
      echo "   and the per-size sweep: tb-bench -m $sweep, $layouts, one launch"
      quiet "$out/logs/bench-rep$rep.log" launch -n 2 --out "$out/bench-rep$rep.json" tb-bench -m "$sweep" \
        --layouts "$layouts" --algorithms "$(rotated $((rep - 1)) alltoallw)" --interleave \
        --benchmark_min_time="$min_time"
    fi
    overheads "overheads-rep$rep"
    calibrate_again
  done
  echo "measured: end $(date -u '+%F %T') UTC, load average $(loadavg)" | tee -a "$out/run.txt"
  hosts=()  # global: the report shows their spread
  for ((k = 1; k <= calibrated; k++)); do hosts+=("$out/host-$k.json"); done
  validation host-median "$out/host.json" "${hosts[@]}" | sed "s/^/calibration: /" | tee -a "$out/run.txt"

  # Copy bandwidth by size from the runs' own memcpy floors (same moment, same timing, both ranks
  # copying at once; each run's median_s as for the algorithms, then the median over the
  # repetitions); the cost per block stays tb-model's (each time a median of 5 runs).
  validation memory-from-floors "$out/memory-floors.json" "$out/memory.json" "$out"/measured-*-rep*.json
}

if [ -z "$recost" ]; then
  measure
  src=$out network=$out/host.json
else
  # The measurements of $recost; the calibrations' spread only where its own host.json is costed.
  src=$recost network=${TB_VALIDATION_NETWORK:-$recost/host.json}
  for f in "$network" "$src/memory-floors.json" "$src/overheads.json"; do
    [ -f "$f" ] || { echo "model_validation: re-costing needs $f, which is missing" >&2; exit 2; }
  done
  hosts=()
  if [ -z "${TB_VALIDATION_NETWORK:-}" ]; then
    mapfile -t hosts < <(find "$src" -maxdepth 1 -name 'host-[0-9]*.json' | sort -V)
  fi
fi

# A state's own network: the median of the calibrations made in it, or of all of them where fewer
# than TB_VALIDATION_MIN_CALIBRATIONS were (host-median says which; run.txt keeps it).
if [ "$state" != all ] && { [ -z "$recost" ] || [ -z "${TB_VALIDATION_NETWORK:-}" ]; }; then
  network=$out/host-$state.json
  [ ${#hosts[@]} -gt 0 ] || { echo "model_validation: TB_VALIDATION_STATE=$state needs the run's calibrations (host-K.json)" >&2; exit 2; }
  validation host-median --state "$state" --min-calibrations "$min_calibrations" "$network" "${hosts[@]}" |
    sed "s/^/state: $state; /" | tee -a "$out/run.txt"
fi
[ -z "$recost" ] || echo "re-costing the measurements of $src on $network" | tee -a "$out/run.txt"
# Each algorithm's fixed overhead: the median of its 1 B benchmarks timed in the state (a run from
# before the repetitions measured them has overheads.json only).
mapfile -t overhead_launches < <(find "$src" -maxdepth 1 \( -name overheads.json -o -name 'overheads-rep[0-9]*.json' \) | sort -V)
validation overheads --state "$state" "$out/overheads-$state.json" "${overhead_launches[@]}"
echo "overheads: $out/overheads-$state.json, the median of the 1 B benchmarks timed in the $state state" \
  "over ${#overhead_launches[@]} launch(es)" | tee -a "$out/run.txt"

# tb-model on the calibrated host: model CSV [tb-model options...]
model() {
  local csv=$1
  shift
  quiet "$out/logs/$(basename "$csv" .csv).log" launch --out "$csv" tb-model --network "$network" \
    --memory "$src/memory-floors.json" --overheads "$out/overheads-$state.json" "${without_args[@]}" "$@"
}
redistribute=()
for n in "${sizes[@]}"; do
  model "$out/predicted-$n.csv" --shape "$n,$n,$n" --grid 2 --from-axis 2 --to-axis 0 --type c64
  redistribute+=(--redistribute "$out/predicted-$n.csv")
  mapfile -t repetitions < <(find "$src" -maxdepth 1 -name "measured-$n-rep[0-9]*.json" | sort -V)
  [ ${#repetitions[@]} -gt 0 ] || { echo "model_validation: no measured-$n-rep*.json in $src" >&2; exit 2; }
  redistribute+=("${repetitions[@]}")
done
bench=()
if [ "$sweep" != none ]; then
  # one file per repetition's launch; a run from before that measured the sweep in one launch of
  # several passes has bench.json
  mapfile -t launches < <(find "$src" -maxdepth 1 -name 'bench-rep[0-9]*.json' | sort -V)
  [ ${#launches[@]} -gt 0 ] || [ ! -f "$src/bench.json" ] || launches=("$src/bench.json")
  [ ${#launches[@]} -gt 0 ] || {
    echo "model_validation: $src has no tb-bench sweep (bench-rep*.json), though its run names the sweep $sweep" >&2
    exit 2
  }
  bench=(--bench "${launches[@]}" "$out/bench-predicted")
  mkdir -p "$out/bench-predicted"
  validation patterns "$out/bench-patterns.jsonl" --sizes "$sweep" --layouts "$layouts" --ranks 2 |
    while read -r call layout bytes; do
      model "$out/bench-predicted/$layout-$bytes.csv" --pattern "$out/bench-patterns.jsonl" --call "$call" </dev/null
    done
fi
if [ "$state" = all ]; then kept="every repetition"; else kept="the repetitions timed in the $state state"; fi
echo "== predicted against measured (tb-model on $network; measured: the median of each point's $kept)"
spread=()
[ ${#hosts[@]} -eq 0 ] || spread=(--calibrations "${hosts[@]}")
validation report "${redistribute[@]}" "${bench[@]}" --min-repetitions "$min_reps" --state "$state" \
  --expect-algorithms "$(join "${costed[@]}")" --without "$without" \
  "${spread[@]}" --min-calibrations "$min_calibrations" --markdown "$out/report.md" --csv "$out/validation.csv"
echo "end: $(date -u '+%F %T') UTC, load average $(loadavg)" >> "$out/run.txt"
echo "report: $out/report.md, $out/validation.csv"
