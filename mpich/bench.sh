#!/usr/bin/env bash
# The measurement behind the patch headers: MPI_Alltoallw (tb-bench's `native`) in the
# mpich-patched build with each MPICH algorithm forced by MPIR_CVAR_ALLTOALLW_INTRA_ALGORITHM,
# beside the testbed's own algorithms of the same names (above MPI, CVAR unset).
#   mpich/bench.sh [RANKS...]        default: 2 4; needs scripts/build.sh mpich-patched first
# Environment: TB_BENCH_SIZES (tb-bench -m, default 1K:256K), TB_BENCH_LAYOUTS (default
# contiguous,vector8), TB_BENCH_ITERATIONS (default 100), TB_BENCH_REPETITIONS (default 5).
# Prints one table: median time per call (us) over the repetitions, per case.
set -euo pipefail
cd "$(dirname "$0")/.."
build=build/mpich-patched
[ -x "$build/bin/tb-bench" ] && [ -f "$build/tb-mpich-prefix" ] || { echo "bench: build $build first (scripts/build.sh mpich-patched)" >&2; exit 1; }
prefix=$(cat "$build/tb-mpich-prefix")
ranks=("$@"); [ ${#ranks[@]} -gt 0 ] || ranks=(2 4)
sizes=${TB_BENCH_SIZES:-1K:256K}
layouts=${TB_BENCH_LAYOUTS:-contiguous,vector8}
iterations=${TB_BENCH_ITERATIONS:-100}
repetitions=${TB_BENCH_REPETITIONS:-5}
out=$(mktemp -d); trap 'rm -rf "$out"' EXIT
run() {  # run NAME RANKS CVAR-VALUE ALGORITHMS
  local name=$1 n=$2 cvar=$3 algorithms=$4
  env ${cvar:+MPIR_CVAR_ALLTOALLW_INTRA_ALGORITHM=$cvar} "$prefix/bin/mpiexec" -n "$n" "$build/bin/tb-bench" \
    --algorithms "$algorithms" --layouts "$layouts" -m "$sizes" -i "$iterations" \
    --benchmark_repetitions="$repetitions" --benchmark_report_aggregates_only=true \
    --benchmark_format=json --benchmark_out="$out/$name.np$n.json" --benchmark_out_format=json >/dev/null
}
for n in "${ranks[@]}"; do
  for algo in scattered pairwise pack_alltoallv; do run "mpich:$algo" "$n" "$algo" native; done
  run "testbed" "$n" "" pairwise,pack_alltoallv
done
/usr/bin/python3 - "$out" <<'EOF'
import json, pathlib, re, sys
rows = {}
for f in sorted(pathlib.Path(sys.argv[1]).glob("*.json")):
    who, n = re.match(r"(.*)\.np(\d+)\.json", f.name).groups()
    for b in json.loads(f.read_text())["benchmarks"]:
        if b.get("aggregate_name") != "median":
            continue
        _, layout, algo, size = b["run_name"].split("/")[:4]
        name = who if who != "testbed" else "testbed:" + algo
        rows.setdefault((int(n), layout, int(size)), {})[name] = b["real_time"] / 1e3 if b["time_unit"] == "ns" else b["real_time"]
names = ["mpich:scattered", "mpich:pairwise", "mpich:pack_alltoallv", "testbed:pairwise", "testbed:pack_alltoallv"]
print("median us per MPI_Alltoallw call; mpich:X = native with MPIR_CVAR_ALLTOALLW_INTRA_ALGORITHM=X")
print(f"{'ranks':>5} {'layout':<11} {'bytes/peer':>10} " + " ".join(f"{x:>22}" for x in names))
for (n, layout, size), r in sorted(rows.items()):
    print(f"{n:>5} {layout:<11} {size:>10} " + " ".join(f"{r.get(x, float('nan')):>22.1f}" for x in names))
EOF
