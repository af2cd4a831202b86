#!/usr/bin/env bash
# The issue's slab goal, round after round: one 256^3 complex<double> slab redistribution
# (tb-redistribute, 2 ranks, private arrays) with
#   debian   Debian's MPICH, its native MPI_Alltoallw (build/mpich);
#   patched  the patched MPICH's native MPI_Alltoallw, selected by the shipped selection file
#            mpich/tuning/alltoallw.json (build/mpich-patched);
#   pmpi     the testbed's PMPI node_leader on the patched MPICH (build/mpich-patched).
# The three launches of a round follow each other within seconds; rounds repeat them, because
# this shared machine's speed changes from launch to launch. Each launch also times the memcpy
# floor (its own copy of the local array), so every time can be read as a multiple of it.
#
#   mpich/slab_goal.sh [ROUNDS]      default 5; needs scripts/build.sh mpich mpich-patched
# Environment: TB_SLAB_SHAPE (default 256,256,256), TB_SLAB_MPICH (an MPICH prefix to run
# instead of the install build/mpich-patched was built against, such as the dev prefix of
# mpich/build.sh --incremental), TB_SLAB_OUT (keep the CSV files in this directory).
# Prints per round the fastest time of each (ms), the ratios debian/patched (goal: >= 3) and
# patched/pmpi (goal: <= 1.1) and which launches timed their Alltoallw in the machine's slow
# cross-core state (the handoff ratio tb-redistribute took before or after it above
# model_validation.py's SLOW_HANDOFF_RATIO: node_leader's handoffs then take several times as
# long), then the median of each ratio over the rounds.
set -euo pipefail
cd "$(dirname "$0")/.."
for b in mpich mpich-patched; do
  [ -x "build/$b/bin/tb-redistribute" ] || { echo "slab_goal: build build/$b first (scripts/build.sh $b)" >&2; exit 1; }
done
prefix=${TB_SLAB_MPICH:-$(cat build/mpich-patched/tb-mpich-prefix)}
[ -x "$prefix/bin/mpiexec" ] || { echo "slab_goal: no MPICH at $prefix (TB_SLAB_MPICH)" >&2; exit 1; }
patched_env=()
[ -z "${TB_SLAB_MPICH:-}" ] || patched_env=("LD_LIBRARY_PATH=$prefix/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}")
rounds=${1:-5}
[[ $rounds =~ ^[1-9][0-9]*$ ]] || { echo "slab_goal: ROUNDS must be a positive integer (got '$rounds')" >&2; exit 2; }
if [ -n "${TB_SLAB_OUT:-}" ]; then out=$TB_SLAB_OUT; mkdir -p "$out"; else out=$(mktemp -d); trap 'rm -rf "$out"' EXIT; fi
args=(--shape "${TB_SLAB_SHAPE:-256,256,256}" --type c64 --outer 5)
selection=$PWD/mpich/tuning/alltoallw.json

echo "slab_goal: MPICH $prefix, $rounds rounds, $(date -u +%FT%TZ), load $(cut -d' ' -f1-3 /proc/loadavg), commit $(git rev-parse --short HEAD)" >&2
for r in $(seq 1 "$rounds"); do
  echo "slab_goal: round $r/$rounds" >&2
  mpiexec.mpich -n 2 build/mpich/bin/tb-redistribute "${args[@]}" --method native --csv "$out/debian.r$r.csv" --json "$out/debian.r$r.json" >/dev/null
  env "${patched_env[@]}" MPIR_CVAR_COLL_SELECTION_TUNING_JSON_FILE="$selection" \
    "$prefix/bin/mpiexec" -n 2 build/mpich-patched/bin/tb-redistribute "${args[@]}" --method native \
    --csv "$out/patched.r$r.csv" --json "$out/patched.r$r.json" >/dev/null
  env "${patched_env[@]}" "$prefix/bin/mpiexec" -n 2 build/mpich-patched/bin/tb-redistribute "${args[@]}" \
    --method node_leader --csv "$out/pmpi.r$r.csv" --json "$out/pmpi.r$r.json" >/dev/null
done

/usr/bin/python3 - "$out" "$rounds" "$PWD/analysis" <<'EOF'
import csv, json, pathlib, statistics, sys
out, rounds = pathlib.Path(sys.argv[1]), int(sys.argv[2])
sys.path.insert(0, sys.argv[3])
from model_validation import handoff_ratio, is_slow, row_state
SIDES = ("debian", "patched", "pmpi")
def slow(r):
    """The launches of round r whose Alltoallw row ran in the slow cross-core state
    (microbench/machine_state.hpp): the state around the row, or an older file's launch start."""
    def mark(side):
        doc = json.load(open(out / f"{side}.r{r}.json"))
        row = next(row for row in doc["results"] if row["method"].startswith("alltoallw:"))
        ratio = row_state(row, handoff_ratio(doc))
        if ratio is None:  # a build from before the tools recorded it
            return side + "?"
        return side if is_slow(ratio) else ""
    return ",".join(m for m in map(mark, SIDES) if m) or "-"
def fastest(side, r):
    rows = list(csv.DictReader(open(out / f"{side}.r{r}.csv")))
    alg = [row for row in rows if row["method"].startswith("alltoallw:")]
    floor = [row for row in rows if row["method"] == "memcpy_floor"]
    if len(alg) != 1 or alg[0]["verified"] != "yes":
        sys.exit(f"slab_goal: {side} round {r}: no verified Alltoallw row in {out / f'{side}.r{r}.csv'}")
    return float(alg[0]["fastest_s"]) * 1e3, float(floor[0]["fastest_s"]) * 1e3
print(f"{'round':>5} {'debian ms':>10} {'patched ms':>10} {'pmpi ms':>10} {'floor ms':>9} "
      f"{'debian/patched':>14} {'patched/pmpi':>12}  timed slow")
goal, match = [], []
for r in range(1, rounds + 1):
    (d, floor), (p, _), (n, _) = fastest("debian", r), fastest("patched", r), fastest("pmpi", r)
    goal.append(d / p)
    match.append(p / n)
    print(f"{r:>5} {d:>10.2f} {p:>10.2f} {n:>10.2f} {floor:>9.2f} {d / p:>14.2f} {p / n:>12.2f}  {slow(r)}")
print(f"median debian/patched {statistics.median(goal):.2f} (goal >= 3: met in {sum(g >= 3 for g in goal)} of {rounds} rounds); "
      f"median patched/pmpi {statistics.median(match):.2f} (goal <= 1.1: met in {sum(m <= 1.1 for m in match)} of {rounds})")
EOF
