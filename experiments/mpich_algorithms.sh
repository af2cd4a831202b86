#!/usr/bin/env bash
# The MPICH patch series measured in one campaign: Debian's MPICH, the patched MPICH with its
# default selection and with each added algorithm forced, and the testbed's PMPI versions of the
# same algorithms (experiments/definitions/mpich_algorithms.json, intra and cliques modes); then
# the selection JSON derived from those points (analysis/mpich_algorithms.py), the patched
# MPICH's default selection with that JSON at the same points (mpich_selection.json), and the
# 256^3 slab of the issue's goal (mpich_slab.json, intra), and the testbed's packer against MPI_Pack
# in both libraries (mpich_pack.json: Debian's yaksa engine, the patched build's dataloop engine).
# Prints the tables.
#
#   experiments/mpich_algorithms.sh [-s STORE] [-j SELECTION_JSON] [-n RANKS] [-M MODES] [-q] [-f] [-R]
#     -s  the store (default results/mpich_algorithms/store.jsonl); points already in it are not
#         run again: delete it (or -f) to measure anew
#     -f  fresh: remove the store first
#     -j  where the selection JSON goes (default mpich/tuning/alltoallw.json, the shipped one)
#     -n  rank counts, comma-separated (default 2, the definitions' own): every point runs at each,
#         and each measured count N decides for communicators of up to N ranks (above the next
#         smaller measured count); e.g. -n 4,16 on a 16-core host
#     -M  node layouts, space-separated (default "intra cliques")
#     -R  replace the selection file's alltoallw branch; without it, the branches of rank counts
#         this store does not measure stay as they were in the file (2 ranks measured here and 16
#         on a bigger host end up in one file)
#     -q  quick: 1 to 64 B per peer, short timing, no slab and no packing (the ctest mpich.selection.campaign)
# The slab's selection point reads the shipped mpich/tuning/alltoallw.json (its definition names it).
# Needs build/mpich and build/mpich-patched (scripts/build.sh mpich mpich-patched builds what is
# missing).
set -euo pipefail
cd "$(dirname "$0")/.."
store=results/mpich_algorithms/store.jsonl
selection=mpich/tuning/alltoallw.json
args='{}'
slab=1
fresh=0
ranks=()
modes="intra cliques"
merge=1
while getopts "s:j:n:M:qfR" opt; do
  case $opt in
    s) store=$OPTARG ;;
    j) selection=$OPTARG ;;
    q) args='{"-m": "1:64", "--benchmark_min_time": "0.001"}'; slab=0 ;;
    f) fresh=1 ;;
    n) ranks=(--ranks "$OPTARG") ;;
    M) modes=$OPTARG ;;
    R) merge=0 ;;
    *) echo "usage: $0 [-s STORE] [-j SELECTION_JSON] [-n RANKS] [-M MODES] [-q] [-f] [-R]" >&2; exit 2 ;;
  esac
done
[ $fresh -eq 0 ] || rm -f "$store"
mkdir -p "$(dirname "$selection")"
for v in mpich mpich-patched; do
  [ -x "build/$v/bin/tb-bench" ] || scripts/build.sh "$v"
done
generic="$(dirname "$(cat build/mpich-patched/tb-mpich-prefix)")/src/maint/tuning/coll/mpir/generic.json"
[ -f "$generic" ] || { echo "$0: no $generic (the patched MPICH's source tree, mpich/build.sh --tree)" >&2; exit 1; }
failed=0  # a failed point is reported and the campaign goes on; the exit status says so at the end
run() { /usr/bin/python3 experiments/run.py "experiments/definitions/$1.json" --mpi "$2" --mode "$3" --store "$store" "${@:4}" || failed=1; }

for mode in $modes; do
  for mpi in mpich-patched mpich; do run mpich_algorithms "$mpi" "$mode" "${ranks[@]}" --args "$args"; done
done
kept=()  # the file is read whole before the new one replaces it (written aside, then renamed)
[ $merge -eq 0 ] || [ ! -f "$selection" ] || kept=(--merge "$selection")
# The points with the file carry a hash of its contents (--point-args): a changed file is
# measured again, where its path alone would let the store's rows of the old file stand.
selection_env=$(/usr/bin/python3 analysis/mpich_algorithms.py "$store" --selection-json "$selection" --generic "$generic" \
                  "${kept[@]}" --point-args "$args")
for mode in $modes; do run mpich_selection mpich-patched "$mode" "${ranks[@]}" --args "$selection_env"; done
if [ $slab -eq 1 ]; then
  for mpi in mpich-patched mpich; do run mpich_slab "$mpi" intra "${ranks[@]}"; done
  # tb-bench-pack is one process whatever -n says: its points run as they are
  for mpi in mpich-patched mpich; do run mpich_pack "$mpi" intra; done
fi
/usr/bin/python3 analysis/mpich_algorithms.py "$store"
[ $failed -eq 0 ] || { echo "$0: some points failed (above); the tables show what was measured" >&2; exit 1; }
