#!/usr/bin/env bash
# Configures and builds the testbed against one or both MPI libraries (CMake presets).
#   scripts/build.sh            both: build/mpich and build/openmpi
#   scripts/build.sh mpich      one of them
set -euo pipefail
cd "$(dirname "$0")/.."
variants=("$@")
[ ${#variants[@]} -gt 0 ] || variants=(mpich openmpi)
jobs=$(nproc 2>/dev/null || echo 2)
for v in "${variants[@]}"; do
  case "$v" in mpich|openmpi) ;; *) echo "build: unknown MPI variant '$v' (mpich or openmpi)" >&2; exit 2;; esac
  echo "== build/$v"
  cmake --preset "$v" >"build-$v.configure.log" 2>&1 || { cat "build-$v.configure.log"; exit 1; }
  grep -A8 "Testbed configuration" "build-$v.configure.log" || true
  rm -f "build-$v.configure.log"
  cmake --build --preset "$v" -j "$jobs"
done
