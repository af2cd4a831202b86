#!/usr/bin/env bash
# Runs an unmodified MPI program with libtb_alltoallw.so preloaded and checks what happened.
#   run_preloaded.sh LIB ALGORITHM EXPECT MPIEXEC [mpiexec args...] -- PROGRAM
# EXPECT: "ok"   - exit 0, and every rank reports "MPI_Alltoallw via ALGORITHM"
#         "error" - non-zero exit and a message naming the unknown algorithm
set -u
lib=$1 algorithm=$2 expect=$3; shift 3
output=$(LD_PRELOAD="$lib" TB_ALLTOALLW="$algorithm" TB_ALLTOALLW_VERBOSE=1 "$@" 2>&1)
status=$?
printf '%s\n' "$output"
if [ "$expect" = ok ]; then
  [ $status -eq 0 ] || { echo "run_preloaded: exit status $status"; exit 1; }
  via=$(printf '%s\n' "$output" | grep -c "MPI_Alltoallw via $algorithm")
  want=$(printf '%s\n' "$output" | sed -n 's/.*alltoallw_app: OK (\([0-9]*\) ranks.*/\1/p')
  [ -n "$want" ] || { echo "run_preloaded: the program did not report OK"; exit 1; }
  [ "$via" -eq "$want" ] || { echo "run_preloaded: $via of $want ranks ran $algorithm"; exit 1; }
  echo "run_preloaded: all $want ranks ran MPI_Alltoallw via $algorithm"
else
  [ $status -ne 0 ] || { echo "run_preloaded: expected a failure"; exit 1; }
  printf '%s\n' "$output" | grep -q "unknown Alltoallw algorithm '$algorithm'" ||
    { echo "run_preloaded: no clear error about '$algorithm'"; exit 1; }
  echo "run_preloaded: failed as expected with a clear error"
fi
