#!/usr/bin/env bash
# run.py's cluster mode under a real Slurm: a one-host cluster (scripts/slurm-cluster.sh, its own
# daemons, state in WORK_DIR/cluster) runs the batch script `run.py --mode cluster --slurm` writes
# for a tiny tb-bench definition (2 ranks, 2 points); the job must complete and both points' rows
# reach the store, launched with the job's hostfile. The daemons are stopped on every exit.
#   run_slurm_job.sh SOURCE_DIR BIN_DIR WORK_DIR
set -u
src=$1 bin=$2 work=$3
cluster=$src/scripts/slurm-cluster.sh
export TB_SLURM_DIR=$work/cluster
fail() { echo "slurm: FAILED ($*)"; exit 1; }

# A cluster left running by an earlier run of this test that was killed (ctest's timeout) goes first.
[ -d "$TB_SLURM_DIR" ] && "$cluster" stop
rm -rf "$work" && mkdir -p "$work" || fail "cannot create $work"
trap '"$cluster" stop' EXIT
# 2 tasks need 2 CPUs in Slurm's eyes; on a 1-core machine declare 2.
[ "$(nproc)" -ge 2 ] || export TB_SLURM_CPUS=2
"$cluster" start || fail "the one-host Slurm cluster did not start (scripts/slurm-cluster.sh above)"
export SLURM_CONF=$TB_SLURM_DIR/slurm.conf

cat > "$work/def.json" <<'DEF'
{"name": "slurm_sizes", "tool": "tb-bench", "ranks": [2], "matrix": {"--layouts": ["contiguous", "slab"]},
 "args": {"-m": "16:64", "--algorithms": "native,pairwise", "--benchmark_min_time": "0.001"}}
DEF
/usr/bin/python3 "$src/experiments/run.py" "$work/def.json" --mode cluster --slurm "$work/job.sbatch" --mpi mpich \
  --bin "$bin" --store "$work/store.jsonl" --slurm-time 00:05:00 || fail "run.py did not write the batch script"
t0=$SECONDS
job=$(sbatch --parsable --output="$work/slurm-%j.out" "$work/job.sbatch") || fail "sbatch refused the script"
job=${job%%;*}
echo "slurm: submitted job $job"
squeue

state=""
for ((i = 0; i < 300; i++)); do  # 150 s
  state=$(scontrol -o show job "$job" 2>/dev/null | grep -o 'JobState=[A-Z_]*' | cut -d= -f2)
  case "$state" in
    PENDING|CONFIGURING|RUNNING|COMPLETING|"") sleep 0.5 ;;
    *) break ;;
  esac
done
seconds=$((SECONDS - t0))
info=$(scontrol -o show job "$job" 2>/dev/null)
echo "slurm: job $job $state after ${seconds} s ($(echo "$info" | grep -o 'ExitCode=[0-9:]*'))"
echo "--- job output ($work/slurm-$job.out)"
cat "$work/slurm-$job.out" 2>/dev/null
echo "---"
case "$state" in
  COMPLETED) ;;
  PENDING|CONFIGURING|RUNNING|COMPLETING)
    scancel "$job"; fail "job $job still $state after 150 s" ;;
  *) fail "job $job ended $state: $(echo "$info" | grep -o 'Reason=[^ ]*')" ;;
esac
echo "$info" | grep -q 'ExitCode=0:0' || fail "job $job exit code $(echo "$info" | grep -o 'ExitCode=[0-9:]*')"

# The rows: both points, complete (analysis/store.py's reader), run in cluster mode by mpich with
# this job's hostfile, and run.py counting both points as done.
/usr/bin/python3 - "$src" "$work/store.jsonl" "$job" <<'PY' || fail "the store does not hold the job's rows"
import re, sys
src, store, job = sys.argv[1:]
sys.path.insert(0, src + "/analysis")
from store import read_rows
rows = [r for r in read_rows(store) if r.get("experiment") == "slurm_sizes"]
layouts = sorted({r["point"]["--layouts"] for r in rows})
bad = [r for r in rows if r["mode"] != "cluster" or r["mpi"] != "mpich" or r["ranks"] != 2
       or not re.search(rf"-f \S*/tb-hosts\.{job}\.\w+ -n 2 ", r["command"]) or not r["time_s"] > 0]
print(f"slurm: {len(rows)} rows in the store, layouts {', '.join(layouts)}; command {rows[0]['command'] if rows else '-'}")
sys.exit(1 if layouts != ["contiguous", "slab"] or bad else 0)
PY
listed=$(/usr/bin/python3 "$src/experiments/run.py" "$work/def.json" --mode cluster --hostfile /dev/null --mpi mpich \
  --bin "$bin" --store "$work/store.jsonl" --list)
echo "$listed"
grep -q "2 points, 2 already in" <<< "$listed" || fail "run.py does not count both points as done"
echo "slurm: ok (job $job, ${seconds} s from sbatch to completion)"
