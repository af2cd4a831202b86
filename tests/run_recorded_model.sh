#!/usr/bin/env bash
# Runs an unmodified MPI program under libtb_alltoallw.so in record mode, then costs the first
# recorded call with tb-model.
#   run_recorded_model.sh LIB RECORD_FILE TB_MODEL MPIEXEC [mpiexec args...] PROGRAM
set -eu
lib=$1 record=$2 model=$3; shift 3
rm -f "$record"
LD_PRELOAD="$lib" TB_ALLTOALLW_RECORD="$record" "$@"
[ -s "$record" ] || { echo "run_recorded_model: nothing recorded in $record"; exit 1; }
echo "run_recorded_model: $(wc -l < "$record") call(s) recorded"
"$model" --pattern "$record" --call 0 --algorithm native,pairwise,node_leader,local_remap
