#!/usr/bin/env bash
# Configures and builds the testbed against one or more MPI libraries (CMake presets).
#   scripts/build.sh                  Debian's two: build/mpich and build/openmpi
#   scripts/build.sh mpich            one of them
#   scripts/build.sh mpich-patched    MPICH 4.0.2 built from source with mpich/patches: runs
#                                     mpich/build.sh first (cached outside the clone; a cold build
#                                     takes minutes) and builds build/mpich-patched against it
#   scripts/build.sh sanitize         build/sanitize: Debian's MPICH with AddressSanitizer and
#                                     UndefinedBehaviorSanitizer, every error fatal (TB_SANITIZE)
#   scripts/build.sh smpi             build/smpi: SimGrid SMPI (smpicc/smpicxx, smpirun), every rank
#                                     simulated in one process: the collectives without UCX,
#                                     redistribute, fft, tb-redistribute, tb-fft and the smpi tests
#                                     (cmake/SmpiTests.cmake); what it leaves out, the configure
#                                     output says
#   scripts/build.sh all              all five
# Exit status 3: the mpich-patched variant could not be built for a reason outside the project
# (mpich/build.sh's: no Debian source package, download failed, no root for the cache).
set -euo pipefail
cd "$(dirname "$0")/.."
variants=("$@")
[ ${#variants[@]} -gt 0 ] || variants=(mpich openmpi)
[ "${variants[*]}" != all ] || variants=(mpich openmpi mpich-patched sanitize smpi)
jobs=$(nproc 2>/dev/null || echo 2)
for v in "${variants[@]}"; do
  case "$v" in mpich|openmpi|mpich-patched|sanitize|smpi) ;; *) echo "build: unknown MPI variant '$v' (mpich, openmpi, mpich-patched, sanitize, smpi or all)" >&2; exit 2;; esac
done
for v in "${variants[@]}"; do
  extra=()
  if [ "$v" = mpich-patched ]; then
    echo "== MPICH 4.0.2 + mpich/patches (mpich/build.sh)"
    rc=0; prefix=$(mpich/build.sh) || rc=$?
    [ $rc -eq 0 ] || { echo "build: mpich/build.sh failed (exit $rc)" >&2; exit $rc; }
    # No mpicxx in that install (--disable-cxx: no C++ bindings, and the testbed uses none):
    # FindMPI takes the C wrapper's include and link flags for C++ as well.
    extra=(-DMPI_C_COMPILER="$prefix/bin/mpicc" -DMPI_CXX_COMPILER="$prefix/bin/mpicc"
           -DMPIEXEC_EXECUTABLE="$prefix/bin/mpiexec")
    # FindMPI caches what it found (libraries, flags): another install (a changed patch series
    # is a new key, a new prefix) needs a fresh configure, not just new compiler paths.
    if [ -f "build/$v/CMakeCache.txt" ] && [ "$(cat "build/$v/tb-mpich-prefix" 2>/dev/null)" != "$prefix" ]; then
      extra+=(--fresh)
    fi
  fi
  echo "== build/$v"
  cmake --preset "$v" "${extra[@]}" >"build-$v.configure.log" 2>&1 || { cat "build-$v.configure.log"; exit 1; }
  grep -E "^-- smpi: " "build-$v.configure.log" || true  # what the smpi variant leaves out, and why
  grep -A8 "Testbed configuration" "build-$v.configure.log" || true
  rm -f "build-$v.configure.log"
  [ "$v" != mpich-patched ] || echo "$prefix" >"build/$v/tb-mpich-prefix"
  cmake --build --preset "$v" -j "$jobs"
done
