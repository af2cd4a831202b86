#!/bin/sh
# tb-bench writes its Google Benchmark output file on rank 0 only, also when the file comes from
# the BENCHMARK_OUT variable: a two-rank MPMD launch gives each rank a file of its own through
# that variable, and only rank 0's may appear.
#   run_benchmark_out_rank0.sh TB_BENCH MPIEXEC NUMPROC_FLAG [MPIEXEC_FLAGS...]
set -eu
bench=$1 mpiexec=$2 np=$3
shift 3
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
args="--algorithms native -m 64 --layouts contiguous --iterations 3 --state-probes off"
# shellcheck disable=SC2086  # $args is a list of words
"$mpiexec" "$@" "$np" 1 env BENCHMARK_OUT="$dir/rank0.json" BENCHMARK_OUT_FORMAT=json "$bench" $args : \
  "$np" 1 env BENCHMARK_OUT="$dir/rank1.json" BENCHMARK_OUT_FORMAT=json "$bench" $args
[ -s "$dir/rank0.json" ] || { echo "FAILED: rank 0 wrote no $dir/rank0.json"; exit 1; }
[ ! -e "$dir/rank1.json" ] || { echo "FAILED: rank 1 wrote $dir/rank1.json"; exit 1; }
echo "benchmark_out: rank 0 only"
