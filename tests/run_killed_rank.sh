#!/usr/bin/env bash
# Runs alltoallw_killed_rank (one rank SIGKILLed inside MPI_Alltoallw) and checks that the job
# ends within 30 s of the start, with a non-zero status and the launcher reporting an abnormal end.
#   run_killed_rank.sh COMMAND [ARGS...]    (the mpiexec line; LD_PRELOAD and TB_ALLTOALLW set by
#                                            the caller choose the algorithm)
# A hard limit of 60 s (timeout) keeps a hung job from outliving the test.
set -u
start=$SECONDS
output=$(timeout -s KILL 60 "$@" 2>&1)
status=$?
elapsed=$((SECONDS - start))
printf '%s\n' "$output"
echo "run_killed_rank: exit status $status after ${elapsed} s"
fail() { echo "run_killed_rank: FAILED: $1"; exit 1; }
printf '%s\n' "$output" | grep -q "alltoallw_killed_rank: armed" || fail "the victim never armed its timer"
[ $status -ne 0 ] || fail "the job exited 0"
[ $status -ne 137 ] || [ $elapsed -lt 60 ] || fail "the job hung: stopped by the 60 s limit"
[ $elapsed -le 30 ] || fail "the job took ${elapsed} s to end (limit 30 s)"
printf '%s\n' "$output" | grep -q "still running 20 s after" && fail "a survivor ran on after the victim died"
# The launcher reports the first abnormal end it sees: the victim's SIGKILL, or a survivor that
# its transport aborted on finding the peer gone (UCX's cma: process_vm_readv "No such process").
# hydra: "BAD TERMINATION ..."; Open MPI: "... exited on signal 9 (Killed)".
printf '%s\n' "$output" | grep -Eq "BAD TERMINATION|exited on signal" ||
  fail "the launcher reported no abnormal termination"
echo "run_killed_rank: ok"
