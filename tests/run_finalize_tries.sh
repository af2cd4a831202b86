#!/usr/bin/env bash
# Runs an MPI command up to TRIES times, each stopped after SECONDS, and passes on the first try
# that exits 0; prints every try's output and outcome.
#   run_finalize_tries.sh TRIES SECONDS COMMAND [ARGS...]
# MPICH 4.0.2 over UCX tcp hangs in MPI_Finalize now and then whatever the program does (UCX's tcp
# cleanup, docs/known-problems.md), so one hang proves nothing; a program that makes the hang
# certain hangs on every try and fails. A failure prints FAILED, for tests that also match output.
set -u
tries=$1 seconds=$2; shift 2
for try in $(seq 1 "$tries"); do
  timeout --kill-after=5 "$seconds" "$@"
  status=$?
  if [ $status -eq 0 ]; then
    echo "run_finalize_tries: try $try of $tries exited 0"
    exit 0
  fi
  if [ $status -eq 124 ] || [ $status -eq 137 ]; then
    echo "run_finalize_tries: try $try of $tries did not end within ${seconds} s (stopped)"
  else
    echo "run_finalize_tries: FAILED, try $try of $tries exited $status"
    exit $status
  fi
done
echo "run_finalize_tries: FAILED, all $tries tries hung"
exit 1
