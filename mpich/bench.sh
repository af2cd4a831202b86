#!/usr/bin/env bash
# Each in-MPICH algorithm against the testbed's PMPI version of the same name, paired per size in
# one process: with MPIR_CVAR_ALLTOALLW_INTRA_ALGORITHM=<algorithm>, tb-bench --interleave times
# MPI_Alltoallw (tb-bench's `native`, so MPICH's <algorithm>) and the PMPI <algorithm> (which
# calls no MPI_Alltoallw, so the CVAR does not touch it) one after the other at each size, within
# milliseconds; one such run per algorithm and round, round after round.
#   mpich/bench.sh [RANKS]           default 2; needs scripts/build.sh mpich-patched first
# Environment: TB_BENCH_ALGORITHMS (default pairwise,pack_alltoallv,node_leader), TB_BENCH_SIZES
# (tb-bench -m, default 1:16M), TB_BENCH_LAYOUTS (default contiguous,vector64), TB_BENCH_ROUNDS
# (default 3), TB_BENCH_PASSES (default 5: tb-bench --passes, the two sides alternate this many
# times per size), TB_BENCH_REPETITIONS (default 1 per pass), TB_BENCH_MIN_TIME (default 0.05 s),
# TB_BENCH_OUT (keep the raw Google Benchmark JSON files in this directory), TB_BENCH_MPICH (an
# MPICH prefix to run instead of the install build/mpich-patched was built against, such as the
# dev prefix of mpich/build.sh --incremental: its mpiexec, and its lib/ first on LD_LIBRARY_PATH,
# which takes precedence over the binaries' RUNPATH; same ABI, so no rebuild of the testbed).
# Prints, per algorithm, layout and size, the median time per call of each round (us, median over
# its passes) and the ratio in-MPICH / PMPI: the median over every (round, pass) pair's ratio. The
# pairing within a process cancels this shared machine's drifts (its speed changes by 2-4x over
# seconds to tens of seconds: unpaired runs turned that into ratios of 2-3, and it still falls
# between two sides whose repetitions each run back to back, so the sides alternate pass by
# pass); the rounds cover what differs between launches.
set -euo pipefail
cd "$(dirname "$0")/.."
build=build/mpich-patched
[ -x "$build/bin/tb-bench" ] && [ -f "$build/tb-mpich-prefix" ] || { echo "bench: build $build first (scripts/build.sh mpich-patched)" >&2; exit 1; }
prefix=${TB_BENCH_MPICH:-$(cat "$build/tb-mpich-prefix")}
[ -x "$prefix/bin/mpiexec" ] || { echo "bench: no MPICH at $prefix (TB_BENCH_MPICH)" >&2; exit 1; }
[ -z "${TB_BENCH_MPICH:-}" ] || export LD_LIBRARY_PATH=$prefix/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
ranks=${1:-2}
IFS=, read -r -a algorithms <<< "${TB_BENCH_ALGORITHMS:-pairwise,pack_alltoallv,node_leader}"
rounds=${TB_BENCH_ROUNDS:-3}
aggregates=false; [ "${TB_BENCH_REPETITIONS:-1}" = 1 ] || aggregates=true  # one repetition: no median to report
if [ -n "${TB_BENCH_OUT:-}" ]; then out=$TB_BENCH_OUT; mkdir -p "$out"; else out=$(mktemp -d); trap 'rm -rf "$out"' EXIT; fi
run() {  # run FILE ALGORITHM: MPICH's ALGORITHM (native) and the PMPI one, interleaved per size
  local file=$1 algorithm=$2
  MPIR_CVAR_ALLTOALLW_INTRA_ALGORITHM=$algorithm \
    "$prefix/bin/mpiexec" -n "$ranks" "$build/bin/tb-bench" --algorithms "native,$algorithm" --interleave \
    --passes "${TB_BENCH_PASSES:-5}" --layouts "${TB_BENCH_LAYOUTS:-contiguous,vector64}" -m "${TB_BENCH_SIZES:-1:16M}" \
    --benchmark_repetitions="${TB_BENCH_REPETITIONS:-1}" --benchmark_min_time="${TB_BENCH_MIN_TIME:-0.05}" \
    --benchmark_report_aggregates_only="$aggregates" --benchmark_format=json \
    --benchmark_out="$out/$file" --benchmark_out_format=json >/dev/null
}
echo "bench: MPICH $prefix, $ranks ranks, ${#algorithms[@]} algorithms x $rounds rounds, $(date -u +%FT%TZ), load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
for r in $(seq 1 "$rounds"); do
  for a in "${algorithms[@]}"; do
    echo "bench: round $r/$rounds $a" >&2
    run "$a.r$r.json" "$a"
  done
