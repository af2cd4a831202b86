#!/usr/bin/env bash
# The main job: installs what is missing, builds the MPICH variant, and compares the Alltoallw
# redistribution (every registered algorithm, arrays in node-shared memory) with the local-remap
# baseline on 2 ranks (slab, 128^3, complex<double>).
# Extra arguments go to tb-redistribute (e.g. --shape 256,256,256 --method all).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh mpich
mkdir -p results
stamp=$(date -u +%Y%m%dT%H%M%SZ)
mpiexec.mpich -n 2 build/mpich/bin/tb-redistribute --shape 128,128,128 --type c64 --method all --buffers shared \
  --csv "results/tb-redistribute-$stamp.csv" --json "results/tb-redistribute-$stamp.json" "$@"
echo "results: results/tb-redistribute-$stamp.csv (and .json)"
