#!/usr/bin/env bash
# Installs every Debian package the testbed needs, and only those that are missing.
# Safe to run again: it says what is already there and what it installs.
set -euo pipefail

packages=(
  # toolchain
  g++ make cmake pkg-config git ca-certificates
  # the two MPI libraries (separate builds: build/mpich, build/openmpi)
  mpich libmpich-dev openmpi-bin libopenmpi-dev
  # serial FFTs, topology, UCX
  libfftw3-dev libhwloc-dev libucx-dev
  # the FFT head to head baselines (both built with Open MPI): FFTW-MPI and mpi4py-fft
  libfftw3-mpi-dev python3-mpi4py-fft
  # analysis (Debian's /usr/bin/python3) and the emulated cluster (network namespaces, tbf)
  python3-pandas python3-matplotlib python3-tabulate iproute2
  # run.py's Slurm batch scripts under a real one-host Slurm (scripts/slurm-cluster.sh starts its
  # own munged, slurmctld and slurmd on their own socket and ports, beside any the package starts)
  slurm-wlm munge
  # the smpi variant: SimGrid's SMPI (smpicc, smpicxx, smpirun; build/smpi)
  libsimgrid-dev
  # command-line parsing, JSON, tests, benchmarks
  libcli11-dev nlohmann-json3-dev googletest libgtest-dev libbenchmark-dev
  # the mpich-patched variant: mpich/build.sh fetches Debian's MPICH source package (apt-get
  # source, dpkg-source), applies mpich/patches and runs MPICH's autogen.sh before building it
  dpkg-dev xz-utils patch autoconf automake libtool python3 perl
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#packages[@]} Debian packages are installed"
  exit 0
fi

echo "setup: installing ${#missing[@]} missing Debian package(s): ${missing[*]}"
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then
    SUDO=sudo
    echo "setup: not running as root; using sudo for apt-get"
  else
    echo "setup: these packages are missing and installing them needs root." >&2
    echo "       Run this script as root, or install them yourself:" >&2
    echo "       apt-get update && apt-get install -y ${missing[*]}" >&2
    exit 1
  fi
else
  SUDO=
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q
$SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
echo "setup: done"