done
/usr/bin/python3 - "$out" <<'EOF'
import json, pathlib, re, statistics, sys
times = {}   # (algorithm, layout, size) -> {"mpich"/"pmpi": {(round, pass): us}}
paths = {}   # (algorithm, side) -> the paths tb-bench reported (a PMPI fallback would show here)
for f in pathlib.Path(sys.argv[1]).glob("*.json"):
    algorithm, rnd = re.match(r"(\w+)\.r(\d+)\.json", f.name).groups()
    for b in json.loads(f.read_text())["benchmarks"]:
        if b.get("error_occurred") or (b.get("run_type") == "aggregate" and b.get("aggregate_name") != "median"):
            continue  # with repetitions: their median; without: the one run; never a failed run
        parts = b["run_name"].split("/")
        _, layout, method, size = parts[:4]
        npass = int(parts[4].split(":")[1]) if len(parts) > 4 and parts[4].startswith("pass:") else 1
        side = "mpich" if method == "native" else "pmpi"
        paths.setdefault((algorithm, side), set()).add(b.get("label", ""))
        scale = {"ns": 1e-3, "us": 1.0, "ms": 1e3}[b["time_unit"]]
        times.setdefault((algorithm, layout, int(size)), {}).setdefault(side, {})[(int(rnd), npass)] = b["real_time"] * scale
print("us per MPI_Alltoallw call, per round the median over its passes; ratio = median over the (round, pass) pairs of in-MPICH / PMPI")
print(f"{'algorithm':<15} {'layout':<11} {'bytes/peer':>10} {'in-MPICH':>26} {'PMPI':>26} {'ratio':>6}")
worst, ratios = {}, {}
for (algorithm, layout, size), t in sorted(times.items()):
    m, p = t.get("mpich", {}), t.get("pmpi", {})
    paired = [m[r] / p[r] for r in sorted(m) if r in p]
    if not paired:
        continue
    ratio = ratios[(algorithm, layout, size)] = statistics.median(paired)
    worst[algorithm] = max(worst.get(algorithm, (0, "")), (ratio, f"{layout} {size}"))
    fmt = lambda d: " / ".join(f"{statistics.median(v for (r, _), v in d.items() if r == rnd):.1f}"
                               for rnd in sorted({r for r, _ in d}))
    print(f"{algorithm:<15} {layout:<11} {size:>10} {fmt(m):>26} {fmt(p):>26} {ratio:>6.2f}")
for algorithm, (ratio, where) in sorted(worst.items()):
    print(f"worst ratio {algorithm}: {ratio:.2f} at {where}")
for (algorithm, side), labels in sorted(paths.items()):
    print(f"paths {algorithm} {side}: {', '.join(sorted(labels))}")
# the ratios again, one row per size (a Markdown table)
columns = sorted({(a, l) for a, l, _ in ratios})
print("\n| bytes/peer | " + " | ".join(f"{a} {l}" for a, l in columns) + " |")
print("|---|" + "---|" * len(columns))
for size in sorted({s for _, _, s in ratios}):
    cells = [ratios.get((a, l, size)) for a, l in columns]
    print(f"| {size} | " + " | ".join("" if c is None else f"{c:.2f}" for c in cells) + " |")
EOF
